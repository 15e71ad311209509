"""Reading a file as a stream, `.gz` and `.zst` decompressed by suffix, and fetching bucket objects ahead of
their turn on threads.

The one decompression layer of every reader (the audit's corpora, `ngram`, `decontaminate`): a stream that ends
before its end marker (a truncated download) or whose bytes do not decompress raises `CorruptStream`, naming the
file, where a bare decoder would end a `.zst` stream early without a word."""

from __future__ import annotations

import collections
import dataclasses
import gzip
import io
import zlib
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from jaxcontam.errors import DataError
from jaxcontam.storage.locations import describe_error, storage_errors

COMPRESSED = (".gz", ".zst")


def open_binary(path: Any) -> io.BufferedIOBase:
    """The file's bytes as a stream, gzip- or zstd-decompressed by its last suffix."""
    try:
        raw = path.open("rb")
    except storage_errors() as error:
        if isinstance(path, Path):
            raise
        raise describe_error(path, error) from None
    if not isinstance(path, Path):
        raw = io.BufferedReader(_NamedErrors(raw, path), buffer_size=1 << 20)
    return decompressed(raw, path.suffix.lower(), str(path))


class _NamedErrors(io.RawIOBase):
    """A remote object's stream whose storage errors while reading are reported as `describe_error` does."""

    def __init__(self, raw, path):
        self.raw, self.path = raw, path

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        try:
            data = self.raw.read(len(buffer))
        except storage_errors() as error:
            raise describe_error(self.path, error) from None
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self.raw.close()
        super().close()


class CorruptStream(DataError):
    """A compressed file that ends before its end marker (truncated) or whose bytes do not decompress: `reason` says
    which, the message names the file too."""

    def __init__(self, name: str, reason: str):
        super().__init__(f"{name}: {reason}; fetch or compress the file again")
        self.reason = reason


class _Zstd(io.RawIOBase):
    """A .zst stream, decompressed frame after frame; a stream cut inside a frame raises CorruptStream."""

    def __init__(self, raw, name: str):
        import zstandard

        self._raw, self._name, self._new = raw, name, zstandard.ZstdDecompressor().decompressobj
        self._part, self._pending, self._in_frame = self._new(), b"", False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self._pending:
            data = self._raw.read(1 << 20)
            if not data:
                if self._in_frame:
                    raise CorruptStream(self._name, "the .zst stream ends inside a frame (a truncated file)")
                return 0
            while data:
                self._pending += self._part.decompress(data)
                self._in_frame = not self._part.eof
                data = b""
                if self._part.eof:  # the next frame, if any, starts in the unused bytes
                    data, self._part = self._part.unused_data, self._new()
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size

    def close(self) -> None:
        self._raw.close()
        super().close()


class _Checked(io.RawIOBase):
    """A decoder's stream whose errors come out as CorruptStream naming the file; closing it closes the file."""

    def __init__(self, decoder, raw, name: str):
        self._decoder, self._raw, self._name = decoder, raw, name

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        import zstandard

        try:
            return self._decoder.readinto(buffer)
        except EOFError:
            raise CorruptStream(self._name, "the .gz stream ends early (a truncated file)") from None
        except (gzip.BadGzipFile, zlib.error, zstandard.ZstdError) as error:
            raise CorruptStream(self._name, f"the compressed stream is corrupt ({error})") from None

    def close(self) -> None:
        try:
            self._decoder.close()
        finally:
            self._raw.close()
            super().close()


def decompressed(raw, suffix: str, name: str = "the file") -> io.BufferedIOBase:
    """`raw` (a binary stream) decompressed for `suffix` (.gz, .zst; anything else as it is); a truncated or corrupt
    stream raises CorruptStream naming `name`."""
    if suffix == ".gz":
        decoder = gzip.GzipFile(fileobj=raw, mode="rb")
    elif suffix == ".zst":
        decoder = _Zstd(raw, name)
    else:
        return raw
    return io.BufferedReader(_Checked(decoder, raw, name), buffer_size=1 << 20)


def base_suffix(path: Any) -> str:
    """The format suffix, looking through a trailing `.gz` or `.zst` (`a.jsonl.zst` -> `.jsonl`)."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in COMPRESSED:
        suffixes = suffixes[:-1]
    return suffixes[-1] if suffixes else ""


@dataclasses.dataclass(frozen=True)
class Fetched:
    """A remote file's bytes, fetched ahead, with the path methods the readers use."""

    path: Any
    data: bytes = dataclasses.field(repr=False)

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def suffix(self) -> str:
        return self.path.suffix

    @property
    def suffixes(self) -> list[str]:
        return self.path.suffixes

    def open(self, mode: str = "rb") -> io.BytesIO:
        return io.BytesIO(self.data)

    def read_bytes(self) -> bytes:
        return self.data

    def __str__(self) -> str:
        return str(self.path)


def fetch(path: Any) -> Fetched:
    """The whole (still compressed) object at `path`, in memory."""
    try:
        return Fetched(path, path.read_bytes())
    except storage_errors() as error:
        raise describe_error(path, error) from None


def read_ahead(items: Iterable, fetcher: Callable[[Any], Callable[[], Any] | None], in_flight: int) -> Iterator:
    """`items` in order, each as `(item, prepared)`: `fetcher(item)` names the slow read to start early (None:
    nothing to fetch) and up to `in_flight` of them run at once on threads; `prepared` is its result, or None."""
    pending: collections.deque = collections.deque()
    source = iter(items)
    with ThreadPoolExecutor(max(1, in_flight), thread_name_prefix="jaxcontam-read-ahead") as pool:

        def refill() -> None:
            while len(pending) < max(1, in_flight):
                item = next(source, _END)
                if item is _END:
                    return
                work = fetcher(item)
                pending.append((item, pool.submit(work) if work is not None else None))

        refill()
        while pending:
            item, future = pending.popleft()
            refill()
            yield item, future.result() if future is not None else None


_END = object()
