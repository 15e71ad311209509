# pyright: standard
"""Binomial evidence from counts of flagged units, exact and cluster-aware.

- `binomial_tail(k, n, p)`: P(X >= k) for X ~ Binomial(n, p), the exact one-sided p-value of "rate <= p"
  (scipy's `binomtest(k, n, p, alternative="greater")` for integer counts);
- `clopper_pearson(k, n, level, alternative)`: the exact (Clopper-Pearson) interval of a proportion (scipy's
  `binomtest(k, n).proportion_ci(level, "exact")` for integer counts and two sides);
- `cluster_design_effect(flagged, tested)`: how much clustering inflates the variance of a share of flagged units
  (per cluster counts), for Korn & Graubard's effective sample size n* = n / deff;
- `wilson(k, n, level)`: the Wilson score interval of a proportion (scipy's `binomtest(k, n).proportion_ci(level,
  "wilson")`), for rates of many units where the exact interval is needlessly wide;
- `binomial_band(n, p, level)`: the counts a test at level p flags among n null units with probability `level`
  (scipy's `binom.interval(level, n, p)`), the band a calibrated test's false-positive count falls in.

Both binomial functions take real-valued counts, through the regularized incomplete beta function that equals the
binomial tail at integers (P(X >= k) = I_p(k, n - k + 1)). That is how a clustered count enters them: k* = k / deff
flagged of n* = n / deff effective units (Korn & Graubard 1998, "Confidence intervals for proportions with small
expected number of positive counts estimated from survey data", Survey Methodology 24: the Clopper-Pearson interval
at the effective sample size; Rao & Scott 1992 for tests).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import special
from scipy import stats as scipy_stats

from jaxcontam.stats.paired import ConfidenceInterval
from jaxcontam.stats.validation import StatsInputError, check_alternative, check_count, check_probability


def _counts(k: float, n: float) -> tuple[float, float]:
    k, n = float(k), float(n)
    if not (math.isfinite(k) and math.isfinite(n)) or n <= 0 or not 0 <= k <= n:
        raise StatsInputError(f"counts k={k}, n={n}: expected 0 <= k <= n and n > 0 (flagged of tested units)")
    return k, n


def binomial_tail(k: float, n: float, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), continued to real k and n by the incomplete beta function."""
    k, n = _counts(k, n)
    p = check_probability("p", p)
    if k == 0:
        return 1.0
    return float(special.betainc(k, n - k + 1.0, p))


def clopper_pearson(k: float, n: float, level: float = 0.95, alternative: str = "two-sided") -> ConfidenceInterval:
    """Clopper-Pearson interval of the proportion k / n; one-sided "greater" gives [low, 1], "less" [0, high]."""
    k, n = _counts(k, n)
    level = check_probability("level", level)
    alternative = check_alternative(alternative)
    tail = (1.0 - level) / 2.0 if alternative == "two-sided" else 1.0 - level
    low = 0.0 if k == 0 else float(scipy_stats.beta.ppf(tail, k, n - k + 1.0))
    high = 1.0 if k == n else float(scipy_stats.beta.ppf(1.0 - tail, k + 1.0, n - k))
    if alternative == "greater":
        return ConfidenceInterval(low, 1.0)
    if alternative == "less":
        return ConfidenceInterval(0.0, high)
    return ConfidenceInterval(low, high)


def cluster_design_effect(flagged: Sequence[int], tested: Sequence[int]) -> float:
    """Design effect of the share sum(flagged) / sum(tested) over clusters, at least 1.

    The share's cluster (linearisation) variance, C / (C - 1) * sum_c (k_c - p m_c)^2 / n^2, over its binomial
    variance p (1 - p) / n. 1 when every cluster holds one unit (no clustering declared), when the share is 0 or 1
    (no variance to compare), and never below 1: declaring clusters can only widen an interval or weaken a test.
    One cluster holding several units gives deff = n (a single unit of evidence).
    """
    k = np.asarray(flagged, dtype=np.float64)
    m = np.asarray(tested, dtype=np.float64)
    if k.shape != m.shape or k.ndim != 1 or np.any(m < 1) or np.any(k < 0) or np.any(k > m):
        raise StatsInputError(
            f"per-cluster counts flagged={list(k)}, tested={list(m)}: expected one (flagged <= tested, tested >= 1) "
            "pair per cluster"
        )
    n, clusters = float(m.sum()), len(m)
    share = float(k.sum()) / n if n else 0.0
    if clusters == 0 or np.all(m == 1) or share in (0.0, 1.0):
        return 1.0
    if clusters == 1:
        return n
    variance = clusters / (clusters - 1) * float(np.sum((k - share * m) ** 2)) / n**2
    return max(1.0, variance / (share * (1.0 - share) / n))


def wilson(k: float, n: float, level: float = 0.95) -> ConfidenceInterval:
    """Wilson score interval (two-sided, no continuity correction) of the proportion k / n; [0, ...] at k = 0 and
    [..., 1] at k = n, as scipy gives them (Newcombe 1998, method 3)."""
    k, n = _counts(k, n)
    level = check_probability("level", level)
    z = float(special.ndtri(0.5 + 0.5 * level))
    share = k / n
    denominator = 2 * (n + z**2)
    center = (2 * n * share + z**2) / denominator
    delta = z / denominator * math.sqrt(4 * n * share * (1 - share) + z**2)
    return ConfidenceInterval(0.0 if k == 0 else center - delta, 1.0 if k == n else center + delta)


def binomial_band(n: int, p: float, level: float = 0.99) -> tuple[int, int]:
    """(low, high): the (1 - level) / 2 and (1 + level) / 2 quantiles of Binomial(n, p); a test at level p flags
    between low and high of n independent null units (inclusive) with probability at least `level`."""
    n = check_count("n", n, 0)
    p = check_probability("p", p)
    level = check_probability("level", level)
    low, high = scipy_stats.binom.ppf([(1 - level) / 2, (1 + level) / 2], n, p)
    return int(low), int(high)
