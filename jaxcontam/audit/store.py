# pyright: standard
"""Resumable results: records persisted per (model, benchmark, stage) in fixed chunks of items.

Each stage appends one JSON line per finished chunk of items (flushed and fsynced), in a file named by a hash
of everything that determines the results (model, benchmark, stage settings, chunk size). A rerun reads the
finished chunks and computes only the missing ones; chunk boundaries never move, so every chunk is computed
on the same batch shapes and the final outputs equal those of an uninterrupted run. A line cut short by a
kill is ignored (its chunk is redone); any other unreadable line is an error naming the file.

Under `jax.distributed` process 0 alone reads and writes the file; the other processes get its finished chunks
from process 0 and keep the chunks they compute (the same records) in memory.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from jaxcontam.cluster import from_writer, is_writer
from jaxcontam.detect.stage import fingerprint
from jaxcontam.errors import JaxcontamError
from jaxcontam.storage import publish


class StageStore:
    """Finished chunks of one stage, on disk under `root`."""

    def __init__(self, root: Path, stage: str, key: dict):
        self.path = Path(root) / f"{stage}-{fingerprint({'stage': stage, **key})}.jsonl"
        self.chunks = self._parse(from_writer(self._text))

    def _text(self) -> str | None:
        return self.path.read_text(encoding="utf-8") if self.path.exists() else None

    def _parse(self, text: str | None) -> dict[int, list[dict]]:
        if text is None:
            return {}
        chunks = {}
        lines = text.split("\n")
        for number, line in enumerate(lines, start=1):
            if not line:
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                if number == len(lines):  # the last line, without its newline: a write cut short by a kill
                    break
                raise JaxcontamError(
                    f"{self.path}, line {number}: not a JSON record; the resume state is "
                    "corrupted: delete this file to recompute its stage"
                ) from None
            chunks[int(entry["chunk"])] = entry["records"]
        return chunks

    def append(self, chunk: int, records: list[dict]) -> None:
        if is_writer():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps({"chunk": chunk, "records": records}) + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            publish(self.path)
        self.chunks[chunk] = records


def run_chunked(
    store: StageStore,
    items: Sequence,
    chunk_size: int,
    compute: Callable[[Sequence], list[dict]],
    progress: Callable[[int, int, bool], None] | None = None,
) -> list[dict]:
    """Records of every item in order, computing only the chunks `store` does not hold yet.

    `progress(done, total, reused)` is called after each chunk; `reused` says it came from an earlier run.
    """
    starts = range(0, len(items), chunk_size)
    for chunk, start in enumerate(starts):
        reused = chunk in store.chunks
        if not reused:
            store.append(chunk, compute(items[start : start + chunk_size]))
        if progress is not None:
            progress(chunk + 1, len(starts), reused)
    return [record for chunk in range(len(starts)) for record in store.chunks[chunk]]


def write_atomic(path: Path, write: Callable[[Path], None]) -> None:
    """Write through a temporary file and rename, so a kill never leaves a half-written output (then upload it
    whole when the folder mirrors a bucket)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    write(temporary)
    os.replace(temporary, path)
    publish(path)
