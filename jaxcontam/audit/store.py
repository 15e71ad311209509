# pyright: standard
"""Resumable results: records persisted per (model, benchmark, stage) in fixed chunks of items.

Each stage appends one JSON line per finished chunk of items (flushed and fsynced), in a file named by a hash
of everything that determines the results (model, benchmark, stage settings, chunk size). Each line also holds
a hash of its chunk's items (their whole content), so a rerun reuses a chunk only for the very items it was
computed on: the same benchmark read from another file, or edited in place, has its changed chunks recomputed
(a later line of a chunk replaces an earlier one). A rerun computes only the missing or changed chunks; chunk
boundaries never move, so every chunk is computed on the same batch shapes and the final outputs equal those
of an uninterrupted run. A line cut short by a kill is ignored (its chunk is redone); any other unreadable line
is an error naming the file. The next chunk's line is appended after cutting that torn tail off
(`storage.appends`), so a run killed any number of times still resumes.

Under `jax.distributed` process 0 alone reads and writes the file; the other processes get its finished chunks
from process 0 and keep the chunks they compute (the same records) in memory.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from jaxcontam.cluster import from_writer, is_writer
from jaxcontam.detect.stage import fingerprint
from jaxcontam.errors import JaxcontamError
from jaxcontam.storage import publish
from jaxcontam.storage.appends import append_line


class StageStore:
    """Finished chunks of one stage, on disk under `root`."""

    def __init__(self, root: Path, stage: str, key: dict):
        self.path = Path(root) / f"{stage}-{fingerprint({'stage': stage, **key})}.jsonl"
        self.chunks = self._parse(from_writer(self._text))

    def _text(self) -> str | None:
        return self.path.read_text(encoding="utf-8") if self.path.exists() else None

    def _parse(self, text: str | None) -> dict[int, tuple[str | None, list[dict]]]:
        if text is None:
            return {}
        chunks = {}
        lines = text.split("\n")  # the last piece: "" after the last line break, or a line a kill cut short
        for number, line in enumerate(lines[:-1], start=1):
            if not line:
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                raise JaxcontamError(
                    f"{self.path}, line {number}: not a JSON record; the resume state is "
                    "corrupted: delete this file to recompute its stage"
                ) from None
            chunks[int(entry["chunk"])] = (entry.get("items"), entry["records"])
        return chunks

    def finished(self, chunk: int, key: str) -> list[dict] | None:
        """The stored records of `chunk` if they were computed on the items hashed to `key` (`items_key`), else None."""
        stored = self.chunks.get(chunk)
        return stored[1] if stored is not None and stored[0] == key else None

    def append(self, chunk: int, key: str, records: list[dict]) -> None:
        if is_writer():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            append_line(self.path, json.dumps({"chunk": chunk, "items": key, "records": records}), sync=True)
            publish(self.path)
        self.chunks[chunk] = (key, records)


def items_key(items: Sequence) -> str:
    """A hash of a chunk's items, field by field for dataclasses (an item's id, text, answer, paraphrases, meta)."""
    return fingerprint({"items": [_fields(item) for item in items]})


def _fields(item):
    """A dataclass item as a dict of its fields (mappings as plain dicts, so they hash by content); else the item."""
    if not dataclasses.is_dataclass(item) or isinstance(item, type):
        return item
    values = {field.name: getattr(item, field.name) for field in dataclasses.fields(item)}
    return {name: dict(value) if isinstance(value, Mapping) else value for name, value in values.items()}


def run_chunked(
    store: StageStore,
    items: Sequence,
    chunk_size: int,
    compute: Callable[[Sequence], list[dict]],
    progress: Callable[[int, int, bool], None] | None = None,
) -> list[dict]:
    """Records of every item in order, computing only the chunks `store` does not hold for these very items.

    `progress(done, total, reused)` is called after each chunk; `reused` says it came from an earlier run.
    """
    starts = range(0, len(items), chunk_size)
    records = []
    for chunk, start in enumerate(starts):
        chunk_items = items[start : start + chunk_size]
        key = items_key(chunk_items)
        stored = store.finished(chunk, key)
        reused = stored is not None
        if stored is None:
            stored = compute(chunk_items)
            store.append(chunk, key, stored)
        records += stored
        if progress is not None:
            progress(chunk + 1, len(starts), reused)
    return records


def write_atomic(path: Path, write: Callable[[Path], None]) -> None:
    """Write through a temporary file and rename, so a kill never leaves a half-written output (then upload it
    whole when the folder mirrors a bucket)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    write(temporary)
    os.replace(temporary, path)
    publish(path)
