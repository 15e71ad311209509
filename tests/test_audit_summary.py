"""From item rows to verdicts: AUC, the PaCoST pair bookkeeping, ConTAM headline and sweep corrections."""

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxcontam.audit.summary import _auc, contam_summary, sweep_corrections
from jaxcontam.detect.pacost import PacostSettings, paired_summary
from jaxcontam.stats import adjust


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.booleans()), min_size=2, max_size=40))
def test_auc_is_the_share_of_contaminated_clean_pairs_ordered_right(pairs):
    scores = np.array([float(s) for s, _ in pairs])
    labels = np.array([label for _, label in pairs])
    positives, negatives = scores[labels], scores[~labels]
    if len(positives) == 0 or len(negatives) == 0:
        assert math.isnan(_auc(scores, labels))
        return
    brute = np.mean([(p > n) + 0.5 * (p == n) for p in positives for n in negatives])
    assert math.isclose(_auc(scores, labels), brute, rel_tol=1e-12)


def record(original, rephrased, rephrase="a rephrasing", answer="42"):
    return {"p_true_original": original, "p_true_rephrased": rephrased, "rephrase": rephrase,
            "answer_original": answer, "answer_rephrased": answer}


def test_pairs_without_rephrasing_or_answer_are_dropped_and_counted():
    records = [record(0.9, 0.5)] * 6 + [record(0.8, 0.1, rephrase=None), record(0.7, 0.2, answer=""),
                                        record(float("nan"), 0.3)]
    summary = paired_summary(records, "p_true", PacostSettings(test="t"))
    assert summary["n_pairs"] == 6 and summary["n_dropped"] == 3
    assert summary["dropped_reasons"] == {"no accepted rephrasing": 1, "no answer to the original": 1,
                                          "original confidence missing": 1}


def test_contam_headline_is_the_chosen_metrics_selection():
    rng = np.random.default_rng(0)
    scores = rng.uniform(size=400)
    correct = (rng.uniform(size=400) < np.where(scores >= 0.7, 0.8, 0.3)).astype(float)
    rows = [{m: s for m in ("token_match", "ngram_match", "token_extend", "longest_match")} | {"correct": c}
            for s, c in zip(scores, correct)]
    summary = contam_summary(rows, {"metric": "ngram_match"})
    chosen = summary["metrics"]["ngram_match"]
    assert summary["metric"] == "ngram_match" and summary["epg"] == chosen["epg"] > 0
    assert abs(summary["threshold"] - 0.7) < 0.1 and summary["z"] > 1.645


def test_sweep_adjusts_pvalues_and_sets_the_verdict():
    pvalues = [0.01, 0.04, 0.03, float("nan")]
    runs = [{"model": f"m{i}", "benchmark": "b", "split": "test", "pacost": {"pvalue": p}}
            for i, p in enumerate(pvalues)]
    sweep = sweep_corrections(runs, alpha=0.05, correction="holm")
    expected = adjust(pvalues[:3], method="holm")
    assert sweep["holm"]["adjusted"] == expected.pvalues.tolist()
    assert [r["pacost"]["contaminated"] for r in runs[:3]] == expected.reject.tolist()
    assert math.isnan(runs[3]["pacost"]["pvalue_adjusted"])
