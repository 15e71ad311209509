"""Separation of contaminated from clean items by a per-item score: AUC and the Mann-Whitney p-value."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxcontam.stats import separation


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(-5, 5), st.booleans()), min_size=2, max_size=40))
def test_auc_is_the_share_of_contaminated_clean_pairs_ranked_right(pairs):
    scores = [float(s) for s, _ in pairs]
    labels = [seen for _, seen in pairs]
    result = separation(scores, labels)
    seen = [s for s, label in pairs if label]
    clean = [s for s, label in pairs if not label]
    if not seen or not clean:
        assert np.isnan(result["auc"])
        return
    wins = sum((a > b) + 0.5 * (a == b) for a in seen for b in clean)
    assert abs(result["auc"] - wins / (len(seen) * len(clean))) < 1e-12
    assert 0.0 <= result["pvalue"] <= 1.0
    flipped = separation(scores, labels, higher_means_seen=False)
    assert abs(flipped["auc"] - (1.0 - result["auc"])) < 1e-12


def test_separation_ignores_missing_scores():
    result = separation([1.0, float("nan"), 0.0, 2.0], [True, True, False, False])
    assert result["n_contaminated"] == 1 and result["n_clean"] == 2 and result["auc"] == 0.5
