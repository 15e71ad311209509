"""Read tensors from .safetensors files one at a time through a memory map.

The format is an 8-byte header length, a JSON header (name -> dtype, shape, byte offsets) and the raw
little-endian data. Reading it directly lets a tensor (or a slice of it) reach a device without loading the
rest of the file, and handles bfloat16, which the numpy backend of the `safetensors` package cannot return.
"""

from __future__ import annotations

import json
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
    """Memory-maps each file once and returns tensors as numpy arrays (views until converted)."""

    def __init__(self):
        self._maps: dict[pathlib.Path, np.memmap] = {}

    def read(self, name: str, info: TensorInfo) -> np.ndarray:
        dtype = _DTYPES.get(info.dtype)
        if dtype is None:
            raise ModelError(
                f"{info.file}: tensor {name!r} has dtype {info.dtype}, expected a float type ({', '.join(_DTYPES)})"
            )
        if info.file not in self._maps:
            self._maps[info.file] = np.memmap(info.file, dtype=np.uint8, mode="r")
        return self._maps[info.file][info.begin : info.end].view(dtype).reshape(info.shape)
