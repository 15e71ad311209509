# pyright: standard
"""Nonparametric bootstrap over items: multinomial resampling weights and percentile intervals.

A resample of n items is represented by its counts (how often each item was
drawn), so any statistic that is a weighted mean can be recomputed for many
resamples with one matrix product.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

CHUNK_ELEMENTS = 4_000_000  # resample counts held in memory at once


def resample_counts(n: int, resamples: int, seed: int) -> Iterator[np.ndarray]:
    """Yield [chunk, n] int arrays of draw counts, `resamples` rows in all, reproducible from `seed`."""
    rng = np.random.default_rng(seed)
    chunk = max(1, CHUNK_ELEMENTS // max(n, 1))
    for start in range(0, resamples, chunk):
        rows = min(chunk, resamples - start)
        drawn = rng.integers(0, n, size=(rows, n)) + n * np.arange(rows)[:, None]  # item index, offset per row
        yield np.bincount(drawn.ravel(), minlength=rows * n).reshape(rows, n)


def percentile_interval(samples: np.ndarray, level: float, alternative: str = "two-sided") -> tuple[float, float]:
    """Percentile interval of bootstrap `samples` (NaNs ignored); one-sided for "greater"/"less"."""
    samples = samples[~np.isnan(samples)]
    if samples.size == 0:
        return (float("nan"), float("nan"))
    if alternative == "greater":
        return (float(np.quantile(samples, 1.0 - level)), float("inf"))
    if alternative == "less":
        return (float("-inf"), float(np.quantile(samples, level)))
    low, high = np.quantile(samples, [(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    return (float(low), float(high))


def bootstrap_mean_interval(values: np.ndarray, level: float, alternative: str, resamples: int, seed: int):
    """Percentile bootstrap interval for the mean of `values`."""
    means = np.concatenate([counts @ values / len(values) for counts in resample_counts(len(values), resamples, seed)])
    return percentile_interval(means, level, alternative)
