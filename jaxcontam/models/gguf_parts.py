"""Dequantise only the part of a GGUF tensor that a process's devices hold.

A tensor is first a float32 array in the Hugging Face layout over an address range reserved for it and never
touched (`positioned_reads.reserved`). The
checkpoint maps' reshape, transpose and slicing of it are numpy views, so the part a device needs is a strided
view of that range; `GGUFTensorReader.materialize` finds the rows and the column span it covers, reads just those
rows' quantisation blocks with positioned reads, and dequantises them with the `gguf` package (llama.cpp's
reference code). So on a mesh spanning several hosts each process reads about its share of the file.

llama.cpp's storage changes are undone per part: the family's `rows` maps each Hugging Face row to its stored
row (llama's rotary q/k order), and its `values` changes the dequantised values (gemma's norm scale).
"""

from __future__ import annotations

import dataclasses
import weakref

import numpy as np

from jaxcontam.models.families import FAMILIES
from jaxcontam.models.gguf_file import GGUFTensorInfo
from jaxcontam.models.positioned_reads import read_runs, reserved, strided_runs
from jaxcontam.models.spec import ModelSpec

_FLOAT = np.dtype(np.float32)


@dataclasses.dataclass(frozen=True)
class _Reserved:
    """One tensor's reserved address range and what is needed to read any part of it."""

    name: str  # the GGUF tensor name
    info: GGUFTensorInfo  # what it was read with
    start: int  # address of its first float
    size: int  # bytes
    mapping: weakref.ref  # its reserved array; dead once no view of it is left


class GGUFTensorReader:
    """`read` returns a stored tensor as an untouched view in the Hugging Face layout (one expert's slice for a
    stacked expert tensor); `materialize` dequantises the part of the file a view of it covers."""

    def __init__(self, spec: ModelSpec):
        self.spec = spec
        gguf_format = FAMILIES[spec.model_type].gguf
        assert gguf_format is not None  # only a family with a GGUF format reads GGUF files
        self.format = gguf_format
        self.bytes_read = 0  # by positioned reads, quantised bytes
        self._reserved: list[_Reserved] = []
        self._last: tuple[str, np.ndarray] | None = None  # the stacked expert tensor its experts are sliced from

    def read(self, name: str, info) -> np.ndarray:
        if self._last is None or self._last[0] != name:
            self._last = (name, self._reserve(name, info))
        whole = self._last[1]
        return whole[info.expert] if info.expert is not None else whole

    def _reserve(self, name: str, info) -> np.ndarray:
        shape = info.tensor.shape
        size = int(np.prod(shape)) * _FLOAT.itemsize
        space = reserved(size)
        whole = space.view(_FLOAT).reshape(shape)
        self._reserved = [r for r in self._reserved if r.mapping() is not None]
        start = whole.__array_interface__["data"][0] if whole.size else 0
        self._reserved.append(_Reserved(name, info, start, size, weakref.ref(space.base)))
        return whole

    def materialize(self, view: np.ndarray) -> np.ndarray:
        """`view` (of an array `read` returned, through numpy's reshape, transpose and slicing) dequantised
        from the bytes of the rows and blocks it covers; any other array is copied as it is."""
        found = self._reserved_for(view)
        if found is None:
            return np.array(view)
        reserved, offset = found
        shape = reserved.info.tensor.shape
        columns = shape[-1]
        plan = strided_runs(offset, view.shape, view.strides, _FLOAT.itemsize)
        runs = (
            None
            if plan is None or len(shape) < 2
            else _row_runs(plan[0] // _FLOAT.itemsize, plan[1] // _FLOAT.itemsize, columns)
        )
        if runs is None:  # a vector, or a layout that is not a block of rows: dequantise the tensor whole
            whole = self._rows(reserved, np.arange(_row_count(shape)), 0, columns)[0].reshape(-1)
            start = offset // _FLOAT.itemsize
            floats = np.lib.stride_tricks.as_strided(whole[start:], view.shape, view.strides, writeable=False)
            return np.array(floats)
        rows, first_column, length = runs
        needed = np.unique(rows)
        low, high = int(first_column.min()), int(first_column.max()) + length
        values, read_from = self._rows(reserved, needed, low, high)
        if len(rows) == len(needed) and length == values.shape[1]:  # whole rows in order: no gather
            taken = values
        else:
            columns_taken = (first_column - read_from)[:, None] + np.arange(length)
            taken = values[np.searchsorted(needed, rows)[:, None], columns_taken]
        assert plan is not None  # rows were found in it
        _, _, block_shape, order = plan
        return taken.reshape(block_shape).transpose(np.argsort(order)).reshape(view.shape)

    def _rows(self, reserved: _Reserved, rows: np.ndarray, low: int, high: int) -> tuple[np.ndarray, int]:
        """Hugging Face `rows` (sorted) of the tensor, dequantised over whole blocks spanning columns
        [low, high), with the first column they start at."""
        import gguf

        tensor = reserved.info.tensor
        block, block_bytes = gguf.GGML_QUANT_SIZES[tensor.tensor_type]
        first_block, end_block = low // block, -(-high // block)
        order = self.format.rows(reserved.name, _row_count(tensor.shape), self.spec)
        if len(tensor.shape) == 1:  # a vector's "rows" are its elements: read it whole, reorder after
            stored, first_block, end_block = np.zeros(1, np.int64), 0, tensor.data.shape[-1] // block_bytes
        else:
            stored = rows if order is None else order[rows]
        by_file = np.argsort(stored, kind="stable")
        row_bytes = tensor.data.shape[-1]
        starts = tensor.offset + stored[by_file].astype(np.int64) * row_bytes + first_block * block_bytes
        run = (end_block - first_block) * block_bytes
        raw = read_runs(reserved.info.file, starts, run).reshape(len(starts), run)
        self.bytes_read += raw.size
        values = np.empty((len(starts), (end_block - first_block) * block), np.float32)
        values[by_file] = np.asarray(gguf.quants.dequantize(raw, tensor.tensor_type), np.float32).reshape(values.shape)
        if len(tensor.shape) == 1 and order is not None:
            values = values[:, order]
        return self.format.values(reserved.name, values, self.spec), first_block * block

    def _reserved_for(self, view: np.ndarray) -> tuple[_Reserved, int] | None:
        """The reserved tensor `view` points into and its first element's byte offset there, or None."""
        if view.size == 0:
            return None
        address = view.__array_interface__["data"][0]
        for entry in self._reserved:
            if entry.start <= address < entry.start + entry.size and entry.mapping() is not None:
                return entry, address - entry.start
        return None


def _row_count(shape: tuple[int, ...]) -> int:
    """The rows llama.cpp's row changes index: a matrix's rows (experts' rows one after another), a vector's
    elements."""
    return int(np.prod(shape[:-1])) if len(shape) > 1 else int(np.prod(shape))


def _row_runs(first: np.ndarray, length: int, columns: int) -> tuple[np.ndarray, np.ndarray, int] | None:
    """The runs of `length` floats starting at flat element `first` of a [rows, columns] tensor, as (row, first
    column, length) runs that each stay within one row; None when a run straddles rows partly."""
    if length > columns:
        if length % columns or np.any(first % columns):
            return None
        first = (first[:, None] + np.arange(length // columns) * columns).reshape(-1)
        length = columns
    rows, first_column = np.divmod(first, columns)
    if np.any(first_column + length > columns):
        return None
    return rows, first_column, length
