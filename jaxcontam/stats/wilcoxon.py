# pyright: standard
"""Wilcoxon signed-rank test, reproducing `scipy.stats.wilcoxon` defaults row by row.

scipy's defaults (zero_method="wilcox", correction=False, method="auto"):
zero differences are dropped, the others ranked by |d| with average ranks for
ties, statistic R+ = sum of the ranks of positive differences. The p-value is
- exact (null distribution of R+ over 2^m sign patterns) when n <= 50 and
  there are neither zeros nor ties,
- an exact sign-flip permutation of the ranks when n <= 13 with zeros or ties,
- otherwise the normal approximation with the tie-corrected variance.
Here n counts all pairs, zeros included, exactly as scipy decides.
Beware: with many zero differences a large n can leave few non-zero ones, and
the normal approximation is then anti-conservative (see experiments/stats).
"""

from __future__ import annotations

import functools

import numpy as np
from scipy import stats as scipy_stats

from jaxcontam.stats.signflip import exact_pvalue
from jaxcontam.stats.validation import finite_differences

EXACT_MAX_N = 50
PERMUTATION_MAX_N = 13


@functools.lru_cache(maxsize=64)
def signed_rank_counts(m: int) -> np.ndarray:
    """counts[k] = number of subsets of {1..m} whose sum is k (the null distribution of R+ times 2^m)."""
    counts = np.zeros(m * (m + 1) // 2 + 1, dtype=np.int64)
    counts[0] = 1
    for rank in range(1, m + 1):
        counts[rank:] = counts[rank:] + counts[:-rank].copy()
    return counts


def _exact_pvalue(r_plus: float, m: int, alternative: str) -> float:
    counts = signed_rank_counts(m)
    total = float(counts.sum())
    sf = counts[int(np.floor(r_plus)) :].sum() / total  # P(R+ >= r)
    cdf = counts[: int(np.ceil(r_plus)) + 1].sum() / total  # P(R+ <= r)
    if alternative == "greater":
        return float(sf)
    if alternative == "less":
        return float(cdf)
    return float(min(1.0, 2.0 * min(sf, cdf)))


def signed_ranks(differences: np.ndarray) -> np.ndarray:
    """Rank of |d| among the non-zero differences (average ranks for ties) times sign(d); 0 for zeros."""
    ranks = scipy_stats.rankdata(np.abs(differences), axis=-1)
    zeros = np.count_nonzero(differences == 0, axis=-1, keepdims=True)
    return np.sign(differences) * (ranks - zeros)  # zeros tie at the lowest ranks, so shift the others down


def _normal_pvalue(z: np.ndarray, alternative: str) -> np.ndarray:
    if alternative == "greater":
        return scipy_stats.norm.sf(z)
    if alternative == "less":
        return scipy_stats.norm.cdf(z)
    return 2.0 * scipy_stats.norm.sf(np.abs(z))


def _tie_term(abs_nonzero_row: np.ndarray) -> float:
    _, tie_sizes = np.unique(abs_nonzero_row, return_counts=True)
    return float((tie_sizes.astype(np.float64) ** 3 - tie_sizes).sum())


def wilcoxon_pvalues(differences: np.ndarray, alternative: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """R+, p-value and the branch used ("exact", "permutation", "normal") for each row of `differences`."""
    differences = finite_differences(differences)
    n = differences.shape[1]
    ranks = signed_ranks(differences)
    r_plus = np.where(ranks > 0, ranks, 0.0).sum(axis=1)
    m = np.count_nonzero(differences, axis=1).astype(np.float64)
    pvalues = np.empty(len(differences))
    branches = np.empty(len(differences), dtype=object)
    for row in range(len(differences)):
        nonzero = np.abs(differences[row][differences[row] != 0])
        has_ties_or_zeros = len(nonzero) < n or len(np.unique(nonzero)) < len(nonzero)
        if m[row] == 0:
            pvalues[row], branches[row] = 1.0, "no non-zero differences"
        elif n <= EXACT_MAX_N and not has_ties_or_zeros:
            pvalues[row], branches[row] = _exact_pvalue(r_plus[row], int(m[row]), alternative), "exact"
        elif n <= PERMUTATION_MAX_N:
            pvalues[row], branches[row] = exact_pvalue(ranks[row], alternative), "permutation"
        else:
            mean = m[row] * (m[row] + 1) / 4.0
            variance = (m[row] * (m[row] + 1) * (2 * m[row] + 1) - _tie_term(nonzero) / 2.0) / 24.0
            pvalues[row] = _normal_pvalue((r_plus[row] - mean) / np.sqrt(variance), alternative)
            branches[row] = "normal"
    return r_plus, pvalues, branches
