"""Documents packed into fixed [batch, seq_len] rows with segment ids, for training.

Each document (a token list ending in EOS) is cut into pieces of at most seq_len tokens; pieces are
shuffled per epoch and packed first-fit into rows, each piece its own segment with positions from 0,
so attention never crosses documents and every step has the same shape (one compiled program).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np


def _pieces(documents: Sequence[Sequence[int]], seq_len: int) -> list[np.ndarray]:
    pieces = []
    for doc in documents:
        doc = np.asarray(doc, np.int32)
        pieces.extend(doc[i : i + seq_len] for i in range(0, len(doc), seq_len) if len(doc[i : i + seq_len]) > 1)
    return pieces


def _rows(pieces: list[np.ndarray], seq_len: int) -> Iterator[list[np.ndarray]]:
    """Greedy packing in the given order: start a new row when the next piece does not fit."""
    row, used = [], 0
    for piece in pieces:
        if used + len(piece) > seq_len:
            yield row
            row, used = [], 0
        row.append(piece)
        used += len(piece)
    if row:
        yield row


def _layout(row: list[np.ndarray], seq_len: int):
    tokens = np.zeros(seq_len, np.int32)
    positions = np.zeros(seq_len, np.int32)
    segments = np.zeros(seq_len, np.int32)
    at = 0
    for segment, piece in enumerate(row, start=1):
        tokens[at : at + len(piece)] = piece
        positions[at : at + len(piece)] = np.arange(len(piece))
        segments[at : at + len(piece)] = segment
        at += len(piece)
    return tokens, positions, segments


def packed_batches(
    documents: Sequence[Sequence[int]],
    *,
    seq_len: int,
    batch_size: int,
    epochs: int = 1,
    seed: int = 0,
    pad_last: bool = False,
) -> Iterator[dict[str, np.ndarray]]:
    """{"tokens", "positions", "segment_ids"}: int32 [batch_size, seq_len] per step. The last partial batch is
    dropped, or with `pad_last` filled up with empty rows (segment 0: no loss), so every document is trained on."""
    pieces = _pieces(documents, seq_len)
    if not pieces:
        raise ValueError("no document has two or more tokens: nothing to train on")
    rng = np.random.default_rng(seed)
    empty = tuple(np.zeros(seq_len, np.int32) for _ in range(3))
    for _ in range(epochs):
        order = rng.permutation(len(pieces))
        rows = [_layout(row, seq_len) for row in _rows([pieces[i] for i in order], seq_len)]
        if pad_last and len(rows) % batch_size:
            rows += [empty] * (batch_size - len(rows) % batch_size)
        for start in range(0, len(rows) - batch_size + 1, batch_size):
            tokens, positions, segments = (np.stack(a) for a in zip(*rows[start : start + batch_size]))
            yield {"tokens": tokens, "positions": positions, "segment_ids": segments}


def count_steps(
    documents: Sequence[Sequence[int]],
    *,
    seq_len: int,
    batch_size: int,
    epochs: int = 1,
    seed: int = 0,
    pad_last: bool = False,
) -> int:
    """How many steps `packed_batches` yields for the same arguments (for learning-rate schedules)."""
    return sum(
        1
        for _ in packed_batches(
            documents, seq_len=seq_len, batch_size=batch_size, epochs=epochs, seed=seed, pad_last=pad_last
        )
    )
