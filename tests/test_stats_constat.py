"""jaxcontam.stats.constat: the smoothing spline is scipy's make_smoothing_spline; one bootstrap replicate agrees
with a reference written from the paper's definition on scipy's splines; the p-value rule is the authors'; under
the null (every model follows one accuracy relation) the test holds its level in simulation, and it finds a
planted inflation."""

import numpy as np
import pytest
from scipy import optimize
from scipy.interpolate import make_smoothing_spline

from jaxcontam.stats.constat import basic_bootstrap_pvalue, constat_test, replicate_delta, smoothing_spline
from jaxcontam.stats.simulation import constat_family as _family  # also experiments/stats/levels.py's
from jaxcontam.stats.validation import StatsInputError


@pytest.mark.parametrize("n", [5, 8, 13])
def test_smoothing_spline_is_scipys(n):
    rng = np.random.default_rng(n)
    x = np.sort(rng.random(n))
    y = x**1.4 + rng.normal(0, 0.05, n)
    w = rng.uniform(0.5, 1.5, n)
    grid = np.linspace(x[0], x[-1], 31)
    ours, _ = smoothing_spline(x, y, w)
    np.testing.assert_allclose(ours(grid), make_smoothing_spline(x, y, w)(grid), atol=1e-7)  # GCV's smoothing
    fixed, lam = smoothing_spline(x, y, w, lam=0.02)
    assert lam == 0.02
    np.testing.assert_allclose(fixed(grid), make_smoothing_spline(x, y, w, lam=0.02)(grid), atol=1e-10)
    with pytest.raises(StatsInputError, match="strictly increasing"):
        smoothing_spline(x[::-1], y)


def _reference_gcv(x, y, w):
    """GCV's smoothing from scipy's fits alone: the hat matrix column by column (the spline is linear in y)."""
    n = len(x)

    def gcv(lam):
        hat = np.column_stack([make_smoothing_spline(x, e, w, lam=lam)(x) for e in np.eye(n)])
        return np.sum((y - hat @ y) ** 2) / n / (1 - np.trace(hat) / n) ** 2

    return optimize.minimize_scalar(gcv, bounds=(0, n), method="bounded").x


def _reference_replicate(original, reference, refs_original, refs_reference, guess):
    """ConStat's replicate from the paper and detection.py, on scipy's splines: sorted reference-model accuracies
    with the random guesser, repeated x dropped, a GCV spline, refit with the same smoothing and anchored at (0, 0)
    and (1, 1) with weight 1e-8, evaluated at the model's reference accuracy."""
    y = np.sort([guess[0], *refs_original.mean(axis=1)])
    x = np.sort([guess[1], *refs_reference.mean(axis=1)])
    keep = np.r_[np.diff(x) != 0, True]
    x, y = x[keep], y[keep]
    lam = _reference_gcv(x, y, np.ones(len(x)))
    w = np.ones(len(x))
    if x[0] != 0:
        x, y, w = np.r_[0, x], np.r_[0, y], np.r_[1e-8, w]
    if x[-1] != 1:
        x, y, w = np.r_[x, 1], np.r_[y, 1], np.r_[w, 1e-8]
    predicted = float(np.clip(make_smoothing_spline(x, y, w, lam=lam)(reference.mean()), 0, 1))
    return original.mean() - predicted, predicted


def test_a_replicate_agrees_with_the_reference_from_the_definition():
    rng = np.random.default_rng(3)
    original, reference = _family(rng, 6, 60)
    for _ in range(3):
        d1, d2 = rng.integers(0, 60, 60), rng.integers(0, 60, 60)
        guess = (0.25 + rng.normal(0, 0.05), 0.25 + rng.normal(0, 0.05))
        args = (original[0, d1], reference[0, d2], original[1:, d1], reference[1:, d2], guess)
        ours = replicate_delta(*args)
        assert ours is not None
        np.testing.assert_allclose(ours, _reference_replicate(*args), atol=1e-6)
    too_alike = np.ones((5, 10))
    assert replicate_delta(np.ones(10), np.ones(10), too_alike, too_alike, None) is None


def test_the_pvalue_is_the_authors_rule():
    rng = np.random.default_rng(4)
    for shift in (-0.1, 0.0, 0.05, 0.3):
        ps = rng.normal(shift, 0.1, 200)
        levels = [float(2 * ps.mean() - np.quantile(ps, 1 - p / len(ps)) >= 0) for p in range(len(ps))]
        expected = 1.0 if sum(levels) == 0 else float(np.argmax(levels) / len(ps))
        assert basic_bootstrap_pvalue(ps, 0.0) == expected


def test_level_under_the_null_and_power_on_a_planted_inflation():
    rng = np.random.default_rng(5)
    null = [constat_test(*_split(_family(rng, 6, 80)), resamples=100, seed=s).pvalue for s in range(40)]
    assert np.mean(np.array(null) <= 0.05) <= 0.125  # nominal 0.05: 40 data sets, the 99% band reaches 0.125
    planted = [constat_test(*_split(_family(rng, 6, 150, 0.4)), resamples=100, seed=s) for s in range(10)]
    assert np.mean([r.pvalue <= 0.05 for r in planted]) >= 0.8  # an expected gain of 0.26 on 150 items
    assert np.mean([r.statistic for r in planted]) == pytest.approx(0.26, abs=0.06)
    result = planted[0]
    interval = result.confidence_interval(0.9)
    assert interval.low < result.statistic < interval.high
    assert result.confidence_interval(0.95, "greater").low > 0
    assert result.n == result.n_reference == 150 and result.n_models == 6


def _split(family):
    original, reference = family
    return original[0], reference[0], original[1:], reference[1:]


def test_bad_input():
    rng = np.random.default_rng(6)
    original, reference = _family(rng, 4, 20)
    with pytest.raises(StatsInputError, match=">= 5 reference models"):
        constat_test(original[0], reference[0], original[1:], reference[1:])
    original, reference = _family(rng, 5, 20)
    with pytest.raises(StatsInputError, match="same 20 items"):
        constat_test(original[0], reference[0], original[1:, :10], reference[1:])
    with pytest.raises(StatsInputError, match="too alike"):
        constat_test(original[0], reference[0], np.ones((5, 20)), np.ones((5, 20)), add_chance_model=False)
