"""Read tensors, or only the parts of them a process's devices hold, from .safetensors files.

The format is an 8-byte header length, a JSON header (name -> dtype, shape, byte offsets) and the raw
little-endian data. A tensor is first a view into a memory map of its file (nothing read yet); numpy's
reshape, transpose and slicing of that view describe the part a device needs, and `TensorReader.materialize`
reads exactly that part's bytes with positioned reads (one per contiguous run). So on a mesh spanning several
hosts each process reads only the bytes of its own shards. bfloat16 is handled too, which the numpy backend of
the `safetensors` package cannot return.
"""

from __future__ import annotations

import json
import os
import pathlib
import struct
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from jaxcontam.errors import ModelError

_DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "BF16": ml_dtypes.bfloat16}


@dataclass(frozen=True)
class TensorInfo:
    file: pathlib.Path
    dtype: str
    shape: tuple[int, ...]
    begin: int  # absolute byte offsets in the file
    end: int


def read_header(path: pathlib.Path) -> dict[str, TensorInfo]:
    """Tensor name -> TensorInfo for one .safetensors file."""
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) != 8:
            raise ModelError(f"{path}: not a safetensors file (shorter than its 8-byte header length)")
        (length,) = struct.unpack("<Q", raw)
        try:
            header = json.loads(f.read(length))
        except (ValueError, UnicodeDecodeError) as exc:
            raise ModelError(f"{path}: unreadable safetensors header ({exc}); re-save the checkpoint") from exc
    start = 8 + length
    return {
        name: TensorInfo(
            path, meta["dtype"], tuple(meta["shape"]), start + meta["data_offsets"][0], start + meta["data_offsets"][1]
        )
        for name, meta in header.items()
        if name != "__metadata__"
    }


class TensorReader:
    """Memory-maps each file once and returns tensors as views into the maps; `materialize` reads a view."""

    def __init__(self):
        self._maps: dict[pathlib.Path, np.memmap] = {}
        self.bytes_read = 0  # by `materialize`'s positioned reads

    def read(self, name: str, info: TensorInfo) -> np.ndarray:
        dtype = _DTYPES.get(info.dtype)
        if dtype is None:
            raise ModelError(
                f"{info.file}: tensor {name!r} has dtype {info.dtype}, expected a float type ({', '.join(_DTYPES)})"
            )
        if info.file not in self._maps:
            self._maps[info.file] = np.memmap(info.file, dtype=np.uint8, mode="r")
        return self._maps[info.file][info.begin : info.end].view(dtype).reshape(info.shape)

    def materialize(self, view: np.ndarray) -> np.ndarray:
        """`view` (a view into one of the maps, as `read` and numpy's reshape, transpose and slicing make it)
        as a new array, reading only the bytes it covers from its file; any other array is copied as it is."""
        found = self._mapped_file(view)
        if found is None:
            return np.array(view)
        path, offset = found
        plan = strided_runs(offset, view.shape, view.strides, view.dtype.itemsize)
        if plan is None:  # a layout positioned reads cannot follow (negative or overlapping strides)
            return np.array(view)
        starts, run_bytes, block_shape, order = plan
        buffer = np.empty(len(starts) * run_bytes, np.uint8)
        with open(path, "rb", buffering=0) as handle:
            for at, start, length in coalesced(starts, run_bytes):
                got = os.preadv(handle.fileno(), [buffer.data[at : at + length]], int(start))
                if got != length:
                    raise ModelError(f"{path}: file ended {length - got} bytes early; the checkpoint is truncated")
        self.bytes_read += buffer.size
        block = buffer.view(view.dtype).reshape(block_shape)
        return block.transpose(np.argsort(order)).reshape(view.shape)

    def _mapped_file(self, view: np.ndarray) -> tuple[pathlib.Path, int] | None:
        """The file `view` points into and its first element's byte offset there, or None."""
        if view.size == 0:
            return None
        address = view.__array_interface__["data"][0]
        for path, mapped in self._maps.items():
            base = mapped.__array_interface__["data"][0]
            if base <= address < base + mapped.size:
                return path, address - base
        return None


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
