"""ConTAM's four per-item contamination metrics (Singh et al. 2024, arXiv 2411.03923).

An item is a sequence of L units (model tokens by default) made of field segments; its n-grams
are the windows of n units inside one segment. An n-gram is *contaminated* when its corpus
count is >= `mincount` (paper default n = 8, mincount = 1). With c(p) = "the n-gram starting at
p is contaminated":

  NGRAM_MATCH  = #{p : c(p)} / #{n-grams of the item}                  (PaLM-style)
  TOKEN_MATCH  = #{t : t lies inside some contaminated n-gram} / L      (Llama-2-style)
  TOKEN_EXTEND = like TOKEN_MATCH after closing every gap of at most `skip_budget`
                 unmatched units that lies between two matched units
  LONGEST_MATCH = length of the longest run of matched units, with the same gap closing,
                 divided by L; the recommended single metric in the paper.

Choices the paper leaves open, made here:
  - Items shorter than n (or with no n-gram inside one segment) score 0 on all metrics;
    an empty item (L = 0) also scores 0.
  - Gaps are closed only *between* matched units (no leading/trailing extension), each gap
    independently: a gap of g <= skip_budget units is filled, and the filled units count as
    matched (they lengthen the span). skip_budget = 0 makes TOKEN_EXTEND = TOKEN_MATCH.
  - Field segments are concatenated in field order; matched runs may continue across a
    segment boundary when both sides are matched, but n-grams never cross it.
  - Normalisation (lowercase, punctuation removed) is applied to the text before encoding,
    by default for TOKEN_MATCH and NGRAM_MATCH only (as in the paper); the metric functions
    take whatever counts they are given, so it is configurable upstream.
  - Each segment is encoded on its own, so its first token carries no leading space: a
    byte-level BPE encodes a copy that follows a space in the corpus with a different first
    token, and only the item's first n-gram can miss because of it.
  - A repeated n-gram inside an item is one table row; each of its positions is contaminated
    or not together.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxcontam.errors import DataError


@dataclasses.dataclass(frozen=True)
class ItemScores:
    num_units: int
    num_ngrams: int
    token_match: float
    ngram_match: float
    token_extend: float
    longest_match: float
    longest_span: tuple[int, int]  # [start, end) unit positions of the longest match; (0, 0) if none


def contaminated_positions(position_ngram: np.ndarray, counts: np.ndarray, mincount: int) -> np.ndarray:
    """bool [P]: the n-gram starting at each position exists and has count >= mincount."""
    has = position_ngram >= 0
    out = np.zeros(len(position_ngram), bool)
    out[has] = counts[position_ngram[has]] >= mincount
    return out


def covered_units(contaminated: np.ndarray, n: int) -> np.ndarray:
    """bool [L]: units inside at least one contaminated n-gram (contaminated starts at p cover p..p+n-1)."""
    length = len(contaminated)
    delta = np.zeros(length + n + 1, np.int64)
    starts = np.flatnonzero(contaminated)
    np.add.at(delta, starts, 1)
    np.add.at(delta, starts + n, -1)
    return np.cumsum(delta)[:length] > 0


def close_gaps(matched: np.ndarray, skip_budget: int) -> np.ndarray:
    """Fill each run of unmatched units of length <= skip_budget that has matched units on both sides."""
    out = matched.copy()
    if skip_budget <= 0 or not matched.any():
        return out
    positions = np.flatnonzero(matched)
    gaps = np.diff(positions) - 1
    for left, gap in zip(positions[:-1][(gaps > 0) & (gaps <= skip_budget)], gaps[(gaps > 0) & (gaps <= skip_budget)]):
        out[left + 1 : left + 1 + gap] = True
    return out


def longest_run(matched: np.ndarray) -> tuple[int, int]:
    """[start, end) of the first longest run of True; (0, 0) if none."""
    if not matched.any():
        return 0, 0
    padded = np.concatenate([[False], matched, [False]]).astype(np.int8)
    edges = np.flatnonzero(np.diff(padded))
    starts, ends = edges[0::2], edges[1::2]
    best = int(np.argmax(ends - starts))
    return int(starts[best]), int(ends[best])


def item_scores(contaminated: np.ndarray, has_ngram: np.ndarray, n: int, skip_budget: int = 0) -> ItemScores:
    """All four metrics of one item from per-position flags.

    `contaminated[p]`: the n-gram starting at unit p is contaminated; `has_ngram[p]`: an n-gram
    starts at p (both bool [L]).
    """
    length = len(contaminated)
    num_ngrams = int(has_ngram.sum())
    if length == 0 or num_ngrams == 0:
        return ItemScores(length, num_ngrams, 0.0, 0.0, 0.0, 0.0, (0, 0))
    covered = covered_units(contaminated, n)
    extended = close_gaps(covered, skip_budget)
    start, end = longest_run(extended)
    return ItemScores(
        num_units=length,
        num_ngrams=num_ngrams,
        token_match=float(covered.sum() / length),
        ngram_match=float(contaminated.sum() / num_ngrams),
        token_extend=float(extended.sum() / length),
        longest_match=float((end - start) / length),
        longest_span=(start, end),
    )


def table_scores(table, counts: np.ndarray, *, mincount: int = 1, skip_budget: int = 0) -> list[ItemScores]:
    """Metrics of every item of an `NgramTable` given its row counts."""
    if mincount < 1 or skip_budget < 0:
        raise DataError(f"need mincount >= 1 and skip_budget >= 0, got mincount={mincount}, skip_budget={skip_budget}")
    contaminated = contaminated_positions(table.position_ngram, counts, mincount)
    has_ngram = table.position_ngram >= 0
    offsets = table.items.item_offsets
    return [
        item_scores(contaminated[a:b], has_ngram[a:b], table.n, skip_budget)
        for a, b in zip(offsets[:-1], offsets[1:])
    ]
