# pyright: standard
"""Pair filtering: drop pairs that cannot enter a paired test, and record why.

A pair is dropped when the model gave no answer to either question (its
confidence would be about nothing) or when either confidence is missing,
NaN or infinite. Each dropped pair gets one reason, the first that applies in
the order of `DROP_REASONS`.
"""

from __future__ import annotations

import collections
import dataclasses

import numpy as np

from jaxcontam.stats.validation import bool_vector, float_vector, same_length

NOT_ANSWERED_ORIGINAL = "no answer to the original"
NOT_ANSWERED_REPHRASED = "no answer to the rephrased"
MISSING_ORIGINAL = "original confidence missing"
MISSING_REPHRASED = "rephrased confidence missing"
DROP_REASONS = (NOT_ANSWERED_ORIGINAL, NOT_ANSWERED_REPHRASED, MISSING_ORIGINAL, MISSING_REPHRASED)


@dataclasses.dataclass(frozen=True)
class FilteredPairs:
    """The kept pairs, a per-pair reason (None when kept) and the count of each reason."""

    original: np.ndarray = dataclasses.field(repr=False, compare=False)
    rephrased: np.ndarray = dataclasses.field(repr=False, compare=False)
    kept: np.ndarray = dataclasses.field(repr=False, compare=False)
    reasons: tuple[str | None, ...] = dataclasses.field(repr=False)
    counts: collections.Counter

    @property
    def n_kept(self) -> int:
        return int(self.kept.sum())

    @property
    def n_dropped(self) -> int:
        return len(self.kept) - self.n_kept


def filter_pairs(original, rephrased, *, answered_original=None, answered_rephrased=None) -> FilteredPairs:
    """Keep the pairs with two finite confidences and two answers (when answer flags are given).

    `original`/`rephrased`: one confidence per item (None or NaN when missing);
    `answered_*`: optional true/false per item, false when the model produced no answer.
    """
    original = float_vector("original", original)
    rephrased = float_vector("rephrased", rephrased)
    same_length(("original", "rephrased"), (original, rephrased))
    n = len(original)
    everyone = np.ones(n, bool)
    answered_o = everyone if answered_original is None else bool_vector("answered_original", answered_original, n)
    answered_r = everyone if answered_rephrased is None else bool_vector("answered_rephrased", answered_rephrased, n)
    failing = (~answered_o, ~answered_r, ~np.isfinite(original), ~np.isfinite(rephrased))
    reasons: list[str | None] = [None] * n
    for reason, fails in zip(DROP_REASONS, failing):
        for index in np.flatnonzero(fails):
            if reasons[index] is None:
                reasons[index] = reason
    kept = np.array([reason is None for reason in reasons], dtype=bool)
    counts = collections.Counter(reason for reason in reasons if reason is not None)
    return FilteredPairs(original[kept], rephrased[kept], kept, tuple(reasons), counts)
