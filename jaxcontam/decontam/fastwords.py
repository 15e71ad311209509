"""The gpt3 rule's words of a whole batch of texts as vocabulary ids, in numpy: the hot path of word mode.

The batch's texts are ASCII-lowercased and stripped of ASCII punctuation by `bytes.translate` (C), then every word
(a run of non-space bytes) gets a 64-bit polynomial hash from one prefix sum over the batch's bytes, and its id by
`searchsorted` among the vocabulary's hashes. Words holding non-ASCII bytes take the rule's remaining step in
Python (cached per distinct word). A hash can only make a corpus word look like a benchmark word, never hide one,
and every hit is re-checked on exact words (`DecontIndex.spans`), so a collision never flags a document.
"""

from __future__ import annotations

import functools

import numpy as np

from jaxcontam.decontam import rules
from jaxcontam.decontam.escapes import decode

_SPACE = np.zeros(256, bool)
_SPACE[list(b" \t\n\r\x0b\x0c")] = True
_BASE = np.uint64(0x100000001B3)  # odd: invertible modulo 2^64
_BASE_INVERSE = np.uint64(pow(0x100000001B3, -1, 1 << 64))
_EMPTY = np.uint64(0)  # a free slot of the vocabulary table (no word hashes to 0: see word_hashes)


@functools.cache
def _powers(size: int) -> tuple[np.ndarray, np.ndarray]:
    """BASE^i and BASE^-i (mod 2^64) for i < size."""
    return _geometric(_BASE, size), _geometric(_BASE_INVERSE, size)


def _geometric(base: np.uint64, size: int) -> np.ndarray:
    """base^i for i < size: a block of 4096 by cumprod, then every block as that block times base^(4096 k)."""
    block = 4096
    with np.errstate(over="ignore"):
        first = np.concatenate([np.ones(1, np.uint64), np.cumprod(np.full(block - 1, base, np.uint64))])
        step = first[-1] * base  # base^block
        steps = np.concatenate([np.ones(1, np.uint64), np.cumprod(np.full(-(-size // block) - 1, step, np.uint64))])
        return (steps[:, None] * first[None, :]).reshape(-1)[:size]


SEGMENT = 1 << 22  # bytes hashed at once (the power tables' length)


def word_hashes(data: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, hash) of every word of `data` (words split at ASCII whitespace); a hash is never 0.

    sum_j byte_j * BASE^(start + j) over a word, times BASE^-start: the word's own polynomial hash, whatever its
    place; then its length and an avalanche. Long data is hashed in segments cut at whitespace."""
    if len(data) <= SEGMENT:
        return _segment_hashes(np.frombuffer(data, np.uint8))
    array = np.frombuffer(data, np.uint8)
    parts, begin = [], 0
    while begin < len(array):
        stop = min(begin + SEGMENT, len(array))
        if stop < len(array):
            spaces = np.flatnonzero(_SPACE[array[begin:stop]])
            stop = begin + int(spaces[-1]) + 1 if len(spaces) else stop  # a word longer than a segment is cut
        s, e, h = _segment_hashes(array[begin:stop])
        parts.append((s + begin, e + begin, h))
        begin = stop
    return tuple(np.concatenate([p[k] for p in parts]) for k in range(3))  # type: ignore[return-value]


def _segment_hashes(array: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    solid = ~_SPACE[array]
    padded = np.zeros(len(array) + 2, bool)
    padded[1:-1] = solid
    bounds = np.flatnonzero(padded[1:] != padded[:-1])
    starts, ends = bounds[0::2], bounds[1::2]
    if not len(starts):
        return starts, ends, np.zeros(0, np.uint64)
    up, down = _powers(SEGMENT)
    with np.errstate(over="ignore"):
        weighted = array * solid  # spaces weigh 0
        weighted = weighted.astype(np.uint64) * up[: len(array)]
        hashes = np.add.reduceat(weighted, starts) * down[starts]
        hashes ^= (ends - starts).astype(np.uint64)
        for factor in (0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53):  # murmur3's finaliser
            hashes ^= hashes >> np.uint64(33)
            hashes *= np.uint64(factor)
        hashes ^= hashes >> np.uint64(33)
    return starts, ends, hashes | np.uint64(1)


def vocabulary_hashes(words: list[bytes]) -> np.ndarray:
    """The hash of each vocabulary word, as `word_hashes` computes it."""
    hashes = word_hashes(b" ".join(words))[2]
    if len(hashes) != len(words):
        raise ValueError("a vocabulary word holds whitespace")
    return hashes


class FastWords:
    """Vocabulary ids of the gpt3 rule's words, for batches of texts (escapes decoded first if `escapes`)."""

    def __init__(self, vocab: dict[bytes, int], escapes: bool = False):
        self._escapes = escapes
        words = list(vocab)
        hashes = vocabulary_hashes(words) if words else np.zeros(0, np.uint64)
        self._bits = max(4, (2 * len(words) + 1).bit_length())  # a table at most half full
        self._slots = np.zeros(1 << self._bits, np.uint64)
        self._slot_ids = np.zeros(1 << self._bits, np.int64)
        mask = (1 << self._bits) - 1
        for word, value in zip(words, hashes.tolist()):  # linear probing
            slot = value >> (64 - self._bits)
            while self._slots[slot] != _EMPTY and self._slots[slot] != value:
                slot = (slot + 1) & mask
            self._slots[slot], self._slot_ids[slot] = value, vocab[word]
        self._vocab = vocab
        self._folded: dict[bytes, tuple[int, ...]] = {}

    def _fold(self, chunk: bytes) -> tuple[int, ...]:
        """Ids of the words a chunk with non-ASCII bytes becomes (0, 1 or more)."""
        found = self._folded.get(chunk)
        if found is None:
            get = self._vocab.get
            found = tuple(
                get(f.encode(), 0) for f in map(rules._gpt3_fold, chunk.decode("utf-8", "surrogatepass").split()) if f
            )
            if len(self._folded) > 1 << 18:
                self._folded.clear()
            self._folded[chunk] = found
        return found

    def encode(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(ids of every word of the batch, back to back; int64 [len(texts)] end of each text in them)."""
        if self._escapes:
            texts = [decode(t) for t in texts]
        parts = [
            t.encode("utf-8", "surrogatepass").translate(rules._GPT3_BYTES, rules._ASCII_PUNCTUATION) for t in texts
        ]
        data = b"\n".join(parts)
        starts, ends, hashes = word_hashes(data)
        ids = self._ids_of(hashes)
        part_ends = np.cumsum([len(p) + 1 for p in parts])  # the byte after each text's separator
        text_word_ends = np.searchsorted(starts, part_ends)  # words that start before each text's end
        if all(t.isascii() for t in texts):
            return ids, text_word_ends
        array = np.frombuffer(data, np.uint8)
        other = np.flatnonzero(np.logical_or.reduceat(array >= 0x80, starts)) if len(starts) else starts
        counts = np.ones(len(ids), np.int64)
        pieces = [self._fold(data[starts[w] : ends[w]]) for w in other.tolist()]
        counts[other] = [len(p) for p in pieces]
        out = np.repeat(ids, counts)
        first = np.cumsum(counts) - counts
        for w, folded in zip(other.tolist(), pieces):
            out[first[w] : first[w] + len(folded)] = folded
        word_ends = np.cumsum(counts)
        ends_out = np.where(text_word_ends > 0, word_ends[np.maximum(text_word_ends - 1, 0)], 0)
        return out, ends_out

    def _ids_of(self, hashes: np.ndarray) -> np.ndarray:
        """The vocabulary id of each word hash (0: not a vocabulary word), probing the table until settled."""
        ids = np.zeros(len(hashes), np.int64)
        mask = (1 << self._bits) - 1
        pending = np.arange(len(hashes))
        slot = (hashes >> np.uint64(64 - self._bits)).astype(np.int64)
        while len(pending):
            held = self._slots[slot]
            hit = held == hashes[pending]
            ids[pending[hit]] = self._slot_ids[slot[hit]]
            again = ~hit & (held != _EMPTY)
            pending, slot = pending[again], (slot[again] + 1) & mask
        return ids
