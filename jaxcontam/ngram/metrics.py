"""ConTAM's four per-item contamination metrics (Singh et al. 2024, arXiv 2411.03923).

An item text is one sequence of L units (model tokens by default; see `item_text` for what the
text is); its n-grams are its L - n + 1 windows of n units. An n-gram is *contaminated* when its
corpus count is >= `mincount` (paper default n = 8, mincount = 1). A unit is *matched* when it
lies inside a contaminated n-gram. A *span* [a, b) is a window whose first and last units are
matched and that holds at most `skip_budget` unmatched units in total (Llama 2, arXiv 2307.09288
A.6: matched spans "can differ in at most" skip_budget positions, no trailing mismatches):

  NGRAM_MATCH   = #{contaminated n-grams} / (L - n + 1)                      (PaLM-style)
  TOKEN_MATCH   = #{matched units} / L                                        (Llama-2-style)
  TOKEN_EXTEND  = #{units inside some span} / L; a unit is inside some span exactly when it is
                  matched or lies in a gap of <= skip_budget unmatched units between matched units
  LONGEST_MATCH = (b - a) / L of the longest span; the recommended single metric in the paper.

The budget is per span, not per gap: LONGEST_MATCH cannot chain many short matches across many
small gaps into one long span (a per-gap budget would let two matches 3 units apart and a third
3 units further join into one span under skip_budget = 3; here they need skip_budget = 6).
skip_budget = 0 (the default) makes a span a run of matched units and TOKEN_EXTEND = TOKEN_MATCH
on the same counts; the audit takes them from different text views (see `audit.VIEW_OF_METRIC`),
so at the defaults TOKEN_EXTEND and TOKEN_MATCH differ only by normalisation.

An item shorter than n units holds no n-gram and scores 0 on all four metrics (as does an empty
item); `num_units` tells such items apart. A repeated n-gram inside an item is one table row; each
of its positions is contaminated or not together.
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
    longest_span: tuple[int, int]  # [start, end) unit positions of the longest span; (0, 0) if none


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


def matched_runs(matched: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[start, end) of every maximal run of matched units, in order."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], matched.astype(np.int8), [0]])))
    return edges[0::2], edges[1::2]


def extend_units(matched: np.ndarray, skip_budget: int) -> np.ndarray:
    """bool [L]: units inside some span, i.e. matched or in a gap of <= skip_budget units between matched units."""
    out = matched.copy()
    starts, ends = matched_runs(matched)
    for gap_start, gap_end in zip(ends[:-1], starts[1:]):
        if gap_end - gap_start <= skip_budget:
            out[gap_start:gap_end] = True
    return out


def longest_span(matched: np.ndarray, skip_budget: int) -> tuple[int, int]:
    """[start, end) of the first longest span (runs joined while their gaps total <= skip_budget); (0, 0) if none."""
    starts, ends = matched_runs(matched)
    best, first, gaps = (0, 0), 0, 0  # runs first..last form the current span; `gaps` = its unmatched units
    for last in range(len(starts)):
        if last > first:
            gaps += starts[last] - ends[last - 1]
        while gaps > skip_budget:
            gaps -= starts[first + 1] - ends[first]
            first += 1
        if ends[last] - starts[first] > best[1] - best[0]:
            best = (int(starts[first]), int(ends[last]))
    return best


def item_scores(contaminated: np.ndarray, has_ngram: np.ndarray, n: int, skip_budget: int = 0) -> ItemScores:
    """All four metrics of one item from per-position flags.

    `contaminated[p]`: the n-gram starting at unit p is contaminated; `has_ngram[p]`: an n-gram
    starts at p (both bool [L]).
    """
    length = len(contaminated)
    num_ngrams = int(has_ngram.sum())
    if length == 0 or num_ngrams == 0:
        return ItemScores(length, num_ngrams, 0.0, 0.0, 0.0, 0.0, (0, 0))
    matched = covered_units(contaminated, n)
    start, end = longest_span(matched, skip_budget)
    return ItemScores(
        num_units=length,
        num_ngrams=num_ngrams,
        token_match=float(matched.sum() / length),
        ngram_match=float(contaminated.sum() / num_ngrams),
        token_extend=float(extend_units(matched, skip_budget).sum() / length),
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
        item_scores(contaminated[a:b], has_ngram[a:b], table.n, skip_budget) for a, b in zip(offsets[:-1], offsets[1:])
    ]
