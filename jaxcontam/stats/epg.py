"""ConTAM's Estimated Performance Gain (Singh et al. 2024, arXiv 2411.03923) and threshold selection.

For a contamination score per item and a performance score per item (0/1
correctness or continuous), an item is *contaminated at threshold tau* when
its score >= tau, clean otherwise. For each tau:
  EPG = Perf(full benchmark) - Perf(clean items),
  stderr = sigma / sqrt(N_clean), sigma = std (ddof=0) of the per-item
  performance scores on the full benchmark, z = EPG / stderr,
with a percentile bootstrap interval of EPG (items resampled, tau fixed) and
the accuracy difference Perf(contaminated) - Perf(clean).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxcontam.stats.bootstrap import percentile_interval, resample_counts
from jaxcontam.stats.validation import StatsInputError, check_count, check_probability, float_vector, same_length

MAX_THRESHOLDS = 200


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
    stderr: float
    z: float  # 0 when stderr is 0 (all items score the same: EPG is 0)
    epg_ci_low: float
    epg_ci_high: float


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

    def to_dicts(self) -> list[dict]:
        return [dataclasses.asdict(row) for row in self.rows]


def default_thresholds(scores: np.ndarray, max_thresholds: int = MAX_THRESHOLDS) -> np.ndarray:
    """The distinct finite scores, or `max_thresholds` of them at evenly spaced quantiles when there are more."""
    distinct = np.unique(scores[np.isfinite(scores)])
    if len(distinct) <= max_thresholds:
        return distinct
    return np.unique(np.quantile(scores, np.linspace(0.0, 1.0, max_thresholds), method="inverted_cdf"))


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
    threshold are left out of that threshold's interval.
    """
    scores = float_vector("scores", scores)
    correct = float_vector("correct", correct)
    same_length(("scores", "correct"), (scores, correct))
    for name, values in (("scores", scores), ("correct", correct)):
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            raise StatsInputError(f"{name}[{bad[0]}] is {values[bad[0]]}: every item needs a finite {name} value "
                                  f"({bad.size} do not); drop or rescore those items")
    n = len(scores)
    if n == 0:
        raise StatsInputError("epg_curve needs at least one item, got none")
    level = check_probability("level", level)
    resamples = check_count("resamples", resamples, 1)
    if thresholds is None:
        grid = default_thresholds(scores, max_thresholds)
    else:
        grid = np.sort(float_vector("thresholds", thresholds))
        if not np.isfinite(grid).all():
            raise StatsInputError(f"thresholds must be finite numbers, got {thresholds!r}")

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
        epg = perf_full - perf_clean
        z = np.where(stderr > 0, epg / stderr, np.where(n_clean > 0, 0.0, np.nan))

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
        rows.append(EPGRow(
            threshold=float(tau), frac_contaminated=float((n - n_clean[j]) / n), n_contaminated=int(n - n_clean[j]),
            n_clean=int(n_clean[j]), perf_full=perf_full, perf_clean=float(perf_clean[j]),
            perf_contaminated=float(perf_contaminated[j]),
            accuracy_difference=float(perf_contaminated[j] - perf_clean[j]), epg=float(epg[j]),
            stderr=float(stderr[j]), z=float(z[j]), epg_ci_low=low, epg_ci_high=high,
        ))
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

    z_crit = 1.645 is the one-sided 5% normal critical value. Ties in z go to
    the higher threshold (fewer items called contaminated).
    """
    rows = list(curve)
    sized = [r for r in rows if r.n_clean >= min_clean and r.n_contaminated >= min_contaminated]
    qualifying = [r for r in sized if np.isfinite(r.z) and r.z > z_crit]
    if not qualifying:
        if not rows:
            reason = "the curve has no thresholds"
        elif not sized:
            reason = (f"no threshold leaves >= {min_clean} clean and >= {min_contaminated} contaminated items "
                      f"(benchmark has {curve.n_items} items)")
        else:
            best = max((r.z for r in sized if np.isfinite(r.z)), default=float("nan"))
            reason = f"no threshold has z > {z_crit} (largest z among {len(sized)} sized thresholds: {best:.3g})"
        return ThresholdSelection(None, reason, 0)
    best = max(qualifying, key=lambda r: (r.z, r.threshold))
    reason = f"largest z ({best.z:.3g}) among {len(qualifying)} thresholds with z > {z_crit} and enough items"
    return ThresholdSelection(best, reason, len(qualifying))
