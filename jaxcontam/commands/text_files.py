"""The text files `jaxcontam score` and `jaxcontam generate` read (`--data`, `--field`), the file they write
(`--out`), and their texts named in a NaN or inf error (`naming_texts`)."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

from jaxcontam import storage
from jaxcontam.errors import DataError


def parse_fields(pairs, allowed) -> dict[str, str]:
    """`("text=question", ...)` -> {"text": "question"}; names outside `allowed` are an error."""
    mapping = {name: name for name in allowed}
    for pair in pairs:
        name, sep, column = pair.partition("=")
        if not sep or name not in allowed or not column:
            raise DataError(
                f"--field {pair!r}: expected NAME=COLUMN with NAME one of {', '.join(allowed)}, "
                "e.g. --field text=question"
            )
        mapping[name] = column
    return mapping


def read_texts(path: str, fields: dict[str, str]) -> list[tuple[str, str]]:
    """(id, text) pairs from .txt (one text per non-empty line) or .jsonl/.json/.csv/.parquet rows.

    The id is the row's `fields["id"]` column when present, else its line/row number.
    """
    from jaxcontam.data.records import (
        base_suffix,
        position_name,
        read_rows,
        require_file,
        text_field,
    )

    file = require_file(path, "data file")  # local, or a URL
    if base_suffix(file) == ".txt":
        from jaxcontam.data.records import read_lines

        return [(str(n), line.rstrip("\r\n")) for n, line in read_lines(file) if line.strip()]
    texts = []
    for position, row in read_rows(file):
        where = position_name(file, position)
        ident = row.get(fields["id"])
        texts.append((str(position) if ident is None else str(ident), text_field(row, fields["text"], where)))
    if not texts:
        raise DataError(f"{file} has no rows: nothing to score")
    return texts


# the key after "id" in each line a command writes: how an earlier output of the same command is told apart
SECOND_KEY = {"score": "num_tokens", "generate": "prompt"}
OWN_LINE_HEAD = 1 << 16


def output_file(out: str, command: str) -> Path:
    """The local output path (for a bucket URL, in a mirror folder; `storage.publish` uploads it), its folder
    created now: a missing folder must not fail the run after the model work. An existing file that is not an
    earlier output of `command` (`jaxcontam score` or `generate`) is refused: it would be overwritten."""
    _refuse_other_file(out, command)
    path = storage.output_file(out)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise DataError(f"--out {out}: cannot create its folder ({error.strerror}); choose a writable path") from None
    return path


def _refuse_other_file(out: str, command: str) -> None:
    path = storage.as_path(out)
    try:
        if not path.is_file():
            return
        with path.open("rb") as handle:
            head = handle.read(OWN_LINE_HEAD)
    except storage.storage_errors() as error:
        raise storage.describe_error(out, error) from None
    own = re.compile(rb'\{"id": "(?:[^"\\]|\\.)*", "' + SECOND_KEY[command].encode() + rb'": ')
    if head and own.match(head) is None:
        raise DataError(
            f"--out {out}: the file exists and is not the output of an earlier jaxcontam {command} (JSON lines "
            f'beginning with "id", "{SECOND_KEY[command]}"), so it would be overwritten: give a new file name'
        )


@contextlib.contextmanager
def naming_texts(names: list[str], where: str, model_path: str, model):
    """A NaN or inf log-prob (scored or generated) stops the command, naming `where`, the texts it came from
    (`names`: one per sequence given to the engine) and the model's broken tensors, or saying that its weights are
    finite (`engine.finite.weights_cause`); nothing is written."""
    from jaxcontam.engine.finite import NonFiniteScoresError, weights_cause  # imports jax: not for `--help`

    try:
        yield
    except NonFiniteScoresError as error:
        named = error.naming([names[i] for i in error.bad], where)
        raise named.explained(weights_cause([(model_path, model.params)])) from None
