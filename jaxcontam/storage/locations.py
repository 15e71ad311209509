"""Local paths and URLs: which is which, a URL as a `upath.UPath` (the pathlib methods over its fsspec
filesystem), storage errors named with their fix, globs, folder listings that stay inside the folder, and one ranged
read."""

from __future__ import annotations

import functools
import os
import re
import warnings
from pathlib import Path
from typing import Any, Literal, Protocol

from jaxcontam.errors import DataError, JaxcontamWarning

GLOB_CHARACTERS = "*?["
# URL scheme -> (the fsspec package that serves it, the jaxcontam extra that installs it)
EXTRAS = {"gs": ("gcsfs", "gcs"), "gcs": ("gcsfs", "gcs"), "s3": ("s3fs", "s3"), "s3a": ("s3fs", "s3")}
_URL = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://")


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
        from botocore.exceptions import BotoCoreError  # pyright: ignore[reportMissingImports]

        found.append(BotoCoreError)
    except ImportError:
        pass
    try:
        from google.auth.exceptions import GoogleAuthError  # pyright: ignore[reportMissingImports]

        found.append(GoogleAuthError)
    except ImportError:
        pass
    return tuple(found)


def describe_error(path: Any, error: BaseException, action: str = "read") -> DataError:
    """A permanent storage error (missing bucket or object, refused permission, no credentials) while `action`
    ("read" or "write") was tried, with its fix."""
    text = f"{type(error).__name__}: {error}"
    if isinstance(error, PermissionError) or "403" in text or "AccessDenied" in text or "Forbidden" in text:
        fix = f"the credentials in use may not {action} it: grant {action} access, or use other credentials"
    elif "credential" in text.lower() or "Unable to locate" in text:
        fix = (
            "no credentials found: run `gcloud auth application-default login` (gs://) or set AWS_PROFILE / "
            "AWS_ACCESS_KEY_ID (s3://)"
        )
    elif isinstance(error, FileNotFoundError) or "NoSuchBucket" in text or "404" in text:
        fix = "no such bucket or object: check the URL"
    else:
        fix = "check the URL, the credentials and the network"
    return DataError(f"{path}: cannot be {'written' if action == 'write' else 'read'} ({text}); {fix}")


def has_glob(spec: str) -> bool:
    return any(character in spec for character in GLOB_CHARACTERS)


def glob_files(spec: str, follow_symlinks: bool = False) -> tuple[Any, list[Any]]:
    """The folder a glob URL or path starts from and the files it matches, in name order; a local match that is a
    link resolving outside that folder is left out (and reported) unless `follow_symlinks`."""
    parts = spec.split("/")
    fixed = next(i for i, part in enumerate(parts) if has_glob(part))
    root = as_path("/".join(parts[:fixed]) or ".")
    pattern = "/".join(parts[fixed:])
    try:
        matched = sorted((p for p in root.glob(pattern) if p.is_file()), key=str)
    except storage_errors() as error:
        raise describe_error(spec, error) from None
    if isinstance(root, Path) and not follow_symlinks:
        inside = root.resolve()
        outside = [p for p in matched if not p.resolve().is_relative_to(inside)]
        _report_links(spec, [str(p) for p in outside])
        matched = [p for p in matched if p not in outside]
    return root, matched


def _report_links(spec: str | Path, links: list[str]) -> None:
    if links:
        warnings.warn(
            f"corpus {spec}: left out {len(links)} symbolic link(s) that lead outside it (the first: {links[0]}); "
            "pass --follow-symlinks (the audit: [corpus] follow_symlinks = true) to read what they point at",
            JaxcontamWarning,
            stacklevel=4,
        )


def _folder_files(root: Path, follow_symlinks: bool) -> list[tuple[Path, str]]:
    """(path, label) of the files under a local folder, hidden ones left out; a symbolic link (to a file or a
    folder) that resolves outside `root` is left out and reported unless `follow_symlinks`; a folder reached twice
    (a link loop, two links to one folder) is listed once."""
    inside = root.resolve()
    files, outside, seen = [], [], set()
    for folder, folders, names in os.walk(root, followlinks=True):
        here = Path(folder)
        real = here.resolve()
        if real in seen:
            folders[:] = []
            continue
        seen.add(real)
        kept = []
        for name in sorted(folders):
            path = here / name
            if name.startswith("."):
                continue
            if path.is_symlink() and not follow_symlinks and not path.resolve().is_relative_to(inside):
                outside.append(path.relative_to(root).as_posix() + "/")
                continue
            kept.append(name)
        folders[:] = kept
        for name in names:
            path = here / name
            if name.startswith(".") or not path.is_file():
                continue
            label = path.relative_to(root).as_posix()
            if path.is_symlink() and not follow_symlinks and not path.resolve().is_relative_to(inside):
                outside.append(label)
                continue
            files.append((path, label))
    _report_links(root, sorted(outside))
    return files


def list_files(spec: str | Path, follow_symlinks: bool = False) -> tuple[Any, list[tuple[Any, str]]]:
    """The files of a corpus given as a file, a folder (recursively) or a glob, local or in a bucket: the folder they
    are under and each file with its label (its path under that folder; a file given alone: its name), in label
    order. Hidden files and folders (a name starting with ".") are left out of a folder's listing, and so are the
    symbolic links that lead outside the folder (reported in a warning, with their count and the first one) unless
    `follow_symlinks`: a corpus is what it was given. The one listing of every corpus reader (the audit, `ngram`,
    `decontaminate`)."""
    text = str(spec)
    try:
        if has_glob(text):
            root, matched = glob_files(text, follow_symlinks)
            return root, [(p, Path(str(p)).relative_to(Path(str(root))).as_posix()) for p in matched]
        root = as_path(spec)
        if not root.exists():
            raise DataError(
                f"corpus {spec} does not exist; check the URL (bucket, prefix) and the credentials, or the path"
            )
        if root.is_file():
            return root, [(root, root.name)]
        if isinstance(root, Path):
            return root, sorted(_folder_files(root, follow_symlinks), key=lambda entry: entry[1])
        files = []
        for path in root.rglob("*"):
            label = Path(str(path)).relative_to(Path(str(root))).as_posix()
            if not any(part.startswith(".") for part in label.split("/")) and path.is_file():
                files.append((path, label))
        return root, sorted(files, key=lambda entry: entry[1])
    except storage_errors() as error:
        raise describe_error(spec, error) from None


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
