# pyright: standard
"""The four paired tests as p-values over the last axis of a [datasets, n] array of differences.

Vectorised so that calibration and power studies can run thousands of data
sets at once; `paired_test` wraps them for one data set with a full result.
Conventions shared by all four: differences are original - rephrased, and a
data set whose differences are all zero has p = 1 (no evidence either way).
"""

from __future__ import annotations

import typing
from typing import Literal

import numpy as np
from scipy import stats as scipy_stats

from jaxcontam.stats.signflip import DEFAULT_RESAMPLES, EXACT_MAX, sign_flip_pvalues
from jaxcontam.stats.validation import finite_differences
from jaxcontam.stats.wilcoxon import wilcoxon_pvalues

PairedMethod = Literal["t", "wilcoxon", "sign", "permutation"]
METHODS: tuple[PairedMethod, ...] = typing.get_args(PairedMethod)


def t_pvalues(differences: np.ndarray, alternative: str) -> tuple[np.ndarray, np.ndarray]:
    """Paired t statistic and p-value per row, as `scipy.stats.ttest_rel`.

    With zero spread the statistic is +-inf when the mean is non-zero (p = 0 or
    1, as scipy) and 0 with p = 1 when every difference is zero (scipy: NaN).
    """
    differences = finite_differences(differences)
    n = differences.shape[1]
    mean = differences.mean(axis=1)
    sd = differences.std(axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        statistic = np.where(sd > 0, mean / (sd / np.sqrt(n)), np.sign(mean) * np.inf)
    statistic = np.where((sd == 0) & (mean == 0), 0.0, statistic)
    df = n - 1
    if alternative == "greater":
        pvalue = scipy_stats.t.sf(statistic, df)
    elif alternative == "less":
        pvalue = scipy_stats.t.cdf(statistic, df)
    else:
        pvalue = 2.0 * scipy_stats.t.sf(np.abs(statistic), df)
    return statistic, np.where((sd == 0) & (mean == 0), 1.0, np.minimum(pvalue, 1.0))


def sign_pvalues(differences: np.ndarray, alternative: str) -> tuple[np.ndarray, np.ndarray]:
    """Number of positive differences and the exact binomial p-value over the non-zero ones.

    Equal to `scipy.stats.binomtest(k, m, 0.5)`: for p = 0.5 the two-sided
    p-value is twice the smaller tail, capped at 1.
    """
    differences = finite_differences(differences)
    positive = np.count_nonzero(differences > 0, axis=1)
    nonzero = np.count_nonzero(differences, axis=1)
    upper = scipy_stats.binom.sf(positive - 1, nonzero, 0.5)  # P(K >= k)
    lower = scipy_stats.binom.cdf(positive, nonzero, 0.5)  # P(K <= k)
    if alternative == "greater":
        pvalue = upper
    elif alternative == "less":
        pvalue = lower
    else:
        pvalue = np.minimum(1.0, 2.0 * np.minimum(upper, lower))
    return positive.astype(np.float64), np.where(nonzero == 0, 1.0, pvalue)


def permutation_pvalues(
    differences: np.ndarray,
    alternative: str,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    exact_max: int = EXACT_MAX,
) -> tuple[np.ndarray, np.ndarray]:
    """Mean difference and the sign-flip permutation p-value per row (exact for few non-zero differences)."""
    differences = np.atleast_2d(differences)
    pvalues, _ = sign_flip_pvalues(differences, alternative, resamples=resamples, seed=seed, exact_max=exact_max)
    return differences.mean(axis=1), pvalues


def paired_pvalues(
    differences: np.ndarray,
    method: str,
    alternative: str,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    exact_max: int = EXACT_MAX,
) -> tuple[np.ndarray, np.ndarray]:
    """(statistic, p-value) per row for `method` in METHODS."""
    if method == "t":
        return t_pvalues(differences, alternative)
    if method == "sign":
        return sign_pvalues(differences, alternative)
    if method == "wilcoxon":
        statistic, pvalue, _ = wilcoxon_pvalues(differences, alternative)
        return statistic, pvalue
    return permutation_pvalues(differences, alternative, resamples=resamples, seed=seed, exact_max=exact_max)
