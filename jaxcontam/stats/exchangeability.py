# pyright: standard
"""The exchangeability statistic of Oren et al. (2023), "Proving test set contamination in black box language
models" (their "sharded likelihood comparison"; chunks here, since "sharded" in jaxcontam means device sharding).

Per chunk k of contiguous items: s_k = log p(canonical order) - mean over permutations of log p(permuted order).
Under exchangeability (no contamination) E[s_k] = 0; the statistic is mean(s) / (sd(s) / sqrt(r)) over r
chunks, referred to a Student t with r - 1 degrees of freedom, one-sided (canonical order preferred).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxcontam.stats.batched import t_pvalues
from jaxcontam.stats.validation import StatsInputError, check_alternative


@dataclasses.dataclass(frozen=True)
class ExchangeabilityStatistic:
    statistic: float
    pvalue: float
    df: int
    mean_difference: float
    standard_error: float
    chunk_differences: np.ndarray = dataclasses.field(repr=False, compare=False)


def exchangeability_statistic(
    canonical_logliks, permuted_logliks, alternative: str = "greater"
) -> ExchangeabilityStatistic:
    """t over chunks from `canonical_logliks` [r] and `permuted_logliks` [r, permutations]."""
    canonical = np.asarray(canonical_logliks, dtype=np.float64)
    permuted = np.asarray(permuted_logliks, dtype=np.float64)
    alternative = check_alternative(alternative)
    if canonical.ndim != 1 or permuted.ndim != 2 or permuted.shape[0] != canonical.shape[0]:
        raise StatsInputError(
            f"expected canonical_logliks [chunks] and permuted_logliks [chunks, permutations], got shapes "
            f"{canonical.shape} and {permuted.shape}"
        )
    r = len(canonical)
    if r < 2 or permuted.shape[1] < 1:
        raise StatsInputError(f"need >= 2 chunks and >= 1 permutation per chunk, got shape {permuted.shape}")
    if not (np.isfinite(canonical).all() and np.isfinite(permuted).all()):
        raise StatsInputError("log-likelihoods must be finite; rescore the chunks that produced NaN or inf")
    differences = canonical - permuted.mean(axis=1)
    statistic, pvalue = t_pvalues(differences, alternative)  # identical likelihoods: t = 0, p = 1
    mean = float(differences.mean())
    se = float(differences.std(ddof=1) / np.sqrt(r))
    df = r - 1
    return ExchangeabilityStatistic(float(statistic[0]), float(pvalue[0]), df, mean, se, differences)
