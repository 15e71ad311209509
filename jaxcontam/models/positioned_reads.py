"""Positioned reads of the parts of a stored tensor: which contiguous byte runs a strided view of a C-ordered
tensor covers, and reading exactly those runs (back-to-back runs in one call) from the file.

Used by the safetensors and GGUF readers, so that on a mesh spanning several hosts each process reads only the
bytes of its own shards.
"""

from __future__ import annotations

import mmap
import os
import pathlib

import numpy as np

from jaxcontam.errors import ModelError
from jaxcontam.storage import describe_error, storage_errors


def reserved(size: int) -> np.ndarray:
    """`size` bytes (uint8) over an address range reserved and never touched: no memory is used, and a stray read
    fails loudly instead of reading zeros. Views of it stand for the bytes of a file that is not mapped (in a
    bucket, or quantised), so that numpy's reshape, transpose and slicing still say which bytes a part covers."""
    mapping = mmap.mmap(-1, max(size, 1), flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, prot=0)
    return np.frombuffer(mapping, np.uint8)[:size]


def read_runs(path, starts: np.ndarray, run_bytes: int) -> np.ndarray:
    """The runs of `run_bytes` bytes at file offsets `starts`, concatenated in that order (uint8); `path` is a
    local file (positioned reads) or a `UPath` of an object in a bucket (ranged requests, sent concurrently)."""
    buffer = np.empty(len(starts) * run_bytes, np.uint8)
    if not isinstance(path, pathlib.Path):
        _read_ranges(path, starts, run_bytes, buffer)
        return buffer
    with open(path, "rb", buffering=0) as handle:
        for at, start, length in coalesced(starts, run_bytes):
            got = os.preadv(handle.fileno(), [buffer.data[at : at + length]], int(start))
            if got != length:
                raise ModelError(f"{path}: file ended {length - got} bytes early; the checkpoint is truncated")
    return buffer


def _read_ranges(path, starts: np.ndarray, run_bytes: int, buffer: np.ndarray) -> None:
    """Fill `buffer` with ranged requests for `path`'s object, one per group of back-to-back runs."""
    groups = list(coalesced(starts, run_bytes))
    try:
        pieces = path.fs.cat_ranges(
            [path.path] * len(groups), [start for _, start, _ in groups], [start + n for _, start, n in groups]
        )
    except storage_errors() as error:
        raise ModelError(str(describe_error(path, error))) from None
    for (at, _, length), piece in zip(groups, pieces):
        if isinstance(piece, Exception):
            raise ModelError(str(describe_error(path, piece)))
        if len(piece) != length:
            raise ModelError(f"{path}: object ended {length - len(piece)} bytes early; the checkpoint is truncated")
        buffer[at : at + length] = np.frombuffer(piece, np.uint8)


def strided_runs(offset: int, shape, strides, itemsize: int):
    """How to read a strided block of a file: (starts of its contiguous byte runs in file order, bytes per run,
    the block's shape in file order, the view's axes in that order), or None when the strides are not those of
    a sub-block of a C-ordered tensor (numpy's reshape, transpose and positive-step slicing keep them so)."""
    axes = [a for a in range(len(shape)) if shape[a] > 1]
    if any(strides[a] <= 0 for a in axes):
        return None
    order = sorted(axes, key=lambda a: -strides[a])
    sizes, steps = [shape[a] for a in order], [strides[a] for a in order]
    if any(steps[i] < sizes[i + 1] * steps[i + 1] for i in range(len(order) - 1)):
        return None  # overlapping axes
    inner, run = len(order), itemsize
    while inner > 0 and steps[inner - 1] == run:  # merge the contiguous innermost axes into one run
        inner -= 1
        run *= sizes[inner]
    starts = np.array([offset], np.int64)
    for size, step in zip(sizes[:inner], steps[:inner]):
        starts = (starts[:, None] + np.arange(size, dtype=np.int64) * step).reshape(-1)
    rest = [a for a in range(len(shape)) if a not in order]  # axes of size 1 (or 0) keep their place last
    return starts, run, [*sizes, *[shape[a] for a in rest]], [*order, *rest]


def coalesced(starts: np.ndarray, run_bytes: int):
    """(offset in the buffer, offset in the file, length) of each maximal group of back-to-back runs."""
    breaks = np.flatnonzero(np.diff(starts) != run_bytes) + 1
    edges = np.concatenate([[0], breaks, [len(starts)]])
    for first, last in zip(edges[:-1], edges[1:]):
        yield int(first) * run_bytes, int(starts[first]), int(last - first) * run_bytes
