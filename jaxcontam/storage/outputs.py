"""Output folders: claimed by the command that writes them, and in a bucket written through a local mirror.

`claim_output` writes a marker (`OUT/.jaxcontam-out.json`: the command and the format version) at the start of a
run, and refuses a non-empty folder that holds no marker of the same command, so `--out` pointed at a user's own
folder (or another command's) overwrites nothing; a rerun of the same command finds its marker and resumes (a folder
of the same command from before markers, known by its own run record, is marked and resumes too).
A bucket's mirror is filled first with what the bucket folder holds (a rerun resumes from it on any machine), each
file uploaded whole as it is written (an object write is atomic)."""

from __future__ import annotations

import hashlib
import json
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


OUTPUT_MARKER = ".jaxcontam-out.json"
OUTPUT_FORMAT = 1  # of the marker and of what it claims: a newer jaxcontam that changes an output layout raises it


def check_output(out: str | Path, command: str) -> None:
    """Refuse the output folder `out` (local or a bucket URL) unless it is absent, empty, or marked as written by
    `jaxcontam <command>` (`claim_output` without the marking: for a command to say so before any work, and write
    nothing while its other inputs may still be refused)."""
    claim_output(out, command, mark=False)


def claim_output(out: str | Path, command: str, mark: bool = True) -> None:
    """Refuse the output folder `out` (local or a bucket URL) unless it is absent, empty, or marked as written by
    `jaxcontam <command>`; mark it so (process 0 of a multi-host run), before anything is written in it. A path that
    is a file is left to the command (it is no folder to claim). Process i > 0 of a multi-host run neither checks
    nor marks: process 0 writes the outputs and claims the folder for the group (its refusal stops every process),
    and another host's local folder of the same name holds only that host's scratch."""
    if _process_suffix():
        return
    root = as_path(str(out))
    marker = root / OUTPUT_MARKER
    try:
        if marker.is_file():
            _check_marker(out, marker, command)
            return
        if root.exists() and not root.is_dir():
            return
        if root.exists():
            other = next((p for p in root.iterdir() if p.name != OUTPUT_MARKER), None)
            if other is not None and not _earlier_run(root, command):
                text = json.dumps({"command": command, "format": OUTPUT_FORMAT})
                raise DataError(
                    f"--out {out}: the folder is not empty ({other.name}, ...) and no jaxcontam {command} run wrote "
                    f"it (it has no {OUTPUT_MARKER}), so its files would be overwritten: give an empty or new folder. "
                    f"If an earlier jaxcontam {command} (before output folders were marked) wrote it, mark it to "
                    f"resume: write {text} to {str(out).rstrip('/')}/{OUTPUT_MARKER}"
                )
        if not mark:
            return
        root.mkdir(parents=True, exist_ok=True)
        marker.write_text(json.dumps({"command": command, "format": OUTPUT_FORMAT}) + "\n")
    except storage_errors() as error:
        raise describe_error(out, error, "write") from None


LEGACY_RECORD_BYTES = 1 << 24
MARKER_BYTES = 1 << 12


def _json_keys(path) -> set[str]:
    """The top-level keys of a small JSON object file; empty when it is absent, large or not a JSON object."""
    try:
        if not path.is_file() or path.stat().st_size > LEGACY_RECORD_BYTES:
            return set()
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return set()
    return set(value) if isinstance(value, dict) else set()


def _earlier_run(root, command: str) -> bool:
    """Whether `root` holds the record a jaxcontam `command` from before output folders were marked wrote (its run
    settings or its summary), so that run still resumes: it is marked now."""
    if command == "decontaminate":
        return _json_keys(root / "run.json") >= {"index", "table", "run"}
    if command == "contaminate":
        return _json_keys(root / "settings.json") >= {"settings", "jaxcontam"}
    if command in ("audit", "pacost"):
        return _json_keys(root / "summary.json") >= {"schema_version", "jaxcontam_version", "runs"}
    if command == "ngram":
        counts = root / "counts"
        return counts.is_dir() and any(p.name.endswith(".npz") for p in counts.rglob("*"))
    return False


def _check_marker(out, marker, command: str) -> None:
    try:
        recorded = json.loads(marker.read_text()) if marker.stat().st_size <= MARKER_BYTES else None
    except (ValueError, UnicodeDecodeError):
        recorded = None
    if not isinstance(recorded, dict) or not isinstance(recorded.get("format"), int):
        raise DataError(f"{marker}: not a jaxcontam output marker; give an empty or new --out")
    if recorded.get("command") != command:
        raise DataError(
            f"--out {out}: the folder holds the outputs of jaxcontam {recorded.get('command')}, not of {command}; "
            "give each command its own output folder"
        )
    if recorded["format"] > OUTPUT_FORMAT:
        raise DataError(
            f"--out {out}: written by a newer jaxcontam (output format {recorded['format']}, this one reads "
            f"{OUTPUT_FORMAT}); upgrade jaxcontam, or give a new folder"
        )


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
