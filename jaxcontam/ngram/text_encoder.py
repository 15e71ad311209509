"""Fast, parallel text -> token ids for corpus counting, with exactly the ids of the `tokenizers.Tokenizer`.

Two things make raw-text counting fast without changing a single id:
  - **Pieces.** A long document (a whole book) is cut into pieces of ~`PIECE_CHARS` characters at
    spaces that sit between two non-whitespace characters. Under the split patterns of GPT-2, Llama 3 and
    Qwen2 such a space only ever starts a pre-token (or stands alone), so the pieces' ids, concatenated,
    are the document's ids. Pieces of all documents of a batch are encoded in parallel on every core.
    Only tokenizers whose text reaches that split unchanged qualify (`tiktoken_twin.split_pattern`); any
    other tokenizer encodes whole documents, still in parallel.
  - **tiktoken.** A byte-level BPE that `tiktoken_twin` can show equal to a tiktoken encoding (GPT-2,
    SmolLM2, Llama 3 and Qwen2 style `tokenizer.json` files, and every `.tiktoken` file) is encoded by
    tiktoken's Rust core, several times faster than the `tokenizers` pipeline, straight into numpy.
"""

from __future__ import annotations

import functools
import json
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from jaxcontam.ngram.tiktoken_twin import split_pattern, tiktoken_twin

PIECE_CHARS = 1 << 17
WORKERS = len(os.sched_getaffinity(0))


def split_points(text: str, piece_chars: int = PIECE_CHARS) -> list[int]:
    """Cut positions ~`piece_chars` apart, each at a space with non-whitespace on both sides."""
    cuts, target = [], piece_chars
    while target < len(text) - 1:
        at = text.find(" ", target)
        while at != -1 and not (at + 1 < len(text) and not text[at - 1].isspace() and not text[at + 1].isspace()):
            at = text.find(" ", at + 1)
        if at == -1:
            break
        cuts.append(at)
        target = at + piece_chars
    return cuts


@functools.cache
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(WORKERS, thread_name_prefix="jaxcontam-encode")


def _balanced_groups(pieces: list[str], count: int) -> list[list[str]]:
    """`pieces` in order, cut into at most `count` runs of about equal total length."""
    total = max(sum(map(len, pieces)), 1)
    groups, current, size = [], [], 0
    for piece in pieces:
        current.append(piece)
        size += len(piece)
        if size * count >= total * (len(groups) + 1):
            groups.append(current)
            current = []
    return groups + [current] if current else groups


class TextEncoder:
    """Encodes batches of texts into int32 id arrays, identical to `tokenizer.encode(t, add_special_tokens=False)`."""

    def __init__(self, tokenizer, piece_chars: int = PIECE_CHARS):
        description = json.loads(tokenizer.to_str())
        self.tokenizer = tokenizer
        self.piece_chars = piece_chars
        self.splits = split_pattern(description) is not None
        self.twin = tiktoken_twin(description)

    @property
    def engine(self) -> str:
        return "tiktoken" if self.twin is not None else "tokenizers"

    def _pieces(self, text: str) -> list[str]:
        if not self.splits or len(text) <= self.piece_chars:
            return [text]
        bounds = [0, *split_points(text, self.piece_chars), len(text)]
        return [text[a:b] for a, b in zip(bounds[:-1], bounds[1:])]

    def _encode_pieces(self, pieces: list[str]) -> list[np.ndarray]:
        if self.twin is not None:
            groups = _balanced_groups(pieces, 4 * WORKERS)  # few tasks: a task costs ~0.1 ms
            return [ids for group in _pool().map(lambda g: [self._encode_one(p) for p in g], groups) for ids in group]
        encodings = self.tokenizer.encode_batch_fast(pieces, add_special_tokens=False)
        return [np.asarray(e.ids, dtype=np.int32) for e in encodings]

    def _encode_one(self, piece: str) -> np.ndarray:
        assert self.twin is not None
        ids = self.twin.encode(piece)
        if ids is None:  # a text its normalizer would change: the tokenizer itself
            ids = np.asarray(self.tokenizer.encode(piece, add_special_tokens=False).ids, dtype=np.int32)
        return ids

    def encode_batch(self, texts: list[str]) -> list[np.ndarray]:
        split = [self._pieces(t) for t in texts]
        encoded = self._encode_pieces([p for pieces in split for p in pieces])
        out, at = [], 0
        for pieces in split:
            parts = encoded[at : at + len(pieces)]
            at += len(pieces)
            out.append(parts[0].astype(np.int32) if len(parts) == 1 else np.concatenate(parts).astype(np.int32))
        return out
