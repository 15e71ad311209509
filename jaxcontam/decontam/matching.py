"""find and clean: which benchmark items a text holds, and the text that is kept under a policy.

`find(index, text)` -> `Match` per item the text holds: matched n-grams (windows), the longest matched span in
characters, and the character offsets of the first match. `clean(index, text, policy)` -> the kept texts:
  - "drop": [] for a text that holds any item, else [text];
  - "spans": GPT-3's rule as lm-eval's Janitor applies it: each matched n-gram and `window` characters on each
    side are cut out; the slices between are kept if longer than `min_slice` characters; a text with more than
    `cutoff` matched n-grams is dropped whole; a text without a match is kept as it is;
  - "annotate": [text] (the items go in a field beside it, `DocumentResult.items`).
`find_batch` runs many texts at once: unit ids of the whole batch in one array, one vectorised lookup, and the
slow path (character spans) only for the texts that hold a match.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Literal

import numpy as np

from jaxcontam.decontam.index import DecontIndex, Hits
from jaxcontam.errors import DataError

Policy = Literal["drop", "spans", "annotate"]
POLICIES: tuple[Policy, ...] = ("drop", "spans", "annotate")


@dataclasses.dataclass(frozen=True)
class SpanSettings:
    """The spans policy's numbers (GPT-3's: 200 characters each side, at most 10 matches, slices over 200)."""

    window: int = 200
    cutoff: int = 10
    min_slice: int = 200


@dataclasses.dataclass(frozen=True)
class Match:
    """One item found in one text."""

    benchmark: str
    item_id: str
    ngrams: int  # matched windows of the text that are n-grams of the item
    longest: int  # characters of the longest run of overlapping matched windows
    start: int  # [start, end) characters of the first matched window
    end: int


@dataclasses.dataclass(frozen=True)
class DocumentResult:
    """What a text holds: its matches, its matched windows' [start, end) characters, its unit count."""

    matches: tuple[Match, ...]
    windows: np.ndarray  # int64 [H, 2], in text order, one per matched window (any item)
    units: int
    rows: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.int32))  # table rows matched

    @property
    def items(self) -> list[str]:
        return [f"{m.benchmark}/{m.item_id}" for m in self.matches]


_CLEAN = DocumentResult((), np.zeros((0, 2), np.int64), 0)


def find_batch(index: DecontIndex, texts: Sequence[str]) -> list[DocumentResult]:
    """The result of every text of a batch."""
    ids, ends = index.encode_joined(texts)
    lengths = np.diff(np.concatenate([[0], ends]))
    hits = index.lookup(ids, ends)
    results = [dataclasses.replace(_CLEAN, units=int(u)) for u in lengths]
    if len(hits.starts):
        holding = np.unique(np.searchsorted(ends, hits.starts, side="right"))
        for d in holding.tolist():
            text: str = texts[int(d)]
            results[d] = _describe(index, text)
    return results


def find(index: DecontIndex, text: str) -> list[Match]:
    """The items `text` holds."""
    return list(find_batch(index, [text])[0].matches)


def _describe(index: DecontIndex, text: str) -> DocumentResult:
    """The slow path: unit character spans, hits, and per-item matches of one text."""
    ids, spans = index.spans(text)
    hits: Hits = index.lookup(ids)
    ends = hits.starts + index.row_length[hits.rows]  # a short item's window is its own length
    windows = np.stack([spans[hits.starts, 0], spans[ends - 1, 1]], axis=1).reshape(-1, 2)
    hit, item = index.items_of_rows(hits.rows)
    matches = []
    for i in np.unique(item).tolist():
        mine = hit[item == i]
        starts = hits.starts[mine]
        # runs of overlapping or touching windows: a new run starts where a window begins past the last one's end
        breaks = np.flatnonzero(starts[1:] > np.maximum.accumulate(ends[mine])[:-1]) + 1
        longest = max(int(windows[run[-1], 1] - windows[run[0], 0]) for run in np.split(mine, breaks))
        source = index.items[i]
        matches.append(
            Match(source.benchmark, source.id, len(mine), longest, int(windows[mine[0], 0]), int(windows[mine[0], 1]))
        )
    return DocumentResult(tuple(matches), windows, len(ids), np.unique(hits.rows))


def kept_slices(text: str, windows: np.ndarray, spans: SpanSettings = SpanSettings()) -> list[str] | None:
    """The spans policy on one text and its matched windows ([start, end) characters, in order): the kept
    slices, or None when the text is dropped (more than `cutoff` matches). Arithmetic as the Janitor's: a slice
    runs from the end of the previous cut (its last character included) to the start of the next, and the text
    after the last cut starts one character past it."""
    if not len(windows):
        return [text]
    if len(windows) > spans.cutoff:
        return None
    kept, resume, cut_end = [], 0, -1
    for start, end in windows.tolist():
        cut_start = max(0, start - spans.window)
        cut_end = min(len(text), end - 1 + spans.window)
        if cut_start - resume > spans.min_slice:
            kept.append(text[resume:cut_start])
        resume = cut_end
    if cut_end < len(text) - spans.min_slice:
        kept.append(text[cut_end + 1 :])
    return kept


def clean(index: DecontIndex, text: str, policy: Policy = "spans", spans: SpanSettings = SpanSettings()) -> list[str]:
    """The texts kept of `text` under `policy` (see the module docstring)."""
    if policy not in POLICIES:
        raise DataError(f"policy {policy!r}: choose one of {', '.join(POLICIES)}")
    result = find_batch(index, [text])[0]
    return apply_policy(text, result, policy, spans)


def apply_policy(text: str, result: DocumentResult, policy: Policy, spans: SpanSettings = SpanSettings()) -> list[str]:
    if policy == "annotate" or not result.matches:
        return [text]
    if policy == "drop":
        return []
    return kept_slices(text, result.windows, spans) or []
