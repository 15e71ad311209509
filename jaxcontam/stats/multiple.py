# pyright: standard
"""Multiple-testing corrections across a sweep (many models x benchmarks).

Holm (1979) controls the family-wise error rate under any dependence;
Benjamini-Hochberg (1995) controls the false discovery rate for independent or
positively dependent tests. Adjusted p-values are the smallest alpha at which
each hypothesis would be rejected, so `reject = adjusted <= alpha`.

A Monte Carlo permutation p-value is never below 1 / (1 + resamples), while Holm's
first step needs p <= alpha / m: with a fixed resample count, a sweep of more than
alpha * resamples runs could never flag anything. `sweep_resamples` sizes the count
from the number of tests so that the floor sits well below every correction threshold.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxcontam.stats.validation import StatsInputError, check_probability, float_vector

ADJUST_METHODS = ("holm", "bh")
DEFAULT_ALPHA = 0.05  # the significance level every test and correction defaults to
FLOOR_HEADROOM = 10  # the Monte Carlo floor sits this many times below the smallest correction threshold


def sweep_resamples(num_tests: int, alpha: float, minimum: int) -> int:
    """Monte Carlo resamples per test so that 1 / (1 + resamples) <= alpha / (FLOOR_HEADROOM * num_tests).

    Holm's and BH's smallest threshold is alpha / num_tests; at least `minimum` resamples.
    """
    if num_tests < 1:
        raise StatsInputError(f"num_tests must be >= 1, got {num_tests}")
    alpha = check_probability("alpha", alpha)
    needed = int(np.ceil(FLOOR_HEADROOM * num_tests / alpha)) - 1
    return max(int(minimum), needed)


@dataclasses.dataclass(frozen=True)
class AdjustedPValues:
    pvalues: np.ndarray  # adjusted, in the input order
    reject: np.ndarray  # adjusted <= alpha
    method: str
    alpha: float


def holm(pvalues: np.ndarray) -> np.ndarray:
    """Holm step-down: sorted p_(i) * (m - i + 1), made non-decreasing, capped at 1."""
    m = len(pvalues)
    order = np.argsort(pvalues, kind="stable")
    scaled = np.minimum(1.0, pvalues[order] * (m - np.arange(m)))
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted


def benjamini_hochberg(pvalues: np.ndarray) -> np.ndarray:
    """BH step-up: sorted p_(i) * m / i, made non-decreasing from the top, capped at 1."""
    m = len(pvalues)
    order = np.argsort(pvalues, kind="stable")
    scaled = pvalues[order] * m / np.arange(1, m + 1)
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    return adjusted


def adjust(pvalues, method: str = "holm", alpha: float = DEFAULT_ALPHA) -> AdjustedPValues:
    """Adjusted p-values and rejections at `alpha` for method "holm" or "bh"."""
    values = float_vector("pvalues", pvalues)
    if method not in ADJUST_METHODS:
        raise StatsInputError(f"method={method!r}: expected one of {ADJUST_METHODS}")
    alpha = check_probability("alpha", alpha)
    invalid = np.flatnonzero(~((values >= 0) & (values <= 1)))
    if invalid.size:
        raise StatsInputError(
            f"pvalues[{invalid[0]}] = {values[invalid[0]]}: every p-value must be in [0, 1] "
            f"({invalid.size} are not); drop the failed tests before adjusting"
        )
    adjusted = holm(values) if method == "holm" else benjamini_hochberg(values)
    return AdjustedPValues(adjusted, adjusted <= alpha, method, alpha)
