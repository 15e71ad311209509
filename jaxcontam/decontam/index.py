"""The decontamination index: every n-gram of the benchmark items, looked up with numpy, matches exact.

Units are normalised words (a vocabulary of the items' words; a corpus word outside it has id 0 and no n-gram
holding it can match) or the model's tokens (`--tokenizer`, as `jaxcontam ngram`). The n-grams live in one
`ngram.NgramTable` (sorted, de-duplicated, with back-references to the items): the same table the token
`DecontaminationFilter` uploads to the device (`index.filter()`), and the counts `ngram` uses.

On the host a window's key is a 64-bit multiply-add of its n ids (one vectorised pass per id position); a
bitmap over the keys' top bits rejects most windows, `searchsorted` finds the rest, and a hit counts only when
its n ids equal the table row's, so a hash collision never flags a document.

Which n-grams an item gives (`fields`): "item" (default): what a copy of the item holds, its own question and answer
text as one text (their junction included), without the prompt's labels or template words ("Q:", "A:", "Question:",
"Answer:", MMLU's header and lettered options), and, as a second segment, its prompt rendering (so a copy with the
labels is found too); a question shorter than n is also matched whole on its own (down to the floor), so a copy that
keeps it apart from its answer (a dataset's JSON row) is found; "prompt": the rendering alone, the item as the model
sees it (prompt and gold answer, one text, `ngram.item_text`, labels included: the text `ngram` and ConTAM score);
otherwise any of datatrove's options "question", "answer" (each on its own) and "overlap" (the n-grams that hold the
question's last units and the answer's first ones).

Escapes. Under the gpt3 word rule (the default) the items and the corpus are read with their escapes decoded
(`escapes.decode`: JSON's `\\n` and `\\uXXXX`, HTML character references and tags), so a copy inside a JSON string
or an HTML page has its words; `IndexSettings(escapes=False)` reads text as lm-eval's Janitor does.

Letters. An n-gram counts only when `letter_share` of its units hold a letter (half in token mode, where a tokenizer
that splits digits one by one makes n-grams of `100,000`; none in word mode): the others never match (`dropped`),
and an item left with none is listed by `not_findable`.

Short items. A segment shorter than n units holds no n-gram; one of at least `floor` units is matched whole, at its
own length: its row in the table is its units followed by PAD up to n, and the lookup also tries every window of
each such length. A segment under the floor gives nothing; an item left with no row at all cannot be found, and
`not_findable(index)` lists it with the reason (the run's summary.json "not_findable").
"""

from __future__ import annotations

import copy
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
FIELDS = ("item", "prompt", "question", "answer", "overlap")
TOKEN_N = 8  # jaxcontam ngram's default
# The shortest segment matched whole (units), measured: recall on planted verbatim short items against flagged clean
# documents (experiments/decontamination/short_items.py; docs/decontamination.md, "Short items").
DEFAULT_FLOOR: dict[str, int] = {"words": 7, "tokens": 8}
PAD = -1  # fills a short segment's row up to n; no text unit is ever -1
# The share of an n-gram's units that must hold a letter for it to count, measured: a tokenizer that splits digits
# one by one (SmolLM2's) makes 8-token n-grams of `100,000` and `in the 1960s`, which flag clean text
# (experiments/decontamination/precision.py; docs/decontamination.md, "Precision"). A word holds a whole number.
LETTER_SHARE: dict[str, float] = {"words": 0.0, "tokens": 0.5}


@dataclasses.dataclass(frozen=True)
class IndexSettings:
    """What is matched: `unit` words (by `preset`) or tokens (of `tokenizer`), `n` units, the items' `fields`."""

    unit: Unit = "words"
    preset: Preset = "gpt3"
    n: int | None = None  # the preset's (13 gpt3, 12 datatrove), or 8 tokens
    fields: tuple[str, ...] = ("item",)
    tokenizer: str | None = None
    floor: int | None = None  # the shortest segment matched whole (DEFAULT_FLOOR); n or more: none is
    escapes: bool | None = None  # decode escapes before the word rule (`escapes.decode`); default: on for gpt3 words
    letter_share: float | None = None  # the share of an n-gram's units that must hold a letter (LETTER_SHARE)

    def __post_init__(self):
        if self.unit not in ("words", "tokens"):
            raise DataError(f"unit {self.unit!r}: choose words or tokens")
        check_preset(self.preset)
        if self.unit == "tokens" and not self.tokenizer:
            raise DataError("token units need --tokenizer (a folder with tokenizer.json, a .tiktoken file, a GGUF)")
        bad = [f for f in self.fields if f not in FIELDS]
        whole = [f for f in self.fields if f in ("item", "prompt")]
        if bad or not self.fields or (whole and len(self.fields) > 1):
            raise DataError(
                f"fields {', '.join(self.fields) or '(none)'}: give 'item' or 'prompt' alone, or any of question, "
                "answer, overlap"
            )
        if self.n is not None and self.n < 1:
            raise DataError(f"--n {self.n}: n must be a positive number of units")
        if self.floor is not None and self.floor < 1:
            raise DataError(f"floor {self.floor}: the shortest item matched whole is at least one unit")
        gpt3_words = self.unit == "words" and self.preset == "gpt3"
        if self.escapes and not gpt3_words:
            raise DataError(
                "--escapes decodes escaped text for the gpt3 word rule only (its padding is punctuation that rule "
                "deletes); drop --escapes, or use --normalize gpt3 without --tokenizer"
            )
        if self.escapes is None:
            object.__setattr__(self, "escapes", gpt3_words)
        share = LETTER_SHARE[self.unit] if self.letter_share is None else self.letter_share
        if not 0 <= share <= 1:
            raise DataError(f"letter share {share}: give a share of the units, from 0 to 1")
        object.__setattr__(self, "letter_share", share)

    @property
    def size(self) -> int:
        if self.n is not None:
            return self.n
        return DEFAULT_N[self.preset] if self.unit == "words" else TOKEN_N

    @property
    def short_floor(self) -> int:
        """The shortest segment matched whole; n when no segment shorter than n is."""
        return min(self.size, self.floor if self.floor is not None else DEFAULT_FLOOR[self.unit])


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

    @property
    def own(self) -> tuple[str, ...]:
        """The item's own texts, in order, for the "item" field: question and answer, or `whole` if it has neither."""
        return (self.question, self.answer) if self.question or self.answer else (self.whole,)


def benchmark_items(benchmarks: Iterable[Any]) -> list[ItemSides]:
    """The items of loaded benchmarks (`data.load_benchmark`): each as the model sees it (`whole`) and its question
    and answer sides without the prompt's template (`question`, `answer`: what the default "item" field joins)."""
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
    multipliers = multipliers_for(n)
    keys = ids[:windows] * multipliers[0]
    for j in range(1, n):
        keys += ids[j : j + windows] * multipliers[j]
    return keys


def multipliers_for(n: int) -> np.ndarray:
    return _MULTIPLIERS if n <= len(_MULTIPLIERS) else _multipliers(n)


@functools.cache
def _multipliers(n: int) -> np.ndarray:
    return (np.random.default_rng(0x5EED + n).integers(1, 2**63, size=n, dtype=np.uint64) * 2 + 1).astype(np.uint64)


def _bitmap(keys: np.ndarray) -> tuple[int, np.ndarray]:
    """(bits, bitmap): one bit per value of the keys' top `bits` bits, set where a key has it (about 1/16 full)."""
    bits = max(16, int(np.ceil(np.log2(max(len(keys), 1) * 16))))
    bitmap = np.zeros(1 << (bits - 3), np.uint8)
    top = (keys >> np.uint64(64 - bits)).astype(np.int64)
    np.bitwise_or.at(bitmap, top >> 3, (1 << (top & 7)).astype(np.uint8))
    return bits, bitmap


def _maybe(bitmap: tuple[int, np.ndarray], keys: np.ndarray) -> np.ndarray:
    """bool: the keys whose top bits are set in the bitmap (every key of the set, and a few others)."""
    bits, table = bitmap
    top = (keys >> np.uint64(64 - bits)).astype(np.int64)
    return ((table[top >> 3] >> (top & 7).astype(np.uint8)) & 1).astype(bool)


def _pad_offset(multipliers: np.ndarray, length: int, n: int) -> np.uint64:
    """What PAD adds to the key of a row of `length` units padded to n: the keys of a window of `length` units
    plus this equal the padded row's key."""
    with np.errstate(over="ignore"):
        pad = np.full(n - length, np.uint64(PAD & (2**64 - 1)), np.uint64)
        return np.uint64((pad * multipliers[length:n]).sum(dtype=np.uint64))


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
        # a short segment's row: its units, then PAD up to n (see the module docstring)
        self.row_length = (self.n - (table.ngrams == PAD).sum(axis=1)).astype(np.int64)
        self._short = [
            (int(m), _pad_offset(multipliers_for(self.n), int(m), self.n))
            for m in np.unique(self.row_length[self.row_length < self.n])
        ]
        order = np.argsort(keys, kind="stable")
        self._keys, self._rows = keys[order], order.astype(np.int32)
        if len(np.unique(self._keys)) != rows:
            raise DataError("two benchmark n-grams share a 64-bit key; rebuild with another --n")
        self._bits, self._bitmap = _bitmap(self._keys)
        # short rows of two units or more: a bitmap of their first two units' key, the one check every position gets
        # before the short lengths are probed (only where a short row can start)
        self._prefix = None
        if self._short and self._short[0][0] >= 2:
            first = table.ngrams[self.row_length < self.n, :2].astype(np.uint64)
            with np.errstate(over="ignore"):
                prefix = first[:, 0] * multipliers_for(self.n)[0] + first[:, 1] * multipliers_for(self.n)[1]
            self._prefix = _bitmap(prefix)
        # row -> items holding it (CSR)
        positions = np.flatnonzero(table.position_ngram >= 0)
        item_of = np.searchsorted(table.items.item_offsets, positions, side="right") - 1
        pairs = np.unique(np.stack([table.position_ngram[positions].astype(np.int64), item_of]), axis=1)
        self._row_items = pairs[1].astype(np.int32)
        self._row_start = np.concatenate([[0], np.cumsum(np.bincount(pairs[0], minlength=rows))]).astype(np.int64)
        # bool per row: n-grams left out of every lookup (too few letters here; common in a corpus: `without_rows`)
        self.dropped: np.ndarray | None = None
        self.few_letters = np.zeros(rows, bool)
        if settings.letter_share and rows:
            self.few_letters = self._letter_units() < np.ceil(self.row_length * settings.letter_share - 1e-9)
            self.dropped = self.few_letters.copy() if self.few_letters.any() else None
        kept = ~self.few_letters[table.position_ngram[positions]]
        self.item_ngrams = np.bincount(item_of[kept], minlength=len(self.items)).astype(np.int64)  # n-gram positions
        self._fast = None
        if vocab is not None and settings.preset == "gpt3":
            from jaxcontam.decontam.fastwords import FastWords

            self._fast = FastWords(vocab, bool(settings.escapes))

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
                    ws = words(text, settings.preset, bool(settings.escapes))
                    out.append(np.fromiter((vocab.setdefault(w, len(vocab) + 1) for w in ws), np.int64, len(ws)))
                return out

        segments = _item_segments(items, settings.fields, n, encode, settings.short_floor)
        table = build_table(segments, n)
        return cls(settings, items, table, vocab, units)

    # encoding and lookup ----------------------------------------------------------------------------------

    def encode(self, texts: Sequence[str]) -> list[np.ndarray]:
        """int64 unit ids of each text (words outside the vocabulary are 0)."""
        if self.vocab is None:
            return [np.asarray(a, np.int64) for a in self.units.encode_batch(list(texts))]
        get, preset, escapes = self.vocab.get, self.settings.preset, bool(self.settings.escapes)
        out = []
        for text in texts:
            ws = words(text, preset, escapes)
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
        ws, spans = word_spans(text, self.settings.preset, bool(self.settings.escapes))
        get = self.vocab.get
        return np.fromiter(map(get, ws, repeat(0)), np.int64, len(ws)), spans

    def lookup(self, ids: np.ndarray, doc_ends: np.ndarray | None = None) -> Hits:
        """Windows of `ids` (several documents back to back, each ending at `doc_ends`) that are table rows: n-grams,
        and short segments matched whole at their own length (`row_length`). Sorted by start."""
        n = self.n
        shortest = self._short[0][0] if self._short else n
        windows = len(ids) - shortest + 1
        if windows <= 0 or not len(self._keys):
            return Hits(np.zeros(0, np.int64), np.zeros(0, np.int32))
        units = ids.astype(np.uint64, copy=False)
        multipliers = multipliers_for(n)
        keys = units[:windows] * multipliers[0]  # keys[i]: the key of the window of j+1 units at i, after step j
        found_starts, found_rows = [], []
        short = dict(self._short)
        candidates: np.ndarray | None = None  # where a short row can start (its first two units), once known
        with np.errstate(over="ignore"):
            for j in range(min(n, len(ids))):  # no window is longer than the text
                if j:
                    count = min(windows, len(ids) - j)
                    keys[:count] += units[j : j + count] * multipliers[j]
                length = j + 1
                if length == 2 and self._prefix is not None:
                    candidates = np.flatnonzero(_maybe(self._prefix, keys[: len(ids) - 1]))
                if length == n:
                    hits = self._probe(ids, None, keys[: len(ids) - n + 1], np.uint64(0), n, doc_ends)
                elif length in short and candidates is not None:
                    starts = candidates[candidates <= len(ids) - length]
                    hits = self._probe(ids, starts, keys[starts], short[length], length, doc_ends)
                elif length in short:
                    hits = self._probe(ids, None, keys[: len(ids) - length + 1], short[length], length, doc_ends)
                else:
                    continue
                found_starts.append(hits[0])
                found_rows.append(hits[1])
        starts, rows = np.concatenate(found_starts), np.concatenate(found_rows)
        if self.dropped is not None and len(rows):
            kept = ~self.dropped[rows]
            starts, rows = starts[kept], rows[kept]
        if len(found_starts) > 1 and len(starts):
            order = np.lexsort((self.row_length[rows], starts))
            starts, rows = starts[order], rows[order]
        return Hits(starts.astype(np.int64), rows.astype(np.int32))

    def _probe(self, ids, starts, keys, offset, length: int, doc_ends) -> tuple[np.ndarray, np.ndarray]:
        """(starts, rows) of the windows of `length` units at `starts` (every position where None; their keys
        given) that are rows of that length."""
        if not len(keys):
            return np.zeros(0, np.int64), np.zeros(0, np.int32)
        if offset:
            keys = keys + offset
        maybe = np.flatnonzero(_maybe((self._bits, self._bitmap), keys))
        starts, keys = (maybe if starts is None else starts[maybe]), keys[maybe]
        if doc_ends is not None and len(starts):  # a window must end inside its document
            end_of = doc_ends[np.searchsorted(doc_ends, starts, side="right")]
            inside = starts + length <= end_of
            starts, keys = starts[inside], keys[inside]
        where = np.minimum(np.searchsorted(self._keys, keys), len(self._keys) - 1)
        found = self._keys[where] == keys
        starts, rows = starts[found], self._rows[where[found]]
        if len(starts):
            same = (ids[starts[:, None] + np.arange(length)] == self.table.ngrams[rows, :length]).all(axis=1)
            same &= self.row_length[rows] == length
            starts, rows = starts[same], rows[same]
        return starts, rows

    def without_rows(self, rows: np.ndarray) -> DecontIndex:
        """This index with table rows `rows` never matched (the n-grams common in a corpus: `--drop-common`)."""
        dropped = self.few_letters.copy()
        dropped[np.asarray(rows, np.int64)] = True
        index = copy.copy(self)
        index.dropped = dropped
        return index

    def row_text(self, row: int) -> str:
        """Table row `row` as text: its normalised words, or its tokens decoded."""
        units = self.table.ngrams[row, : self.row_length[row]].tolist()
        if self.vocab is None:
            return self.units.tokenizer.decode(units)
        return " ".join(self._unit_texts(units))

    def _unit_texts(self, ids: Sequence[int]) -> list[str]:
        """Each unit id as text: its word, or its token decoded alone."""
        if self.vocab is None:
            return [self.units.tokenizer.decode([i]) for i in ids]
        words_of = getattr(self, "_words_of", None)
        if words_of is None:
            words_of = self._words_of = {i: w.decode("utf-8", "surrogatepass") for w, i in self.vocab.items()}
        return [words_of[i] for i in ids]

    def _letter_units(self) -> np.ndarray:
        """Per table row, how many of its units hold a letter."""
        ngrams = self.table.ngrams
        ids, where = np.unique(ngrams[ngrams != PAD], return_inverse=True)
        letters = np.array([any(c.isalpha() for c in text) for text in self._unit_texts(ids.tolist())], bool)
        holds = np.zeros(ngrams.shape, bool)
        holds[ngrams != PAD] = letters[where]
        return holds.sum(axis=1)

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
        """The token-array `DecontaminationFilter` on this index's table (token mode: the model's token ids); the
        rows this index leaves out of its lookups (too few letters, common in the corpus) are no hit there either."""
        from jaxcontam.ngram.filter import DecontaminationFilter

        if self.vocab is not None:
            raise DataError("the token DecontaminationFilter needs a token index (unit='tokens', --tokenizer)")
        return DecontaminationFilter(self.table, min_hits=min_hits, left_out=self.dropped)

    def __getstate__(self):
        return self.__dict__.copy()


def _item_segments(items: Sequence[ItemSides], fields: tuple[str, ...], n: int, encode, floor: int) -> ItemUnits:
    """Each item's unit segments for its `fields` (n-grams never cross two segments); a segment shorter than n
    and at least `floor` long is padded to one row."""
    if fields == ("prompt",):
        encoded = encode([item.whole for item in items])
        per_item = [[e] for e in encoded]
    elif fields == ("item",):  # its own text and, a segment apart, its prompt rendering: either copy is found
        texts = [item.own for item in items]
        encoded = iter(encode([t for own in texts for t in own]))
        rendered = encode([item.whole for item in items])
        per_item = []
        for own, whole in zip(texts, rendered):
            pieces = [next(encoded) for _ in own]
            segments = [np.concatenate(pieces), whole]
            if len(pieces) == 2 and floor <= len(pieces[0]) < n:  # a short question alone: a copy that keeps the
                segments.append(pieces[0])  # question apart from its answer (a JSON row's fields) still holds it
            per_item.append(segments)
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
    per_item = [[_whole_if_short(s, n, floor) for s in segs] for segs in per_item]
    lengths = [len(s) for segs in per_item for s in segs]
    segment_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    item_segments = np.concatenate([[0], np.cumsum([len(segs) for segs in per_item])]).astype(np.int64)
    flat = [s for segs in per_item for s in segs]
    tokens = np.concatenate(flat).astype(np.int32) if flat else np.zeros(0, np.int32)
    return ItemUnits(tuple(item.key for item in items), tokens, segment_offsets, item_segments)


def _whole_if_short(segment: np.ndarray, n: int, floor: int) -> np.ndarray:
    if floor <= len(segment) < n:
        return np.concatenate([segment, np.full(n - len(segment), PAD, segment.dtype)])
    return segment


def not_findable(index: DecontIndex) -> list[dict[str, Any]]:
    """The items that no copy can match (no n-gram, no segment long enough to be matched whole), each with its
    length and the reason: JSON-able, for the run's summary ("not_findable")."""
    units = "tokens" if index.settings.unit == "tokens" else "words"
    floor = index.settings.short_floor
    table = index.table.items
    lengths = np.diff(table.segment_offsets)
    out = []
    for k in np.flatnonzero(index.item_ngrams == 0).tolist():
        item = index.items[k]
        mine = lengths[table.item_segments[k] : table.item_segments[k + 1]]
        longest = int(mine.max()) if len(mine) else 0
        reason = f"{longest} {units}, below the floor of {floor}"
        if longest >= floor:
            share = index.settings.letter_share
            reason = f"no n-gram with letters in {share:.0%} of its {units} (digits and punctuation only)"
        out.append({"benchmark": item.benchmark, "item": item.id, units: longest, "reason": reason})
    return out
