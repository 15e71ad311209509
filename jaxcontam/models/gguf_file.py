"""Read a GGUF file's metadata and tensor table in one pass, leaving the tensor data memory-mapped.

`gguf.GGUFReader` builds a numpy view for every element of every metadata array (tens of seconds for a
49k-token vocabulary); this reads the same layout (GGUF v2/v3, little-endian: header, key/value pairs, tensor
infos, aligned data) with `struct` straight into Python values, in well under a second. Tensors keep the `gguf`
package's conventions (`tensor_type` a `GGMLQuantizationType`, `data` the raw bytes that
`gguf.quants.dequantize` reads), so dequantisation stays llama.cpp's reference code.

A file in a bucket is read the same way from its first bytes, fetched in growing ranged reads until the tensor
table is parsed; its tensors' `data` then stand for bytes not fetched (`positioned_reads.reserved`), which the
readers fetch by part.
"""

from __future__ import annotations

import dataclasses
import mmap
import pathlib
import struct
from typing import TYPE_CHECKING

import numpy as np

from jaxcontam.errors import ModelError
from jaxcontam.models.positioned_reads import reserved
from jaxcontam.storage import read_range

if TYPE_CHECKING:
    from gguf import GGMLQuantizationType

_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9
_DEFAULT_ALIGNMENT = 32


@dataclasses.dataclass(frozen=True)
class GGUFTensor:
    """One stored tensor: `shape` in numpy (row-major) order, `data` its bytes as [*rows, bytes per row] (a view
    of the memory-mapped file), `offset` the absolute position of its first byte in the file."""

    name: str
    tensor_type: GGMLQuantizationType
    shape: tuple[int, ...]
    data: np.ndarray = dataclasses.field(repr=False, compare=False)
    offset: int = 0
    file: object = dataclasses.field(default=None, repr=False, compare=False)  # local Path or bucket UPath

    def stored_bytes(self) -> np.ndarray:
        """The tensor's bytes as `data` lays them out, read from the file (a positioned or ranged read)."""
        raw = read_range(self.file, self.offset, self.data.nbytes)
        return np.frombuffer(raw, np.uint8).reshape(self.data.shape)


@dataclasses.dataclass(frozen=True)
class GGUFFile:
    """A GGUF file's metadata (key -> str, int, float, bool or list) and its tensors in file order."""

    path: pathlib.Path
    metadata: dict
    tensors: tuple[GGUFTensor, ...]


@dataclasses.dataclass(frozen=True)
class GGUFTensorInfo:
    """One stored tensor: `shape` in Hugging Face (row-major numpy) order; `tensor` the file's entry; `expert`: the
    index of one expert's slice of a stacked expert tensor (whose `shape` is then the slice's)."""

    file: pathlib.Path
    shape: tuple[int, ...]
    tensor: GGUFTensor = dataclasses.field(compare=False, repr=False)
    expert: int | None = None


class _Truncated(Exception):
    """The parse ran past the bytes read so far."""


class _Cursor:
    """Sequential little-endian reads from the mapped file, or from its first bytes."""

    def __init__(self, buffer):
        self.buffer, self.pos = buffer, 0

    def need(self, size: int) -> None:
        if self.pos + size > len(self.buffer):
            raise _Truncated

    def unpack(self, fmt: str) -> tuple:
        self.need(struct.calcsize("<" + fmt))
        values = struct.unpack_from("<" + fmt, self.buffer, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values

    def scalar(self, fmt: str):
        return self.unpack(fmt)[0]

    def string(self) -> str:
        length = self.scalar("Q")
        self.need(length)
        start, self.pos = self.pos, self.pos + length
        return self.buffer[start : self.pos].decode("utf-8")

    def value(self, value_type: int):
        if value_type in _SCALARS:
            return self.scalar(_SCALARS[value_type])
        if value_type == _STRING:
            return self.string()
        if value_type == _ARRAY:
            element_type, count = self.unpack("IQ")
            if element_type in _SCALARS:  # one read for the whole array (token types, scores, per-layer sizes)
                fmt = "<" + _SCALARS[element_type]
                self.need(count * struct.calcsize(fmt))
                values = np.frombuffer(self.buffer, np.dtype(fmt), count, self.pos)
                self.pos += values.nbytes
                return values.tolist()
            return [self.value(element_type) for _ in range(count)]
        raise ValueError(f"unknown metadata value type {value_type}")


HEAD_BYTES = 1 << 22  # first ranged read of a file in a bucket; quadrupled until the tensor table fits


def read_gguf(path: pathlib.Path) -> GGUFFile:
    """Metadata and tensor table of the GGUF file at `path` (local, or a `UPath` in a bucket); unreadable files
    are reported as ModelError."""
    try:
        if isinstance(path, pathlib.Path):
            with open(path, "rb") as handle:
                buffer = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
            return _parse(path, buffer, buffer)
        size, length = path.stat().st_size, HEAD_BYTES
        data = reserved(size)
        while True:
            try:
                return _parse(path, read_range(path, 0, min(length, size)), data)
            except _Truncated:
                if length >= size:
                    raise ValueError("the file ends inside its header") from None
                length *= 4
    except _Truncated:
        raise ModelError(f"{path}: not a readable GGUF file (it ends inside its header); re-download it") from None
    except (ValueError, OSError, struct.error, UnicodeDecodeError) as exc:
        raise ModelError(f"{path}: not a readable GGUF file ({exc}); re-download or re-convert it") from exc


def _parse(path, head, data) -> GGUFFile:
    """The file's metadata and tensor table from `head` (its first bytes, or all of it), tensor data as views of
    `data` (the file's bytes, mapped or reserved)."""
    import gguf

    buffer = head
    cursor = _Cursor(buffer)
    if buffer[:4] != b"GGUF":
        raise ValueError("the file does not start with the GGUF magic bytes")
    cursor.pos = 4
    version = cursor.scalar("I")
    if version not in (2, 3):
        raise ValueError(
            f"GGUF version {version} (byte-swapped: a big-endian file?); only little-endian v2 and v3 files are read"
        )
    tensor_count, kv_count = cursor.unpack("QQ")
    metadata = {}
    for _ in range(kv_count):
        key = cursor.string()
        metadata[key] = cursor.value(cursor.scalar("I"))
    table = []
    for _ in range(tensor_count):
        name = cursor.string()
        dims = cursor.unpack(f"{cursor.scalar('I')}Q")
        table.append((name, tuple(reversed(dims)), *cursor.unpack("IQ")))
    alignment = int(metadata.get("general.alignment", _DEFAULT_ALIGNMENT))
    data_start = -(-cursor.pos // alignment) * alignment
    tensors = []
    for name, shape, type_id, offset in table:
        tensor_type = gguf.GGMLQuantizationType(type_id)
        byte_shape = gguf.quants.quant_shape_to_byte_shape(shape, tensor_type)
        start = data_start + offset
        view = np.frombuffer(data, np.uint8, int(np.prod(byte_shape)), start).reshape(byte_shape)
        tensors.append(GGUFTensor(name, tensor_type, shape, view, start, path))
    return GGUFFile(path, metadata, tuple(tensors))
