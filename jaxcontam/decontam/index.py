"""The decontamination index: every n-gram of the benchmark items, looked up with numpy, matches exact.

Units are normalised words (a vocabulary of the items' words; a corpus word outside it has id 0 and no n-gram
holding it can match) or the model's tokens (`--tokenizer`, as `jaxcontam ngram`). The n-grams live in one
`ngram.NgramTable` (sorted, de-duplicated, with back-references to the items): the same table the token
`DecontaminationFilter` uploads to the device (`index.filter()`), and the counts `ngram` uses.

On the host a window's key is a 64-bit multiply-add of its n ids (one vectorised pass per id position); a
bitmap over the keys' top bits rejects most windows, `searchsorted` finds the rest, and a hit counts only when
its n ids equal the table row's, so a hash collision never flags a document.

Which n-grams an item gives (`fields`, as datatrove's options): "item" (default): the item as the model sees it
(prompt and gold answer, one text, `ngram.item_text`); otherwise any of "question", "answer" (each on its own)
and "overlap" (the n-grams that hold the question's last units and the answer's first ones).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Sequence
from itertools import repeat
from typing import Any, Literal

import numpy as np

from jaxcontam.decontam.rules import DEFAULT_N, Preset, check_preset, word_spans, words
from jaxcontam.errors import DataError
from jaxcontam.ngram.table import ItemUnits, NgramTable, build_table

Unit = Literal["words", "tokens"]
FIELDS = ("item", "question", "answer", "overlap")
TOKEN_N = 8  # jaxcontam ngram's default


@dataclasses.dataclass(frozen=True)
class IndexSettings:
    """What is matched: `unit` words (by `preset`) or tokens (of `tokenizer`), `n` units, the items' `fields`."""

    unit: Unit = "words"
    preset: Preset = "gpt3"
    n: int | None = None  # the preset's (13 gpt3, 12 datatrove), or 8 tokens
    fields: tuple[str, ...] = ("item",)
    tokenizer: str | None = None

    def __post_init__(self):
        if self.unit not in ("words", "tokens"):
            raise DataError(f"unit {self.unit!r}: choose words or tokens")
        check_preset(self.preset)
        if self.unit == "tokens" and not self.tokenizer:
            raise DataError("token units need --tokenizer (a folder with tokenizer.json, a .tiktoken file, a GGUF)")
        bad = [f for f in self.fields if f not in FIELDS]
        if bad or not self.fields or ("item" in self.fields and len(self.fields) > 1):
            raise DataError(
                f"fields {', '.join(self.fields) or '(none)'}: give 'item' alone, or any of question, answer, overlap"
            )
        if self.n is not None and self.n < 1:
            raise DataError(f"--n {self.n}: n must be a positive number of units")

    @property
    def size(self) -> int:
        if self.n is not None:
            return self.n
        return DEFAULT_N[self.preset] if self.unit == "words" else TOKEN_N


@dataclasses.dataclass(frozen=True)
class ItemSides:
    """One benchmark item's texts: the whole item as shown, its question side and its answer side."""

    benchmark: str
    id: str
    whole: str
    question: str = ""
    answer: str = ""

    @property
    def key(self) -> str:
        return f"{self.benchmark}/{self.id}"


def benchmark_items(benchmarks: Iterable[Any]) -> list[ItemSides]:
    """The items of loaded benchmarks (`data.load_benchmark`) as the model sees them."""
    from jaxcontam.ngram.item_text import item_text

    out = []
    for benchmark in benchmarks:
        for item in benchmark.items:
            text = item_text(benchmark, item)
            out.append(ItemSides(benchmark.name, str(item.id), text.whole, text.question, text.answer))
    return out


_MULTIPLIERS = (np.random.default_rng(0x5EED).integers(1, 2**63, size=64, dtype=np.uint64) * 2 + 1).astype(np.uint64)


def window_keys(ids: np.ndarray, n: int) -> np.ndarray:
    """uint64 key of every length-`n` window of `ids` (int [L]) -> [max(L-n+1, 0)]."""
    windows = len(ids) - n + 1
    if windows <= 0:
        return np.zeros(0, np.uint64)
    ids = ids.astype(np.uint64, copy=False)
    multipliers = _MULTIPLIERS if n <= len(_MULTIPLIERS) else _multipliers(n)
    keys = ids[:windows] * multipliers[0]
    for j in range(1, n):
        keys += ids[j : j + windows] * multipliers[j]
    return keys


@functools.cache
def _multipliers(n: int) -> np.ndarray:
    return (np.random.default_rng(0x5EED + n).integers(1, 2**63, size=n, dtype=np.uint64) * 2 + 1).astype(np.uint64)


@dataclasses.dataclass(frozen=True)
class Hits:
    """Matched windows of a batch of unit sequences: `starts` (position in the concatenated ids) and `rows`."""

    starts: np.ndarray  # int64 [H], sorted
    rows: np.ndarray  # int32 [H]


class DecontIndex:
    """Benchmark n-grams in one table, with a host lookup. Build with `DecontIndex.build(items, settings)`."""

    def __init__(self, settings: IndexSettings, items: Sequence[ItemSides], table: NgramTable, vocab, units):
        self.settings = settings
        self.n = settings.size
        self.items = tuple(items)
        self.table = table
        self.vocab: dict[bytes, int] | None = vocab
        self.units = units  # TokenizerUnits in token mode
        rows = len(table.keys)
        keys = window_keys(table.ngrams.reshape(-1), self.n)[:: self.n] if rows else np.zeros(0, np.uint64)
        order = np.argsort(keys, kind="stable")
        self._keys, self._rows = keys[order], order.astype(np.int32)
        if len(np.unique(self._keys)) != rows:
            raise DataError("two benchmark n-grams share a 64-bit key; rebuild with another --n")
        self._bits = max(16, int(np.ceil(np.log2(max(rows, 1) * 16))))
        self._bitmap = np.zeros(1 << (self._bits - 3), np.uint8)
        top = (self._keys >> np.uint64(64 - self._bits)).astype(np.int64)
        np.bitwise_or.at(self._bitmap, top >> 3, (1 << (top & 7)).astype(np.uint8))
        # row -> items holding it (CSR)
        positions = np.flatnonzero(table.position_ngram >= 0)
        item_of = np.searchsorted(table.items.item_offsets, positions, side="right") - 1
        pairs = np.unique(np.stack([table.position_ngram[positions].astype(np.int64), item_of]), axis=1)
        self._row_items = pairs[1].astype(np.int32)
        self._row_start = np.concatenate([[0], np.cumsum(np.bincount(pairs[0], minlength=rows))]).astype(np.int64)
        self.item_ngrams = np.bincount(item_of, minlength=len(self.items)).astype(np.int64)  # n-gram positions
        self._fast = None
        if vocab is not None and settings.preset == "gpt3":
            from jaxcontam.decontam.fastwords import FastWords

            self._fast = FastWords(vocab)

    # building ---------------------------------------------------------------------------------------------

    @classmethod
    def build(cls, items: Sequence[ItemSides], settings: IndexSettings = IndexSettings()) -> DecontIndex:
        """The index of `items` (see `benchmark_items`)."""
        if not items:
            raise DataError("no benchmark items to look for; name at least one benchmark with items")
        n = settings.size
        units, vocab = None, None
        if settings.unit == "tokens":
            from jaxcontam.ngram.units import load_units

            units = load_units(str(settings.tokenizer))

            def encode(texts: list[str]) -> list[np.ndarray]:
                return [np.asarray(a, np.int64) for a in units.encode_batch(texts)]  # type: ignore[union-attr]
        else:
            vocab = {}

            def encode(texts: list[str]) -> list[np.ndarray]:
                out = []
                for text in texts:
                    ws = words(text, settings.preset)
                    out.append(np.fromiter((vocab.setdefault(w, len(vocab) + 1) for w in ws), np.int64, len(ws)))
                return out

        segments = _item_segments(items, settings.fields, n, encode)
        table = build_table(segments, n)
        return cls(settings, items, table, vocab, units)

    # encoding and lookup ----------------------------------------------------------------------------------

    def encode(self, texts: Sequence[str]) -> list[np.ndarray]:
        """int64 unit ids of each text (words outside the vocabulary are 0)."""
        if self.vocab is None:
            return [np.asarray(a, np.int64) for a in self.units.encode_batch(list(texts))]
        get, preset = self.vocab.get, self.settings.preset
        out = []
        for text in texts:
            ws = words(text, preset)
            out.append(np.fromiter(map(get, ws, repeat(0)), np.int64, len(ws)))
        return out

    def encode_joined(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(unit ids of all texts back to back, int64 end of each text in them): the fast path of a batch."""
        if self._fast is not None:
            return self._fast.encode(list(texts))
        encoded = self.encode(texts)
        ends = np.cumsum([len(e) for e in encoded]).astype(np.int64)
        return (np.concatenate(encoded) if encoded else np.zeros(0, np.int64)), ends

    def spans(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """(ids, int64 [U, 2] character spans) of one text: the slow path, for texts that hold a match."""
        if self.vocab is None:
            encoding = self.units.tokenizer.encode(text, add_special_tokens=False)
            return np.asarray(encoding.ids, np.int64), np.asarray(encoding.offsets, np.int64).reshape(-1, 2)
        ws, spans = word_spans(text, self.settings.preset)
        get = self.vocab.get
        return np.fromiter(map(get, ws, repeat(0)), np.int64, len(ws)), spans

    def lookup(self, ids: np.ndarray, doc_ends: np.ndarray | None = None) -> Hits:
        """Windows of `ids` (several documents back to back, each ending at `doc_ends`) that are table n-grams."""
        n = self.n
        keys = window_keys(ids, n)
        if not len(keys) or not len(self._keys):
            return Hits(np.zeros(0, np.int64), np.zeros(0, np.int32))
        top = (keys >> np.uint64(64 - self._bits)).astype(np.int64)
        maybe = (self._bitmap[top >> 3] >> (top & 7).astype(np.uint8)) & 1
        starts = np.flatnonzero(maybe)
        if doc_ends is not None and len(starts):  # a window must end inside its document
            end_of = doc_ends[np.searchsorted(doc_ends, starts, side="right")]
            starts = starts[starts + n <= end_of]
        where = np.minimum(np.searchsorted(self._keys, keys[starts]), len(self._keys) - 1)
        found = self._keys[where] == keys[starts]
        starts, rows = starts[found], self._rows[where[found]]
        if len(starts):
            same = (ids[starts[:, None] + np.arange(n)] == self.table.ngrams[rows]).all(axis=1)
            starts, rows = starts[same], rows[same]
        return Hits(starts.astype(np.int64), rows)

    def row_items(self, row: int) -> np.ndarray:
        """Indices (into `items`) of the items holding table row `row`."""
        return self._row_items[self._row_start[row] : self._row_start[row + 1]]

    def items_of_rows(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(hit index, item index) for every item of every hit's row."""
        counts = self._row_start[rows + 1] - self._row_start[rows]
        hit = np.repeat(np.arange(len(rows)), counts)
        first = np.repeat(self._row_start[rows], counts)
        offset = np.arange(len(hit)) - np.repeat(np.cumsum(counts) - counts, counts)
        return hit, self._row_items[first + offset]

    def filter(self, *, min_hits: int = 1):
        """The token-array `DecontaminationFilter` on this index's table (token mode: the model's token ids)."""
        from jaxcontam.ngram.filter import DecontaminationFilter

        if self.vocab is not None:
            raise DataError("the token DecontaminationFilter needs a token index (unit='tokens', --tokenizer)")
        return DecontaminationFilter(self.table, min_hits=min_hits)

    def __getstate__(self):
        return self.__dict__.copy()


def _item_segments(items: Sequence[ItemSides], fields: tuple[str, ...], n: int, encode) -> ItemUnits:
    """Each item's unit segments for its `fields` (n-grams never cross two segments)."""
    if fields == ("item",):
        encoded = encode([item.whole for item in items])
        per_item = [[e] for e in encoded]
    else:
        questions = encode([item.question for item in items])
        answers = encode([item.answer for item in items])
        per_item = []
        for q, a in zip(questions, answers):
            if "overlap" in fields:  # one segment: its windows that cross hold both sides
                head = q if "question" in fields else q[len(q) - min(len(q), n - 1) :]
                tail = a if "answer" in fields else a[: n - 1]
                per_item.append([np.concatenate([head, tail])])
            else:
                per_item.append(([q] if "question" in fields else []) + ([a] if "answer" in fields else []))
    lengths = [len(s) for segs in per_item for s in segs]
    segment_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    item_segments = np.concatenate([[0], np.cumsum([len(segs) for segs in per_item])]).astype(np.int64)
    flat = [s for segs in per_item for s in segs]
    tokens = np.concatenate(flat).astype(np.int32) if flat else np.zeros(0, np.int32)
    return ItemUnits(tuple(item.key for item in items), tokens, segment_offsets, item_segments)
