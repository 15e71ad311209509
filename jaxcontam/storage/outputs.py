"""Output folders in a bucket, written through a local mirror: filled first with what the bucket folder holds (a
rerun resumes from it on any machine), each file uploaded whole as it is written (an object write is atomic)."""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jaxcontam.errors import DataError
from jaxcontam.storage.locations import as_path, describe_error, is_url, storage_errors

_MIRRORS: dict[Path, Any] = {}  # local mirror folder -> the bucket folder it stands for
_UPLOADED: dict[Path, tuple[int, int]] = {}  # file of a mirror -> (size, mtime) when it matched the bucket


def cache_root(environ: Mapping[str, str] = os.environ) -> Path:
    """jaxcontam's local cache: $JAXCONTAM_CACHE, else ~/.cache/jaxcontam."""
    return Path(environ.get("JAXCONTAM_CACHE") or Path.home() / ".cache" / "jaxcontam").expanduser()


def output_folder(out: str | Path, fill: bool = True) -> Path:
    """The local folder a command writes `out` in: `out` itself, or for a URL a mirror folder under the cache,
    filled first with what the bucket folder holds when `fill` (a rerun resumes from it), whose files `publish`
    uploads."""
    if not is_url(str(out)):
        return local_folder(Path(out))
    remote = as_path(str(out))
    local = cache_root() / "outputs" / (hashlib.sha256(str(out).encode()).hexdigest()[:16] + _process_suffix())
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
                    stat = target.stat()
                    _UPLOADED[target.absolute()] = (stat.st_size, stat.st_mtime_ns)  # the bucket holds it as is
    except storage_errors() as error:
        raise describe_error(out, error) from None
    _MIRRORS[local] = remote
    return local


def local_folder(out: Path) -> Path:
    """`out` when it is a folder or can become one: refused (naming it) when it, or the nearest part of it that
    exists, is a file; checked before any work, so a run does not end in NotADirectoryError after its model work."""
    existing = next((p for p in (out, *out.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        where = "is a file" if existing == out else f"lies under {existing}, which is a file"
        raise DataError(f"--out {out} {where}, not a folder: name a new or existing folder for the outputs")
    return out


def _process_suffix() -> str:
    """ "-p<i>" for process i > 0 of a `jax.distributed` group: processes sharing a machine (one per GPU) keep
    their mirrors apart. JAX is not imported for this: a command that writes outputs has imported it already."""
    jax = sys.modules.get("jax")
    index = jax.process_index() if jax is not None else 0
    return f"-p{index}" if index else ""


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
                refused = describe_error(target, error, "write")
                raise DataError(
                    f"{refused}; everything written so far is kept in {local}, and a rerun resumes from what the "
                    "bucket holds"
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
