# pyright: standard
"""ConTAM's Estimated Performance Gain (Singh et al. 2024, arXiv 2411.03923), threshold selection, and a
calibrated test of "some threshold shows a gain".

For a contamination score per item and a performance score per item (0/1
correctness or continuous), an item is *contaminated at threshold tau* when
its score >= tau, clean otherwise. For each tau:
  EPG = Perf(full benchmark) - Perf(clean items),
  stderr = sigma / sqrt(N_clean), sigma = std (ddof=0) of the per-item
  performance scores on the full benchmark, z = EPG / stderr   (the paper's z),
with a percentile bootstrap interval of EPG (items resampled, tau fixed) and
the accuracy difference Perf(contaminated) - Perf(clean).

The paper's stderr treats Perf(clean) as a mean of N_clean independent draws
and Perf(full) as a constant. Both are means over the same N items, and
EPG = (N_cont / N) * (Perf(contaminated) - Perf(clean)). If the clean set were
a random N_clean of the N items (no contamination effect), the exact
(finite-population, without replacement) standard error is
  stderr_finite_population = sigma * sqrt(N_cont / (N_clean * (N - 1))),
smaller than the paper's by the factor sqrt(N_cont / (N - 1)). The curve keeps
the paper's `z` (it drives `select_threshold`, as in the paper) and adds
`z_finite_population` = EPG / stderr_finite_population, which equals
sqrt(N - 1) times the Pearson correlation of the contaminated indicator with
performance and is standard normal for large N under that null.

Neither z is a test once the threshold is chosen by the largest z:
`select_threshold` compares the best of up to 200 thresholds with 1.645. On
simulated benchmarks where performance is independent of the score, that rule
finds a threshold on 12-29% of them when no item scores 0 (25% with continuous
scores at 500 items) and on none when 90% of the items score 0 (where the
paper's z is far below the finite-population one); experiments/stats/README.md
has the table.
`max_z_test` compares the largest z with its permutation distribution
(performance shuffled over items, the whole threshold search redone each
time), which holds its level whichever z is maximised.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from jaxcontam.stats.bootstrap import CHUNK_ELEMENTS, percentile_interval, resample_counts
from jaxcontam.stats.signflip import DEFAULT_RESAMPLES
from jaxcontam.stats.validation import StatsInputError, check_count, check_probability, float_vector, same_length

MAX_THRESHOLDS = 200
Z_STATISTICS = ("z", "z_finite_population")


@dataclasses.dataclass(frozen=True)
class EPGRow:
    threshold: float
    frac_contaminated: float
    n_contaminated: int
    n_clean: int
    perf_full: float
    perf_clean: float  # NaN when no item is clean
    perf_contaminated: float  # NaN when no item is contaminated
    accuracy_difference: float  # perf_contaminated - perf_clean
    epg: float
    stderr: float  # the paper's: sigma / sqrt(n_clean)
    z: float  # epg / stderr; 0 when stderr is 0 (all items perform the same: EPG is 0)
    stderr_finite_population: float  # sigma * sqrt(n_contaminated / (n_clean * (n_items - 1)))
    z_finite_population: float  # epg / stderr_finite_population; 0 when that is 0 (EPG is 0)
    epg_ci_low: float  # percentile bootstrap with the threshold held fixed: when the threshold was chosen
    epg_ci_high: float  # by the largest z, the interval is conditional on that choice


@dataclasses.dataclass(frozen=True)
class EPGCurve:
    """EPG at every threshold, plus the benchmark-level quantities they share."""

    rows: tuple[EPGRow, ...]
    n_items: int
    perf_full: float
    sigma: float
    level: float

    def __iter__(self):
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> EPGRow:
        return self.rows[index]


def default_thresholds(scores: np.ndarray, max_thresholds: int = MAX_THRESHOLDS) -> np.ndarray:
    """The thresholds that leave some item clean: every distinct finite score above the lowest one, or, when
    there are more than `max_thresholds`, that many evenly spaced quantiles of the items scoring above the lowest.

    For ConTAM's metrics (in [0, 1], most items exactly 0) these are the non-zero scores, and the smallest of them
    leaves exactly the zero-score items clean. A threshold at the lowest score leaves no item clean (EPG is
    undefined there), and quantiles over all items would spend the grid on the zeros: 90% of them at 0 when 90%
    of the items score 0.
    """
    finite = scores[np.isfinite(scores)]
    above = finite[finite > finite.min()] if finite.size else finite
    distinct = np.unique(above)
    if len(distinct) <= max_thresholds:
        return distinct
    return np.unique(np.quantile(above, np.linspace(0.0, 1.0, max_thresholds), method="inverted_cdf"))


def _items(caller: str, scores, correct) -> tuple[np.ndarray, np.ndarray]:
    """`scores` and `correct` as equal-length finite float vectors with at least one item."""
    scores = float_vector("scores", scores)
    correct = float_vector("correct", correct)
    same_length(("scores", "correct"), (scores, correct))
    for name, values in (("scores", scores), ("correct", correct)):
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            raise StatsInputError(
                f"{name}[{bad[0]}] is {values[bad[0]]}: every item needs a finite {name} value "
                f"({bad.size} do not); drop or rescore those items"
            )
    if len(scores) == 0:
        raise StatsInputError(f"{caller} needs at least one item, got none")
    return scores, correct


def _grid(scores: np.ndarray, thresholds, max_thresholds: int) -> np.ndarray:
    """The sorted thresholds to evaluate: `default_thresholds(scores)` when `thresholds` is None."""
    if thresholds is None:
        return default_thresholds(scores, max_thresholds)
    grid = np.sort(float_vector("thresholds", thresholds))
    if not np.isfinite(grid).all():
        raise StatsInputError(f"thresholds must be finite numbers, got {thresholds!r}")
    return grid


def _clean_means(order_scores: np.ndarray, cumulative: np.ndarray, weights: np.ndarray, thresholds: np.ndarray):
    """Weighted mean performance of items with score < tau, from prefix sums over items sorted by score."""
    cut = np.searchsorted(order_scores, thresholds, side="left")  # items [0, cut) are clean
    with np.errstate(invalid="ignore", divide="ignore"):
        return cumulative[..., cut] / weights[..., cut]


def epg_curve(
    scores,
    correct,
    thresholds=None,
    *,
    level: float = 0.95,
    resamples: int = 1000,
    seed: int = 0,
    max_thresholds: int = MAX_THRESHOLDS,
) -> EPGCurve:
    """EPG rows for contamination `scores` and performance `correct` (one each per item).

    thresholds: None = `default_thresholds(scores)`. The bootstrap draws
    `resamples` item resamples from `seed`; resamples without a clean item at a
    threshold are left out of that threshold's interval. The interval holds the
    threshold fixed: at a threshold picked by the largest z it is conditional on
    that pick (`max_z_test` accounts for the search).
    """
    scores, correct = _items("epg_curve", scores, correct)
    n = len(scores)
    level = check_probability("level", level)
    resamples = check_count("resamples", resamples, 1)
    grid = _grid(scores, thresholds, max_thresholds)

    order = np.argsort(scores, kind="stable")
    sorted_scores, sorted_correct = scores[order], correct[order]
    zero = np.zeros(1)
    cumulative = np.concatenate([zero, np.cumsum(sorted_correct)])
    counts = np.arange(n + 1, dtype=np.float64)
    perf_full = float(correct.mean())
    sigma = float(correct.std())
    n_clean = np.searchsorted(sorted_scores, grid, side="left")
    perf_clean = _clean_means(sorted_scores, cumulative, counts, grid)
    with np.errstate(invalid="ignore", divide="ignore"):
        perf_contaminated = (cumulative[-1] - cumulative[n_clean]) / (n - n_clean)
        stderr = sigma / np.sqrt(n_clean)
        stderr_fp = sigma * np.sqrt((n - n_clean) / (n_clean * max(n - 1, 1)))
        epg = perf_full - perf_clean
        z = np.where(stderr > 0, epg / stderr, np.where(n_clean > 0, 0.0, np.nan))
        z_fp = np.where(stderr_fp > 0, epg / stderr_fp, np.where(n_clean > 0, 0.0, np.nan))

    boot = []
    for draw in resample_counts(n, resamples, seed):
        weights = draw[:, order].astype(np.float64)
        weighted_cumulative = np.concatenate([np.zeros((len(draw), 1)), np.cumsum(weights * sorted_correct, 1)], 1)
        weight_cumulative = np.concatenate([np.zeros((len(draw), 1)), np.cumsum(weights, 1)], 1)
        full = weighted_cumulative[:, -1:] / n
        boot.append(full - _clean_means(sorted_scores, weighted_cumulative, weight_cumulative, grid))
    boot = np.concatenate(boot)

    rows = []
    for j, tau in enumerate(grid):
        low, high = percentile_interval(boot[:, j], level)
        rows.append(
            EPGRow(
                threshold=float(tau),
                frac_contaminated=float((n - n_clean[j]) / n),
                n_contaminated=int(n - n_clean[j]),
                n_clean=int(n_clean[j]),
                perf_full=perf_full,
                perf_clean=float(perf_clean[j]),
                perf_contaminated=float(perf_contaminated[j]),
                accuracy_difference=float(perf_contaminated[j] - perf_clean[j]),
                epg=float(epg[j]),
                stderr=float(stderr[j]),
                z=float(z[j]),
                stderr_finite_population=float(stderr_fp[j]),
                z_finite_population=float(z_fp[j]),
                epg_ci_low=low,
                epg_ci_high=high,
            )
        )
    return EPGCurve(tuple(rows), n, perf_full, sigma, level)


@dataclasses.dataclass(frozen=True)
class ThresholdSelection:
    """The chosen row (None when no threshold qualifies) and why."""

    row: EPGRow | None
    reason: str
    n_qualifying: int


def select_threshold(
    curve: EPGCurve, z_crit: float = 1.645, min_clean: int = 10, min_contaminated: int = 10
) -> ThresholdSelection:
    """The row with the largest z among rows with z > z_crit, n_clean >= min_clean, n_contaminated >= min_contaminated.

    z_crit = 1.645 is the one-sided 5% normal critical value of one pre-chosen
    threshold; the best of many is not a 5% test (`max_z_test` is). Ties in z
    go to the higher threshold (fewer items called contaminated).
    """
    rows = list(curve)
    sized = [r for r in rows if r.n_clean >= min_clean and r.n_contaminated >= min_contaminated]
    qualifying = [r for r in sized if np.isfinite(r.z) and r.z > z_crit]
    if not qualifying:
        if not rows:
            reason = "the curve has no thresholds"
        elif not sized:
            reason = (
                f"no threshold leaves >= {min_clean} clean and >= {min_contaminated} contaminated items "
                f"(benchmark has {curve.n_items} items)"
            )
        else:
            best = max((r.z for r in sized if np.isfinite(r.z)), default=float("nan"))
            reason = f"no threshold has z > {z_crit} (largest z among {len(sized)} sized thresholds: {best:.3g})"
        return ThresholdSelection(None, reason, 0)
    best = max(qualifying, key=lambda r: (r.z, r.threshold))
    reason = f"largest z ({best.z:.3g}) among {len(qualifying)} thresholds with z > {z_crit} and enough items"
    return ThresholdSelection(best, reason, len(qualifying))


@dataclasses.dataclass(frozen=True)
class MaxZTestResult:
    """Permutation test of "some threshold shows a gain" (one-sided: performance higher on contaminated items).

    statistic: the largest z over the sized thresholds (NaN when no threshold
    leaves enough clean and contaminated items: there is nothing to test, and
    pvalue is NaN too). pvalue = (1 + #{permuted largest z >= statistic}) /
    (1 + n_resamples), so it is never below 1 / (1 + n_resamples).
    """

    statistic: float
    pvalue: float
    n_resamples: int
    threshold: float  # where the largest z is (ties to the higher threshold, as in select_threshold)
    n_thresholds: int  # sized thresholds searched
    z: str  # which z was maximised: "z" (the paper's) or "z_finite_population"


def max_z_test(
    scores,
    correct,
    thresholds=None,
    *,
    min_clean: int = 10,
    min_contaminated: int = 10,
    z: str = "z",
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    max_thresholds: int = MAX_THRESHOLDS,
) -> MaxZTestResult:
    """Calibrated p-value for the threshold search: the largest z against its permutation distribution.

    The search is `select_threshold`'s: the same grid (`thresholds`, default
    `default_thresholds(scores)`) and sizing rules (>= min_clean clean, >=
    min_contaminated contaminated items). Under the null, performance is
    independent of the contamination score, so every reassignment of the
    performance values to items is equally likely; each of `resamples` random
    reassignments (from `seed`) redoes the whole search. The grid and sigma
    depend only on the scores and on the multiset of performance values, so
    they are the same for every reassignment. Valid for any `z` in Z_STATISTICS;
    "z" (default) tests the statistic that picks the reported threshold.
    """
    scores, correct = _items("max_z_test", scores, correct)
    min_clean = check_count("min_clean", min_clean, 1)
    min_contaminated = check_count("min_contaminated", min_contaminated, 1)
    resamples = check_count("resamples", resamples, 1)
    if z not in Z_STATISTICS:
        raise StatsInputError(f"z={z!r}: expected one of {Z_STATISTICS}")
    grid = _grid(scores, thresholds, max_thresholds)
    n = len(scores)
    order = np.argsort(scores, kind="stable")
    n_clean = np.searchsorted(scores[order], grid, side="left")
    sized = (n_clean >= min_clean) & (n - n_clean >= min_contaminated)
    if not sized.any():
        return MaxZTestResult(math.nan, math.nan, resamples, math.nan, 0, z)
    cuts, taus = n_clean[sized], grid[sized]
    scale = _z_per_unit_epg(n, cuts, float(correct.std()), z)

    mean = correct.mean()
    observed = (mean - np.cumsum(correct[order])[cuts - 1] / cuts) * scale
    statistic = float(observed.max())
    best = int(np.flatnonzero(observed == statistic)[-1])
    floor = statistic - 1e-9 * max(1.0, abs(statistic))  # equal up to rounding counts as "as large"
    rng = np.random.default_rng(seed)
    binary = bool(np.isin(correct, (0.0, 1.0)).all())
    chunk = max(1, CHUNK_ELEMENTS // (len(cuts) if binary else n))  # rows of the [rows, cuts or n] work arrays
    as_large = 0
    for start in range(0, resamples, chunk):
        clean_sums = _permuted_clean_sums(correct, binary, cuts, min(chunk, resamples - start), rng)
        permuted = ((mean - clean_sums / cuts) * scale).max(axis=1)
        as_large += int(np.count_nonzero(permuted >= floor))
    return MaxZTestResult(
        statistic, (1 + as_large) / (1 + resamples), resamples, float(taus[best]), int(sized.sum()), z
    )


def _permuted_clean_sums(performance: np.ndarray, binary: bool, cuts: np.ndarray, rows: int, rng) -> np.ndarray:
    """[rows, len(cuts)]: for `rows` uniformly random orders of `performance`, the sum of the first cuts[j] values.

    For `binary` (0/1) performance the orders are not built: the ones of a
    random order fall into the stretches between consecutive cuts as a
    multivariate hypergeometric draw (stretch lengths as colours, the number of
    ones as the sample size), and the sums are its running totals.
    """
    if not binary:
        shuffled = rng.permuted(np.tile(performance, (rows, 1)), axis=1)
        return np.cumsum(shuffled, axis=1)[:, cuts - 1]
    stretches = np.diff(cuts, prepend=0, append=len(performance))
    total = int(performance.sum())
    method = "count" if total < 10 * len(stretches) else "marginals"  # cost per row ~ total vs ~ 10 * stretches
    ones = rng.multivariate_hypergeometric(stretches, total, size=rows, method=method)
    return np.cumsum(ones[:, :-1], axis=1).astype(np.float64)


def _z_per_unit_epg(n: int, n_clean: np.ndarray, sigma: float, z: str) -> np.ndarray:
    """1 / stderr per threshold, so that z = EPG * scale; 0 when sigma is 0 (EPG is then 0 at every threshold)."""
    if sigma == 0:
        return np.zeros(len(n_clean))
    if z == "z":
        return np.sqrt(n_clean) / sigma
    return np.sqrt(n_clean * (n - 1) / (n - n_clean)) / sigma
