# pyright: standard
"""Power of the paired tests: sample size for an effect, and the minimum detectable effect for n pairs.

Effects are standardised, d_z = mean difference / sd of the differences
(Cohen's d_z); pass `mean_difference` and `sd` instead where that is what you know.
- "t": exact, from the noncentral t (df = n - 1, noncentrality d_z * sqrt(n)).
- "sign": exact binomial power when the differences are normal, so that each
  is positive with probability Phi(d_z). The power of a discrete test is not
  monotone in n (a saw-tooth); `sample_size` returns the smallest n that reaches it.
- "wilcoxon": the t power at n * 3/pi pairs, 3/pi being the asymptotic relative
  efficiency of the signed-rank test to the t-test for normal differences.
- "permutation": the t power (the sign-flip test of the mean has relative efficiency 1).
These are statements about normal-shaped differences; for P(True)-shaped data
see the simulated curves in experiments/stats/power_curves.py.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import optimize
from scipy import stats as scipy_stats

from jaxcontam.stats.batched import METHODS
from jaxcontam.stats.multiple import DEFAULT_ALPHA
from jaxcontam.stats.validation import (
    StatsInputError,
    check_alternative,
    check_count,
    check_finite_number,
    check_probability,
)

WILCOXON_ARE = 3.0 / math.pi
MAX_N = 10_000_000


def _t_power(effect_size, n, alpha: float, alternative: str):
    df = np.asarray(n, dtype=np.float64) - 1.0
    noncentrality = effect_size * np.sqrt(np.asarray(n, dtype=np.float64))
    if alternative == "two-sided":
        critical = scipy_stats.t.ppf(1 - alpha / 2, df)
        return scipy_stats.nct.sf(critical, df, noncentrality) + scipy_stats.nct.cdf(-critical, df, noncentrality)
    sign = 1.0 if alternative == "greater" else -1.0
    return scipy_stats.nct.sf(scipy_stats.t.ppf(1 - alpha, df), df, sign * noncentrality)


def _sign_power(effect_size, n, alpha: float, alternative: str):
    n = np.asarray(n)
    q = scipy_stats.norm.cdf(effect_size)  # P(difference > 0)
    tail_alpha = alpha / 2 if alternative == "two-sided" else alpha
    first_rejected = scipy_stats.binom.isf(tail_alpha, n, 0.5) + 1  # smallest k with P(K >= k) <= tail_alpha
    upper = scipy_stats.binom.sf(first_rejected - 1, n, q)
    lower = scipy_stats.binom.cdf(n - first_rejected, n, q)
    if alternative == "greater":
        return upper
    if alternative == "less":
        return lower
    return upper + lower


def power(effect_size: float, n, alpha: float = DEFAULT_ALPHA, method: str = "t", alternative: str = "greater"):
    """Probability that `method` rejects at `alpha` with `n` pairs when the true effect is `effect_size` (d_z)."""
    alpha = check_probability("alpha", alpha)
    alternative = check_alternative(alternative)
    if method not in METHODS:
        raise StatsInputError(f"method={method!r}: expected one of {METHODS}")
    check_finite_number("effect_size", effect_size)
    if np.any(np.asarray(n) < 2):
        raise StatsInputError(f"n={n}: power needs at least 2 pairs")
    if method == "sign":
        return _sign_power(effect_size, n, alpha, alternative)
    efficiency = WILCOXON_ARE if method == "wilcoxon" else 1.0
    return _t_power(effect_size, np.asarray(n) * efficiency, alpha, alternative)


def _standardised(effect_size, mean_difference, sd) -> float:
    if effect_size is None:
        if mean_difference is None or sd is None or not sd > 0:
            raise StatsInputError("give effect_size (d_z), or mean_difference together with a positive sd")
        return float(check_finite_number("mean_difference", mean_difference)) / float(check_finite_number("sd", sd))
    if mean_difference is not None or sd is not None:
        raise StatsInputError("give either effect_size or mean_difference with sd, not both")
    return float(check_finite_number("effect_size", effect_size))


def sample_size(
    effect_size: float | None = None,
    *,
    mean_difference: float | None = None,
    sd: float | None = None,
    alpha: float = DEFAULT_ALPHA,
    power_target: float = 0.8,
    method: str = "t",
    alternative: str = "greater",
) -> int:
    """Smallest number of pairs for which `method` reaches `power_target` at `alpha`."""
    effect = _standardised(effect_size, mean_difference, sd)
    power_target = check_probability("power_target", power_target)
    if (alternative == "greater" and effect <= 0) or (alternative == "less" and effect >= 0) or effect == 0:
        raise StatsInputError(
            f"effect d_z={effect} lies in the null of alternative={alternative!r}: no number of pairs can detect it"
        )
    high = 2
    while power(effect, high, alpha, method, alternative) < power_target:
        high *= 2
        if high > MAX_N:
            raise StatsInputError(f"effect d_z={effect} needs more than {MAX_N} pairs at power {power_target}")
    if method == "sign":  # saw-tooth power: scan every n up to the first power of two that reaches it
        candidates = np.arange(2, high + 1)
        reached = power(effect, candidates, alpha, method, alternative) >= power_target
        return int(candidates[np.argmax(reached)])
    low = max(2, high // 2)  # power(low) < target unless low == 2
    if power(effect, low, alpha, method, alternative) >= power_target:
        return low
    while high - low > 1:
        middle = (low + high) // 2
        if power(effect, middle, alpha, method, alternative) >= power_target:
            high = middle
        else:
            low = middle
    return high


def minimum_detectable_effect(
    n: int,
    *,
    alpha: float = DEFAULT_ALPHA,
    power_target: float = 0.8,
    method: str = "t",
    alternative: str = "greater",
    sd: float | None = None,
) -> float:
    """Smallest effect (d_z, or a mean difference when `sd` is given) detected with `power_target` from n pairs.

    For "two-sided" the positive effect is returned (the negative one is its mirror).
    """
    n = check_count("n", n, 2)
    power_target = check_probability("power_target", power_target)
    effect = _standard_effect(n, alpha, power_target, method, alternative)
    return effect * sd if sd is not None else effect


@functools.lru_cache(maxsize=4096)
def _standard_effect(n: int, alpha: float, power_target: float, method: str, alternative: str) -> float:
    """The d_z `minimum_detectable_effect` solves for; cached, since every verdict's power note asks for it."""
    direction = -1.0 if alternative == "less" else 1.0
    largest = 40.0

    def shortfall(d):
        return power(direction * d, n, alpha, method, alternative) - power_target

    if shortfall(largest) < 0:
        raise StatsInputError(
            f"{n} pairs cannot reach power {power_target} with the {method!r} test at alpha={alpha} for any effect; "
            "use more pairs or another test"
        )
    root = optimize.brentq(shortfall, 0.0, largest, xtol=1e-10)  # a float (scipy's stubs: or with its RootResults)
    effect = direction * root  # pyright: ignore[reportOperatorIssue]
    return effect
