"""Read tensors, or only the parts of them a process's devices hold, from .safetensors files.

The format is an 8-byte header length, a JSON header (name -> dtype, shape, byte offsets) and the raw
little-endian data. A tensor is first a view into a memory map of its file (of an untouched address range the
size of the object, for a file in a bucket; nothing read yet); numpy's reshape, transpose and slicing of that view
describe the part a device needs, and `TensorReader.materialize` reads exactly that part's bytes with positioned
reads, or ranged requests (one per contiguous run). So on a mesh spanning several hosts each process reads only
the bytes of its own shards. bfloat16 is handled too, which the numpy backend of
the `safetensors` package cannot return. The header is validated first (`safetensors_header`), so every view lies
inside the data section and no two tensors share a byte.
"""

from __future__ import annotations

import pathlib

import ml_dtypes
import numpy as np

from jaxcontam.errors import ModelError
from jaxcontam.models.positioned_reads import read_runs, reserved, strided_runs
from jaxcontam.models.safetensors_header import TensorInfo, read_header

__all__ = ["TensorInfo", "TensorReader", "read_header"]

_DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "BF16": ml_dtypes.bfloat16}


class TensorReader:
    """Memory-maps each file once and returns tensors as views into the maps; `materialize` reads a view."""

    def __init__(self):
        self._maps: dict[pathlib.Path, np.ndarray] = {}  # memory maps, or reserved ranges of bucket objects
        self.bytes_read = 0  # by `materialize`'s positioned reads

    def read(self, name: str, info: TensorInfo) -> np.ndarray:
        dtype = _DTYPES.get(info.dtype)
        if dtype is None:
            raise ModelError(
                f"{info.file}: tensor {name!r} has dtype {info.dtype}, expected a float type ({', '.join(_DTYPES)})"
            )
        if info.file not in self._maps:
            self._maps[info.file] = _mapped(info.file)
        return self._maps[info.file][info.begin : info.end].view(dtype).reshape(info.shape)

    def materialize(self, view: np.ndarray) -> np.ndarray:
        """`view` (a view into one of the maps, as `read` and numpy's reshape, transpose and slicing make it)
        as a new array, reading only the bytes it covers from its file; any other array is copied as it is."""
        found = self._mapped_file(view)
        if found is None:
            return np.array(view)
        path, offset = found
        plan = strided_runs(offset, view.shape, view.strides, view.dtype.itemsize)
        if plan is None:  # negative or overlapping strides: read the span the view covers, then index it
            low = offset + sum(min(0, (n - 1) * step) for n, step in zip(view.shape, view.strides))
            high = offset + sum(max(0, (n - 1) * step) for n, step in zip(view.shape, view.strides)) + view.itemsize
            span = read_runs(path, np.array([low]), high - low)
            self.bytes_read += span.size
            return np.array(np.ndarray(view.shape, view.dtype, span, offset - low, view.strides))
        starts, run_bytes, block_shape, order = plan
        buffer = read_runs(path, starts, run_bytes)
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


def _mapped(path) -> np.ndarray:
    """A local file memory-mapped; a bucket object as a `reserved` range of its size."""
    if isinstance(path, pathlib.Path):
        return np.memmap(path, dtype=np.uint8, mode="r")
    return reserved(path.stat().st_size)
