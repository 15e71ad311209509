"""Fast, parallel text -> token ids for corpus counting, with exactly the ids of the `tokenizers.Tokenizer`.

Two things make raw-text counting fast without changing a single id:
  - **Pieces.** A long document (a whole book) is cut into pieces of ~`PIECE_CHARS` characters at
    spaces that sit between two non-whitespace characters. Under GPT-2's byte-level split pattern a
    word's pre-token never contains such a space except as its first character, so every piece starts
    a pre-token of its own and the pieces' ids, concatenated, are the document's ids. Pieces of all
    documents of a batch are encoded in parallel on every core. Only tokenizers whose text reaches
    that split unchanged qualify (no normalizer, ByteLevel pre-tokenizer with its regex, no added
    token holding whitespace); any other tokenizer encodes whole documents, still in parallel.
  - **tiktoken.** A byte-level BPE whose merges are exactly those tiktoken's rank rule derives from
    its vocabulary (every tokenizer made by `tokenizer_from_tiktoken`, and GPT-2's own) is encoded by
    tiktoken's Rust core, ~6x faster than the `tokenizers` pipeline on one thread and straight into
    numpy. Added tokens are matched as the `tokenizers` library matches them (anywhere in the text).
"""

from __future__ import annotations

import functools
import json
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

PIECE_CHARS = 1 << 17
WORKERS = len(os.sched_getaffinity(0))
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def byte_to_unicode() -> dict[int, str]:
    """GPT-2's reversible map from bytes to printable unicode characters (byte-level BPE alphabet)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def bpe_split(token: bytes, ranks: dict[bytes, int], max_rank: int) -> list[bytes]:
    """Byte-pair merge `token` using only merges of rank < max_rank (tiktoken's algorithm)."""
    parts = [token[i : i + 1] for i in range(len(token))]
    while len(parts) > 2:
        best, best_rank = None, max_rank
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1])
            if rank is not None and rank < best_rank:
                best, best_rank = i, rank
        if best is None:
            break
        parts[best : best + 2] = [parts[best] + parts[best + 1]]
    return parts


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


def _description(tokenizer) -> dict:
    return json.loads(tokenizer.to_str())


def _plain_byte_level(description: dict) -> bool:
    """Whether text reaches GPT-2's byte-level split unchanged and no added token holds whitespace."""
    pre = description.get("pre_tokenizer") or {}
    added = description.get("added_tokens") or []
    return (
        description.get("normalizer") is None
        and pre.get("type") == "ByteLevel"
        and pre.get("use_regex", True)
        and not any(any(c.isspace() for c in t["content"]) for t in added)
    )


def _tiktoken_twin(description: dict):
    """A tiktoken `Encoding` giving the same ids as this tokenizer, or None when it cannot be shown equal."""
    import tiktoken

    model, pre = description.get("model") or {}, description.get("pre_tokenizer") or {}
    added = description.get("added_tokens") or []
    if not _plain_byte_level(description) or pre.get("add_prefix_space") or model.get("type") != "BPE":
        return None
    if (
        model.get("dropout")
        or model.get("continuing_subword_prefix")
        or model.get("end_of_word_suffix")
        or model.get("byte_fallback")
    ):
        return None
    if any(t.get(k) for t in added for k in ("lstrip", "rstrip", "single_word")):
        return None
    to_byte = {c: b for b, c in byte_to_unicode().items()}
    try:
        ranks = {bytes(to_byte[c] for c in token): rank for token, rank in model["vocab"].items()}
    except KeyError:  # a vocabulary entry outside the byte alphabet
        return None
    as_str = {rank: token for token, rank in model["vocab"].items()}
    derived = []
    for token, rank in sorted(ranks.items(), key=lambda kv: kv[1]):
        if len(token) > 1:
            parts = bpe_split(token, ranks, rank)
            if len(parts) != 2:
                return None
            derived.append(f"{as_str[ranks[parts[0]]]} {as_str[ranks[parts[1]]]}")
    listed = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]
    if derived != listed or len(ranks) != len(model["vocab"]):
        return None
    special = {t["content"]: t["id"] for t in added}
    return tiktoken.Encoding("jaxcontam-twin", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens=special)


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
        description = _description(tokenizer)
        self.tokenizer = tokenizer
        self.piece_chars = piece_chars
        self.splits = _plain_byte_level(description)
        self.twin = _tiktoken_twin(description)

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
            encode = functools.partial(self.twin.encode_to_numpy, allowed_special="all")
            groups = _balanced_groups(pieces, 4 * WORKERS)  # few tasks: a task costs ~0.1 ms
            return [ids for group in _pool().map(lambda g: [encode(p) for p in g], groups) for ids in group]
        encodings = self.tokenizer.encode_batch_fast(pieces, add_special_tokens=False)
        return [np.asarray(e.ids, dtype=np.int32) for e in encodings]

    def encode_batch(self, texts: list[str]) -> list[np.ndarray]:
        split = [self._pieces(t) for t in texts]
        encoded = self._encode_pieces([p for pieces in split for p in pieces])
        out, at = [], 0
        for pieces in split:
            parts = encoded[at : at + len(pieces)]
            at += len(pieces)
            out.append(parts[0].astype(np.int32) if len(parts) == 1 else np.concatenate(parts).astype(np.int32))
        return out
