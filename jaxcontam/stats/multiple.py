"""Multiple-testing corrections across a sweep (many models x benchmarks).

Holm (1979) controls the family-wise error rate under any dependence;
Benjamini-Hochberg (1995) controls the false discovery rate for independent or
positively dependent tests. Adjusted p-values are the smallest alpha at which
each hypothesis would be rejected, so `reject = adjusted <= alpha`.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxcontam.stats.validation import StatsInputError, check_probability, float_vector

ADJUST_METHODS = ("holm", "bh")


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


def adjust(pvalues, method: str = "holm", alpha: float = 0.05) -> AdjustedPValues:
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
