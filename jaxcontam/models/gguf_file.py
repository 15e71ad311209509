"""Read a GGUF file's metadata and tensor table in one pass, leaving the tensor data memory-mapped.

`gguf.GGUFReader` builds a numpy view for every element of every metadata array (tens of seconds for a
49k-token vocabulary); this reads the same layout (GGUF v2/v3, little-endian: header, key/value pairs, tensor
infos, aligned data) with `struct` straight into Python values, in well under a second. Tensors keep the `gguf`
package's conventions (`tensor_type` a `GGMLQuantizationType`, `data` the raw bytes that
`gguf.quants.dequantize` reads), so dequantisation stays llama.cpp's reference code.
"""

from __future__ import annotations

import dataclasses
import mmap
import pathlib
import struct
from typing import TYPE_CHECKING

import numpy as np

from jaxcontam.errors import ModelError

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


@dataclasses.dataclass(frozen=True)
class GGUFFile:
    """A GGUF file's metadata (key -> str, int, float, bool or list) and its tensors in file order."""

    path: pathlib.Path
    metadata: dict
    tensors: tuple[GGUFTensor, ...]


class _Cursor:
    """Sequential little-endian reads from the mapped file."""

    def __init__(self, buffer: mmap.mmap):
        self.buffer, self.pos = buffer, 0

    def unpack(self, fmt: str) -> tuple:
        values = struct.unpack_from("<" + fmt, self.buffer, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values

    def scalar(self, fmt: str):
        return self.unpack(fmt)[0]

    def string(self) -> str:
        length = self.scalar("Q")
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
                values = np.frombuffer(self.buffer, np.dtype(fmt), count, self.pos)
                self.pos += values.nbytes
                return values.tolist()
            return [self.value(element_type) for _ in range(count)]
        raise ValueError(f"unknown metadata value type {value_type}")


def read_gguf(path: pathlib.Path) -> GGUFFile:
    """Metadata and tensor table of the GGUF file at `path`; unreadable files are reported as ModelError."""
    try:
        with open(path, "rb") as handle:
            buffer = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        return _parse(path, buffer)
    except (ValueError, OSError, struct.error, UnicodeDecodeError) as exc:
        raise ModelError(f"{path}: not a readable GGUF file ({exc}); re-download or re-convert it") from exc


def _parse(path: pathlib.Path, buffer: mmap.mmap) -> GGUFFile:
    import gguf

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
        data = np.frombuffer(buffer, np.uint8, int(np.prod(byte_shape)), start).reshape(byte_shape)
        tensors.append(GGUFTensor(name, tensor_type, shape, data, start))
    return GGUFFile(path, metadata, tuple(tensors))
