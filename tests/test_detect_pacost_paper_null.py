"""The `paper` preset's verdict (uncorrected one-sided paired t-test on the published judge's P(yes), pairs with
both confidences > 0) keeps its false-positive rate near alpha under the null, on data shaped like that judge's
output: bounded in [0, 1], piled up near 0 and 1, with exact zeros (replies without yes/no) dropped.

Under the null, an item's original and rephrased confidences are exchangeable: both sides are drawn from the same
item-level distribution."""

import numpy as np
import pytest
import scipy.stats

from jaxcontam.detect.pacost.settings import PacostSettings
from jaxcontam.detect.pacost.significance import paired_verdict
from jaxcontam.detect.verdict import flagged as flagged_at

SIMULATIONS = 1000
ALPHA = 0.05  # the audit's default level


def _side(rng, item_logit, silent):
    """P(yes) of one side: a logistic draw around the item's level, 0 when the judge never said yes/no."""
    p = 1 / (1 + np.exp(-(item_logit + rng.normal(0, 1.5, item_logit.shape))))
    return np.where(rng.random(item_logit.shape) < silent, 0.0, p)


def _records(rng, n, spread, silent):
    level = rng.normal(1.0, spread, n)  # judges lean to "yes"; spread 4 piles P(yes) up at both ends
    original, rephrased = _side(rng, level, silent), _side(rng, level, silent)
    return [
        {
            "p_yes_original": float(o),
            "p_yes_rephrased": float(r),
            "rephrase": "rephrased",
            "answer_original": "a",
            "answer_rephrased": "a",
        }
        for o, r in zip(original, rephrased, strict=True)
    ]


@pytest.mark.parametrize("n, spread, silent", [(30, 1.0, 0.0), (100, 4.0, 0.1), (300, 4.0, 0.3)])
def test_the_paper_verdict_flags_about_alpha_of_null_benchmarks(n, spread, silent):
    settings = PacostSettings(preset="paper")
    assert (settings.test, settings.confidence, settings.correction) == ("t", "p_yes", "none")
    rng = np.random.default_rng(n)
    verdicts = [paired_verdict(_records(rng, n, spread, silent), "p_yes", settings) for _ in range(SIMULATIONS)]
    assert all(v.status.ran for v in verdicts)
    flagged = sum(flagged_at(v.status, v.pvalue, ALPHA) for v in verdicts)  # the headline's p < alpha
    # two-sided 99.9% binomial interval around alpha: a real miscalibration (e.g. 0.08) falls outside it
    low, high = scipy.stats.binom.ppf([0.0005, 0.9995], SIMULATIONS, ALPHA)
    assert low <= flagged <= high, f"{flagged}/{SIMULATIONS} null benchmarks flagged at alpha {ALPHA}"
    dropped = np.mean([v.n_dropped for v in verdicts])
    assert (dropped > 0) == (silent > 0)  # zeros are dropped as the authors' code drops them
