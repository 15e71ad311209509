# pyright: standard
"""AUC of a score for two groups of items, with a percentile bootstrap interval over items or item clusters.

    result = auc(scores, labels)                         # labels True: the group expected to score higher
    result.statistic, result.n_positive, result.confidence_interval(0.95)
    auc(scores, labels, clusters=ids)                    # items sharing an id resampled together
    mean_auc([scores_a, scores_b], [labels_a, labels_b]) # one AUC per model over the same items, averaged

AUC = P(score of a positive > score of a negative), ties counted half: the Mann-Whitney U over n_pos n_neg
(scipy's `mannwhitneyu(...).statistic / (n_pos n_neg)`). The interval resamples, within each group, the clusters
(default: each item its own) with replacement and recomputes the AUC; the percentile interval of the replicates.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy import stats as scipy_stats

from jaxcontam.stats.bootstrap import percentile_interval, resample_counts
from jaxcontam.stats.paired import ConfidenceInterval
from jaxcontam.stats.validation import (
    StatsInputError,
    bool_vector,
    check_alternative,
    check_count,
    check_probability,
    float_vector,
)

DEFAULT_RESAMPLES = 2000


def auc_statistic(positive: np.ndarray, negative: np.ndarray) -> float:
    """P(a positive's score > a negative's), ties half, from the midranks of the pooled scores."""
    ranks = scipy_stats.rankdata(np.concatenate([positive, negative]))
    u = ranks[: len(positive)].sum() - len(positive) * (len(positive) + 1) / 2.0
    return float(u / (len(positive) * len(negative)))


@dataclasses.dataclass(frozen=True)
class AUCResult:
    """AUC (scipy style): statistic, n_positive and n_negative items, the bootstrap replicates for the interval."""

    statistic: float
    n_positive: int
    n_negative: int
    n_clusters: int
    replicates: np.ndarray = dataclasses.field(repr=False, compare=False)

    def confidence_interval(self, level: float = 0.95, alternative: str = "two-sided") -> ConfidenceInterval:
        """Percentile bootstrap interval of the AUC (items or clusters resampled within each group)."""
        level = check_probability("level", level)
        return ConfidenceInterval(*percentile_interval(self.replicates, level, check_alternative(alternative)))


def check_both_groups(n_positive: int, n_negative: int) -> None:
    """An AUC needs a finite-scored item in each group."""
    if not (n_positive and n_negative):
        raise StatsInputError(
            f"AUC needs items of both groups with a finite score, got {n_positive} positive and {n_negative} negative"
        )


def _groups(clusters: np.ndarray, mask: np.ndarray) -> list[np.ndarray]:
    """Indices of the items of each cluster among `mask`, the clusters in the order they first appear (so unclustered
    items are drawn as `rng.choice` draws them from the group: a resample's items follow the input's order)."""
    where = np.flatnonzero(mask)
    if not where.size:
        return []
    _, first, inverse = np.unique(clusters[where], return_index=True, return_inverse=True)
    return [where[inverse == c] for c in np.argsort(first, kind="stable")]


def auc(
    scores,
    labels,
    clusters=None,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> AUCResult:
    """AUC of `scores` for labels True against False, non-finite scores left out; `clusters`: one label per item,
    items of a cluster resampled together (a cluster must lie within one group)."""
    values = float_vector("scores", scores)
    positive = bool_vector("labels", labels, len(values))
    resamples = check_count("resamples", resamples, 1)
    keys = np.arange(len(values)).astype(str) if clusters is None else np.asarray(clusters).astype(str)
    if keys.shape != values.shape:
        raise StatsInputError(f"clusters: expected one label per item ({len(values)}), got shape {keys.shape}")
    finite = np.isfinite(values)
    values, positive, keys = values[finite], positive[finite], keys[finite]
    check_both_groups(int(positive.sum()), int((~positive).sum()))
    if set(keys[positive]) & set(keys[~positive]):
        raise StatsInputError("a cluster holds items of both groups; clusters must lie within one group")
    groups = (_groups(keys, positive), _groups(keys, ~positive))
    rng = np.random.default_rng(seed)
    replicates = np.empty(resamples)
    for r in range(resamples):
        drawn = [
            np.concatenate([members[i] for i in rng.integers(0, len(members), len(members))]) for members in groups
        ]
        replicates[r] = auc_statistic(values[drawn[0]], values[drawn[1]])
    return AUCResult(
        auc_statistic(values[positive], values[~positive]),
        int(positive.sum()),
        int((~positive).sum()),
        len(groups[0]) + len(groups[1]),
        replicates,
    )


@dataclasses.dataclass(frozen=True)
class MeanAUCResult:
    """The mean of several models' AUCs over the same items (`statistic`), each model's (`aucs`), the items, and
    the bootstrap replicates of the mean for the interval."""

    statistic: float
    aucs: tuple[float, ...]
    n_items: int
    replicates: np.ndarray = dataclasses.field(repr=False, compare=False)

    def confidence_interval(self, level: float = 0.95, alternative: str = "two-sided") -> ConfidenceInterval:
        """Percentile bootstrap interval of the mean AUC (items resampled, the same draw in every model)."""
        level = check_probability("level", level)
        return ConfidenceInterval(*percentile_interval(self.replicates, level, check_alternative(alternative)))


def mean_auc(scores, labels, *, resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> MeanAUCResult:
    """The AUC of each model's `scores[m]` for its `labels[m]` True against False (one row per item, the same items in
    every model; non-finite scores left out), averaged over the models. Why: two models trained on complementary
    halves of a benchmark each give one AUC whose half imbalance cancels in their mean. The interval resamples items
    with replacement, the same draw in every model (an item is a cluster across models), recomputing the mean; a
    replicate lacking a group in some model is left out of the interval."""
    if len(scores) != len(labels) or not len(scores):
        raise StatsInputError(
            f"mean_auc: give one labels vector per scores vector, got {len(scores)} and {len(labels)}"
        )
    resamples = check_count("resamples", resamples, 1)
    values = [float_vector("scores", s) for s in scores]
    n = len(values[0])
    if any(len(v) != n for v in values):
        raise StatsInputError(f"mean_auc: every model scores the same items, got {[len(v) for v in values]} rows")
    flags = [bool_vector("labels", flag, n) for flag in labels]
    counts = np.concatenate(list(resample_counts(n, resamples, seed))).astype(np.float64)
    aucs, replicates = [], []
    for value, flag in zip(values, flags, strict=True):
        finite = np.isfinite(value)
        positive, negative = flag & finite, ~flag & finite
        check_both_groups(int(positive.sum()), int(negative.sum()))
        pos, neg = value[positive], value[negative]
        wins = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
        aucs.append(float(wins.mean()))
        drawn_positive, drawn_negative = counts[:, positive], counts[:, negative]
        with np.errstate(invalid="ignore", divide="ignore"):
            replicates.append(
                np.einsum("bi,ij,bj->b", drawn_positive, wins, drawn_negative)
                / (drawn_positive.sum(1) * drawn_negative.sum(1))
            )
    with np.errstate(invalid="ignore"):
        means = np.stack(replicates).mean(axis=0)  # NaN where a replicate drew no item of a group in some model
    return MeanAUCResult(float(np.mean(aucs)), tuple(aucs), n, means)
