"""Settings dataclasses read from TOML tables and from dotted command-line overrides, type-checked.

The fields of a settings dataclass are its TOML table's keys, its defaults the defaults; `table_values` refuses
an unknown key (listing the known ones) and a value of the wrong type (naming the key, the value and the type
its field takes). `--set section.key=value` overrides are applied to the loaded TOML before it is read, so a
command-line override goes through exactly the checks a TOML value does:

    raw = apply_overrides(tomllib.loads(text), ["pacost.k=0.3", "benchmark.limit=8"])

An override's value is read as a TOML value (0.3, true, "text", [1, 2]), and as plain text when it is not one
(`pacost.confidence=p_true`). A key into an array of tables (`benchmark.limit`) sets it in every entry.

Self-written rather than draccus or pydantic: the settings are plain frozen dataclasses whose own
`__post_init__` checks (allowed choices, ranges) already give jaxcontam's errors, and the layer needed on top
(unknown keys, types, dotted overrides) is this small module; a dependency would bring its own error texts and
conventions (draccus' `--pacost.k`, pydantic models) for no gain.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import tomllib
import types
import typing
from collections.abc import Iterable, Sequence

from jaxcontam.errors import JaxcontamError


@functools.cache
def _field_types(cls) -> dict[str, object]:
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls) if f.init}


def _type_name(kind) -> str:
    if kind is type(None):
        return "none"
    return getattr(kind, "__name__", None) or str(kind).replace("typing.", "")


def _matches(value, kind) -> bool:
    """Whether a TOML value can stand for a field of type `kind` (int for float, a list for a tuple, one of a
    `Literal`'s values)."""
    origin = typing.get_origin(kind)
    if origin is typing.Literal:
        return value in typing.get_args(kind) and all(type(value) is type(a) for a in typing.get_args(kind))
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, option) for option in typing.get_args(kind))
    if kind is typing.Any or kind is object:
        return True
    if kind is type(None):
        return value is None
    if kind is bool:
        return isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is str:
        return isinstance(value, str)
    if origin in (tuple, list, Sequence):
        element = (typing.get_args(kind) or (typing.Any,))[0]
        return isinstance(value, (list, tuple)) and all(_matches(v, element) for v in value)
    if origin is dict or kind is dict:
        return isinstance(value, dict)
    return isinstance(value, kind) if isinstance(kind, type) else True


def table_values(table: dict, classes: Sequence[type], where: str, extra: Iterable[str] = ()) -> dict:
    """`table` checked against the fields of `classes` (plus `extra` keys, checked by the caller): unknown keys
    and values of the wrong type are errors; lists become tuples where the field is a tuple."""
    if not isinstance(table, dict):
        raise JaxcontamError(f"{where}: expected a table, got {type(table).__name__} {table!r}")
    types_ = {name: kind for cls in classes for name, kind in _field_types(cls).items()}
    unknown = sorted(set(table) - set(types_) - set(extra))
    if unknown:
        raise JaxcontamError(
            f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(set(types_) | set(extra)))}"
        )
    values = {}
    for key, value in table.items():
        kind = types_.get(key)
        allowed = _allowed(kind)
        if allowed and not _matches(value, kind):
            raise JaxcontamError(
                f"{where}: {key} = {value!r} is not allowed; {key} takes one of " + ", ".join(repr(a) for a in allowed)
            )
        if kind is not None and not _matches(value, kind):
            raise JaxcontamError(
                f"{where}: {key} = {value!r} is {type(value).__name__}, but {key} takes "
                f"{_type_name(kind)}; e.g. {key} = {_example(kind)}"
            )
        is_tuple = kind is not None and typing.get_origin(kind) is tuple
        values[key] = tuple(value) if is_tuple and isinstance(value, list) else value
    return values


def _allowed(kind) -> tuple:
    """The values a `Literal` field (or an optional one) takes; () for any other type."""
    if typing.get_origin(kind) is typing.Literal:
        return typing.get_args(kind)
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        return tuple(value for option in typing.get_args(kind) for value in _allowed(option))
    return ()


def _example(kind) -> str:
    options = [k for k in typing.get_args(kind) if k is not type(None)] or [kind]
    kind = options[0]
    return {int: "2", float: "0.3", bool: "true", str: '"text"'}.get(kind, "[...]")


def parse_override(text: str) -> tuple[tuple[str, ...], object]:
    """ "section.key=value" as (("section", "key"), value), the value read as TOML or else as plain text."""
    key, sep, raw = text.partition("=")
    path = tuple(part.strip() for part in key.split("."))
    if not sep or not all(path):
        raise JaxcontamError(
            f"--set {text!r}: write KEY=VALUE with a dotted key, e.g. --set pacost.k=0.3 or --set alpha=0.01"
        )
    try:
        value = tomllib.loads(f"value = {raw.strip()}")["value"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    return path, value


def apply_overrides(raw: dict, overrides: Iterable[str]) -> dict:
    """A copy of the TOML document `raw` with every `--set` override applied, in order."""
    raw = copy.deepcopy(raw)
    for text in overrides:
        path, value = parse_override(text)
        nodes = [raw]
        for depth, part in enumerate(path[:-1]):
            where = ".".join(path[: depth + 1])
            children = []
            for node in nodes:
                child = node.setdefault(part, {})
                if isinstance(child, list) and all(isinstance(entry, dict) for entry in child):
                    children += child  # an array of tables: set the key in every entry
                elif isinstance(child, dict):
                    children.append(child)
                else:
                    raise JaxcontamError(f"--set {text!r}: {where} is a value ({child!r}), not a table")
            nodes = children
        for node in nodes:
            node[path[-1]] = value
    return raw


def non_default_values(settings) -> dict:
    """The fields of a settings dataclass that differ from their defaults: what a config table set (summary.json's
    record of it, and resume keys, stay those of the table as written)."""
    return {
        f.name: getattr(settings, f.name)
        for f in dataclasses.fields(settings)
        if f.init and getattr(settings, f.name) != f.default
    }
