"""Row readers for JSONL, JSON, CSV and Parquet files that report bad input by file and line.

Every reader yields `(position, row)` pairs, `position` being the 1-based line (JSONL), row
(CSV, counting the header as line 1) or 0-based record index (JSON list, Parquet), so that
adapters can name the exact place of a bad value in their errors. Text is decoded strictly as
UTF-8; `.gz` and `.zst` files are decompressed as they stream, and a path may be a URL (`jaxcontam.storage`).
A line (a JSON list file, a Parquet row) longer than a bound is refused, naming it, before it is held whole: a
small compressed file can hold gigabytes without a line break.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, cast

from jaxcontam.errors import DataError
from jaxcontam.storage import Readable, as_path, base_suffix, open_binary

Row = dict[str, Any]

MAX_RECORD_BYTES = 4 << 20  # a benchmark or `--data` line: far beyond any item a model is prompted with
MAX_DOCUMENT_BYTES = 32 << 20  # a corpus line or text document
MAX_JSON_LIST_BYTES = 256 << 20  # a JSON list file, which is parsed whole (JSON lines are read line by line)


def require_file(path: str | Path, what: str) -> Any:
    """`path` (a local Path, or a `UPath` for a URL) if it is a file, else a DataError naming it and `what` was
    expected there."""
    file = as_path(path) if isinstance(path, str) else path
    if not file.is_file():
        raise DataError(f"{what} not found: {file} does not exist or is not a file; check the path")
    return file


def open_text(path: Readable):
    """A strict UTF-8 text stream (decompressed for `.gz` and `.zst`), universal newlines."""
    stream = cast(BinaryIO, open_binary(path))  # a gzip, zstd or plain binary stream
    return io.TextIOWrapper(stream, encoding="utf-8", errors="strict", newline=None)


def _not_utf8(path: Readable, line: int, error: UnicodeDecodeError) -> DataError:
    return DataError(
        f"{path}, line {line}: not valid UTF-8 ({error.reason} at byte {error.start} of the line); "
        f"re-encode the file as UTF-8"
    )


def too_long(where: str, size: int, limit: int) -> DataError:
    return DataError(
        f"{where}: longer than the bound of {limit} bytes on one record (at least {size} bytes), so it is read no "
        "further (a file without line breaks, a decompression bomb): split it into shorter records, or leave the "
        "file out"
    )


def read_lines(path: Readable, limit: int = MAX_RECORD_BYTES) -> Iterator[tuple[int, str]]:
    """Numbered lines, naming the line of any invalid UTF-8 and refusing one longer than `limit` bytes (read at
    most `limit` + 1 bytes at a time)."""
    with open_binary(path) as handle:
        number = 0
        while raw := handle.readline(limit + 1):
            number += 1
            if len(raw) > limit:
                raise too_long(f"{path}, line {number}", len(raw), limit)
            try:
                yield number, raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise _not_utf8(path, number, error) from None


def read_jsonl(path: Readable, limit: int = MAX_RECORD_BYTES) -> Iterator[tuple[int, Row]]:
    """(line number, object) for each non-blank line of a JSON-lines file (lines of at most `limit` bytes)."""
    for number, line in read_lines(path, limit):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise DataError(
                f"{path}, line {number}: not valid JSON ({error.msg}); expected one JSON object per line"
            ) from None
        if not isinstance(row, dict):
            raise DataError(f"{path}, line {number}: expected a JSON object, got {type(row).__name__}")
        yield number, row


def read_json_records(path: Readable, limit: int = MAX_RECORD_BYTES) -> Iterator[tuple[int, Row]]:
    """Records of a `.json` file: a JSON list of objects (index from 0; at most `MAX_JSON_LIST_BYTES`, as it is
    parsed whole), or JSON lines (of at most `limit` bytes)."""
    with open_text(path) as handle:
        try:
            head = handle.read(1024).lstrip()
        except UnicodeDecodeError as error:
            raise _not_utf8(path, 1, error) from None
    if not head.startswith("["):
        yield from read_jsonl(path, limit)
        return
    try:
        with open_text(path) as handle:
            text = handle.read(MAX_JSON_LIST_BYTES + 1)
        if len(text) > MAX_JSON_LIST_BYTES:
            raise DataError(
                f"{path}: a JSON list longer than {MAX_JSON_LIST_BYTES} characters (it is parsed whole); write it "
                "as JSON lines (.jsonl), which are read line by line"
            )
        rows = json.loads(text)
    except UnicodeDecodeError as error:
        raise DataError(f"{path}: not valid UTF-8 ({error.reason}); re-encode the file as UTF-8") from None
    except json.JSONDecodeError as error:
        raise DataError(f"{path}, line {error.lineno}: not valid JSON ({error.msg})") from None
    for index, row in enumerate(rows):
        if not isinstance(row, dict):
            raise DataError(f"{path}, record {index}: expected a JSON object, got {type(row).__name__}")
        yield index, row


def read_csv(path: Readable, fieldnames: list[str] | None = None) -> Iterator[tuple[int, Row]]:
    """(line number, row dict) for each CSV row; the first row is the header unless `fieldnames` is given."""
    lines = (line for _, line in read_lines(path))  # a quoted field spanning lines is bounded line by line
    reader = csv.reader(lines)
    header = fieldnames
    for row in reader:
        number = reader.line_num
        if header is None:
            header = [name.strip() for name in row]
            continue
        if not row:
            continue
        if len(row) != len(header):
            raise DataError(f"{path}, line {number}: {len(row)} columns, expected {len(header)} ({', '.join(header)})")
        yield number, dict(zip(header, row))


def read_parquet(
    path: Readable, columns: list[str] | None = None, batch_size: int = 4096, limit: int = MAX_RECORD_BYTES
) -> Iterator[tuple[int, Row]]:
    """(row index, row dict) for each Parquet row, read batch by batch; a row whose strings together are longer
    than `limit` characters is refused, as a line that long is."""
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path if isinstance(path, Path) else path.open("rb"))
    except Exception as error:  # pyarrow raises several types for a non-Parquet file
        raise DataError(f"{path}: not a readable Parquet file ({error})") from None
    missing = [c for c in columns or () if c not in parquet.schema_arrow.names]
    if missing:
        raise DataError(
            f"{path}: no column {', '.join(map(repr, missing))}; columns are {', '.join(parquet.schema_arrow.names)}"
        )
    index = 0
    for batch in parquet.iter_batches(batch_size=batch_size, columns=columns):
        for row in batch.to_pylist():
            size = sum(len(value) for value in row.values() if isinstance(value, (str, bytes)))
            if size > limit:
                raise too_long(f"{path}, row {index}", size, limit)
            yield index, row
            index += 1


def read_rows(path: Readable) -> Iterator[tuple[int, Row]]:
    """Rows of a table file chosen by suffix: .jsonl, .json, .csv or .parquet (text optionally .gz or .zst)."""
    suffix = base_suffix(path)
    readers = {".jsonl": read_jsonl, ".json": read_json_records, ".csv": read_csv, ".parquet": read_parquet}
    if suffix not in readers:
        raise DataError(f"{path}: unsupported file type {suffix!r}; expected .jsonl, .json, .csv or .parquet")
    return readers[suffix](path)


def position_name(path: Readable, position: int) -> str:
    """How an error names a row: `file, line N` (JSONL, CSV), `record N` (JSON), `row N` (Parquet)."""
    kind = {".parquet": "row", ".json": "record"}.get(base_suffix(path), "line")
    return f"{path}, {kind} {position}"


def field(row: Row, key: str, where: str, expected: str = "a value"):
    """`row[key]`, or a DataError naming where, the missing field and the fields present."""
    if key not in row or row[key] is None:
        present = ", ".join(map(str, row)) or "none"
        raise DataError(f"{where}: missing field {key!r} ({expected}); fields present: {present}")
    return row[key]


def text_field(row: Row, key: str, where: str) -> str:
    """A non-empty string field."""
    value = field(row, key, where, "a non-empty string")
    if not isinstance(value, str) or not value.strip():
        raise DataError(f"{where}: field {key!r} must be a non-empty string, got {value!r}")
    return value
