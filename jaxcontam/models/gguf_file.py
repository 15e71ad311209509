"""Read a GGUF file's metadata and tensor table in one pass, leaving the tensor data memory-mapped.

`gguf.GGUFReader` builds a numpy view for every element of every metadata array (tens of seconds for a
49k-token vocabulary); this reads the same layout (GGUF v2/v3, little-endian: header, key/value pairs, tensor
infos, aligned data) with `struct` straight into Python values, in well under a second. Tensors keep the `gguf`
package's conventions (`tensor_type` a `GGMLQuantizationType`, `data` the raw bytes that
`gguf.quants.dequantize` reads), so dequantisation stays llama.cpp's reference code. The header is checked as
ggml's own reader checks it (`_parse`) before any tensor is used: a count, length or offset the file cannot hold
is refused before anything is allocated for it, and no two tensors can share a byte.

A file in a bucket is read the same way from its first bytes, fetched in growing ranged reads until the tensor
table is parsed; its tensors' `data` then stand for bytes not fetched (`positioned_reads.reserved`), which the
readers fetch by part.
"""

from __future__ import annotations

import dataclasses
import math
import mmap
import pathlib
import struct
from typing import TYPE_CHECKING

import numpy as np

from jaxcontam.errors import ModelError
from jaxcontam.models.gguf_keys import check_kinds
from jaxcontam.models.positioned_reads import reserved
from jaxcontam.storage import read_range

if TYPE_CHECKING:
    from gguf import GGMLQuantizationType

_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY, _UINT32 = 8, 9, 4
_DEFAULT_ALIGNMENT = 32
_ALIGNMENT_KEY = "general.alignment"
_MAX_DIMS = 4  # GGML_MAX_DIMS
_LEAST_KV_BYTES = 8 + 4 + 1  # key length, value type, a one-byte value
_LEAST_TENSOR_INFO_BYTES = 8 + 4 + 8 + 4 + 8  # name length, dimension count, one dimension, type, offset


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
    """Sequential little-endian reads from the mapped file, or from its first bytes; `size` is the whole file's,
    against which every count is checked before anything is allocated for it."""

    def __init__(self, buffer, size: int):
        self.buffer, self.pos, self.size = buffer, 0, size

    def need(self, size: int) -> None:
        if self.pos + size > len(self.buffer):
            raise _Truncated

    def bound(self, count: int, least_bytes: int, what: str) -> None:
        """Refuse `count` items of at least `least_bytes` bytes each when the rest of the file cannot hold them."""
        if count * least_bytes > self.size - self.pos:
            raise ValueError(
                f"{what}: the file says {count:,}, but its remaining {self.size - self.pos:,} bytes cannot hold that "
                "many (a damaged or hostile header)"
            )

    def unpack(self, fmt: str) -> tuple:
        self.need(struct.calcsize("<" + fmt))
        values = struct.unpack_from("<" + fmt, self.buffer, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values

    def scalar(self, fmt: str):
        return self.unpack(fmt)[0]

    def string(self, what: str) -> str:
        length = self.scalar("Q")
        if length > self.size - self.pos:
            self.bound(length, 1, f"length of {what}")
        self.need(length)
        start, self.pos = self.pos, self.pos + length
        return self.buffer[start : self.pos].decode("utf-8")

    def value(self, value_type: int, key: str):
        if value_type in _SCALARS:
            return self.scalar(_SCALARS[value_type])
        if value_type == _STRING:
            return self.string(f"metadata {key!r}")
        if value_type != _ARRAY:
            raise ValueError(f"metadata {key!r} has unknown value type {value_type}")
        element_type, count = self.unpack("IQ")
        if element_type in _SCALARS:  # one read for the whole array (token types, scores, per-layer sizes)
            fmt = "<" + _SCALARS[element_type]
            self.bound(count, struct.calcsize(fmt), f"elements of metadata array {key!r}")
            self.need(count * struct.calcsize(fmt))
            values = np.frombuffer(self.buffer, np.dtype(fmt), count, self.pos)
            self.pos += values.nbytes
            return values.tolist()
        if element_type != _STRING:  # ggml's gguf.cpp refuses arrays of arrays too
            raise ValueError(f"metadata array {key!r} has elements of type {element_type}; only scalars and strings")
        self.bound(count, 8, f"elements of metadata array {key!r}")
        element = f"an element of metadata array {key!r}"
        return [self.string(element) for _ in range(count)]


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
    `data` (the file's bytes, mapped or reserved), checked against the format's rules as ggml's gguf.cpp applies
    them: counts and lengths within the file, no repeated key or tensor name, a power-of-two alignment stored as
    UINT32, known tensor types with whole blocks per row, and each tensor at the running aligned sum of the ones
    before it, inside the file."""
    buffer = head
    cursor = _Cursor(buffer, len(data))
    if buffer[:4] != b"GGUF":
        raise ValueError("the file does not start with the GGUF magic bytes")
    cursor.pos = 4
    version = cursor.scalar("I")
    if version not in (2, 3):
        raise ValueError(
            f"GGUF version {version} (byte-swapped: a big-endian file?); only little-endian v2 and v3 files are read"
        )
    tensor_count, kv_count = cursor.unpack("QQ")
    cursor.bound(kv_count, _LEAST_KV_BYTES, "metadata key/value count")
    cursor.bound(tensor_count, _LEAST_TENSOR_INFO_BYTES, "tensor count")
    metadata = {}
    for _ in range(kv_count):
        key = cursor.string("a metadata key")
        value_type = cursor.scalar("I")
        if key in metadata:
            raise ValueError(f"metadata {key!r} appears twice")
        if key == _ALIGNMENT_KEY and value_type != _UINT32:
            raise ValueError(f"{_ALIGNMENT_KEY} is stored as value type {value_type}; the format requires UINT32 (4)")
        metadata[key] = cursor.value(value_type, key)
    check_kinds(metadata)
    table = []
    for _ in range(tensor_count):
        name = cursor.string("a tensor name")
        dim_count = cursor.scalar("I")
        if not 1 <= dim_count <= _MAX_DIMS:
            raise ValueError(f"tensor {name!r} has {dim_count} dimensions; ggml tensors have 1 to {_MAX_DIMS}")
        dims = cursor.unpack(f"{dim_count}Q")
        table.append((name, tuple(reversed(dims)), *cursor.unpack("IQ")))
    alignment = metadata.get(_ALIGNMENT_KEY, _DEFAULT_ALIGNMENT)
    if alignment <= 0 or alignment & (alignment - 1):
        raise ValueError(f"{_ALIGNMENT_KEY} = {alignment} is not a positive power of two")
    data_start = -(-cursor.pos // alignment) * alignment
    tensors, expected, names = [], 0, set()
    for name, shape, type_id, offset in table:
        if name in names:
            raise ValueError(f"tensor {name!r} appears twice in the tensor table")
        names.add(name)
        tensor_type, byte_shape = _layout(name, shape, type_id, len(data))
        nbytes = math.prod(byte_shape)
        if offset != expected:
            raise ValueError(
                f"tensor {name!r} is at data offset {offset:,}, but the tensors before it end at {expected:,} (each "
                f"padded to the {alignment}-byte alignment); llama.cpp requires each tensor at that running sum"
            )
        start = data_start + offset
        if start + nbytes > len(data):
            raise ValueError(
                f"tensor {name!r} ({nbytes:,} bytes at file offset {start:,}) ends past the end of the file "
                f"({len(data):,} bytes): the file is truncated"
            )
        expected += -(-nbytes // alignment) * alignment
        view = np.frombuffer(data, np.uint8, nbytes, start).reshape(byte_shape)
        tensors.append(GGUFTensor(name, tensor_type, shape, view, start, path))
    return GGUFFile(path, metadata, tuple(tensors))


def _layout(name: str, shape: tuple[int, ...], type_id: int, file_size: int):
    """(ggml type, shape of the stored bytes) of one tensor: a known type, rows of whole blocks, and dimensions that
    could fit in the file (checked before any product is used)."""
    import gguf

    try:
        tensor_type = gguf.GGMLQuantizationType(type_id)
    except ValueError:
        raise ValueError(f"tensor {name!r} has ggml type {type_id}, which the gguf package does not know") from None
    block, type_size = gguf.GGML_QUANT_SIZES[tensor_type]
    if shape[-1] % block:
        raise ValueError(
            f"tensor {name!r}: rows of {shape[-1]} elements are not whole {tensor_type.name} blocks of {block}"
        )
    if math.prod(max(n, 1) for n in shape) // block * type_size > file_size:
        raise ValueError(f"tensor {name!r} of shape {list(shape)} ({tensor_type.name}) is larger than the whole file")
    return tensor_type, (*shape[:-1], shape[-1] // block * type_size)
