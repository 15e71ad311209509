"""From item rows to verdicts: AUC, the PaCoST pair bookkeeping, ConTAM headline and sweep corrections."""

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxcontam.audit.sweep import audit_verdicts, sweep_decisions
from jaxcontam.detect.audit_core import BenchmarkAudit
from jaxcontam.detect.contam import ContamSettings, contam_result
from jaxcontam.detect.pacost.results import PacostResult
from jaxcontam.detect.pacost.settings import PacostSettings
from jaxcontam.detect.pacost.significance import paired_verdict
from jaxcontam.detect.verdict import Verdict
from jaxcontam.detect.verdict import flagged as flagged_at
from jaxcontam.stats import separation, sweep_resamples


def swept(label: str, pvalue: float, contaminated: bool | None, correction: str = "sweep") -> tuple[str, Verdict]:
    """A run's headline PaCoST verdict as the sweep takes it (not tested where `contaminated` is None)."""
    reason = None if contaminated is not None else "too few pairs"
    return label, Verdict("pacost", "PaCoST[p_true]", contaminated, pvalue, None, correction, True, reason)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.booleans()), min_size=2, max_size=40))
def test_auc_is_the_share_of_contaminated_clean_pairs_ordered_right(pairs):
    scores = np.array([float(s) for s, _ in pairs])
    labels = np.array([label for _, label in pairs])
    positives, negatives = scores[labels], scores[~labels]
    if len(positives) == 0 or len(negatives) == 0:
        assert math.isnan(separation(scores, labels)["auc"])
        return
    brute = np.mean([(p > n) + 0.5 * (p == n) for p in positives for n in negatives])
    assert math.isclose(separation(scores, labels)["auc"], brute, rel_tol=1e-12)


def record(original, rephrased, rephrase="a rephrasing", answer="42"):
    return {
        "p_true_original": original,
        "p_true_rephrased": rephrased,
        "rephrase": rephrase,
        "answer_original": answer,
        "answer_rephrased": answer,
    }


def test_pairs_without_rephrasing_or_answer_are_dropped_and_counted():
    records = [record(0.9, 0.5)] * 6 + [
        record(0.8, 0.1, rephrase=None),
        record(0.7, 0.2, answer=""),
        record(float("nan"), 0.3),
    ]
    summary = paired_verdict(records, "p_true", PacostSettings(test="t")).to_dict()
    assert summary["n_pairs"] == 6 and summary["n_dropped"] == 3
    assert summary["dropped_reasons"] == {
        "no accepted rephrasing": 1,
        "no answer to the original": 1,
        "original confidence missing": 1,
    }


def test_contam_headline_is_the_chosen_metrics_selection():
    rng = np.random.default_rng(0)
    scores = rng.uniform(size=400)
    correct = (rng.uniform(size=400) < np.where(scores >= 0.7, 0.8, 0.3)).astype(float)
    rows = [
        {m: s for m in ("token_match", "ngram_match", "token_extend", "longest_match")} | {"correct": c}
        for s, c in zip(scores, correct)
    ]
    summary = contam_result(rows, ContamSettings(metric="ngram_match")).to_dict()
    chosen = summary["metrics"]["ngram_match"]
    assert summary["metric"] == "ngram_match" and summary["epg"] == chosen["epg"] > 0
    assert abs(summary["threshold"] - 0.7) < 0.1 and summary["z"] > 1.645


def test_sweep_adjusts_pvalues_and_sets_the_verdict():
    pvalues = [0.01, 0.04, 0.03, float("nan")]
    tests = [swept(f"m{i} | b:test", p, bool(p < 0.05) if p == p else None) for i, p in enumerate(pvalues)]
    sweep, decisions = sweep_decisions(tests, alpha=0.05, correction="holm")
    # Holm by hand: sorted 0.01*3, 0.03*2, 0.04*1 -> running max 0.03, 0.06, 0.06
    np.testing.assert_allclose(sweep.holm.adjusted, [0.03, 0.06, 0.06], rtol=1e-12)
    # BH by hand: sorted 0.01*3/1, 0.03*3/2, 0.04*3/3 -> running min from the top 0.03, 0.04, 0.04
    np.testing.assert_allclose(sweep.bh.adjusted, [0.03, 0.04, 0.04], rtol=1e-12)
    assert [d.contaminated for d in decisions[:3]] == [True, False, False]
    assert [d.correction for d in decisions[:4]] == ["holm", "holm", "holm", "none"]
    assert math.isnan(decisions[3].pvalue_adjusted) and decisions[3].contaminated is None
    assert sweep.to_dict()["labels"] == ["m0 | b:test", "m1 | b:test", "m2 | b:test"]
    assert sweep.untested == {"m3 | b:test": "too few pairs"}  # left out of the family, and said so


def paper_and_default_tests():
    """Two runs per preset, at p = 0.03 and 0.04, with their raw p < alpha verdicts."""
    return [
        swept(f"{preset} | b:{p}", p, p < 0.05, PacostSettings(preset=preset).correction or "")
        for preset in ("paper", "jaxcontam")
        for p in (0.03, 0.04)
    ]


def test_the_paper_preset_keeps_its_uncorrected_verdict_in_a_sweep():
    """Paper-preset runs at p = 0.03 and 0.04 are both flagged (raw p < 0.05) with Holm's p beside them; the same
    p-values under the jaxcontam preset take Holm's verdict; with correction "none" every verdict is the raw one."""
    _, decisions = sweep_decisions(paper_and_default_tests(), alpha=0.05, correction="holm")
    # Holm by hand over 0.03, 0.04, 0.03, 0.04: sorted 0.03*4, 0.03*3, 0.04*2, 0.04*1 -> running max 0.12 for all
    np.testing.assert_allclose([d.pvalue_adjusted for d in decisions], [0.12] * 4, rtol=1e-12)
    assert [d.contaminated for d in decisions] == [True, True, False, False]
    assert [d.correction for d in decisions] == ["none", "none", "holm", "holm"]
    _, decisions = sweep_decisions(paper_and_default_tests(), alpha=0.05, correction="none")
    assert [d.pvalue_adjusted for d in decisions] == [0.03, 0.04, 0.03, 0.04]
    assert [d.contaminated for d in decisions] == [True] * 4
    assert [d.correction for d in decisions] == ["none"] * 4


def test_the_sweep_decides_verdicts_at_the_audits_level_and_leaves_the_results_as_they_were():
    """The level meets the results in `audit_verdicts` alone: the headline at alpha, Holm across the runs; the
    results and their summary.json entries hold evidence (no alpha, no verdict) whatever the level."""
    settings_ = PacostSettings(test="t")
    clear = paired_verdict([record(0.9 + 0.01 * i, 0.5) for i in range(6)], "p_true", settings_)
    weak = paired_verdict([record(0.5 + 0.2 * (i % 2), 0.6) for i in range(6)], "p_true", settings_)  # mean d 0
    results = [
        PacostResult("jaxcontam", "kadavath", "auto", False, verdict, {}, settings_) for verdict in (clear, weak)
    ]
    entries = [result.to_dict() for result in results]
    assert not {"alpha", "contaminated", "pvalue_adjusted"} & set(entries[0])
    runs = [(f"m{i} | b", {"pacost": result}) for i, result in enumerate(results)]
    for alpha in (0.05, 0.5):
        sweep, verdicts = audit_verdicts(runs, alpha, "holm")
        holm = sweep.holm.adjusted
        assert [v.pvalue_adjusted for (v,) in verdicts] == list(holm)
        assert [v.contaminated for (v,) in verdicts] == [p <= alpha for p in holm]  # Holm's rejection at alpha
        assert [v.correction for (v,) in verdicts] == ["holm", "holm"]
    assert [result.to_dict() for result in results] == entries  # deciding changed no result
    assert clear.pvalue < 0.05 < weak.pvalue and clear.statistic == clear.result.statistic
    assert clear.confidence_interval(0.8) == clear.result.confidence_interval(0.8)
    # the Python API (AuditCallback's results): the same result, a verdict at each level asked for, uncorrected
    audit = BenchmarkAudit("b", None, [], None, {"pacost": results[1]}, None, {})
    assert [audit.verdicts(alpha)[0].contaminated for alpha in (0.05, 0.6)] == [False, True]
    assert audit.verdicts(0.6)[0].pvalue_adjusted is None and audit.results["pacost"].to_dict() == entries[1]


def test_a_large_sweep_can_flag_every_clearly_contaminated_run():
    """60 runs at alpha 0.005: Holm's first step needs p <= 8.3e-5, below the floor of 9,999 Monte Carlo flips."""
    num_runs, alpha = 60, 0.005
    rng = np.random.default_rng(1)
    records = [record(o, r) for o, r in zip(rng.uniform(0.6, 1.0, 25), rng.uniform(0.0, 0.4, 25))]
    settings_ = PacostSettings(test="permutation")

    def flagged(resamples):
        verdicts = [paired_verdict(records, "p_true", settings_, seed=i, resamples=resamples) for i in range(num_runs)]
        tests = [swept(f"m{i}", v.pvalue, flagged_at(v.status, v.pvalue, alpha)) for i, v in enumerate(verdicts)]
        _, decisions = sweep_decisions(tests, alpha=alpha, correction="holm")
        return sum(d.contaminated for d in decisions)

    assert flagged(9_999) == 0
    assert flagged(sweep_resamples(num_runs, alpha, 9_999)) == num_runs
