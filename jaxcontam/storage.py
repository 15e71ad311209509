"""Where jaxcontam reads and writes bytes: local paths, and URLs that an fsspec filesystem serves (`gs://`,
`s3://`, `hf://`, `file://`, ...), with `.gz` and `.zst` files decompressed as they stream.

An output folder in a bucket is written through a local mirror (`output_folder`): the mirror is first filled with
what the bucket holds, so a run resumes from the bucket's stage store on any machine, and each file written in it
is uploaded whole (`publish`), so the bucket never holds a half-written object.

A URL becomes a `upath.UPath`, which has the pathlib methods the readers use (`open`, `is_file`, `rglob`,
`stat`, `suffix`), so one code path reads local and remote files. Credentials and endpoints come from each
cloud's standard chain (application default credentials, `STORAGE_EMULATOR_HOST`; the AWS environment, profile
or role, `AWS_ENDPOINT_URL`); jaxcontam's own settings never hold a secret. Transient errors (HTTP 5xx, reset
connections) are retried with backoff by gcsfs and botocore themselves; a permanent one is reported here with
its fix.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import gzip
import hashlib
import io
import os
import re
import shutil
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal, Protocol

from jaxcontam.errors import DataError

COMPRESSED = (".gz", ".zst")
GLOB_CHARACTERS = "*?["
# URL scheme -> (the fsspec package that serves it, the jaxcontam extra that installs it)
EXTRAS = {"gs": ("gcsfs", "gcs"), "gcs": ("gcsfs", "gcs"), "s3": ("s3fs", "s3"), "s3a": ("s3fs", "s3")}
_URL = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://")
_MIRRORS: dict[Path, Any] = {}  # local mirror folder -> the bucket folder it stands for
_UPLOADED: dict[Path, tuple[int, int]] = {}  # file of a mirror -> (size, mtime) when it was last uploaded


class Readable(Protocol):
    """What the readers need of a file: a local `Path`, a bucket `UPath`, or a `Fetched` object's bytes."""

    @property
    def name(self) -> str: ...

    @property
    def suffix(self) -> str: ...

    @property
    def suffixes(self) -> list[str]: ...

    def open(self, mode: Literal["rb"]) -> Any: ...


def is_url(spec: Any) -> bool:
    """Whether `spec` is a URL (scheme://...) rather than a local path."""
    return isinstance(spec, str) and _URL.match(spec) is not None


def as_path(spec: str | Path) -> Any:
    """A local `Path`, or a `UPath` for a URL; a URL whose filesystem package is missing is refused with the
    extra that installs it."""
    if not is_url(spec):
        return Path(spec).expanduser()
    scheme = _URL.match(str(spec)).group(1).lower()  # type: ignore[union-attr]  # is_url matched
    package, extra = EXTRAS.get(scheme, (None, None))
    try:
        from upath import UPath

        path = UPath(str(spec))
        _ = path.fs  # the filesystem package is imported here, not lazily at the first read
        return path
    except ImportError as error:
        fix = f"pip install 'jaxcontam[{extra}]'" if extra else f"install the fsspec filesystem for {scheme}://"
        raise DataError(
            f"{spec}: reading {scheme}:// needs {package or 'its fsspec package'} ({error}); {fix}"
        ) from None
    except ValueError as error:  # fsspec knows no such protocol
        raise DataError(f"{spec}: {error}; use a local path or a URL fsspec serves (gs://, s3://, hf://)") from None


@functools.cache
def storage_errors() -> tuple[type[BaseException], ...]:
    """What a failed storage call raises: OSError (fsspec's translation of HTTP errors), and the credential and
    client errors of botocore and google-auth, which reach the caller untranslated."""
    found: list[type[BaseException]] = [OSError]
    try:
        from botocore.exceptions import BotoCoreError

        found.append(BotoCoreError)
    except ImportError:
        pass
    try:
        from google.auth.exceptions import GoogleAuthError

        found.append(GoogleAuthError)
    except ImportError:
        pass
    return tuple(found)


def describe_error(path: Any, error: BaseException) -> DataError:
    """A permanent storage error (missing bucket or object, refused permission, no credentials) with its fix."""
    text = f"{type(error).__name__}: {error}"
    if isinstance(error, PermissionError) or "403" in text or "AccessDenied" in text or "Forbidden" in text:
        fix = "the credentials in use may not read it: grant read access, or use other credentials"
    elif "credential" in text.lower() or "Unable to locate" in text:
        fix = (
            "no credentials found: run `gcloud auth application-default login` (gs://) or set AWS_PROFILE / "
            "AWS_ACCESS_KEY_ID (s3://)"
        )
    elif isinstance(error, FileNotFoundError) or "NoSuchBucket" in text or "404" in text:
        fix = "no such bucket or object: check the URL"
    else:
        fix = "check the URL, the credentials and the network"
    return DataError(f"{path}: cannot be read ({text}); {fix}")


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
    return decompressed(raw, path.suffix.lower())


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


def decompressed(raw, suffix: str) -> io.BufferedIOBase:
    """`raw` (a binary stream) decompressed for `suffix` (.gz, .zst; anything else as it is)."""
    if suffix == ".gz":
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    if suffix == ".zst":
        import zstandard

        return io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(raw, closefd=True))
    return raw


def base_suffix(path: Any) -> str:
    """The format suffix, looking through a trailing `.gz` or `.zst` (`a.jsonl.zst` -> `.jsonl`)."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in COMPRESSED:
        suffixes = suffixes[:-1]
    return suffixes[-1] if suffixes else ""


def has_glob(spec: str) -> bool:
    return any(character in spec for character in GLOB_CHARACTERS)


def glob_files(spec: str) -> tuple[Any, list[Any]]:
    """The folder a glob URL or path starts from and the files it matches, in name order."""
    parts = spec.split("/")
    fixed = next(i for i, part in enumerate(parts) if has_glob(part))
    root = as_path("/".join(parts[:fixed]) or ".")
    pattern = "/".join(parts[fixed:])
    try:
        return root, sorted((p for p in root.glob(pattern) if p.is_file()), key=str)
    except storage_errors() as error:
        raise describe_error(spec, error) from None


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


def cache_root() -> Path:
    """jaxcontam's local cache: $JAXCONTAM_CACHE, else ~/.cache/jaxcontam."""
    return Path(os.environ.get("JAXCONTAM_CACHE") or Path.home() / ".cache" / "jaxcontam").expanduser()


def output_folder(out: str | Path, fill: bool = True) -> Path:
    """The local folder a command writes `out` in: `out` itself, or for a URL a mirror folder under the cache,
    filled first with what the bucket folder holds when `fill` (a rerun resumes from it), whose files `publish`
    uploads."""
    if not is_url(str(out)):
        return Path(out)
    remote = as_path(str(out))
    local = cache_root() / "outputs" / hashlib.sha256(str(out).encode()).hexdigest()[:16]
    if local in _MIRRORS:
        return local
    shutil.rmtree(local, ignore_errors=True)  # the bucket is the state; an older mirror may be stale
    local.mkdir(parents=True)
    try:
        if fill and remote.exists():
            for source in remote.rglob("*"):
                if source.is_file():
                    target = local / source.relative_to(remote).as_posix()
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(source.read_bytes())
    except storage_errors() as error:
        raise describe_error(out, error) from None
    _MIRRORS[local] = remote
    return local


def output_file(out: str) -> Path:
    """The local path a command writes the file `out` at: `out` itself, or for a URL a file in a mirror of its
    bucket folder (not filled: only this file is written there), uploaded by `publish`."""
    if not is_url(out):
        return Path(out)
    folder, _, name = out.rstrip("/").rpartition("/")
    return output_folder(folder, fill=False) / name


def publish(path: str | Path) -> None:
    """Upload `path`, a file written under an output mirror, whole to its place in the bucket (one object
    write: a reader sees the old object or the new one); a file of a local output folder stays as it is."""
    path = Path(path).absolute()
    for local, remote in _MIRRORS.items():
        if path.is_relative_to(local):
            target = remote / path.relative_to(local).as_posix()
            try:
                target.fs.put_file(str(path), target.path)
            except storage_errors() as error:
                raise DataError(
                    f"{describe_error(target, error)}; everything written so far is kept in {local}, and a rerun "
                    "resumes from what the bucket holds"
                ) from None
            return


def publish_tree(folder: str | Path) -> None:
    """Upload every file under `folder` (a mirror) that changed since its last upload, and delete from the bucket
    the files uploaded before that are gone here (a checkpoint a newer one replaced); nothing for a local folder."""
    folder = Path(folder).absolute()
    if not any(folder.is_relative_to(local) for local in _MIRRORS):
        return
    present = set()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        stat = path.stat()
        present.add(path)
        if _UPLOADED.get(path) != (stat.st_size, stat.st_mtime_ns):
            publish(path)
            _UPLOADED[path] = (stat.st_size, stat.st_mtime_ns)
    for path in [p for p in _UPLOADED if p.is_relative_to(folder) and p not in present]:
        for local, remote in _MIRRORS.items():
            if path.is_relative_to(local):
                target = remote / path.relative_to(local).as_posix()
                try:
                    target.fs.rm_file(target.path)
                except FileNotFoundError:
                    pass
        del _UPLOADED[path]


def read_range(path: Any, start: int, length: int) -> bytes:
    """Up to `length` bytes at offset `start` of a local file (a positioned read) or a bucket object (one ranged
    request)."""
    if isinstance(path, Path):
        with open(path, "rb", buffering=0) as handle:
            return os.pread(handle.fileno(), length, start)
    try:
        return path.fs.cat_file(path.path, start=start, end=start + length)
    except storage_errors() as error:
        raise describe_error(path, error) from None
