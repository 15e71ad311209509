"""Saved tables and counts: npz arrays + a JSON header with the settings and a sha256 checksum.

No pickle: arrays are plain numeric/unicode npz members read with `allow_pickle=False`, and the
header is a JSON string member. `read_npz` refuses (IndexMismatchError) a file whose checksum
does not match its arrays, or whose header differs from the expected settings (tokenizer, n,
fields, ...), naming the field, both values and the fix, and one whose arrays' declared shapes hold more bytes
than their members do (checked before numpy allocates them). Writes are atomic (temp file + rename).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from jaxcontam.errors import IndexMismatchError
from jaxcontam.storage import publish

_HEADER = "__header__"
FORMAT = "jaxcontam-ngram-v1"


def arrays_checksum(arrays: dict[str, np.ndarray]) -> str:
    digest = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        digest.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        digest.update(a.tobytes())
    return digest.hexdigest()


def write_npz(path: str | Path, arrays: dict[str, np.ndarray], header: dict[str, Any]) -> None:
    """Atomically write `arrays` and `header` (plus format and checksum) to `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    full = dict(header, format=FORMAT, sha256=arrays_checksum(arrays))
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            # numpy's stubs match the unpacked names against savez's own keywords (allow_pickle)
            np.savez(f, **arrays, **{_HEADER: np.array(json.dumps(full, sort_keys=True))})  # pyright: ignore[reportArgumentType]
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    publish(path)


def _check_sizes(path: Path) -> None:
    """Refuse an npz member whose .npy header declares more bytes than the member holds: numpy allocates the
    declared shape before reading a zip member, so a forged header would take the memory first."""
    with zipfile.ZipFile(path) as archive:
        for member in archive.infolist():
            with archive.open(member) as handle:
                major, _ = np.lib.format.read_magic(handle)
                read_header = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
                shape, _, dtype = read_header(handle, max_header_size=1 << 16)
                declared = int(np.prod(shape, dtype=object)) * dtype.itemsize
                if declared > member.file_size:
                    raise ValueError(
                        f"member {member.filename} declares {declared} bytes of {dtype} {shape} but holds "
                        f"{member.file_size}"
                    )


def read_npz(path: str | Path, expect: dict[str, Any] | None = None) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Read a file written by `write_npz`, verifying its checksum and the `expect`ed header values."""
    path = Path(path)
    try:
        _check_sizes(path)
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
        header = json.loads(str(arrays.pop(_HEADER)))
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as exc:
        raise IndexMismatchError(
            f"{path}: not a readable jaxcontam n-gram file ({exc}); delete it and rerun to rebuild it"
        ) from exc
    if header.get("format") != FORMAT:
        raise IndexMismatchError(f"{path}: format {header.get('format')!r}, expected {FORMAT!r}; delete it and rerun")
    if arrays_checksum(arrays) != header.get("sha256"):
        raise IndexMismatchError(f"{path}: checksum mismatch, the file is corrupted; delete it and rerun to rebuild it")
    for key, value in (expect or {}).items():
        if header.get(key) != value:
            raise IndexMismatchError(
                f"{path}: built with {key}={header.get(key)!r} but {key}={value!r} was requested; "
                f"rerun with the original setting or use a fresh output folder"
            )
    return arrays, header
