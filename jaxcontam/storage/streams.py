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
from typing import Any, BinaryIO, cast

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


class _ZstdFrames:
    """Where a .zst stream's compressed bytes stand in its frame structure (RFC 8878: frame headers, block headers,
    checksums, skippable frames), fed the bytes as they pass and reading headers only: at the stream's end it tells
    whether the last frame is whole, which zstandard's stream reader (whose reads bound their output) does not."""

    def __init__(self):
        self._want, self._size = "magic", 4  # the header part awaited and its length in bytes
        self._head = bytearray()
        self._skip = 0  # bytes to pass before the next header part (frame header rest, block body)
        self._checksum = False

    def feed(self, data) -> None:
        view, at = memoryview(data), 0
        while at < len(view):
            if self._skip:
                step = min(self._skip, len(view) - at)
                self._skip -= step
                at += step
                continue
            take = min(self._size - len(self._head), len(view) - at)
            self._head += view[at : at + take]
            at += take
            if len(self._head) == self._size:
                head = bytes(self._head)
                self._head.clear()
                self._advance(head)

    def _advance(self, head: bytes) -> None:
        value = int.from_bytes(head, "little")
        if self._want == "magic":  # a wrong magic number is refused by zstd itself
            self._want, self._size = ("skippable", 4) if value & 0xFFFFFFF0 == 0x184D2A50 else ("descriptor", 1)
        elif self._want == "skippable":
            self._skip, self._want, self._size = value, "magic", 4
        elif self._want == "descriptor":
            single, dictionary, content_size = value >> 5 & 1, value & 3, value >> 6
            self._checksum = bool(value & 4)
            window = 0 if single else 1
            self._skip = window + (0, 1, 2, 4)[dictionary] + (single, 2, 4, 8)[content_size]
            self._want, self._size = "block", 3
        elif self._want == "block":
            last, kind, size = value & 1, value >> 1 & 3, value >> 3
            self._skip = 1 if kind == 1 else size  # an RLE block holds one byte
            if last:
                self._want, self._size = ("checksum", 4) if self._checksum else ("magic", 4)
        else:  # the frame's checksum
            self._want, self._size = "magic", 4

    @property
    def between_frames(self) -> bool:
        return self._want == "magic" and not self._head and not self._skip


class _FedFrames(io.RawIOBase):
    """A compressed stream whose bytes are fed to `_ZstdFrames` as they are read."""

    def __init__(self, raw, frames: _ZstdFrames):
        self._raw, self._frames = raw, frames

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        data = self._raw.read(size)
        self._frames.feed(data)
        return data

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


class _Zstd(io.RawIOBase):
    """A .zst stream, decompressed frame after frame by zstandard's stream reader, so one read returns at most the
    bytes asked for (a 300 KB file can hold 10 GB of NULs); a stream cut inside a frame raises CorruptStream."""

    def __init__(self, raw, name: str):
        import zstandard

        self._raw, self._name, self._frames = raw, name, _ZstdFrames()
        source = cast(BinaryIO, _FedFrames(raw, self._frames))  # a readable binary stream
        self._reader = zstandard.ZstdDecompressor().stream_reader(source, read_size=1 << 17, read_across_frames=True)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        size = self._reader.readinto(buffer)
        if size == 0 and len(buffer) and not self._frames.between_frames:
            raise CorruptStream(self._name, "the .zst stream ends inside a frame (a truncated file)")
        return size

    def close(self) -> None:
        self._reader.close()
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
