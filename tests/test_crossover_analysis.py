"""The crossover analysis (experiments/real_contamination/crossover.py) on synthetic twins: the paired AUC, its
sign-flip null and Holm family, the unpaired AUC / EPG against scipy and their permutation nulls, and the
calibrated PaCoST halves with the control arm as a stand-in reference (structure only, no committed numbers)."""

import pathlib

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

import experiments.real_contamination.crossover
import experiments.real_contamination.report
import experiments.real_contamination.seeds

EXPERIMENT = pathlib.Path(__file__).resolve().parents[1] / "experiments" / "real_contamination"


@pytest.fixture(scope="module")
def crossover():
    return experiments.real_contamination.crossover


def _twins(rng, effect: float, n: int = 40):
    """Two arms over the same items of every benchmark, complementary halves seen, a shared item level and a
    per-model shift; `effect` added to an item's score in the model that saw it."""
    rows = {"a": [], "b": []}
    for benchmark in ("gsm8k", "copa", "mmlu"):
        level = rng.normal(0, 1, n)
        seen_in_a = rng.permutation(np.arange(n) < n // 2)
        for arm, seen, shift in (("a", seen_in_a, 0.2), ("b", ~seen_in_a, -0.1)):
            score = level + shift + rng.normal(0, 0.5, n) + effect * seen
            for i in range(n):
                rows[arm].append(
                    {
                        "id": f"{benchmark}/{i}",
                        "benchmark": benchmark,
                        "seen": bool(seen[i]),
                        "drawn": bool(seen[i]),
                        "correct": float(rng.random() < 0.4 + 0.3 * seen[i]),
                        "mean_logprob": score[i],
                        "zlib_ratio": -score[i],
                    }
                )
    return {arm: pd.DataFrame(r).set_index("id", drop=False) for arm, r in rows.items()}


def test_paired_auc_definition_and_sign_test(crossover):
    seen = np.array([3.0, 2.0, 1.0, 1.0, 5.0, 0.0, 2.0])
    unseen = np.array([1.0, 2.0, 2.0, 0.0, 4.0, -1.0, np.nan])
    estimate = crossover.paired_auc(seen, unseen)
    assert estimate.n == 6
    assert estimate.value == pytest.approx((4 + 0.5) / 6)  # 4 wins, 1 tie, 1 loss
    assert estimate.pvalue == pytest.approx(scipy_stats.binomtest(4, 5, 0.5, alternative="greater").pvalue)
    assert estimate.ci95[0] <= estimate.value <= estimate.ci95[1]


def test_paired_table_detects_and_holds_under_the_null(crossover):
    rng = np.random.default_rng(0)
    twins = _twins(rng, effect=1.0)
    arms = {"verbatim_x4": twins["a"], "verbatim_x4_swapped": twins["b"]}
    table = crossover.paired_table(arms)
    assert table["family_size"] == len(crossover.DOSES) * 3 * len(crossover.PAIRED_DETECTORS)
    rows = {(r["benchmark"], r["detector"]): r for r in table["rows"] if r["dose"] == "x4"}
    for benchmark in ("gsm8k", "copa", "mmlu"):
        for detector in ("mean_logprob", "zlib_ratio"):  # zlib: lower means seen, oriented
            assert rows[benchmark, detector]["value"] > 0.8 and rows[benchmark, detector]["significant"]
        assert rows[benchmark, "accuracy_gain (outside the family)"]["n"] == 40
    null = crossover.paired_table({"verbatim_x1": (t := _twins(rng, 0.0))["a"], "verbatim_x1_swapped": t["b"]})
    assert not any(r.get("significant") for r in null["rows"])
    assert crossover.paired_table({"verbatim_x4": twins["a"]}) is None  # the twin is missing: waiting


def test_unpaired_auc_and_epg_against_scipy(crossover):
    rng = np.random.default_rng(1)
    scores, flags = np.round(rng.normal(0, 1, 60), 1), rng.permutation(np.arange(60) < 30)
    scores[flags] += 0.4
    estimate = crossover.unpaired_auc(scores, flags, resamples=4999)
    test = scipy_stats.mannwhitneyu(scores[flags], scores[~flags], alternative="greater")
    assert estimate.value == pytest.approx(test.statistic / 900)
    assert estimate.pvalue == pytest.approx(test.pvalue, abs=0.02)  # the same null, Monte Carlo vs normal approx
    assert estimate.ci95[0] < estimate.value < estimate.ci95[1]
    correct = (rng.random(60) < np.where(flags, 0.7, 0.4)).astype(float)
    epg = crossover.unpaired_epg(correct, flags, resamples=1999)
    assert epg.value == pytest.approx(correct.mean() - correct[~flags].mean())
    assert epg.ci95[0] < epg.value < epg.ci95[1] and 0 < epg.pvalue <= 1


def test_relative_scores_subtract_the_reference(crossover):
    rng = np.random.default_rng(2)
    arm, reference = _twins(rng, 0.5)["a"], _twins(rng, 0.0)["a"]
    shifted = crossover.relative(arm, reference, {})
    assert np.allclose(shifted["mean_logprob"], arm["mean_logprob"] - reference["mean_logprob"])
    from_dose = crossover.relative(arm, None, dict(zip(arm["id"], np.ones(len(arm)))))
    assert np.allclose(from_dose["mean_logprob"], arm["mean_logprob"] - 1)
    assert from_dose["zlib_ratio"].isna().all()


def test_calibrated_pacost_with_a_stand_in_reference(crossover):
    """The control arm stands in for the base model's audit here only; the numbers are not results."""
    results = [EXPERIMENT / "results"]
    if crossover.find_arm(results, "control") is None or crossover.find_arm(results, "verbatim_x4") is None:
        pytest.skip("the experiment's control and verbatim_x4 audits are not in this checkout")
    arms = {arm: crossover.load_arm(crossover.find_arm(results, arm)) for arm in ("control", "verbatim_x4")}
    out = crossover.calibrated_pacost(arms, arms["control"], confidences=("answer_logprob",))
    assert {(r["arm"], r["benchmark"], r["half"]) for r in out["rows"]} == {
        (arm, b, h) for arm in arms for b in crossover.BENCHMARKS for h in ("contaminated", "clean")
    }
    control = [r for r in out["rows"] if r["arm"] == "control"]
    assert all(r["calibrated_p"] == 1.0 for r in control)  # a model against itself: every difference is 0
    summary = out["summary"]["calibrated_p"]
    assert summary["control_all_halves"]["n"] == 6 and summary["power_contaminated_halves"]["n"] == 3
    assert summary["control_all_halves"]["band99"] == [0, 2]


def test_the_paper_preset_table_counts_judge_verdicts_and_tests_the_kept_pairs(crossover):
    """report.paper_preset: judged = P(yes) > 0 per half and side, the t-test on pairs with both > 0 (scipy's
    ttest_rel, as the authors' test.py), the AUC of P(yes) over the judged originals (Mann-Whitney), the share of
    judge replies in the items' "Answer:" format."""
    report = experiments.real_contamination.report
    rng = np.random.default_rng(4)
    n = 40
    drawn = np.arange(n) < n // 2
    original = np.where(rng.random(n) < 0.7, rng.uniform(0.1, 0.9, n) + 0.1 * drawn, 0.0)
    rephrased = np.where(rng.random(n) < 0.6, rng.uniform(0.1, 0.9, n), 0.0)
    rephrase = np.where(np.arange(n) % 7 == 3, None, "a rewording")
    items = pd.DataFrame(
        {
            "benchmark": "copa",
            "id": [f"copa/{i}" for i in range(n)],
            "drawn": drawn,
            "rephrase": rephrase,
            "p_yes_original": original,
            "p_yes_rephrased": rephrased,
            "answer_original": "an answer",
            "answer_rephrased": "an answer",
            "judge_reply_original": np.where(np.arange(n) % 4 == 0, "Answer: C", "Yes, it is correct."),
        }
    )
    cell = report.paper_preset(items)["copa"]
    assert cell["replies_in_answer_format"] == pytest.approx(0.25)
    for half, flag in (("contaminated", True), ("clean", False)):
        mine = drawn == flag
        kept = mine & (rephrase != None) & (original > 0) & (rephrased > 0)  # noqa: E711 (an object array)
        assert cell[half]["items"] == mine.sum() and cell[half]["judged_original"] == (mine & (original > 0)).sum()
        assert cell[half]["judged_rephrased"] == (mine & (rephrase != None) & (rephrased > 0)).sum()  # noqa: E711
        assert cell[half]["pairs"] == kept.sum()
        expected = scipy_stats.ttest_rel(original[kept], rephrased[kept], alternative="greater").pvalue
        assert cell[half]["pvalue"] == pytest.approx(expected, rel=1e-9)
    judged = original > 0
    auc = scipy_stats.mannwhitneyu(original[judged & drawn], original[judged & ~drawn]).statistic
    assert cell["p_yes_auc"]["value"] == pytest.approx(auc / ((judged & drawn).sum() * (judged & ~drawn).sum()))


def _write_arm(folder: pathlib.Path, items: pd.DataFrame, did: float) -> None:
    """An arm folder as run.py leaves it: the audit's items, the ground truth and the dose."""
    import json

    (folder / "audit_jaxcontam").mkdir(parents=True)
    items.drop(columns=["seen", "drawn"]).reset_index(drop=True).to_parquet(
        folder / "audit_jaxcontam" / "items.parquet"
    )
    truth = [
        {"id": i, "drawn": bool(d), "contaminated": bool(s)}
        for i, d, s in zip(items["id"], items["drawn"], items["seen"])
    ]
    (folder / "ground_truth.jsonl").write_text("".join(json.dumps(row) + "\n" for row in truth))
    dose = {"did": {"audited_text/all": {"did": did, "ci95": [did - 0.05, did + 0.05]}}}
    (folder / "dose.json").write_text(json.dumps(dose))


def test_seed_spread_per_arm_family(crossover, tmp_path):
    """seeds.py: each seed's single-model AUC is scipy's Mann-Whitney U / (n1 n0) of the seen half against the unseen
    one (the drawn half in the control arm), the spread is the sample SD over the seeds present, a seed not trained
    is listed as missing, and the two-draw AUC is given per seed where the x1 arm and its twin both exist."""
    import statistics

    seeds = experiments.real_contamination.seeds
    rng = np.random.default_rng(3)
    arms = tmp_path / "arms"
    written = {}
    for seed, did in ((0, 0.24), (1, 0.18)):
        twins = _twins(rng, effect=0.8)
        control = _twins(rng, effect=0.0)["a"].assign(seen=False)
        for family, items, dose in (
            ("verbatim_x1", twins["a"], did),
            ("verbatim_x1_swapped", twins["b"], did / 2),
            ("control", control, 0.01 * seed),
        ):
            _write_arm(arms / seeds.arm_name(family, seed), items, dose)
            written[family, seed] = items
    report = seeds.analyse([tmp_path])
    assert report["seeds_present"] == {"control": [0, 1], "verbatim_x1": [0, 1], "verbatim_x1_swapped": [0, 1]}
    assert sorted(report["missing"]) == ["control_seed2", "verbatim_x1_seed2", "verbatim_x1_swapped_seed2"]
    for row in report["auc"]:
        if row["detector"] != "mean_logprob":
            continue
        expected = []
        for seed in (0, 1):
            items = written[row["family"], seed]
            group = items[items["benchmark"] == row["benchmark"]]
            flag = group["drawn"] if row["family"] == "control" else group["seen"]
            u = scipy_stats.mannwhitneyu(group["mean_logprob"][flag], group["mean_logprob"][~flag]).statistic
            expected.append(u / (flag.sum() * (~flag).sum()))
        assert [row["seeds"]["0"], row["seeds"]["1"]] == pytest.approx(expected)
        assert row["spread"]["sd"] == pytest.approx(statistics.stdev(expected))
        assert row["spread"]["range"] == pytest.approx([min(expected), max(expected)])
    x1 = next(d for d in report["dose"] if d["family"] == "verbatim_x1")
    assert x1["spread"]["mean"] == pytest.approx(0.21) and x1["spread"]["sd"] == pytest.approx(
        statistics.stdev([0.24, 0.18])
    )
    assert {r["seed"] for r in report["two_draws"]} == {0, 1}
    table = seeds.docs_table(report)
    assert "| verbatim_x1 | dose (DiD) | +0.240 | +0.180 | - | +0.210 |" in table


def test_seed_spread_reads_each_seeds_detector_audit(tmp_path):
    """seeds.py adds issue 62's scores from each seed's detector audit: Gap-K%'s AUC is scipy's Mann-Whitney U /
    (n1 n0) of the seen half against the unseen one, and the log-ratio against the control arm's model is the arm's
    audited log-prob of an item minus the control's of the same item (the control itself has none: it is the
    reference); a seed without a detector audit is left out of those rows only."""
    seeds = experiments.real_contamination.seeds
    rng = np.random.default_rng(5)
    audited = {}
    for seed in (0, 1):
        twins = _twins(rng, effect=0.8)
        for family, items in (
            ("verbatim_x1", twins["a"]),
            ("verbatim_x1_swapped", twins["b"]),
            ("control", _twins(rng, effect=0.0)["a"].assign(seen=False)),
        ):
            folder = tmp_path / "arms" / seeds.arm_name(family, seed)
            _write_arm(folder, items, 0.1)
            if (family, seed) == ("verbatim_x1_swapped", 1):
                continue  # not audited with the detectors
            n = len(items)
            original = rng.normal(size=n) + 1.5 * items["seen"].to_numpy()
            detector_items = pd.DataFrame(
                {
                    "id": items["id"].to_numpy(),
                    "benchmark": items["benchmark"].to_numpy(),
                    "gap_k": rng.normal(size=n) + items["seen"].to_numpy(),
                    "reference_log_ratio_audited_original": original,
                    "reference_log_ratio_audited_rephrased": rng.normal(size=n),
                    "reference_log_ratio_reference_original": rng.normal(size=n),
                    "reference_log_ratio_reference_rephrased": rng.normal(size=n),
                }
            )
            detector_items["reference_log_ratio"] = original - detector_items["reference_log_ratio_reference_original"]
            (folder / "audit_detectors").mkdir()
            detector_items.to_parquet(folder / "audit_detectors" / "items.parquet")
            audited[family, seed] = detector_items.assign(seen=items["seen"].to_numpy())
    report = seeds.analyse([tmp_path])
    rows = {(r["family"], r["benchmark"], r["detector"]): r for r in report["auc"]}

    def auc(values, flag):
        u = scipy_stats.mannwhitneyu(values[flag], values[~flag]).statistic
        return u / (flag.sum() * (~flag).sum())

    for benchmark in ("gsm8k", "copa", "mmlu"):
        x1 = {s: audited["verbatim_x1", s][audited["verbatim_x1", s]["benchmark"] == benchmark] for s in (0, 1)}
        gap = rows["verbatim_x1", benchmark, "gap_k"]["seeds"]
        assert [gap["0"], gap["1"]] == pytest.approx([auc(x1[s]["gap_k"], x1[s]["seen"]) for s in (0, 1)])
        control = audited["control", 0].set_index("id")["reference_log_ratio_audited_original"]
        ratio = x1[1]["reference_log_ratio_audited_original"] - x1[1]["id"].map(control)
        versus_control = rows["verbatim_x1", benchmark, "reference_log_ratio_control"]["seeds"]
        assert versus_control["1"] == pytest.approx(auc(ratio, x1[1]["seen"]))
        assert set(rows["control", benchmark, "reference_log_ratio_control"]["seeds"]) == {"1"}
        assert set(rows["verbatim_x1_swapped", benchmark, "gap_k"]["seeds"]) == {"0"}
    assert {r["seed"] for r in report["two_draws"] if r["detector"] == "gap_k"} == {0}
    assert "| verbatim_x1 | gsm8k | Gap-K% |" in seeds.markdown(report)
