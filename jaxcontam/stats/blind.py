# pyright: standard
"""The blind baseline: how well a classifier that never sees the model separates two sets of items.

A membership detector's AUC between two item sets means membership only if the sets are otherwise alike. Das et
al. (arXiv 2406.16201, "Blind Baselines Beat Membership Inference Attacks for Foundation Models"), Duan et al.
(2024, MIMIR) and Meeus et al.'s SoK show that on many published member / non-member splits a bag-of-words
classifier reaches the detectors' AUCs without the model: the sets differ in distribution. This baseline is a
multinomial naive Bayes on word (or character) n-gram counts, cross-validated:

- each text is lower-cased and split into n-grams (`word`: runs of word characters, n-grams of them joined by a
  space; `char`: character n-grams of the whole text);
- stratified `folds`-fold cross-validation (items shuffled with `seed` within each set, dealt round-robin); in each
  fold the vocabulary and the counts come from the training items only, the class priors from their sizes, and
  Laplace smoothing `smoothing` (sklearn's MultinomialNB(alpha=smoothing) on CountVectorizer counts);
- each held-out item gets the log-odds log P(first | text) - log P(second | text); the AUC of the pooled
  out-of-fold log-odds, first set as positive;
- its p-value and interval come from the permutation null: the set labels shuffled over the items and the whole
  cross-validation run again. A percentile bootstrap over the fixed out-of-fold scores leaves out how the classifier
  varies with its training items: it held 1/2 in 90% of 100 pairs of 34-item sets drawn alike (nominal 95%), the
  inverted permutation interval (`BlindBaselineResult.confidence_interval`) in 98%
  (experiments/stats/blind_coverage.py).

AUC near 0.5: the sets look alike to a model-free classifier; near 1: they differ in wording, and any detector's AUC
on them may be distribution shift.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from jaxcontam.stats.auc import auc_statistic
from jaxcontam.stats.paired import ConfidenceInterval
from jaxcontam.stats.validation import StatsInputError, check_count, check_probability

ANALYZERS = ("word", "char")
WORD = re.compile(r"\w+")
SPACES = re.compile(r"\s\s+")
DEFAULT_PERMUTATIONS = 999


def ngrams(text: str, analyzer: str = "word", ngram_range: tuple[int, int] = (1, 2)) -> list[str]:
    """The lower-cased text's n-grams for every n in `ngram_range` (inclusive)."""
    low, high = ngram_range
    if analyzer == "word":
        units, join = WORD.findall(text.lower()), " "
    elif analyzer == "char":
        units, join = list(SPACES.sub(" ", text.lower())), ""  # runs of white space as one, as sklearn's "char"
    else:
        raise StatsInputError(f"analyzer={analyzer!r}: expected one of {ANALYZERS}")
    return [join.join(units[i : i + n]) for n in range(low, high + 1) for i in range(len(units) - n + 1)]


def count_matrix(texts: Sequence[str], analyzer: str, ngram_range: tuple[int, int]) -> np.ndarray:
    """[items, n-grams] counts over every n-gram of `texts` (each fold keeps the columns its training items have)."""
    counters = [Counter(ngrams(str(t), analyzer, ngram_range)) for t in texts]
    vocabulary = {gram: j for j, gram in enumerate(sorted(set().union(*counters)))}
    counts = np.zeros((len(texts), len(vocabulary)))
    for i, counter in enumerate(counters):
        for gram, k in counter.items():
            counts[i, vocabulary[gram]] = k
    return counts


def cross_validated_log_odds(
    counts: np.ndarray, is_first: np.ndarray, fold: np.ndarray, smoothing: float
) -> np.ndarray:
    """Each item's naive Bayes log P(first | x) - log P(second | x) from the fold that held it out."""
    scores = np.empty(len(counts))
    for k in np.unique(fold):
        train, held = fold != k, fold == k
        x = counts[:, counts[train].sum(axis=0) > 0]  # the training items' vocabulary
        per_class = np.stack([x[train & is_first].sum(axis=0), x[train & ~is_first].sum(axis=0)]) + smoothing
        log_prob = np.log(per_class) - np.log(per_class.sum(axis=1, keepdims=True))
        sizes = np.array([(train & is_first).sum(), (train & ~is_first).sum()], dtype=np.float64)
        joint = x[held] @ log_prob.T + np.log(sizes / sizes.sum())
        scores[held] = joint[:, 0] - joint[:, 1]
    return scores


def deal_folds(is_first: np.ndarray, folds: int, rng: np.random.Generator) -> np.ndarray:
    """Each item's fold: each set's items shuffled by `rng` and dealt round-robin (stratified folds)."""
    fold = np.empty(len(is_first), dtype=np.int64)
    for side in (is_first, ~is_first):
        where = np.flatnonzero(side)
        fold[where[rng.permutation(len(where))]] = np.arange(len(where)) % folds
    return fold


def _check(first: Sequence[str], second: Sequence[str], folds: int, smoothing: float, ngram_range) -> int:
    folds = check_count("folds", folds, 2)
    if min(len(first), len(second)) < folds:
        raise StatsInputError(
            f"{folds}-fold cross-validation needs at least {folds} items in each set, got {len(first)} and "
            f"{len(second)}; use fewer folds or more items"
        )
    if not smoothing > 0:
        raise StatsInputError(f"smoothing={smoothing}: expected a positive number (Laplace: 1)")
    low, high = ngram_range
    if not 1 <= low <= high:
        raise StatsInputError(f"ngram_range={ngram_range}: expected 1 <= low <= high")
    return folds


def out_of_fold_log_odds(
    first: Sequence[str],
    second: Sequence[str],
    *,
    folds: int = 5,
    analyzer: str = "word",
    ngram_range: tuple[int, int] = (1, 2),
    smoothing: float = 1.0,
    seed: int = 0,
) -> np.ndarray:
    """Every item's naive Bayes log-odds of the first set, from the fold that held it out (first set, then second)."""
    folds = _check(first, second, folds, smoothing, ngram_range)
    counts = count_matrix([*first, *second], analyzer, ngram_range)
    is_first = np.arange(len(counts)) < len(first)
    fold = deal_folds(is_first, folds, np.random.default_rng(seed))
    return cross_validated_log_odds(counts, is_first, fold, smoothing)


@dataclasses.dataclass(frozen=True)
class BlindBaselineResult:
    """The blind baseline (scipy style): statistic, the cross-validated AUC (first set positive); pvalue, one-sided
    permutation p of AUC >= observed when the sets are alike; `null`: the AUCs of the label permutations."""

    statistic: float
    pvalue: float
    n_first: int
    n_second: int
    null: np.ndarray = dataclasses.field(repr=False, compare=False)

    def confidence_interval(self, level: float = 0.95) -> ConfidenceInterval:
        """[AUC - (q_high - 1/2), AUC + (1/2 - q_low)], q the permutation null's central `level` quantiles: the AUCs
        the permutation test does not reject at 1 - level (two-sided), under a shift of the null's spread. It holds
        1/2 exactly at `level` when the sets are alike; away from 1/2 the spread is the null's, an approximation."""
        level = check_probability("level", level)
        low, high = np.quantile(self.null, [(1 - level) / 2, (1 + level) / 2])
        return ConfidenceInterval(
            max(0.0, self.statistic - (float(high) - 0.5)), min(1.0, self.statistic + (0.5 - float(low)))
        )


def blind_baseline(
    first: Sequence[str],
    second: Sequence[str],
    *,
    folds: int = 5,
    analyzer: str = "word",
    ngram_range: tuple[int, int] = (1, 2),
    smoothing: float = 1.0,
    seed: int = 0,
    permutations: int = DEFAULT_PERMUTATIONS,
) -> BlindBaselineResult:
    """Cross-validated AUC of the bag-of-n-grams naive Bayes separating `first` (positive) from `second`, with its
    permutation null (the set labels shuffled over all items, folds dealt again, the classifier cross-validated
    again)."""
    folds = _check(first, second, folds, smoothing, ngram_range)
    permutations = check_count("permutations", permutations, 1)
    counts = count_matrix([*first, *second], analyzer, ngram_range)
    is_first = np.arange(len(counts)) < len(first)
    observed = _auc(counts, is_first, folds, smoothing, np.random.default_rng(seed))
    rng = np.random.default_rng(seed + 1)
    null = np.array([_auc(counts, rng.permutation(is_first), folds, smoothing, rng) for _ in range(permutations)])
    pvalue = (1.0 + np.count_nonzero(null >= observed - 1e-12)) / (1.0 + permutations)
    return BlindBaselineResult(observed, float(pvalue), len(first), len(second), null)


def _auc(counts: np.ndarray, is_first: np.ndarray, folds: int, smoothing: float, rng: np.random.Generator) -> float:
    """The cross-validated AUC for these labels, folds dealt by `rng`."""
    scores = cross_validated_log_odds(counts, is_first, deal_folds(is_first, folds, rng), smoothing)
    return auc_statistic(scores[is_first], scores[~is_first])
