"""Lazy corpus readers: documents (text or token arrays) shard by shard, never the whole corpus.

A `Corpus` is an ordered tuple of `CorpusShard`s with stable names, the unit of checkpoint/resume and of
multi-host splitting (`corpus.split(process_index, process_count)` takes every `count`-th shard). A shard is
one file (text, JSONL, JSON, Parquet), one fixed chunk of a memory-mapped token array (`.npy`, raw `.bin`), or
one shard of a hub dataset. Reading a shard opens its file only when iterated. Text and record files may be
`.gz` or `.zst` compressed, and a corpus may be a URL (`gs://bucket/dolma/`, `s3://...`) or a glob of them
(`gs://bucket/dolma/*.json.zst`): a remote shard's object is fetched ahead of its turn (`CorpusShard.fetch`,
`read_ahead`) so counting need not wait on the network. A folder's files are listed by kind when it is opened;
files that are not corpus text (READMEs, licences, metadata JSON, checksums, empty files, records without the
text field) are skipped and reported, and a corpus left with nothing to read is refused.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import io
import json
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal

import numpy as np

from jaxcontam.data.records import (
    MAX_DOCUMENT_BYTES,
    MAX_JSON_LIST_BYTES,
    open_text,
    position_name,
    read_json_records,
    read_jsonl,
    read_parquet,
    too_long,
)
from jaxcontam.errors import DataError, JaxcontamWarning
from jaxcontam.storage import (
    COMPRESSED,
    Readable,
    as_path,
    base_suffix,
    describe_error,
    fetch,
    has_glob,
    is_url,
    list_files,
    open_binary,
    read_range,
    storage_errors,
)
from jaxcontam.storage import read_ahead as _read_ahead

TEXT_SUFFIXES = (".txt", ".md")
RECORD_SUFFIXES = (".jsonl", ".json", ".parquet")
TOKEN_SUFFIXES = (".npy", ".bin")
TOKEN_DTYPES = ("uint16", "uint32")
DEFAULT_CHUNK_TOKENS = 1 << 24
HUB_ROWS_PER_SHARD = 100_000


@dataclasses.dataclass(frozen=True)
class Document:
    """One corpus document: `text` for text corpora, `tokens` (1-D integer array) for pre-tokenized ones."""

    id: str
    text: str | None = None
    tokens: np.ndarray | None = None


@dataclasses.dataclass(frozen=True)
class CorpusShard:
    """A stable unit of a corpus: `name` survives reruns; `documents()` reads it lazily. A remote shard also has
    `fetch`, which downloads its object and returns the same shard read from memory (see `read_ahead`)."""

    name: str
    read: Callable[[], Iterator[Document]] = dataclasses.field(repr=False, compare=False)
    fetch: Callable[[], CorpusShard] | None = dataclasses.field(default=None, repr=False, compare=False)

    def documents(self) -> Iterator[Document]:
        return self.read()


READ_AHEAD = 4  # remote shard objects fetched at once, ahead of the shard being read


def read_ahead(shards, in_flight: int = READ_AHEAD) -> Iterator[CorpusShard]:
    """`shards` in order, each remote one fetched up to `in_flight` shards before its turn, on threads."""
    for shard, fetched in _read_ahead(shards, lambda shard: getattr(shard, "fetch", None), in_flight):
        yield fetched if fetched is not None else shard


@dataclasses.dataclass(frozen=True)
class Corpus:
    """A lazily read corpus: named shards of text or token documents."""

    name: str
    kind: Literal["text", "tokens"]
    shards: tuple[CorpusShard, ...]
    files: str = ""  # a local corpus's files by kind ("15 text files, 2 JSONL files"), listed before reading
    skipped: tuple[tuple[str, str], ...] = ()  # (file, reason) of a folder's files that are not corpus text

    def documents(self) -> Iterator[Document]:
        """All documents, shard by shard, in order."""
        for shard in self.shards:
            yield from shard.documents()

    def split(self, index: int, count: int) -> Corpus:
        """Shards `index`, `index + count`, ...: `count` disjoint parts that together are the corpus."""
        if not isinstance(count, int) or count < 1 or not isinstance(index, int) or not 0 <= index < count:
            raise DataError(f"corpus split needs 0 <= index < count, got index={index!r}, count={count!r}")
        return dataclasses.replace(self, shards=self.shards[index::count])


# Text and record files ---------------------------------------------------------------------


def _check_utf8(path: Readable, line_limit: int, whole: bool = False, block: int = 1 << 24) -> None:
    """Refuse a text or JSON corpus file that is not valid UTF-8, or that holds a line (`whole`: is a document)
    longer than `line_limit` bytes, naming its line and the fix, before any work.

    A streamed decode (decompressing .gz and .zst): about a second per GB, small beside counting the same text.
    """
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")()
    lines, offset, line_start = 1, 0, 0
    with open_binary(path) as handle:
        while True:
            data = handle.read(block)
            try:
                decoder.decode(data, final=not data)
            except UnicodeDecodeError as error:
                line = lines + data[: max(error.start, 0)].count(b"\n")
                raise DataError(
                    f"{path}, line {line}: not valid UTF-8 ({error.reason} near byte "
                    f"{offset + max(error.start, 0)}); re-encode it as UTF-8 (e.g. `iconv -f latin1 -t "
                    f"utf-8`) or move it out of the corpus folder"
                ) from None
            if not data:
                return
            lines += data.count(b"\n")
            last = data.rfind(b"\n")
            line_start = offset + last + 1 if last >= 0 and not whole else line_start
            offset += len(data)
            if offset - line_start > line_limit:
                raise (
                    _document_too_long(path, line_limit)
                    if whole
                    else too_long(f"{path}, line {lines}", offset - line_start, line_limit)
                )


def _document_too_long(path: Readable, limit: int) -> DataError:
    return DataError(
        f"{path}: a text document longer than the bound of {limit} bytes (a text file is one document); split it "
        "into several files, or into a JSONL file of documents"
    )


def _text_file(path: Readable, doc_id: str) -> Iterator[Document]:
    with open_binary(path) as handle:
        data = handle.read(MAX_DOCUMENT_BYTES + 1)
    if len(data) > MAX_DOCUMENT_BYTES:
        raise _document_too_long(path, MAX_DOCUMENT_BYTES)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise DataError(
            f"{path}, line {line}: not valid UTF-8 ({error.reason} at byte {error.start}); "
            f"re-encode the corpus file as UTF-8"
        ) from None
    yield Document(id=doc_id, text=text)


def _record_file(path: Readable, doc_id: str, field: str) -> Iterator[Document]:
    suffix = base_suffix(path)
    limit = MAX_DOCUMENT_BYTES
    rows = (
        read_parquet(path, columns=[field], limit=limit)
        if suffix == ".parquet"
        else read_jsonl(path, limit)
        if suffix == ".jsonl"
        else read_json_records(path, limit)
    )
    for position, row in rows:
        if field not in row:
            raise DataError(
                f"{position_name(path, position)}: no field {field!r}; fields present: "
                f"{', '.join(row) or 'none'}. Pass field=<name> (--text-field) for the text column"
            )
        text = row[field]
        if not isinstance(text, str):
            raise DataError(
                f"{position_name(path, position)}: field {field!r} must be a string, got {type(text).__name__}"
            )
        yield Document(id=f"{doc_id}:{position}", text=text)


# Token arrays ------------------------------------------------------------------------------


def _token_array(path: Path, token_dtype: str | None) -> np.ndarray:
    """A read-only memory map of a 1-D integer token array (.npy, or raw .bin of `token_dtype`)."""
    if path.suffix == ".npy":
        try:
            array = np.load(path, mmap_mode="r")
        except ValueError as error:
            raise DataError(f"{path}: not a readable .npy array ({error})") from None
        if array.ndim != 1 or not np.issubdtype(array.dtype, np.integer):
            raise DataError(f"{path}: expected a 1-D integer token array, got shape {array.shape} dtype {array.dtype}")
        return array
    if token_dtype not in TOKEN_DTYPES:
        raise DataError(
            f"{path}: a raw .bin token file needs token_dtype (--token-dtype) uint16 or uint32, got {token_dtype!r}"
        )
    itemsize = np.dtype(token_dtype).itemsize
    size = path.stat().st_size
    if size % itemsize:
        raise DataError(f"{path}: {size} bytes is not a whole number of {token_dtype} tokens; check --token-dtype")
    if size == 0:
        return np.zeros(0, dtype=token_dtype)
    return np.memmap(path, dtype=token_dtype, mode="r")


def _remote_token_layout(path, token_dtype: str | None) -> tuple[np.dtype, int, int]:
    """(dtype, byte offset of the first token, token count) of a token array in a bucket, from its .npy header
    (one ranged read) or its size (.bin)."""
    if path.suffix == ".npy":
        head = io.BytesIO(read_range(path, 0, 1 << 16))
        try:
            major, _ = np.lib.format.read_magic(head)
            read_header = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
            shape, _, dtype = read_header(head)
        except ValueError as error:
            raise DataError(f"{path}: not a readable .npy array ({error})") from None
        if len(shape) != 1 or not np.issubdtype(dtype, np.integer):
            raise DataError(f"{path}: expected a 1-D integer token array, got shape {shape} dtype {dtype}")
        size = path.stat().st_size
        if head.tell() + shape[0] * np.dtype(dtype).itemsize > size:  # checked before any range is read
            raise DataError(
                f"{path}: its .npy header declares {shape[0]} tokens of {dtype}, more than the object's {size} bytes "
                "hold (a truncated upload, or a forged header); upload the array again"
            )
        return np.dtype(dtype), head.tell(), shape[0]
    if token_dtype not in TOKEN_DTYPES:
        raise DataError(
            f"{path}: a raw .bin token file needs token_dtype (--token-dtype) uint16 or uint32, got {token_dtype!r}"
        )
    dtype = np.dtype(token_dtype)
    size = path.stat().st_size
    if size % dtype.itemsize:
        raise DataError(f"{path}: {size} bytes is not a whole number of {token_dtype} tokens; check --token-dtype")
    return dtype, 0, size // dtype.itemsize


def _token_shards(path, label: str, token_dtype: str | None, chunk_tokens: int) -> list[CorpusShard]:
    """One shard per `chunk_tokens` slice of the array (memory-mapped; in a bucket, read by byte range and
    fetched ahead); the slice is one document."""
    if isinstance(path, Path):
        length = len(_token_array(path, token_dtype))

        def read(start: int, stop: int, name: str) -> Iterator[Document]:
            yield Document(id=name, tokens=np.asarray(_token_array(path, token_dtype)[start:stop]))

        fetcher: Callable[[int, int, str], CorpusShard] | None = None
    else:
        dtype, offset, length = _remote_token_layout(path, token_dtype)

        def tokens(start: int, stop: int) -> np.ndarray:
            raw = read_range(path, offset + start * dtype.itemsize, (stop - start) * dtype.itemsize)
            return np.frombuffer(raw, dtype)

        def read(start: int, stop: int, name: str) -> Iterator[Document]:
            yield Document(id=name, tokens=tokens(start, stop))

        def fetch_tokens(start: int, stop: int, name: str) -> CorpusShard:
            fetched = Document(id=name, tokens=tokens(start, stop))
            return CorpusShard(name, lambda: iter([fetched]))

        fetcher = fetch_tokens

    shards = []
    for start in range(0, length, chunk_tokens):
        stop = min(start + chunk_tokens, length)
        name = f"{label}@{start}:{stop}"
        fetch_shard = functools.partial(fetcher, start, stop, name) if fetcher is not None else None
        shards.append(CorpusShard(name, functools.partial(read, start, stop, name), fetch_shard))
    return shards


# Files and folders -------------------------------------------------------------------------

# Files a dataset folder holds beside its text: READMEs, licences, provenance and metadata (by name, any suffix).
METADATA_NAMES = frozenset(
    {
        "readme",
        "license",
        "licence",
        "copying",
        "notice",
        "citation",
        "authors",
        "changelog",
        "source",
        "sources",
        "provenance",
        "metadata",
        "manifest",
        "checksums",
        "sha256sums",
        "sha512sums",
        "md5sums",
        "dataset_info",
        "dataset_infos",
        "dataset_dict",
        "state",
    }
)
CHECKSUM_SUFFIXES = (".sha256", ".sha512", ".sha1", ".md5")
SKIPPED_SHOWN = 5
JSON_HEAD_CHARS = 1 << 20


def file_kind(path: Path) -> str | None:
    """How a file is read: "text", "JSONL", "JSON", "Parquet" or "tokens"; None for any other file."""
    suffix = base_suffix(path)
    if suffix in TOKEN_SUFFIXES and path.suffix.lower() not in COMPRESSED:
        return "tokens"
    return {".txt": "text", ".md": "text", ".jsonl": "JSONL", ".json": "JSON", ".parquet": "Parquet"}.get(suffix)


def _kind(path: Path) -> Literal["text", "tokens"] | None:
    kind = file_kind(path)
    return None if kind is None else "tokens" if kind == "tokens" else "text"


def _json_head_fields(path: Path) -> tuple[str, ...] | str | None:
    """Fields of a .json file's first record; a reason when it holds no records; None when the head cannot tell."""
    with open_text(path) as handle:
        try:
            head = handle.read(JSON_HEAD_CHARS).lstrip()
        except UnicodeDecodeError as error:
            raise DataError(f"{path}: not valid UTF-8 ({error.reason}); re-encode the file as UTF-8") from None
    decoder = json.JSONDecoder()
    if head.startswith("["):
        rest = head[1:].lstrip()
        if rest.startswith("]"):
            return "an empty JSON list"
        try:
            first, _ = decoder.raw_decode(rest)
        except json.JSONDecodeError:
            return None  # a first record longer than the head: read it as records
        return tuple(first) if isinstance(first, dict) else "a JSON list of non-objects"
    try:
        first = json.loads(head.split("\n", 1)[0])
    except json.JSONDecodeError:
        return "one JSON document, not records"
    return tuple(first) if isinstance(first, dict) else "one JSON value, not records"


def _record_fields(path: Path) -> tuple[str, ...] | str | None:
    """Fields of a record file's first record (a Parquet file's columns), a reason it holds none, or None."""
    kind = file_kind(path)
    if kind == "Parquet":
        import pyarrow.parquet as pq

        try:
            return tuple(pq.ParquetFile(path if isinstance(path, Path) else path.open("rb")).schema_arrow.names)
        except Exception as error:  # pyarrow raises several types for a non-Parquet file
            raise DataError(f"{path}: not a readable Parquet file ({error})") from None
    if kind == "JSONL":
        first = next(read_jsonl(path, MAX_DOCUMENT_BYTES), None)
        return "no records" if first is None else tuple(first[1])
    return _json_head_fields(path)


def _not_corpus_text(path: Path, field: str) -> str | None:
    """Why a corpus file cannot give documents (empty, no records, no `field`), or None when it can."""
    if path.stat().st_size == 0:
        return "empty file"
    if file_kind(path) in ("JSONL", "JSON", "Parquet"):
        fields = _record_fields(path)
        if isinstance(fields, str):
            return fields
        if fields is not None and field not in fields:
            return f"no field {field!r} in its first record; fields present: {', '.join(fields) or 'none'}"
    return None


def _skip_reason(path: Path, field: str) -> str | None:
    """Why a file of a corpus folder is not corpus text (metadata, checksum, other format, ...), or None."""
    if path.name.split(".")[0].lower() in METADATA_NAMES:
        return "README, licence or metadata file"
    if path.suffix.lower() in CHECKSUM_SUFFIXES:
        return "checksum file"
    if file_kind(path) is None:
        return f"not a corpus format: {path.suffix or 'no suffix'}"
    return _not_corpus_text(path, field)


def _file_shards(path: Path, label: str, field: str, token_dtype: str | None, chunk_tokens: int) -> list[CorpusShard]:
    kind = file_kind(path)
    if kind == "tokens":
        return _token_shards(path, label, token_dtype, chunk_tokens)
    read = (
        functools.partial(_text_file, doc_id=label)
        if kind == "text"
        else functools.partial(_record_file, doc_id=label, field=field)
    )
    if isinstance(path, Path):
        return [CorpusShard(label, functools.partial(read, path))]
    return [
        CorpusShard(
            label, functools.partial(read, path), lambda: CorpusShard(label, functools.partial(read, fetch(path)))
        )
    ]


def _skipped_text(skipped: list[tuple[str, str]]) -> str:
    shown = "; ".join(f"{label} ({reason})" for label, reason in skipped[:SKIPPED_SHOWN])
    more = len(skipped) - SKIPPED_SHOWN
    return shown + (f"; and {more} more" if more > 0 else "")


def _kinds_text(files: list[tuple[Path, str]]) -> str:
    counts = collections.Counter(file_kind(path) for path, _ in files)
    return ", ".join(f"{count} {kind} file{'s' if count > 1 else ''}" for kind, count in sorted(counts.items()))


def _corpus_files(listed: list[tuple[Path, str]], field: str) -> tuple[list[tuple[Path, str]], list[tuple[str, str]]]:
    """(path, label) of the listed files that are corpus files, and (label, reason) of every file skipped."""
    files, skipped = [], []
    for path, label in listed:
        reason = _skip_reason(path, field)
        if reason is None:
            files.append((path, label))
        else:
            skipped.append((label, reason))
    return files, skipped


def _file_corpus(
    spec: str | Path, field: str, token_dtype: str | None, chunk_tokens: int, follow_symlinks: bool
) -> Corpus:
    """The corpus of one file, of a folder's files, or of the files a glob matches (`storage.list_files`)."""
    root, listed = list_files(spec, follow_symlinks)
    skipped: list[tuple[str, str]] = []
    if has_glob(str(spec)):
        files, skipped = _corpus_files(listed, field)
        if not files:
            raise DataError(f"{root}: the pattern matches no corpus files; skipped {_skipped_text(skipped) or 'none'}")
    elif root.is_file():
        if file_kind(root) is None:
            raise DataError(
                f"{root}: unsupported corpus file type; expected .txt/.md/.jsonl/.json/.parquet "
                f"(optionally .gz or .zst) or a .npy/.bin token array"
            )
        reason = _not_corpus_text(root, field)
        if reason is not None:
            raise DataError(
                f"{root}: no corpus text ({reason}); pass field=<name> (--text-field) for the text "
                f"column, or point at the corpus files"
            )
        files = listed
    else:
        files, skipped = _corpus_files(listed, field)
        if not files:
            found = f"; skipped {_skipped_text(skipped)}" if skipped else ""
            raise DataError(
                f"{root}: folder holds no corpus files (.txt/.md/.jsonl/.json/.parquet/.npy/.bin with "
                f"text in field {field!r}){found}. Point at the corpus folder, or pass field=<name> "
                f"(--text-field) for the text column"
            )
    kinds: set[Literal["text", "tokens"] | None] = {_kind(p) for p, _ in files}
    if len(kinds) > 1:
        tokens = next(label for p, label in files if _kind(p) == "tokens")
        text = next(label for p, label in files if _kind(p) == "text")
        raise DataError(
            f"{root}: mixes token arrays ({tokens}) and text files ({text}); "
            f"a corpus is either text or tokens, point at one kind"
        )
    for path, _ in files:
        if file_kind(path) in ("text", "JSONL", "JSON") and isinstance(path, Path):  # remote: checked as read
            kind = file_kind(path)
            _check_utf8(path, MAX_JSON_LIST_BYTES if kind == "JSON" else MAX_DOCUMENT_BYTES, whole=kind == "text")
    shards = [s for path, label in files for s in _file_shards(path, label, field, token_dtype, chunk_tokens)]
    if not shards:
        raise DataError(f"{root}: the token files hold no tokens; point at a non-empty corpus")
    if skipped:
        warnings.warn(
            f"corpus {root}: reading {_kinds_text(files)}; skipped {len(skipped)} file(s) that are not "
            f"corpus text: {_skipped_text(skipped)}. Nothing to do if they are metadata; otherwise fix "
            f"or rename them (or pass --text-field)",
            JaxcontamWarning,
            stacklevel=3,
        )
    kind = kinds.pop()
    assert kind is not None  # `files` holds corpus files only
    return Corpus(name=root.name, kind=kind, shards=tuple(shards), files=_kinds_text(files), skipped=tuple(skipped))


# Hugging Face datasets ---------------------------------------------------------------------


def _hub_documents(dataset, prefix: str, field: str) -> Iterator[Document]:
    for position, row in enumerate(dataset):
        text = row.get(field)
        if not isinstance(text, str):
            raise DataError(
                f"{prefix} row {position}: field {field!r} must be a string, got {type(text).__name__}; "
                f"fields present: {', '.join(row)}. Pass field=<name> (--text-field)"
            )
        yield Document(id=f"{prefix}:{position}", text=text)


def _hub_corpus(spec: str, field: str, split: str, streaming: bool) -> Corpus:
    import datasets

    try:
        dataset = datasets.load_dataset(spec, split=split, streaming=streaming)
    except Exception as error:  # network, auth and unknown-dataset errors come as many types
        raise DataError(
            f"{spec!r} is not a local path and loading it from the Hugging Face hub (split {split!r}) failed: {error}"
        ) from None
    if streaming:
        count = max(int(getattr(dataset, "n_shards", 1)), 1)
        parts = [(f"{spec}:{split}/shard{i:05d}-of-{count:05d}", i) for i in range(count)]

        def shard_reader(name: str, index: int):
            return lambda: _hub_documents(dataset.shard(num_shards=count, index=index), name, field)

        reader = shard_reader
    else:
        rows = dataset
        assert isinstance(rows, datasets.Dataset)  # not streamed, one split
        total = len(rows)
        parts = [
            (f"{spec}:{split}/rows{a}-{min(a + HUB_ROWS_PER_SHARD, total)}", a)
            for a in range(0, total, HUB_ROWS_PER_SHARD)
        ]

        def rows_reader(name: str, start: int):
            stop = min(start + HUB_ROWS_PER_SHARD, total)
            return lambda: _hub_documents(rows.select(range(start, stop)), name, field)

        reader = rows_reader
    return Corpus(name=spec, kind="text", shards=tuple(CorpusShard(name, reader(name, i)) for name, i in parts))


def open_corpus(
    spec: str | Path,
    *,
    field: str = "text",
    token_dtype: str | None = None,
    split: str = "train",
    streaming: bool = True,
    chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
    follow_symlinks: bool = False,
) -> Corpus:
    """Open a corpus lazily.

    `spec`: a text file, a folder (recursively: .txt/.md/.jsonl/.json/.parquet/.npy/.bin, text
    files also .gz or .zst), a .jsonl/.json/.parquet file (text in `field`), a .npy or raw .bin token array
    (.bin needs `token_dtype` uint16|uint32; memory-mapped, one document per `chunk_tokens` shard), any of
    these as a URL (gs://, s3://, hf://; not token arrays) or a glob of files (`gs://bucket/dolma/*.json.zst`),
    or, when no such path exists, a Hugging Face dataset id (`split`, streamed unless `streaming=False`).
    A folder's symbolic links that lead outside it are left out (and reported) unless `follow_symlinks`.
    """
    if chunk_tokens < 1:
        raise DataError(f"chunk_tokens must be positive, got {chunk_tokens}")
    if token_dtype is not None and token_dtype not in TOKEN_DTYPES:
        raise DataError(f"token_dtype must be one of {', '.join(TOKEN_DTYPES)}, got {token_dtype!r}")
    if has_glob(str(spec)) or is_url(str(spec)):
        try:
            return _file_corpus(str(spec), field, token_dtype, chunk_tokens, follow_symlinks)
        except storage_errors() as error:  # no credentials, a refused permission: named before any model work
            raise describe_error(spec, error) from None
    path = as_path(spec)
    if path.exists():
        return _file_corpus(spec, field, token_dtype, chunk_tokens, follow_symlinks)
    looks_like_a_path = path.suffix.lower() in TEXT_SUFFIXES + RECORD_SUFFIXES + TOKEN_SUFFIXES
    if looks_like_a_path or str(spec).startswith((".", "/")):
        raise DataError(f"corpus file {spec} does not exist; check the path")
    return _hub_corpus(str(spec), field, split, streaming)
