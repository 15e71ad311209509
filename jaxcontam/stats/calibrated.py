# pyright: standard
"""Calibrated PaCoST: compare the original-minus-rephrased confidence gap with the same gap where contamination
is ruled out.

PaCoST's own null (the model is as confident on a rephrasing as on the original) fails on clean models: a
rephrasing differs from its original in fluency, length and typicality too, so a clean model can prefer the
original. Two designs cancel that item-level rephrasing bias (docs/methods.md, "Calibrated PaCoST"):

- `reference_test` (design a): a reference model believed clean on the benchmark answers the same items; per
  item d = gap(audited) - gap(reference), and a one-sided paired test asks whether d is above 0. The bias an
  item's rephrasing carries enters both gaps and cancels in d.
- `fresh_items_test` (design b): items the model cannot have seen (written after its cutoff, or held out)
  give the gap's null distribution in the audited model itself; a one-sided two-sample test asks whether the
  benchmark's gaps lie above the fresh items' gaps.

    result = reference_test(conf_orig, conf_reph, ref_orig, ref_reph)      # default: sign-flip permutation
    result.pvalue, result.statistic, result.confidence_interval(0.95)
    fresh_items_test(conf_orig, conf_reph, fresh_orig, fresh_reph).pvalue    # default: permutation of means
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
from scipy import stats as scipy_stats

from jaxcontam.stats.bootstrap import percentile_interval, resample_counts
from jaxcontam.stats.paired import ConfidenceInterval, PairedTestResult, paired_test
from jaxcontam.stats.signflip import DEFAULT_RESAMPLES, RELATIVE_TOLERANCE, combine_tails, tail_counts
from jaxcontam.stats.validation import (
    StatsInputError,
    check_alternative,
    check_count,
    check_probability,
    float_vector,
    same_length,
)

REFERENCE_METHODS = ("permutation", "wilcoxon", "t", "sign")  # the paired tests of `paired_test`
FRESH_METHODS = ("permutation", "mannwhitney")
EXACT_SPLITS_MAX = 50_000  # enumerate every split of the pooled gaps up to this many, else Monte Carlo


@dataclasses.dataclass(frozen=True)
class CalibratedResult:
    """A calibrated PaCoST test (scipy style).

    design: "reference" (paired, d = gap(audited) - gap(reference)) or "fresh" (two samples: the
    benchmark's gaps against the fresh items' gaps). statistic: the paired test's (see `PairedTestResult`) for
    "reference"; for "fresh", the difference of mean gaps ("permutation") or U / (n_benchmark n_fresh), the
    probability that a benchmark gap exceeds a fresh one, ties half ("mannwhitney"). mean_difference: mean of d
    (reference) or mean benchmark gap minus mean fresh gap (fresh); `confidence_interval()` is for it.
    n: items tested (reference: pairs with both gaps finite; fresh: benchmark items with a finite gap);
    n_fresh: fresh items with a finite gap (0 for "reference").
    """

    design: str
    statistic: float
    pvalue: float
    n: int
    mean_difference: float
    method: str
    alternative: str
    detail: str
    n_dropped: int
    n_fresh: int
    samples: tuple[np.ndarray, ...] = dataclasses.field(repr=False, compare=False)
    seed: int = dataclasses.field(default=0, repr=False)
    resamples: int = dataclasses.field(default=DEFAULT_RESAMPLES, repr=False)
    paired: PairedTestResult | None = dataclasses.field(default=None, repr=False, compare=False)

    def confidence_interval(self, level: float = 0.95, alternative: str | None = None) -> ConfidenceInterval:
        """Interval for `mean_difference`, one-sided like the test unless `alternative` says otherwise.

        reference: the paired test's own interval (t interval for "t", percentile bootstrap otherwise);
        fresh: percentile bootstrap resampling each group of items apart (seeded).
        """
        level = check_probability("level", level)
        alternative = check_alternative(alternative or self.alternative)
        if self.paired is not None:
            return self.paired.confidence_interval(level, alternative)
        benchmark, fresh = self.samples
        means = _bootstrap_means(benchmark, self.resamples, self.seed) - _bootstrap_means(
            fresh, self.resamples, self.seed + 1
        )
        return ConfidenceInterval(*percentile_interval(means, level, alternative))


def _bootstrap_means(values: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    return np.concatenate([counts @ values / len(values) for counts in resample_counts(len(values), resamples, seed)])


def confidence_gaps(original, rephrased, name: str) -> np.ndarray:
    """gap = original - rephrased per item (NaN where either confidence is missing)."""
    original = float_vector(f"{name}_original", original)
    rephrased = float_vector(f"{name}_rephrased", rephrased)
    same_length((f"{name}_original", f"{name}_rephrased"), (original, rephrased))
    with np.errstate(invalid="ignore"):
        return original - rephrased


def reference_test(
    original,
    rephrased,
    reference_original,
    reference_rephrased,
    method: str = "permutation",
    alternative: str = "greater",
    seed: int = 0,
    *,
    resamples: int = DEFAULT_RESAMPLES,
) -> CalibratedResult:
    """Design (a): a one-sided paired test on gap(audited) - gap(reference), one pair per item.

    All four arrays hold one confidence per item, aligned by item (the audited model's original and rephrased
    confidences, then the reference model's). Items where either gap is not finite are dropped and counted.
    method: one of REFERENCE_METHODS, as `paired_test` (default: the sign-flip permutation test of the mean,
    exact for up to 20 non-zero differences). alternative "greater": the audited model prefers the original
    more than the reference does (contamination).
    """
    if method not in REFERENCE_METHODS:
        raise StatsInputError(f"method={method!r}: expected one of {REFERENCE_METHODS}")
    audited = confidence_gaps(original, rephrased, "audited")
    reference = confidence_gaps(reference_original, reference_rephrased, "reference")
    same_length(("audited gaps", "reference gaps"), (audited, reference))
    result = paired_test(audited, reference, method, alternative, seed, resamples=resamples)
    return CalibratedResult(
        design="reference",
        statistic=result.statistic,
        pvalue=result.pvalue,
        n=result.n,
        mean_difference=result.mean_difference,
        method=method,
        alternative=result.alternative,
        detail=result.detail,
        n_dropped=result.n_dropped,
        n_fresh=0,
        samples=(result.differences,),
        seed=seed,
        resamples=resamples,
        paired=result,
    )


def _finite(values: np.ndarray) -> np.ndarray:
    return values[np.isfinite(values)]


def _split_counts(pooled: np.ndarray, n_first: int, observed: float, indices) -> tuple[int, int, int]:
    """(#splits, #with mean(first) - mean(rest) >= observed, #<= observed), `indices` the first group's rows."""
    total = pooled.sum()
    n_rest = len(pooled) - n_first
    first_sums = pooled[indices].sum(axis=1)
    diffs = first_sums / n_first - (total - first_sums) / n_rest
    tolerance = RELATIVE_TOLERANCE * max(np.abs(pooled).sum(), 1e-300)
    return (len(diffs), *tail_counts(diffs, observed, tolerance))


def mean_difference_pvalue(
    first: np.ndarray, second: np.ndarray, alternative: str, *, resamples: int, seed: int
) -> tuple[float, str]:
    """Two-sample permutation p-value for mean(first) - mean(second), and how it was computed.

    Every split of the pooled values into groups of the same sizes when there are at most EXACT_SPLITS_MAX
    (exact); otherwise `resamples` random splits with p = (1 + #as extreme) / (1 + resamples) (never 0).
    """
    pooled = np.concatenate([first, second])
    n_first = len(first)
    observed = float(first.mean() - second.mean())
    if math.comb(len(pooled), n_first) <= EXACT_SPLITS_MAX:
        indices = np.array(list(itertools.combinations(range(len(pooled)), n_first)), dtype=np.int64)
        total, above, below = _split_counts(pooled, n_first, observed, indices)
        return combine_tails(above / total, below / total, alternative), "exact"
    rng = np.random.default_rng(seed)
    above = below = 0
    chunk = max(1, 2_000_000 // len(pooled))
    for start in range(0, resamples, chunk):
        rows = min(chunk, resamples - start)
        indices = np.argsort(rng.random((rows, len(pooled))), axis=1)[:, :n_first]
        _, up, down = _split_counts(pooled, n_first, observed, indices)
        above, below = above + up, below + down
    p_greater, p_less = (1.0 + above) / (1.0 + resamples), (1.0 + below) / (1.0 + resamples)
    return combine_tails(p_greater, p_less, alternative), f"monte carlo ({resamples} splits)"


def fresh_items_test(
    original,
    rephrased,
    fresh_original,
    fresh_rephrased,
    method: str = "permutation",
    alternative: str = "greater",
    seed: int = 0,
    *,
    resamples: int = DEFAULT_RESAMPLES,
) -> CalibratedResult:
    """Design (b): are the benchmark's gaps larger than the gaps of fresh items, in the same model?

    `original`/`rephrased`: the audited model's confidences on the benchmark's items; `fresh_*`: on items it
    cannot have seen. Items with a non-finite gap are dropped and counted. method "permutation" (default):
    the difference of mean gaps against every split (or `resamples` random splits) of the pooled gaps;
    "mannwhitney": `scipy.stats.mannwhitneyu` (its default method: exact without ties for small samples,
    else the tie-corrected normal approximation with continuity correction).
    """
    if method not in FRESH_METHODS:
        raise StatsInputError(f"method={method!r}: expected one of {FRESH_METHODS}")
    alternative = check_alternative(alternative)
    resamples = check_count("resamples", resamples, 1)
    all_benchmark = confidence_gaps(original, rephrased, "benchmark")
    all_fresh = confidence_gaps(fresh_original, fresh_rephrased, "fresh")
    benchmark, fresh = _finite(all_benchmark), _finite(all_fresh)
    if len(benchmark) < 1 or len(fresh) < 1:
        raise StatsInputError(
            f"fresh-items test needs at least one finite gap on each side, got {len(benchmark)} benchmark and "
            f"{len(fresh)} fresh items; supply confidences for both the original and the rephrased questions"
        )
    mean_difference = float(benchmark.mean() - fresh.mean())
    if method == "permutation":
        statistic = mean_difference
        pvalue, detail = mean_difference_pvalue(benchmark, fresh, alternative, resamples=resamples, seed=seed)
    else:
        test = scipy_stats.mannwhitneyu(benchmark, fresh, alternative=alternative)
        statistic, pvalue = float(test.statistic) / (len(benchmark) * len(fresh)), float(test.pvalue)
        detail = "scipy mannwhitneyu (auto)"
    return CalibratedResult(
        design="fresh",
        statistic=statistic,
        pvalue=float(pvalue),
        n=len(benchmark),
        n_fresh=len(fresh),
        mean_difference=mean_difference,
        method=method,
        alternative=alternative,
        detail=detail,
        n_dropped=(len(all_benchmark) - len(benchmark)) + (len(all_fresh) - len(fresh)),
        samples=(benchmark, fresh),
        seed=seed,
        resamples=resamples,
    )


def uncalibrated_test(
    original, rephrased, method: str = "permutation", alternative: str = "greater", seed: int = 0, **kwargs
) -> PairedTestResult:
    """PaCoST's own test, for comparison: original vs rephrased in the audited model alone (biased null)."""
    return paired_test(original, rephrased, method, alternative, seed, **kwargs)
