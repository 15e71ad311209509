"""Corpus shards for decontamination: listing, reading records with their line and byte offset, writing cleaned
shards in the input's format and compression, and committing outputs whole (local rename or one object write).

A shard is one file: `.jsonl` (or `.json` lines), `.parquet`, or `.txt`/`.md` (one document), optionally `.gz` or
`.zst` (not Parquet). Bad input (a line that is not a JSON object with a string text field, invalid UTF-8, a
truncated `.gz`/`.zst`, a line or text file longer than `MAX_DOCUMENT_BYTES`) comes out of `read_records` as a
`BadLine` naming the line and the byte offset (in the decompressed stream) where it starts; a truncated stream ends
the shard. No more than `MAX_DOCUMENT_BYTES` of one line is held at once: an over-long line's bytes are passed on
in pieces (`LongLine`), so a small compressed file of gigabytes without a line break is skipped in bounded memory.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from jaxcontam.data.corpus import file_kind
from jaxcontam.data.records import MAX_DOCUMENT_BYTES
from jaxcontam.errors import DataError
from jaxcontam.storage import (
    CorruptStream,
    as_path,
    decompressed,
    describe_error,
    is_url,
    list_files,
    storage_errors,
)

Format = Literal["jsonl", "parquet", "text"]
COMPRESSIONS = ("", ".gz", ".zst")


@dataclasses.dataclass(frozen=True)
class ShardSpec:
    """One corpus file: `label` names it in outputs (its path under the corpus root); `url` reads it."""

    label: str
    url: str
    format: Format
    compression: str  # "", ".gz" or ".zst"


# the corpus reader's file kinds (`data.corpus.file_kind`) as decontaminate reads and writes them (.json: JSON lines)
SHARD_FORMATS: dict[str, Format] = {"text": "text", "JSONL": "jsonl", "JSON": "jsonl", "Parquet": "parquet"}


def _spec(path: Any, label: str) -> ShardSpec | None:
    fmt = SHARD_FORMATS.get(file_kind(path) or "")
    compression = next((c for c in COMPRESSIONS[1:] if path.name.lower().endswith(c)), "")
    if fmt is None or (fmt == "parquet" and compression):
        return None
    return ShardSpec(label, str(path), fmt, compression)


def list_shards(corpora: Sequence[str], follow_symlinks: bool = False) -> list[ShardSpec]:
    """The shards of every corpus (a file, a folder, a glob, local or a bucket URL: `storage.list_files`, the audit's
    listing, which leaves out links leading outside a folder unless `follow_symlinks`), in label order; labels get a
    `<k>/` prefix when several corpora are given."""
    shards: list[ShardSpec] = []
    for k, corpus in enumerate(corpora):
        prefix = f"{k}/" if len(corpora) > 1 else ""
        _, files = list_files(corpus, follow_symlinks)
        found = [spec for path, label in files if (spec := _spec(path, prefix + label)) is not None]
        if not found:
            raise DataError(
                f"corpus {corpus}: no .jsonl/.json/.parquet/.txt/.md files (optionally .gz or .zst) found; "
                "point at the corpus files"
            )
        shards += found
    labels = [s.label for s in shards]
    if len(set(labels)) != len(labels):
        raise DataError("two corpus files share a name; give each --corpus its own folder")
    return shards


# reading ------------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Record:
    """One document: its index in the shard, line, byte offset, text, the row's fields, and the line's bytes."""

    index: int
    line: int
    offset: int
    text: str
    row: dict | None  # None for a text file
    raw: bytes | None = None  # the JSONL line as read


@dataclasses.dataclass(frozen=True)
class BadLine:
    """A line (a Parquet row, a text file) that is no document: where it starts, why, and its bytes as read (the
    decompressed line with its line break; a Parquet row as JSON; None where a broken stream left none)."""

    line: int
    offset: int
    reason: str
    raw: bytes | Iterable[bytes] | None = None  # a `LongLine`'s bytes come in pieces

    def describe(self, label: str) -> str:
        return f"{label}, line {self.line} (byte {self.offset}): {self.reason}"


class LongLine:
    """A line longer than the bound: its bytes as read so far, then the rest of the line read off the stream in
    pieces as it is iterated (to the rejects, byte for byte); `finish` reads past what was not iterated, and
    `size` is then the line's length."""

    def __init__(self, head: bytes, handle, whole: bool = False, piece: int = 1 << 20):
        self._head, self._handle, self._whole, self._piece = head, handle, whole, piece
        self.size, self._done = 0, False

    def __iter__(self) -> Iterator[bytes]:
        if self._done:
            return
        self._done = True
        self.size += len(self._head)
        yield self._head
        if self._head.endswith(b"\n") and not self._whole:
            return
        while data := (self._handle.read(self._piece) if self._whole else self._handle.readline(self._piece)):
            self.size += len(data)
            yield data
            if data.endswith(b"\n") and not self._whole:
                return

    def finish(self) -> int:
        for _ in self:
            pass
        return self.size


class ShardDigest:
    """sha256 and size of a shard's file as stored (compressed bytes), fed as the file is read."""

    def __init__(self):
        self._hash = hashlib.sha256()
        self.size = 0

    def update(self, data) -> None:
        self._hash.update(data)
        self.size += len(data)

    def take(self, other: ShardDigest) -> None:
        self._hash, self.size = other._hash, other.size

    @property
    def sha256(self) -> str:
        return self._hash.hexdigest()


class _Hashing(io.RawIOBase):
    """A file read through `digest`; `drain` reads what is left, so the digest covers the whole file."""

    def __init__(self, raw, digest: ShardDigest):
        self._raw, self._digest = raw, digest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self._raw.read(len(buffer))
        self._digest.update(data)
        buffer[: len(data)] = data
        return len(data)

    def drain(self) -> None:
        while data := self._raw.read(1 << 20):
            self._digest.update(data)

    def close(self) -> None:
        self._raw.close()
        super().close()


def file_digest(spec: ShardSpec) -> ShardDigest:
    """The digest of a shard's file, in one pass of its own."""
    digest = ShardDigest()
    try:
        with as_path(spec.url).open("rb") as handle:
            while data := handle.read(1 << 20):
                digest.update(data)
    except storage_errors() as error:
        raise describe_error(spec.url, error) from None
    return digest


def _open(spec: ShardSpec, digest: ShardDigest | None = None) -> tuple[Any, _Hashing | None]:
    """(the shard's decompressed stream, the hashing layer under it when `digest` is given)."""
    path = as_path(spec.url)
    try:
        raw = path.open("rb")
    except storage_errors() as error:
        raise describe_error(spec.url, error) from None
    hashing = None
    if digest is not None:
        raw = hashing = _Hashing(raw, digest)
        if not spec.compression:
            return io.BufferedReader(hashing, buffer_size=1 << 20), hashing
    return decompressed(raw, spec.compression, spec.label), hashing


def read_records(
    spec: ShardSpec, text_field: str = "text", digest: ShardDigest | None = None
) -> Iterator[Record | BadLine]:
    """Every document of the shard, and a BadLine for each line that cannot be one (see the module docstring).
    `digest`, when given, is fed the whole file as stored once the records are read to the end."""
    if spec.format == "parquet":
        yield from _parquet_records(spec, text_field)
        if digest is not None:
            digest.take(file_digest(spec))
        return
    handle, hashing = _open(spec, digest)
    with handle:
        yield from _stream_records(spec, handle, text_field)
        if hashing is not None:
            hashing.drain()


def _stream_records(spec: ShardSpec, handle, text_field: str) -> Iterator[Record | BadLine]:
    limit = MAX_DOCUMENT_BYTES
    if spec.format == "text":
        try:
            data = handle.read(limit + 1)
            if len(data) > limit:
                long = LongLine(data, handle, whole=True)
                yield BadLine(1, 0, f"a text document longer than the bound of {limit} bytes", long)
                long.finish()
                return
        except CorruptStream as error:
            yield BadLine(1, 0, error.reason)
            return
        try:
            yield Record(0, 1, 0, data.decode("utf-8"), None)
        except UnicodeDecodeError as error:
            line = data[: error.start].count(b"\n") + 1
            yield BadLine(line, error.start, f"invalid UTF-8 ({error.reason})", data)
        return
    offset, line, index = 0, 0, 0
    while True:
        try:
            raw = handle.readline(limit + 1)
            if len(raw) > limit:
                line += 1
                long = LongLine(raw, handle)
                yield BadLine(line, offset, f"a line longer than the bound of {limit} bytes", long)
                offset += long.finish()
                continue
        except CorruptStream as error:
            yield BadLine(line + 1, offset, error.reason)
            return
        if not raw:
            return
        line += 1
        start, offset = offset, offset + len(raw)
        if not raw.strip():
            continue
        try:
            row = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as error:
            yield BadLine(line, start, f"invalid UTF-8 at byte {start + error.start} ({error.reason})", raw)
            continue
        except json.JSONDecodeError as error:
            yield BadLine(line, start, f"not valid JSON ({error.msg} at column {error.colno})", raw)
            continue
        if not isinstance(row, dict) or not isinstance(row.get(text_field), str):
            what = "a JSON object" if isinstance(row, dict) else type(row).__name__
            yield BadLine(line, start, f"{what} without a string field {text_field!r}", raw)
            continue
        yield Record(index, line, start, row[text_field], row, raw)
        index += 1


def _parquet_records(spec: ShardSpec, text_field: str) -> Iterator[Record | BadLine]:
    import pyarrow.parquet as pq

    path = as_path(spec.url)
    try:
        parquet = pq.ParquetFile(path if isinstance(path, Path) else path.open("rb"))
        if text_field not in parquet.schema_arrow.names:
            raise DataError(
                f"{spec.label}: no column {text_field!r}; columns are {', '.join(parquet.schema_arrow.names)}; "
                "pass --text-field"
            )
        index = 0
        for batch in parquet.iter_batches(batch_size=4096):
            for row in batch.to_pylist():
                if isinstance(row.get(text_field), str) and len(row[text_field]) > MAX_DOCUMENT_BYTES:
                    reason = f"a {text_field!r} longer than the bound of {MAX_DOCUMENT_BYTES} characters"
                    yield BadLine(index + 1, 0, reason)
                elif isinstance(row.get(text_field), str):
                    yield Record(index, index + 1, 0, row[text_field], row)
                else:
                    data = json.dumps(row, ensure_ascii=False, default=str).encode() + b"\n"
                    yield BadLine(index + 1, 0, f"row without a string {text_field!r}", data)
                index += 1
    except DataError:
        raise
    except Exception as error:  # pyarrow raises several types for a damaged file
        yield BadLine(0, 0, f"not a readable Parquet file ({error})")


def parquet_schema(spec: ShardSpec):
    """The shard's Arrow schema; a file that is no Parquet is refused naming it (a whole file, not a bad line)."""
    import pyarrow.parquet as pq

    path = as_path(spec.url)
    try:
        return pq.ParquetFile(path if isinstance(path, Path) else path.open("rb")).schema_arrow
    except storage_errors() as error:
        raise describe_error(spec.url, error) from None
    except Exception as error:  # pyarrow raises several types for a file that is not Parquet
        raise DataError(
            f"{spec.label}: not a readable Parquet file ({error}); replace it, or move it out of the corpus"
        ) from None


# writing ------------------------------------------------------------------------------------------------------


class CleanedWriter:
    """A cleaned shard in a local file, in the shard's format and compression."""

    def __init__(self, spec: ShardSpec, path: Path, schema=None, text_field: str = "text"):
        self.spec, self.path, self.schema, self.text_field = spec, path, schema, text_field
        self._rows: list[dict] = []
        self._texts: list[str] = []
        self._file = None
        if spec.format == "jsonl":
            raw = open(path, "wb")  # noqa: SIM115  # closed in close()
            if spec.compression == ".zst":
                import zstandard

                self._file = zstandard.ZstdCompressor(level=3).stream_writer(raw)
            elif spec.compression == ".gz":
                self._file = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0)
            else:
                self._file = raw
            self._raw = raw

    def write_line(self, raw: bytes) -> None:
        """A JSONL record as it was read (byte for byte)."""
        assert self._file is not None
        self._file.write(raw if raw.endswith(b"\n") else raw + b"\n")

    def write_row(self, row: dict) -> None:
        if self.spec.format == "jsonl":
            self.write_line(json.dumps(row, ensure_ascii=False).encode() + b"\n")
        elif self.spec.format == "parquet":
            self._rows.append(row)
        else:
            self._texts.append(row[self.text_field])

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            if not self._raw.closed:
                self._raw.close()
        elif self.spec.format == "parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            pq.write_table(pa.Table.from_pylist(self._rows, schema=self.schema), self.path)
        else:
            data = "\n\n".join(self._texts).encode()
            if self.spec.compression == ".zst":
                import zstandard

                data = zstandard.ZstdCompressor(level=3).compress(data)
            elif self.spec.compression == ".gz":
                data = gzip.compress(data, mtime=0)
            self.path.write_bytes(data)


class Destination:
    """An output folder (local, or a bucket URL) whose files are committed whole: a local file appears by rename,
    a bucket object by one write, so a reader never sees a half-written file."""

    def __init__(self, url: str):
        self.url = str(url).rstrip("/")
        self.remote = is_url(self.url)
        self.root = as_path(self.url)

    def path(self, relative: str):
        return self.root / relative

    def exists(self, relative: str) -> bool:
        try:
            return self.path(relative).exists()
        except storage_errors() as error:
            raise describe_error(f"{self.url}/{relative}", error) from None

    def read_bytes(self, relative: str) -> bytes:
        try:
            return self.path(relative).read_bytes()
        except storage_errors() as error:
            raise describe_error(f"{self.url}/{relative}", error) from None

    def put(self, relative: str, local: Path) -> None:
        """Move (local) or upload (bucket) the finished file `local` to `relative`."""
        target = self.path(relative)
        if not self.remote:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(local, target)
            return
        try:
            target.fs.put_file(str(local), target.path)
        except storage_errors() as error:
            raise describe_error(target, error, "write") from None

    def write_bytes(self, relative: str, data: bytes) -> None:
        with self.scratch() as folder:
            local = folder / "part"
            local.write_bytes(data)
            self.put(relative, local)

    def remove_scratch(self) -> list[str]:
        """Remove the `.partial-*` scratch folders a killed run left here (local only: a bucket gets none), those
        that hold `SCRATCH_MARKER` alone: a folder decontaminate did not make is never deleted; returns their
        names."""
        if self.remote or not self.root.is_dir():
            return []
        import shutil

        left = sorted(p for p in self.root.glob(".partial-*") if _is_scratch(p))
        for folder in left:
            shutil.rmtree(folder, ignore_errors=True)
        return [p.name for p in left]

    def scratch(self):
        """A temporary folder for files on their way to this destination (on its filesystem when local)."""
        if self.remote:
            return _TempFolder(None)
        self.root.mkdir(parents=True, exist_ok=True)
        return _TempFolder(self.root)


SCRATCH_MARKER = ".jaxcontam-scratch"  # in every scratch folder: what `remove_scratch` may delete


def _is_scratch(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink() and (path / SCRATCH_MARKER).is_file()


class _TempFolder:
    def __init__(self, under):
        self._folder = tempfile.TemporaryDirectory(prefix=".partial-", dir=under)

    def __enter__(self) -> Path:
        folder = Path(self._folder.__enter__())
        (folder / SCRATCH_MARKER).touch()
        return folder

    def __exit__(self, *exc) -> None:
        self._folder.__exit__(*exc)
