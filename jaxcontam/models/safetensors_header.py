"""Read and validate a .safetensors header against the format's own rules before any tensor is used.

The format (huggingface/safetensors, `tensor.rs`): an 8-byte little-endian header length N, N bytes of UTF-8 JSON
(an object: tensor name -> {dtype, shape, data_offsets}, and an optional `__metadata__` string -> string map),
then the data section. Offsets are relative to the data section; sorted by offset, the tensors must tile it
exactly: the first starts at 0, each starts where the previous one ends (no overlap, no hole) and the last ends at
the end of the file; each tensor's byte count is the product of its shape times its dtype's size. A file that
breaks any rule is refused here, naming the file, the tensor and the fix, so a hostile or damaged file can neither
make the reader allocate what the file does not hold nor make two tensors read the same bytes.
"""

from __future__ import annotations

import json
import math
import pathlib
import reprlib
import struct
from dataclasses import dataclass

from jaxcontam.errors import ModelError
from jaxcontam.storage import read_range

# the safetensors crate's limit on N (MAX_HEADER_SIZE): a real header is kilobytes to a few megabytes
MAX_HEADER_BYTES = 100_000_000
# bits per element of every dtype the format defines (sub-byte types pack several elements per byte)
DTYPE_BITS = {
    "BOOL": 8,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "I64": 64,
    "U64": 64,
    "F64": 64,
    "C64": 64,
}
METADATA_KEY = "__metadata__"
_ENTRY_KEYS = {"dtype", "shape", "data_offsets"}
_FIX = "the file is damaged or was not written by a safetensors library: re-download or re-save the checkpoint"


@dataclass(frozen=True)
class TensorInfo:
    file: pathlib.Path
    dtype: str
    shape: tuple[int, ...]
    begin: int  # absolute byte offsets in the file
    end: int


def read_header(path: pathlib.Path) -> dict[str, TensorInfo]:
    """Tensor name -> TensorInfo for one .safetensors file, after checking the header against the format's rules
    (a ModelError names the first rule broken)."""
    size = path.stat().st_size
    raw = read_range(path, 0, 8)
    if len(raw) != 8:
        raise ModelError(f"{path}: not a safetensors file (shorter than its 8-byte header length); {_FIX}")
    (length,) = struct.unpack("<Q", raw)
    if length > min(size - 8, MAX_HEADER_BYTES):
        limit = "the file's size" if length > size - 8 else f"the format's limit of {MAX_HEADER_BYTES:,} bytes"
        raise ModelError(
            f"{path}: the header length field says {length:,} bytes, more than {limit} ({size:,} bytes in all); {_FIX}"
        )
    header = _parse_json(path, read_range(path, 8, length))
    data_start, data_size = 8 + length, size - 8 - length
    metadata = header.pop(METADATA_KEY, None)
    if metadata is not None and not (isinstance(metadata, dict) and all(isinstance(v, str) for v in metadata.values())):
        raise ModelError(f"{path}: {METADATA_KEY!r} must be an object of strings (got {_short(metadata)}); {_FIX}")
    spans = {name: _span(path, name, entry, data_size) for name, entry in header.items()}
    _check_tiling(path, spans, data_size)
    return {
        name: TensorInfo(path, header[name]["dtype"], shape, data_start + begin, data_start + end)
        for name, (begin, end, shape) in spans.items()
    }


def _parse_json(path: pathlib.Path, text: bytes) -> dict:
    """The header as a dict, refusing invalid UTF-8 or JSON, deep nesting, a non-object and repeated names."""
    try:
        header = json.loads(text.decode("utf-8"), object_pairs_hook=_unique_keys)
    except _RepeatedKey as repeated:
        raise ModelError(f"{path}: the header names {repeated.args[0]!r} twice; {_FIX}") from None
    except RecursionError:
        raise ModelError(f"{path}: the header is JSON nested too deeply to be a safetensors header; {_FIX}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ModelError(f"{path}: unreadable safetensors header ({exc}); {_FIX}") from exc
    if not isinstance(header, dict):
        raise ModelError(f"{path}: the header is JSON but not an object (got {type(header).__name__}); {_FIX}")
    return header


class _RepeatedKey(Exception):
    pass


def _unique_keys(pairs: list) -> dict:
    found = {}
    for key, value in pairs:
        if key in found:
            raise _RepeatedKey(key)
        found[key] = value
    return found


def _span(path: pathlib.Path, name: str, entry, data_size: int) -> tuple[int, int, tuple[int, ...]]:
    """(begin, end, shape) of one header entry, refusing an unknown dtype, a shape that is not a list of
    non-negative ints, offsets that are not two ints inside the data section, and a byte count that is not the
    shape's element count times the dtype's size."""

    def refuse(problem: str):
        raise ModelError(f"{path}: tensor {name!r}: {problem}; {_FIX}")

    if not isinstance(entry, dict) or set(entry) != _ENTRY_KEYS:
        got = sorted(entry) if isinstance(entry, dict) else type(entry).__name__
        refuse(f"expected an object with exactly 'dtype', 'shape' and 'data_offsets' (got {_short(got)})")
    dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if not isinstance(dtype, str) or dtype not in DTYPE_BITS:
        refuse(f"unknown dtype {_short(dtype)} (the format defines {', '.join(DTYPE_BITS)})")
    if not isinstance(shape, list) or not all(_is_count(n) for n in shape):
        refuse(f"shape {_short(shape)} is not a list of non-negative integers")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(_is_count(n) for n in offsets)):
        refuse(f"data_offsets {_short(offsets)} is not a list of two non-negative integers")
    begin, end = offsets
    if not begin <= end <= data_size:
        refuse(f"data_offsets [{begin}, {end}] are not an ordered range inside the {data_size:,}-byte data section")
    bits = _element_bits(shape, DTYPE_BITS[dtype], 8 * (end - begin))
    if bits != 8 * (end - begin):
        count = "more elements than the file holds" if bits < 0 else f"{math.prod(shape):,} elements"
        refuse(f"shape {shape} of {dtype} is {count}, but its data_offsets span {end - begin:,} bytes")
    return begin, end, tuple(shape)


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _element_bits(shape: list[int], bits: int, limit: int) -> int:
    """Bits the shape's elements take, or -1 as soon as the running product exceeds `limit` (so a shape of huge
    dimensions is never multiplied out)."""
    if 0 in shape:
        return 0
    total = bits
    for n in shape:
        total *= n
        if total > limit:
            return -1
    return total


def _check_tiling(path: pathlib.Path, spans: dict, data_size: int) -> None:
    """Sorted by offset, the tensors cover the data section exactly: no overlap, no hole, nothing after the last."""
    position, previous = 0, None
    for name, (begin, end, _) in sorted(spans.items(), key=lambda item: (item[1][0], item[1][1])):
        if begin != position:
            where = f"after tensor {previous!r}, which ends at {position:,}" if previous else "at the start"
            kind = "overlaps the tensor before it" if begin < position else "leaves a hole in the data section"
            raise ModelError(
                f"{path}: tensor {name!r} starts at data offset {begin:,}, which {kind} (the next tensor must start "
                f"{where}); the format requires the tensors to tile the data section. {_FIX}"
            )
        position, previous = end, name
    if position != data_size:
        raise ModelError(
            f"{path}: the tensors end at data offset {position:,} but the data section holds {data_size:,} bytes "
            f"(the format forbids trailing bytes, and a shorter file is truncated); {_FIX}"
        )


_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 60


def _short(value) -> str:
    """A value for a message, cut to a readable length and depth."""
    return _SHORT.repr(value)
