"""jaxcontam.stats.intervals' Wilson interval and binomial band: equal to scipy's, and to references written from their
definitions here (the Wilson score interval solved as the quadratic it is; the band as the binomial quantiles of the
exact pmf summed in fractions)."""

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from jaxcontam.stats.intervals import binomial_band, wilson
from jaxcontam.stats.validation import StatsInputError


def _wilson_by_definition(k: int, n: int, level: float) -> tuple[float, float]:
    """The p with |k/n - p| = z sqrt(p(1-p)/n): the roots of (1 + z^2/n) p^2 - (2k/n + z^2/n) p + (k/n)^2 = 0."""
    z = scipy_stats.norm.ppf((1 + level) / 2)
    share = k / n
    a, b, c = 1 + z * z / n, -(2 * share + z * z / n), share * share
    root = math.sqrt(b * b - 4 * a * c)
    return (-b - root) / (2 * a), (-b + root) / (2 * a)


@given(st.integers(1, 400).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))), st.sampled_from([0.9, 0.95]))
def test_wilson_is_scipys_and_the_score_interval(counts, level):
    k, n = counts
    ours = wilson(k, n, level)
    theirs = scipy_stats.binomtest(k, n).proportion_ci(level, method="wilson")
    assert (ours.low, ours.high) == (theirs.low, theirs.high)  # the same formula, the same operations: bit for bit
    low, high = _wilson_by_definition(k, n, level)
    assert ours.low == pytest.approx(0.0 if k == 0 else low, abs=1e-12)
    assert ours.high == pytest.approx(1.0 if k == n else high, abs=1e-12)


def _quantile_by_definition(q: Fraction, n: int, p: Fraction) -> int:
    """The smallest count c with P(X <= c) >= q for X ~ Binomial(n, p), the pmf summed exactly."""
    total = Fraction(0)
    for c in range(n + 1):
        total += math.comb(n, c) * p**c * (1 - p) ** (n - c)
        if total >= q:
            return c
    return n


@pytest.mark.parametrize("n", [1, 6, 20, 103, 104, 250, 1000])
def test_binomial_band_is_the_binomial_quantiles(n):
    low, high = binomial_band(n, 0.05, 0.99)
    assert (low, high) == tuple(int(x) for x in scipy_stats.binom.interval(0.99, n, 0.05))
    alpha = Fraction(1, 20)
    assert low == _quantile_by_definition(Fraction(5, 1000), n, alpha)
    assert high == _quantile_by_definition(Fraction(995, 1000), n, alpha)


def test_binomial_band_edges_and_refusals():
    assert binomial_band(6, 0.05) == (0, 2)
    assert binomial_band(103, 0.05)[0] == 0 and binomial_band(104, 0.05)[0] == 1  # 0.95**n < 0.005 from n = 104
    with pytest.raises(StatsInputError, match="n=2.5"):
        binomial_band(2.5, 0.05)  # type: ignore[arg-type]
    with pytest.raises(StatsInputError, match="p=1.5"):
        binomial_band(10, 1.5)
    with pytest.raises(StatsInputError, match="0 <= k <= n"):
        wilson(3, 2)
