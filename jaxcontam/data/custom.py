"""Benchmarks from any local JSONL/JSON/CSV/Parquet file through a field mapping.

`fields` maps item fields to the file's columns: `question`, `answer`, `choices`, `context`, `id`.
`choices` names one column holding a list, or several comma-separated columns holding one
choice each (`choices=opa,opb,opc`). A multiple-choice answer is read as a 0-based index, else a letter
(A, B, ...), else the text of a choice (digit strings are indices).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from jaxcontam.data.adapters import make_item
from jaxcontam.data.item import Item
from jaxcontam.data.records import field, position_name, read_rows, require_file, text_field
from jaxcontam.errors import DataError

FIELD_KEYS = ("question", "answer", "choices", "context", "id")


def parse_field_mapping(pairs: Mapping[str, str] | None) -> dict[str, str]:
    """Validated mapping item field -> column; unknown item fields are refused."""
    mapping = dict(pairs or {})
    unknown = sorted(set(mapping) - set(FIELD_KEYS))
    if unknown:
        raise DataError(f"unknown field mapping key(s) {', '.join(unknown)}; expected some of {', '.join(FIELD_KEYS)}")
    not_text = sorted(key for key, column in mapping.items() if not isinstance(column, str) or not column.strip())
    if not_text:
        raise DataError(
            f'field mapping {", ".join(not_text)}: give each a column name (text), e.g. question = "prompt"'
        )
    return mapping


def _choices(row: dict, spec: str | None, where: str) -> tuple[str, ...] | None:
    if spec is None:
        value = row.get("choices")
        return None if value is None else _as_choice_list(value, "choices", where)
    columns = [c.strip() for c in spec.split(",") if c.strip()]
    if len(columns) == 1:
        return _as_choice_list(field(row, columns[0], where, "a list of choices"), columns[0], where)
    return tuple(str(field(row, column, where, "a choice")) for column in columns)


def _as_choice_list(value: Any, column: str, where: str) -> tuple[str, ...]:
    if isinstance(value, dict) and "text" in value:  # HF {label, text} layout
        value = value["text"]
    if not isinstance(value, (list, tuple)) or not value:
        raise DataError(f"{where}: field {column!r} must be a non-empty list of choices, got {value!r}")
    return tuple(str(v) for v in value)


def _choice_answer(value: Any, choices: tuple[str, ...], column: str, where: str) -> int:
    if isinstance(value, bool):
        raise DataError(f"{where}: field {column!r} must be a choice index, letter or choice text, got {value!r}")
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if text.lstrip("-").isdigit():
        return int(text)
    if len(text) == 1 and text.isalpha() and text.isupper():
        return ord(text) - ord("A")
    if text in choices:
        return choices.index(text)
    raise DataError(
        f"{where}: field {column!r} = {value!r} is neither a choice index, a letter, "
        f"nor one of the choices {list(choices)}"
    )


def read_mapped(path: Path, name: str, split: str, mapping: Mapping[str, str]) -> Iterator[tuple[str, Item]]:
    """(where, item) for each row of a table file read through `mapping`."""
    require_file(path, "benchmark file")
    question_key = mapping.get("question", "question")
    answer_key = mapping.get("answer", "answer")
    for index, (position, row) in enumerate(read_rows(path)):
        where = position_name(path, position)
        choices = _choices(row, mapping.get("choices"), where)
        raw_answer = field(row, answer_key, where, "the gold answer")
        meta = {}
        if choices is not None:
            answer: int | str = _choice_answer(raw_answer, choices, answer_key, where)
        elif isinstance(raw_answer, (list, tuple)):
            if not raw_answer:
                raise DataError(f"{where}: field {answer_key!r} is an empty list; expected at least one answer")
            answer, meta["answers"] = str(raw_answer[0]), [str(a) for a in raw_answer]
        else:
            answer = str(raw_answer)
        item_id = f"{name}/{split}/{field(row, mapping['id'], where)}" if "id" in mapping else f"{name}/{split}/{index}"
        context = text_field(row, mapping["context"], where) if "context" in mapping else None
        yield (
            where,
            make_item(
                where,
                id=item_id,
                benchmark=name,
                question=text_field(row, question_key, where),
                answer=answer,
                choices=choices,
                context=context,
                meta=meta,
            ),
        )
