# pyright: standard
"""Sign-flip (paired permutation) p-values for the sum of paired differences.

Under the null that the two members of each pair are exchangeable, every
difference is equally likely to have either sign, so the observed sum is
compared with the sums over sign flips: all 2^m flips of the m non-zero
differences when m is small (exact; zeros never change a sum), otherwise
`resamples` random flips with p = (1 + #as extreme) / (1 + resamples), which is
never 0 and keeps the test valid (Phipson & Smyth 2010).
"""

from __future__ import annotations

import numpy as np

from jaxcontam.stats.validation import finite_differences

EXACT_MAX = 20  # enumerate all 2^m flips up to this many non-zero differences
DEFAULT_RESAMPLES = 9999  # Monte Carlo resamples of a permutation test that cannot enumerate (p >= 1e-4)
ENUMERATION_CHUNK = 1 << 16
RELATIVE_TOLERANCE = 1e-10  # sums closer than this (relative to sum |d|) count as ties


def tail_counts(null_sums: np.ndarray, observed: float, tolerance: float) -> tuple[int, int]:
    """How many null sums are >= and <= the observed sum (ties within tolerance count on both sides)."""
    return (
        int(np.count_nonzero(null_sums >= observed - tolerance)),
        int(np.count_nonzero(null_sums <= observed + tolerance)),
    )


def combine_tails(greater: float, less: float, alternative: str) -> float:
    """The p-value of `alternative` from the two one-sided tail probabilities (two-sided: twice the smaller)."""
    if alternative == "greater":
        return greater
    if alternative == "less":
        return less
    return min(1.0, 2.0 * min(greater, less))


def exact_pvalue(differences: np.ndarray, alternative: str) -> float:
    """Exact p-value over all 2^m sign flips of the non-zero differences."""
    values = differences[differences != 0]
    m = len(values)
    observed = values.sum()
    tolerance = RELATIVE_TOLERANCE * np.abs(values).sum()
    powers = np.arange(m)
    greater = less = 0
    for start in range(0, 1 << m, ENUMERATION_CHUNK):
        patterns = np.arange(start, min(start + ENUMERATION_CHUNK, 1 << m))
        flipped = ((patterns[:, None] >> powers) & 1).astype(np.float64)
        above, below = tail_counts(observed - 2.0 * (flipped @ values), observed, tolerance)
        greater, less = greater + above, less + below
    total = float(1 << m)
    return combine_tails(greater / total, less / total, alternative)


def monte_carlo_pvalues(differences: np.ndarray, alternative: str, resamples: int, rng: np.random.Generator):
    """Monte Carlo p-values for each row of `differences` [rows, n] with `resamples` random flips per row."""
    rows, n = differences.shape
    observed = differences.sum(axis=1)
    tolerance = RELATIVE_TOLERANCE * np.abs(differences).sum(axis=1)
    greater = np.zeros(rows)
    less = np.zeros(rows)
    chunk = max(1, 4_000_000 // max(n, 1))
    for row in range(rows):
        for start in range(0, resamples, chunk):
            flipped = (rng.random((min(chunk, resamples - start), n)) < 0.5).astype(np.float64)
            sums = observed[row] - 2.0 * (flipped @ differences[row])
            above, below = tail_counts(sums, observed[row], tolerance[row])
            greater[row] += above
            less[row] += below
    p_greater = (1.0 + greater) / (1.0 + resamples)
    p_less = (1.0 + less) / (1.0 + resamples)
    return np.array([combine_tails(upper, lower, alternative) for upper, lower in zip(p_greater, p_less)])


def sign_flip_pvalues(
    differences: np.ndarray, alternative: str, *, resamples: int, seed: int, exact_max: int = EXACT_MAX
) -> tuple[np.ndarray, np.ndarray]:
    """p-values for each row of `differences` [rows, n] and whether each was exact."""
    differences = finite_differences(differences)
    nonzero = np.count_nonzero(differences, axis=1)
    exact = nonzero <= exact_max
    pvalues = np.empty(len(differences))
    for row in np.flatnonzero(exact):
        pvalues[row] = exact_pvalue(differences[row], alternative)
    if (~exact).any():
        rng = np.random.default_rng(seed)
        pvalues[~exact] = monte_carlo_pvalues(differences[~exact], alternative, resamples, rng)
    return pvalues, exact
