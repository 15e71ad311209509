"""experiments/real_contamination/detectors.py's report on synthetic arms shaped like the real ones (the committed
ground truths, items.parquet's columns): a planted membership effect gives the dose's AUC and power, the control
and format-control arms give the drawn half's AUC and the tests' level, and an arm not audited is said so."""

import json
import shutil

import numpy as np
import pytest

from experiments.real_contamination import detectors
from experiments.real_contamination.design import BENCHMARKS

pd = pytest.importorskip("pandas")

ARMS = ("control", "control_seed1", "format_x4", "verbatim_x4", "verbatim_x4_swapped")


def _items(truth: list[dict], rng: np.random.Generator, effect: float):
    seen = np.array([row["contaminated"] for row in truth], float)
    n = len(truth)

    def noise():
        return rng.normal(size=n)

    audited_original = noise() + effect * seen
    reference_original = noise()
    return pd.DataFrame(
        {
            "id": [row["id"] for row in truth],
            "benchmark": [row["benchmark"] for row in truth],
            "question": [f"question {row['id']} " + " ".join(rng.choice(list("abcdefgh"), 6)) for row in truth],
            "gold": ["gold"] * n,
            "mean_logprob": noise() + effect * seen,
            "min_k_plus_plus": noise(),  # no effect: its AUC holds 1/2
            "reference_log_ratio": audited_original - reference_original,
            "reference_log_ratio_audited_original": audited_original,
            "reference_log_ratio_audited_rephrased": noise(),
            "reference_log_ratio_reference_original": reference_original,
            "reference_log_ratio_reference_rephrased": noise(),
            "codec_delta": noise() - effect * seen,
            "codec_reference_delta": noise(),
            "codec_context_tokens": np.full(n, 40),
        }
    )


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    root = tmp_path_factory.mktemp("results")
    rng = np.random.default_rng(0)
    for arm in ARMS:
        generator = np.random.default_rng(1) if arm == "control_seed1" else rng  # the first four draw as before
        folder = root / "arms" / arm
        (folder / detectors.AUDIT).mkdir(parents=True)
        shutil.copy(detectors.HERE / "results" / "arms" / arm / "ground_truth.jsonl", folder)
        truth = [json.loads(line) for line in (folder / "ground_truth.jsonl").read_text().splitlines() if line]
        _items(truth, generator, effect=3.0).to_parquet(folder / detectors.AUDIT / "items.parquet")
    (root / "arms" / "control" / "audit_jaxcontam").mkdir()  # the blind baseline reads the control's audit
    shutil.copy(
        root / "arms" / "control" / detectors.AUDIT / "items.parquet", root / "arms" / "control" / "audit_jaxcontam"
    )
    return root


def test_the_report_on_synthetic_arms(results):
    report = detectors.analyse(results, permutations=19, resamples=999)
    assert report["arms"] == sorted(ARMS) and "verbatim_x1" in report["missing"]
    aucs = {(r["group"], r["benchmark"], r["score"]): r for r in report["aucs"]}
    for benchmark in BENCHMARKS:
        planted = aucs[("x4", benchmark, "mean_logprob")]
        assert planted["arms"] == ["verbatim_x4", "verbatim_x4_swapped"] and planted["draws"] == "both draws"
        assert planted["auc"] > 0.95 and planted["ci95"][0] > 0.85
        assert aucs[("x4", benchmark, "codec_delta")]["auc"] > 0.95  # lower means seen: oriented
        low, high = aucs[("x4", benchmark, "min_k_plus_plus")]["ci95"]
        assert low < 0.5 < high
        assert aucs[("x4", benchmark, "reference_log_ratio_control")]["auc"] > 0.85  # the control as reference
        assert ("control", benchmark, "reference_log_ratio_control") not in aucs  # not against itself
        control = aucs[("control", benchmark, "mean_logprob")]
        assert control["draws"] == "drawn half" and control["ci95"][0] < 0.5 < control["ci95"][1]
        assert set(report["blind"][benchmark]) == {"drawn", "other", "mean"}
    tests = {t["detector"]: t for t in report["tests"]}
    ratio = tests[detectors.test_name("reference_log_ratio")]
    assert ratio["power"]["flagged"] == ratio["power"]["tested"] == 2 * len(BENCHMARKS)  # each twin's seen halves
    assert ratio["levels"]["control"]["tested"] == 4 * len(BENCHMARKS)  # the control and its seed
    assert ratio["levels"]["control"]["flagged"] <= 1 and ratio["levels"]["clean"]["flagged"] <= 1
    assert ratio["eligible"] and ratio["shows_power"] and ratio["oracle"]  # the base model: an oracle
    control_ref = tests[detectors.test_name("reference_log_ratio", "control_reference")]
    assert not control_ref["oracle"] and control_ref["eligible"] and control_ref["shows_power"]
    assert control_ref["power"]["flagged"] == control_ref["power"]["tested"] == 2 * len(BENCHMARKS)
    assert control_ref["levels"]["control"]["tested"] == 2 * len(BENCHMARKS)  # the seed's halves, not the reference's
    assert not any(h["arm"] == "control" for h in report["halves"] if h["design"] == "control_reference")
    sign = detectors.test_name("codec_sign")
    assert [t["detector"] for t in report["tests"]].count(sign) == 1  # model alone: once, not per reference
    text = detectors.markdown(report)
    assert "an oracle (no auditor has it), never picked" in text
    assert "Not yet audited (model not retrained in time): verbatim_x1" in text
    assert "| blind baseline (no model) |" in text and "gradnorm" not in text  # a score no arm has is no row


def test_with_reference_takes_the_reference_arms_audited_columns_by_item(results):
    arm = detectors.load(results / "arms" / "verbatim_x4")
    reference = detectors.load(results / "arms" / "control")
    scored = detectors.with_reference(arm, reference.iloc[::-1])  # another row order: aligned by id
    for side in ("original", "rephrased"):
        expected = reference.loc[arm.index, f"reference_log_ratio_audited_{side}"]
        assert np.array_equal(scored[f"reference_log_ratio_reference_{side}"], expected)
    assert np.allclose(
        scored["reference_log_ratio"],
        arm["reference_log_ratio_audited_original"] - reference.loc[arm.index, "reference_log_ratio_audited_original"],
    )
    assert np.array_equal(scored["codec_reference_delta"], reference.loc[arm.index, "codec_delta"])
    assert np.allclose(scored["codec_calibrated"], scored["codec_reference_delta"] - arm["codec_delta"])
    other = reference.assign(codec_context_tokens=reference["codec_context_tokens"] + 1)
    with pytest.raises(SystemExit, match="contexts differ"):
        detectors.with_reference(arm, other)


def test_a_score_only_one_arm_of_a_dose_has_is_that_draws_auc(results, tmp_path):
    """The costly audit (CDD, GradNorm) runs on one arm of a dose: its AUC is that draw's alone, said so."""
    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    arm = copy / "arms" / "verbatim_x4"
    items = pd.read_parquet(arm / detectors.AUDIT / "items.parquet")
    seen = np.array(
        [json.loads(line)["contaminated"] for line in (arm / "ground_truth.jsonl").read_text().splitlines()]
    )
    costly = items[["id", "benchmark", "question", "gold"]].assign(
        gradnorm=np.random.default_rng(2).normal(size=len(items)) - 3.0 * seen
    )
    (arm / detectors.COSTLY_AUDIT).mkdir()
    costly.to_parquet(arm / detectors.COSTLY_AUDIT / "items.parquet")
    report = detectors.analyse(copy, permutations=19, resamples=99)
    aucs = {(r["group"], r["benchmark"], r["score"]): r for r in report["aucs"]}
    for benchmark in BENCHMARKS:
        one = aucs[("x4", benchmark, "gradnorm")]
        assert one["arms"] == ["verbatim_x4"] and one["draws"] == "one draw" and one["auc"] > 0.9  # lower: seen
        assert aucs[("x4", benchmark, "mean_logprob")]["draws"] == "both draws"
    assert "| gradnorm (one draw: verbatim_x4) |" in detectors.markdown(report)
