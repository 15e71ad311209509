"""Bucketing and packing of token sequences into fixed-shape batches.

A scoring run must compile a handful of programs, not one per batch, and must
not waste compute on padding. Sequences are sorted by length, assigned to the
smallest of a few fixed row lengths (buckets) that holds them, and packed
best-fit into rows of that length; each sequence in a row gets its own segment
id (1, 2, ...) so attention stays inside it. Rows are grouped into batches of a
fixed number of rows (a multiple of the mesh "data" axis times the number of
processes); missing rows are empty padding (segment 0) and are dropped when the
results are unpacked in input order. Only a model that declares it masks by
positions and segment ids (`packing = True`, see
`jaxcontam.language_model.ModelInterface`) is packed: any other gets one
sequence per row, right-padded, on which a causal model is exact.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Sequence

import numpy as np

from jaxcontam.errors import JaxcontamError


@dataclasses.dataclass(frozen=True)
class Placement:
    """Where sequence `index` sits: `row` of the batch, tokens [offset, offset + length)."""

    index: int
    row: int
    offset: int
    length: int


@dataclasses.dataclass(frozen=True)
class PackedBatch:
    """One fixed-shape batch: int32 [rows, row_length] arrays and the sequences placed in it."""

    tokens: np.ndarray
    positions: np.ndarray
    segment_ids: np.ndarray
    targets: np.ndarray  # next token within the same sequence; 0 where there is none
    placements: tuple[Placement, ...]

    @property
    def row_length(self) -> int:
        return self.tokens.shape[1]


def packs_rows(spec) -> bool:
    """Whether several sequences may share a row for this model: only if it declares `packing = True`."""
    return getattr(spec, "packing", False) is True


SMALLEST_PACKED = 256  # packed rows: shorter buckets only add programs to compile and part-empty batches
SMALLEST_UNPACKED = 64  # one sequence per row: each row pays its bucket's length, so short rows stay short


def default_buckets(max_length: int, smallest: int = SMALLEST_UNPACKED) -> tuple[int, ...]:
    """Powers of two from `smallest` up to the first that holds `max_length` (a few shapes, <= 2x padding)."""
    buckets = [smallest]
    while buckets[-1] < max_length:
        buckets.append(buckets[-1] * 2)
    return tuple(buckets)


def _pack_rows(lengths: Sequence[int], indices: Sequence[int], row_length: int) -> list[list[int]]:
    """Best-fit-decreasing: each sequence (longest first) goes to the fullest row that still has room."""
    order = sorted(indices, key=lambda i: -lengths[i])
    rows: list[list[int]] = []
    free: list[tuple[int, int]] = []  # (room left, row number), sorted
    for i in order:
        n = lengths[i]
        slot = bisect.bisect_left(free, (n, -1))
        if slot < len(free):
            room, r = free.pop(slot)
            rows[r].append(i)
        else:
            room, r = row_length, len(rows)
            rows.append([i])
        if room - n > 0:
            bisect.insort(free, (room - n, r))
    return rows


def _fill_batch(token_ids, rows: list[list[int]], num_rows: int, row_length: int) -> PackedBatch:
    tokens = np.zeros((num_rows, row_length), np.int32)
    positions = np.zeros((num_rows, row_length), np.int32)
    segments = np.zeros((num_rows, row_length), np.int32)
    targets = np.zeros((num_rows, row_length), np.int32)
    placements = []
    for r, members in enumerate(rows):
        offset = 0
        for seg, i in enumerate(members, start=1):
            seq = np.asarray(token_ids[i], np.int32)
            n = len(seq)
            tokens[r, offset : offset + n] = seq
            positions[r, offset : offset + n] = np.arange(n)
            segments[r, offset : offset + n] = seg
            targets[r, offset : offset + n - 1] = seq[1:]
            placements.append(Placement(i, r, offset, n))
            offset += n
    return PackedBatch(tokens, positions, segments, targets, tuple(placements))


def plan_batches(
    token_ids: Sequence[Sequence[int]],
    *,
    rows_per_batch: int,
    buckets: Sequence[int] | None = None,
    pack: bool = True,
) -> list[PackedBatch]:
    """Pack `token_ids` into batches of shape [rows_per_batch, bucket] for a few bucket lengths.

    Every sequence must be non-empty and no longer than the largest bucket. Batches come grouped by bucket, so
    a run compiles one program per bucket. The default buckets start at `SMALLEST_PACKED` tokens for packed rows
    (many short sequences share a row, so a shorter bucket saves little and costs a compile; measured in
    docs/performance.md) and at `SMALLEST_UNPACKED` otherwise. `pack=False` puts one sequence per row
    (generation, P(True)).
    """
    lengths = [len(t) for t in token_ids]
    for i, n in enumerate(lengths):
        if n == 0:
            raise JaxcontamError(f"sequence {i} has no tokens: drop empty texts before scoring")
    if not lengths:
        return []
    smallest = SMALLEST_PACKED if pack else SMALLEST_UNPACKED
    buckets = tuple(sorted(buckets or default_buckets(max(lengths), smallest)))
    if max(lengths) > buckets[-1]:
        i = int(np.argmax(lengths))
        raise JaxcontamError(
            f"sequence {i} has {lengths[i]} tokens, longer than the largest bucket ({buckets[-1]}): "
            f"truncate it or pass a larger bucket (up to the model's max_position)"
        )
    if not pack:
        return _unpacked_batches(token_ids, lengths, rows_per_batch, buckets)
    by_bucket: dict[int, list[int]] = {}
    for i, n in enumerate(lengths):
        by_bucket.setdefault(buckets[bisect.bisect_left(buckets, n)], []).append(i)
    batches = []
    for row_length in sorted(by_bucket):
        rows = _pack_rows(lengths, by_bucket[row_length], row_length)
        for start in range(0, len(rows), rows_per_batch):
            batches.append(_fill_batch(token_ids, rows[start : start + rows_per_batch], rows_per_batch, row_length))
    return batches


def _unpacked_batches(
    token_ids, lengths: list[int], rows_per_batch: int, buckets: tuple[int, ...]
) -> list[PackedBatch]:
    """One sequence per row, longest first: every batch but the last is full, and each takes the smallest bucket
    that holds its longest sequence (a per-bucket split would leave a part-empty batch in every bucket, and each
    row of a batch costs a full generation loop)."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches = []
    for start in range(0, len(order), rows_per_batch):
        members = order[start : start + rows_per_batch]
        row_length = buckets[bisect.bisect_left(buckets, lengths[members[0]])]
        batches.append(_fill_batch(token_ids, [[i] for i in members], rows_per_batch, row_length))
    return batches


def unpack_rows(batch: PackedBatch, values: np.ndarray, out: list) -> None:
    """Write each sequence's per-position `values` [rows, row_length] into `out[index]` (length - 1 entries).

    Position p holds the value for predicting token p + 1, so a sequence of n
    tokens has n - 1 values (the first token has no prefix to be scored from).
    """
    for p in batch.placements:
        out[p.index] = values[p.row, p.offset : p.offset + p.length - 1]
