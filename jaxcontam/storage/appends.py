"""Append-only JSON-lines files that a kill can leave with a torn last line: the torn tail is cut off before the
next line is appended, so a resumed run never writes a record onto half of another (which the run after it could
not read), however many times it is killed."""

from __future__ import annotations

import os
from pathlib import Path

TAIL_BLOCK = 1 << 16


def complete_length(handle) -> int:
    """The length of the file open in `handle` (binary) up to and including its last line break: what is left
    after cutting a torn last line. Read backwards a block at a time."""
    end = handle.seek(0, os.SEEK_END)
    position = end
    while position > 0:
        start = max(0, position - TAIL_BLOCK)
        handle.seek(start)
        block = handle.read(position - start)
        found = block.rfind(b"\n")
        if found >= 0:
            return start + found + 1
        position = start
    return 0


def append_line(path: Path, line: str, sync: bool = False) -> None:
    """Append `line` (one JSON record, without its line break) to `path`, first cutting off a torn last line a
    killed writer left; `sync`: fsync before returning."""
    with open(path, "a+b") as handle:
        end = handle.seek(0, os.SEEK_END)
        if end:
            handle.seek(end - 1)
            if handle.read(1) != b"\n":
                handle.truncate(complete_length(handle))
        handle.write(line.encode("utf-8") + b"\n")
        handle.flush()
        if sync:
            os.fsync(handle.fileno())


def complete_lines(text: str) -> list[str]:
    """The lines of a JSON-lines file's text, less a torn last line (one without its line break) and blank lines."""
    lines = text.split("\n")
    lines.pop()  # "" after the last line break, or a torn line
    return [line for line in lines if line.strip()]
