"""PaCoST: what the P(True) judge is shown, the presets, and which pairs each confidence drops."""

import math
import pathlib
import types

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxcontam.data.registry import load_benchmark
from jaxcontam.detect.pacost.confidences import CONFIDENCES
from jaxcontam.detect.pacost.records import judge_question, judged_answer, pacost_records
from jaxcontam.detect.pacost.settings import PacostSettings
from jaxcontam.detect.pacost.significance import pacost_result, paired_verdict
from jaxcontam.engine.ptrue import KADAVATH
from jaxcontam.errors import JaxcontamError

REPO = pathlib.Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
TINY = REPO / "jaxcontam" / "examples" / "tiny_contaminated" / "model"


def needs_data(test):
    """A test loading benchmarks by name, so through jaxcontam's data roots (../shared/data): in the shared_data
    tier, and skipped without the folder."""
    return pytest.mark.shared_data(pytest.mark.skipif(not SHARED.is_dir(), reason="needs ../shared/data")(test))


def chose(index):
    """The part of an answer the judge reads: a multiple-choice pick (its text is the continuation's)."""
    return types.SimpleNamespace(text="(the continuation)", choice=index)


def judge_prompt(benchmark, item, choice, question=None):
    question = item.question if question is None else question
    return KADAVATH.render(judge_question(benchmark, item, question), judged_answer(benchmark, item, chose(choice)))


@needs_data
def test_mmlu_judge_sees_the_options_and_the_chosen_options_text():
    benchmark = load_benchmark("mmlu", limit=1)
    item = benchmark[0]
    shown = judge_prompt(benchmark, item, 1)
    options = "".join(f"\n{letter}. {text}" for letter, text in zip("ABCD", item.choices))
    assert shown.startswith(f"Question: {item.question.strip()}{options}\nProposed Answer: {item.choices[1]}\n")
    # lm-eval's MMLU description line, shared by every item of the subject, is not shown to the judge
    assert "The following are multiple choice questions (with answers) about" not in shown
    assert "\nAnswer:" not in shown
    rephrased = judge_prompt(benchmark, item, 1, question="What degree does Q(sqrt 2, sqrt 3, sqrt 18) have over Q?")
    assert f"What degree does Q(sqrt 2, sqrt 3, sqrt 18) have over Q?{options}\nProposed Answer:" in rephrased
    assert item.question.strip() not in rephrased


@needs_data
def test_copa_judge_keeps_the_connector_and_reads_the_choice_as_continued():
    benchmark = load_benchmark("copa", limit=4)
    for item in benchmark:
        connector = "because" if item.meta["relation"] == "cause" else "therefore"
        choice = item.choices[0]
        premise = item.question.strip().rstrip(".")
        expected = f"Question: {premise} {connector}\nProposed Answer: {choice[0].lower()}{choice[1:]}\n"
        assert judge_prompt(benchmark, item, 0).startswith(expected)


@needs_data
def test_winogrande_judge_sees_the_sentence_the_fillers_and_the_chosen_filler():
    benchmark = load_benchmark("winogrande", limit=1)
    item = benchmark[0]
    shown = judge_prompt(benchmark, item, 1)
    assert shown.startswith(
        f"Question: Sentence: {item.question.strip()}\nA. {item.choices[0]}\n"
        f"B. {item.choices[1]}\nWhich option fills the blank _?\nProposed Answer: "
        f"{item.choices[1]}\n"
    )


@needs_data
def test_generative_judge_sees_the_bare_question_and_the_generated_text():
    benchmark = load_benchmark("gsm8k", limit=1)
    item = benchmark[0]
    assert judge_question(benchmark, item, item.question) == item.question.strip()
    assert judged_answer(benchmark, item, types.SimpleNamespace(text="18", choice=None)) == "18"


def test_presets():
    ours, paper = PacostSettings(), PacostSettings(preset="paper")
    assert (ours.confidence, ours.test, ours.answers, ours.correction) == (
        "question_min_k_plus_plus",  # issue 62's decision rule's pick (tests/test_audit_evidence.py)
        "permutation",
        "greedy",
        "sweep",
    )
    assert not hasattr(ours, "alpha")  # the level is the audit's alone (StageInput.alpha)
    assert (paper.confidence, paper.test, paper.answers, paper.correction) == ("p_yes", "t", "sampled", "none")
    assert PacostSettings(preset="paper", confidence="answer_logprob").confidence == "answer_logprob"
    assert "p_yes" not in ours.measured() and "p_yes" in paper.measured()
    # another preset keeps what was set explicitly and takes the rest from the new preset
    switched = PacostSettings(test="sign", seed=7).with_preset("paper")
    assert (switched.test, switched.seed, switched.confidence, switched.answers) == ("sign", 7, "p_yes", "sampled")
    assert PacostSettings(preset="paper").with_preset("jaxcontam") == PacostSettings()
    with pytest.raises(JaxcontamError, match="preset"):
        PacostSettings(preset="published")
    with pytest.raises(JaxcontamError, match="template"):
        PacostSettings(template="nope")
    with pytest.raises(JaxcontamError, match="correction"):
        PacostSettings(correction="holm")
    with pytest.raises(JaxcontamError, match="temperature"):
        PacostSettings(preset="paper", temperature=0.0)


def record(values, rephrase="rephrased", answer_original="42", answer_rephrased="42"):
    """One item's record with the same (original, rephrased) pair for every confidence."""
    original, rephrased = values
    return {f"{c}_{side}": v for c in CONFIDENCES for side, v in (("original", original), ("rephrased", rephrased))} | {
        "rephrase": rephrase,
        "answer_original": answer_original,
        "answer_rephrased": answer_rephrased,
    }


rows = st.tuples(st.floats(-5, 5), st.floats(-5, 5), st.booleans(), st.booleans(), st.booleans())


@settings(max_examples=60, deadline=None)
@given(st.lists(rows, min_size=0, max_size=12))
def test_pairs_are_dropped_only_for_what_the_confidence_needs(drawn):
    records = [
        record(
            (o, r), rephrase="r" if has else None, answer_original="a" if ao else "", answer_rephrased="a" if ar else ""
        )
        for o, r, has, ao, ar in drawn
    ]
    for confidence, needs_answers in (("question_min_k_plus_plus", False), ("p_true", True), ("answer_logprob", True)):
        kept = [(o, r) for o, r, has, ao, ar in drawn if has and (not needs_answers or (ao and ar))]
        summary = paired_verdict(records, confidence, PacostSettings(test="t")).to_dict()
        assert summary["n_pairs"] == (len(kept) if len(kept) >= 2 else 0)
        if len(kept) >= 2 and summary["n_pairs"]:
            d = np.array([o - r for o, r in kept])
            expected = scipy.stats.ttest_rel([o for o, _ in kept], [r for _, r in kept], alternative="greater").pvalue
            if np.ptp(d) > 1e-9 * max(1.0, np.abs(d).max()):  # t is undefined for constant differences
                assert summary["pvalue"] == pytest.approx(expected, rel=1e-6)
            assert summary["n_pairs"] + summary["n_dropped"] == len(drawn)


def test_summary_records_the_preset_and_every_confidence_as_a_variant():
    rng = np.random.default_rng(0)
    records = [record((a, b)) for a, b in rng.uniform(size=(8, 2))]
    summary = pacost_result(records, PacostSettings(preset="paper", seed=11)).to_dict()
    assert (summary["preset"], summary["confidence"], summary["test"], summary["correction"]) == (
        "paper",
        "p_yes",
        "t",
        "none",
    )
    assert (summary["answers"], summary["seed"], summary["temperature"], summary["top_p"]) == ("sampled", 11, 1.0, 1.0)
    assert set(summary["variants"]) == set(CONFIDENCES) - {"p_yes"}
    ours = pacost_result(records, PacostSettings()).to_dict()
    assert (ours["answers"], ours["correction"], "seed" in ours) == ("greedy", "sweep", False)
    assert set(ours["variants"]) == set(CONFIDENCES) - {"question_min_k_plus_plus", "p_yes"}


def test_the_paper_verdict_is_scipys_uncorrected_one_sided_t_test_on_pairs_with_both_confidences_above_0():
    """test.py: ttest_rel(original, rephrased, alternative="greater"); test_model_pipeline.py keeps a pair only
    `if ret > 0 and rret > 0`; the paper flags p < 0.05."""
    rng = np.random.default_rng(3)
    original, rephrased = rng.uniform(0.2, 0.9, 30), rng.uniform(0.1, 0.8, 30)
    original[[2, 5]] = 0.0  # the judge's reply never said yes or no
    rephrased[[5, 9, 20]] = 0.0
    records = [record((o, r)) for o, r in zip(original, rephrased)]
    summary = paired_verdict(records, "p_yes", PacostSettings(preset="paper")).to_dict()
    both = (original > 0) & (rephrased > 0)
    expected = scipy.stats.ttest_rel(original[both], rephrased[both], alternative="greater").pvalue
    assert summary["pvalue"] == pytest.approx(expected, rel=1e-9)
    assert (summary["n_pairs"], summary["n_dropped"]) == (26, 4)
    assert summary["dropped_reasons"] == {"no yes/no in the judge's reply (confidence 0)": 4}
    assert "contaminated" not in summary  # evidence: the audit's headline applies the level
    assert summary["statistic"] == pytest.approx(
        scipy.stats.ttest_rel(original[both], rephrased[both], alternative="greater").statistic, rel=1e-9
    )


def test_an_item_without_a_rephrasing_is_dropped_whether_read_as_none_or_as_pandas_nan():
    """items.parquet read back by pandas 3 gives NaN where the audit wrote None: the same pairs, the same reason."""
    rng = np.random.default_rng(5)
    pairs = list(zip(rng.uniform(0.2, 0.9, 12), rng.uniform(0.1, 0.8, 12)))
    verdicts = [
        paired_verdict(
            [record(v, rephrase=missing if i % 4 == 0 else "r") for i, v in enumerate(pairs)],
            "p_true",
            PacostSettings(test="t"),
        ).to_dict()
        for missing in (None, float("nan"))
    ]
    assert verdicts[0] == verdicts[1] and verdicts[0]["n_pairs"] == 9
    assert verdicts[1]["dropped_reasons"] == {"no accepted rephrasing": 3}


@pytest.mark.parametrize("answered", [0, 1])
def test_a_judge_that_never_says_yes_or_no_is_named_as_the_reason_there_is_no_test(answered):
    """Pairs with a confidence of 0 are dropped before the test: the reason counts them (not "0 of 0")."""
    original, rephrased = np.zeros(12), np.zeros(12)
    original[:answered], rephrased[:answered] = 0.7, 0.4
    records = [record((o, r)) for o, r in zip(original, rephrased)]
    summary = paired_verdict(records, "p_yes", PacostSettings(preset="paper")).to_dict()
    assert math.isnan(summary["pvalue"]) and summary["n_pairs"] == 0
    assert summary["dropped_reasons"] == {"no yes/no in the judge's reply (confidence 0)": 12 - answered}
    reason = summary["status"]
    assert reason.startswith(
        f"no test: {answered} usable pair(s) of 12: the judge's reply said neither yes nor no on "
        f"{12 - answered} of the 12 items with a rephrasing; the 't' test needs 2"
    )
    assert "judge_max_new_tokens" in reason and "0 of 0" not in reason


@pytest.mark.parametrize("settings_", [PacostSettings(), PacostSettings(preset="paper", confidence="p_true")])
@needs_data
def test_records_on_the_bundled_model_keep_normalised_and_raw_p_true(settings_):
    import jaxcontam

    model = jaxcontam.load_model(str(TINY))
    benchmark = load_benchmark("copa", limit=3)
    rephrasings = ["A shadow of my body fell on the grass.", None, "Something happened."]
    records = pacost_records(model, benchmark, list(benchmark), rephrasings, settings_)
    for r in records:
        for side in ("original", "rephrased") if r["rephrase"] else ("original",):
            raw, normalised = r[f"p_true_raw_{side}"], r[f"p_true_{side}"]
            assert 0 < raw <= normalised <= 1  # p_t <= p_t / (p_t + p_f) since p_t + p_f <= 1
    assert math.isnan(records[1]["p_true_raw_rephrased"]) and records[1]["rephrase"] is None


def test_the_audit_config_selects_a_preset(tmp_path):
    from jaxcontam.audit.config import load_config

    path = tmp_path / "audit.toml"
    path.write_text('[[model]]\npath = "m"\n[[benchmark]]\nname = "copa"\n[pacost]\npreset = "paper"\n')
    assert load_config(path).settings_of("pacost") == PacostSettings(preset="paper")


def test_the_audit_command_line_sets_the_preset_over_the_config(tmp_path):
    from helpers import audit_config_of
    from jaxcontam.audit.config import load_config

    path = tmp_path / "audit.toml"
    path.write_text(
        'correction = "none"\n[[model]]\npath = "m"\n[[benchmark]]\nname = "copa"\n'
        '[pacost]\ntest = "wilcoxon"\nseed = 3\n'
    )
    config = audit_config_of("--config", path, "--preset", "paper")
    assert config.correction == "none"
    assert config.settings_of("pacost") == PacostSettings(preset="paper", test="wilcoxon", seed=3)  # the file's stay
    only_options = audit_config_of("--model", "m", "--benchmark", "copa", "--preset", "paper")
    assert only_options.settings_of("pacost") == PacostSettings(preset="paper")
    path.write_text('correction = "bonferroni"\n[[model]]\npath = "m"\n[[benchmark]]\nname = "copa"\n')
    with pytest.raises(JaxcontamError, match="correction.*'holm', 'bh', 'none'"):
        load_config(path)


def test_the_resume_key_changes_with_every_setting_that_changes_records():
    from jaxcontam.audit.store import fingerprint

    variants = [
        PacostSettings(),
        PacostSettings(preset="paper"),
        PacostSettings(preset="paper", seed=1),
        PacostSettings(preset="paper", temperature=0.7),
        PacostSettings(preset="paper", judge_max_new_tokens=16),
    ]
    assert len({fingerprint(s.to_dict()) for s in variants}) == len(variants)
    # the same settings, from the preset or spelled out, resume the same work
    assert PacostSettings(test="permutation", answers="greedy").to_dict() == PacostSettings().to_dict()


def test_jaxcontam_audit_takes_the_preset_from_its_option(tmp_path, monkeypatch):
    from click.testing import CliRunner

    import jaxcontam.audit.run
    import jaxcontam.commands.audit as command
    from jaxcontam.report.summary_schema import AuditSummary

    seen = []
    monkeypatch.setattr(
        jaxcontam.audit.run, "run_audit", lambda config: seen.append(config) or AuditSummary.from_dict({"runs": []})
    )
    path = tmp_path / "audit.toml"
    path.write_text('[[model]]\npath = "m"\n[[benchmark]]\nname = "copa"\n[pacost]\nseed = 4\n')
    result = CliRunner().invoke(command.audit, ["--config", str(path), "--preset", "paper", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert seen[0].settings_of("pacost") == PacostSettings(preset="paper", seed=4)


def test_the_calibrated_verdict_tests_the_gap_against_the_reference_models_gap():
    """Both models prefer every original by the same rephrasing bias: the authors' test flags the audited model, the
    calibrated one does not; an extra gap in the audited model alone is flagged (p from the sign-flip test of d)."""
    from jaxcontam.detect.pacost.significance import calibrated_verdict
    from jaxcontam.stats.calibrated import reference_test

    rng = np.random.default_rng(3)
    bias = rng.uniform(0.1, 0.3, 24)

    def records(extra):
        rephrased = rng.uniform(0.2, 0.6, 24)
        return [
            {
                "rephrase": "r",
                "answer_original": "a",
                "answer_rephrased": "a",
                "p_true_original": r + b + e,
                "p_true_rephrased": r,
            }
            for r, b, e in zip(rephrased, bias, extra)
        ]

    settings_ = PacostSettings(test="permutation", confidence="p_true")
    reference, clean, seen = records(np.zeros(24)), records(np.zeros(24)), records(np.full(24, 0.2))
    assert paired_verdict(clean, "p_true", settings_).pvalue < 0.05  # the biased null the calibration removes
    calm = calibrated_verdict(clean, reference, "base", settings_)
    assert calm.pvalue > 0.5 and abs(calm.mean_difference) < 1e-12  # d = 0 up to rounding
    flagged = calibrated_verdict(seen, reference, "base", settings_)
    expected = reference_test(
        *[[r[f"p_true_{s}"] for r in rows] for rows in (seen, reference) for s in ("original", "rephrased")],
        method="permutation",
    )
    assert flagged.pvalue == expected.pvalue < 0.05 and flagged.reference == "base"
    assert (flagged.statistic, flagged.n) == (expected.statistic, expected.n)
    assert flagged.confidence_interval(0.9) == expected.confidence_interval(0.9)
    assert flagged.to_dict()["test"] == "permutation"
