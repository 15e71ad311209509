# pyright: standard
"""`paired_test`: is the model more confident on the original question than on its rephrasing?

One call filters the pairs (reasons recorded), runs one of four tests on the
differences d = original - rephrased and returns a scipy-style result with the
effect size and a confidence interval for the mean difference.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np
from scipy import stats as scipy_stats

from jaxcontam.stats.batched import METHODS, paired_pvalues
from jaxcontam.stats.bootstrap import bootstrap_mean_interval
from jaxcontam.stats.pairs import filter_pairs
from jaxcontam.stats.signflip import DEFAULT_RESAMPLES, EXACT_MAX
from jaxcontam.stats.validation import StatsInputError, check_alternative, check_count, check_probability
from jaxcontam.stats.wilcoxon import wilcoxon_pvalues


def default_paired_method() -> str:
    """The test the pipelines use unless told otherwise: the sign-flip permutation test of the mean.

    Its error rate holds for any n and any shape of confidences, conditionally
    on the observed |differences| (exact enumeration for few non-zero
    differences, Monte Carlo with p never 0 otherwise). On simulated null
    P(True) pairs (experiments/stats/README.md) all four tests hold their level
    on average, but the t-test and scipy's Wilcoxon normal approximation reject
    far too often when only a handful of differences are non-zero (three equal
    non-zero differences among 20 pairs: 1 in 8 null data sets at alpha 0.05);
    the sign test holds but is conservative and often weaker. The Wilcoxon
    test was the most powerful on several P(True) shapes; choose it explicitly
    when many differences are non-zero.
    """
    return "permutation"


def cohens_dz(differences: np.ndarray) -> float:
    """mean(d) / sd(d) (ddof=1); with zero (or undefined) spread: 0 if the mean is 0, else +-inf."""
    mean = float(differences.mean())
    sd = float(differences.std(ddof=1)) if len(differences) > 1 else 0.0
    if sd > 0:
        return mean / sd
    return 0.0 if mean == 0 else float(np.copysign(np.inf, mean))


@dataclasses.dataclass(frozen=True)
class ConfidenceInterval:
    low: float
    high: float


@dataclasses.dataclass(frozen=True)
class PairedTestResult:
    """Outcome of a paired test of d = original - rephrased (scipy style).

    statistic: t for "t"; R+ (sum of ranks of positive d) for "wilcoxon";
    the number of positive d for "sign"; the mean difference for "permutation".
    detail: how the p-value was computed (e.g. "exact", "normal", "monte carlo").
    """

    statistic: float
    pvalue: float
    n: int
    mean_difference: float
    effect_size: float
    method: str
    alternative: str
    detail: str
    n_dropped: int
    drop_reasons: Mapping[str, int]
    differences: np.ndarray = dataclasses.field(repr=False, compare=False)
    seed: int = dataclasses.field(default=0, repr=False)
    resamples: int = dataclasses.field(default=DEFAULT_RESAMPLES, repr=False)

    def confidence_interval(self, level: float = 0.95, alternative: str | None = None) -> ConfidenceInterval:
        """Interval for the mean difference: t interval for the t-test, percentile bootstrap (seeded) otherwise.

        One-sided like the test (e.g. [low, inf) for "greater") unless another
        `alternative` is given, as scipy's `ttest_rel(...).confidence_interval`.
        """
        level = check_probability("level", level)
        alternative = check_alternative(alternative or self.alternative)
        d = self.differences
        if self.method == "t":
            return ConfidenceInterval(*_t_interval(d, level, alternative))
        return ConfidenceInterval(*bootstrap_mean_interval(d, level, alternative, self.resamples, self.seed))


def _t_interval(d: np.ndarray, level: float, alternative: str) -> tuple[float, float]:
    n = len(d)
    mean, se = float(d.mean()), float(d.std(ddof=1) / np.sqrt(n))
    if alternative == "two-sided":
        half = float(scipy_stats.t.ppf((1 + level) / 2, n - 1)) * se
        return (mean - half, mean + half)
    margin = float(scipy_stats.t.ppf(level, n - 1)) * se
    return (mean - margin, float("inf")) if alternative == "greater" else (float("-inf"), mean + margin)


def _run(d: np.ndarray, method: str, alternative: str, resamples: int, seed: int, exact_max: int):
    """(statistic, p-value, detail) of one test on the differences `d`."""
    if method == "wilcoxon":
        statistic, pvalue, branch = wilcoxon_pvalues(d[None], alternative)
        return float(statistic[0]), float(pvalue[0]), str(branch[0])
    statistic, pvalue = paired_pvalues(
        d[None], method, alternative, resamples=resamples, seed=seed, exact_max=exact_max
    )
    if method == "permutation":
        detail = "exact" if np.count_nonzero(d) <= exact_max else f"monte carlo ({resamples} flips)"
    else:
        detail = {"t": "student t", "sign": "exact binomial"}[method]
    return float(statistic[0]), float(pvalue[0]), detail


def minimum_pairs(method: str) -> int:
    """The fewest usable pairs `method` tests: 2 for the t-test (a variance), 1 for the others."""
    return 2 if method == "t" else 1


def paired_test(
    original,
    rephrased,
    method: str | None = None,
    alternative: str = "greater",
    seed: int = 0,
    *,
    answered_original=None,
    answered_rephrased=None,
    resamples: int = DEFAULT_RESAMPLES,
    exact_max: int = EXACT_MAX,
) -> PairedTestResult:
    """Test original vs rephrased confidences, one pair per item.

    method: "t" (= scipy ttest_rel), "wilcoxon" (= scipy wilcoxon defaults),
    "sign" (= scipy binomtest on the non-zero differences) or "permutation"
    (sign flips: exact up to `exact_max` non-zero differences, else
    `resamples` Monte Carlo flips seeded by `seed`); None = `default_paired_method()`.
    alternative: "greater" (original more confident: contamination), "less", "two-sided".
    Pairs with a missing confidence or no answer are dropped and counted.
    """
    method = default_paired_method() if method is None else method
    if method not in METHODS:
        raise StatsInputError(f"method={method!r}: expected one of {METHODS}")
    alternative = check_alternative(alternative)
    resamples = check_count("resamples", resamples, 1)
    pairs = filter_pairs(
        original, rephrased, answered_original=answered_original, answered_rephrased=answered_rephrased
    )
    minimum = minimum_pairs(method)
    if pairs.n_kept < minimum:
        raise StatsInputError(
            f"paired {method!r} test needs at least {minimum} usable pairs, got {pairs.n_kept} of {len(pairs.kept)} "
            f"(dropped: {dict(pairs.counts) or 'none'}); score more items or fix the missing confidences"
        )
    d = pairs.original - pairs.rephrased
    statistic, pvalue, detail = _run(d, method, alternative, resamples, seed, exact_max)
    return PairedTestResult(
        statistic=statistic,
        pvalue=pvalue,
        n=len(d),
        mean_difference=float(d.mean()),
        effect_size=cohens_dz(d),
        method=method,
        alternative=alternative,
        detail=detail,
        n_dropped=pairs.n_dropped,
        drop_reasons=dict(pairs.counts),
        differences=d,
        seed=seed,
        resamples=resamples,
    )
