"""Settings dataclasses read from TOML tables and from dotted command-line overrides, type-checked.

The fields of a settings dataclass are its TOML table's keys, its defaults the defaults; `table_values` refuses
an unknown key (listing the known ones) and a value of the wrong type (naming the key, the value and the type
its field takes). `--set section.key=value` overrides are applied to the loaded TOML before it is read, so a
command-line override goes through exactly the checks a TOML value does:

    raw = apply_overrides(tomllib.loads(text), ["pacost.k=0.3", "benchmark.limit=8"])

An override's value is read as a TOML value (0.3, true, "text", [1, 2]), and as plain text when it is not one
(`pacost.confidence=p_true`). A key into an array of tables (`benchmark.limit`) sets it in every entry.

A numeric field's range sits beside its definition (`ranged`: `limit: int | None = ranged(None, at_least=1)`), and
every entry point reads it there: `table_values` (a TOML file and `--set`), the settings' own `__post_init__`
(`check_ranges`: the named options, which replace fields of a built config, and the Python API) and the named
options' click types (`click_type`). A float field never takes NaN or inf.

Self-written rather than draccus or pydantic: the settings are plain frozen dataclasses whose own
`__post_init__` checks (allowed choices, ranges) already give jaxcontam's errors, and the layer needed on top
(unknown keys, types, dotted overrides) is this small module; a dependency would bring its own error texts and
conventions (draccus' `--pacost.k`, pydantic models) for no gain.

A config nests as its file does: `read_table` reads a table into a (nested) dataclass, a field whose type is a
dataclass being a sub-table and `tuple[Entry, ...]` an array of tables ([[model]]); `table_field` names a field's
TOML key when it differs (`models` is [[model]]), gives a field its own reader, lays a sub-dataclass's keys flat in
the parent table, or marks a field as not a key (derived by the caller). `resolve_paths` passes the values of path
fields (`path_field`) through a function first: a file's relative paths are read from its folder.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
import numbers
import tomllib
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from jaxcontam.errors import JaxcontamError


@dataclasses.dataclass(frozen=True)
class Range:
    """The numbers a field takes: `low` <= value (< when `low_open`), value <= `high` (< when `high_open`)."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def admits(self, value) -> bool:
        above = self.low is None or (value > self.low if self.low_open else value >= self.low)
        below = self.high is None or (value < self.high if self.high_open else value <= self.high)
        return above and below

    def describe(self) -> str:
        """'>= 1', '> 0', 'in (0, 1]', ... as an error message says it ('' without bounds)."""
        low, high = _number(self.low), _number(self.high)
        if self.low is not None and self.high is not None:
            left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
            return f" in {left}{low}, {high}{right}"
        if self.low is not None:
            return f" {'>' if self.low_open else '>='} {low}"
        if self.high is not None:
            return f" {'<' if self.high_open else '<='} {high}"
        return ""


def _number(value) -> str:
    return str(int(value)) if isinstance(value, (int, float)) and float(value).is_integer() else f"{value}"


def ranged(default, *, at_least=None, above=None, at_most=None, below=None):
    """A dataclass field with `default` whose numbers must lie in the given bounds (and be finite)."""
    low, high = (above if at_least is None else at_least), (below if at_most is None else at_most)
    bounds = Range(low, high, low_open=above is not None, high_open=below is not None)
    return dataclasses.field(default=default, metadata={"range": bounds})


def path_field(default: Any = None) -> Any:
    """A dataclass field holding a file's path (or paths): in a config file, a relative path is read from the file's
    folder."""
    return dataclasses.field(default=default, metadata={"path": True})


def table_field(
    default=dataclasses.MISSING,
    *,
    key: str | None = None,
    read: Callable[[Any, str], Any] | None = None,
    flat: bool = False,
    derived: bool = False,
    default_factory=dataclasses.MISSING,
) -> Any:
    """A dataclass field as its config table holds it: under TOML `key` (default: the field's name), read by
    `read(value, where)` instead of the type-checked default reader, a sub-dataclass whose keys lie `flat` in this
    table (its default is built from its type), or `derived` (not a key: the caller fills it in)."""
    metadata = {"key": key, "read": read, "flat": flat, "derived": derived}
    return dataclasses.field(default=default, default_factory=default_factory, metadata=metadata)


def path_fields(cls) -> frozenset[str]:
    """The fields of dataclass `cls` made by `path_field`."""
    return frozenset(f.name for f in dataclasses.fields(cls) if f.metadata.get("path"))


def field_range(cls, name: str) -> Range | None:
    """The range of field `name` of dataclass `cls` (None: not a ranged field)."""
    return next((f.metadata.get("range") for f in dataclasses.fields(cls) if f.name == name), None)


def _is_int_field(kind) -> bool:
    options = typing.get_args(kind) if typing.get_origin(kind) in (typing.Union, types.UnionType) else (kind,)
    return int in options and float not in options


def range_error(key: str, value, cls, where: str) -> str | None:
    """Why `value` is not a number field `key` of `cls` takes (its type's integrality, finiteness, its range), or
    None when it is, or when the field is not a number."""
    kind = _field_types(cls).get(key)
    bounds = field_range(cls, key)
    options = set(typing.get_args(kind) if typing.get_origin(kind) in (typing.Union, types.UnionType) else (kind,))
    numeric = bool(options - {type(None)}) and options - {type(None)} <= {int, float}
    if not numeric or value is None:
        return None
    wanted = "a whole number" if _is_int_field(kind) else "a finite number"
    shown = bounds.describe() if bounds is not None else ""
    is_number = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if not is_number or not math.isfinite(value) or (_is_int_field(kind) and not float(value).is_integer()):
        return f"{where}: {key} = {value!r} is not {wanted}; {key} takes {wanted}{shown}"
    if bounds is not None and not bounds.admits(value):
        return f"{where}: {key} = {value!r} is out of range; {key} takes {wanted}{shown}"
    return None


def check_ranges(settings, where: str) -> None:
    """Refuse a settings dataclass whose numeric fields are out of their range, not finite or not whole numbers
    where the field is an int: called by its `__post_init__`, so every way of setting a field is checked."""
    for f in dataclasses.fields(settings):
        if f.init:
            error = range_error(f.name, getattr(settings, f.name), type(settings), where)
            if error:
                raise JaxcontamError(error)


def click_type(cls, name: str):
    """A click parameter type for field `name` of `cls`, bounded as the field is (`--limit` as `limit`)."""
    import click

    bounds = field_range(cls, name) or Range()
    if _is_int_field(_field_types(cls)[name]):
        return click.IntRange(
            None if bounds.low is None else int(bounds.low) + int(bounds.low_open),
            None if bounds.high is None else int(bounds.high) - int(bounds.high_open),
        )
    return click.FloatRange(bounds.low, bounds.high, min_open=bounds.low_open, max_open=bounds.high_open)


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
    check_keys(table, [name for cls in classes for name in _field_types(cls)] + list(extra), where)
    values = {}
    for key, value in table.items():
        owner = next((cls for cls in classes if key in _field_types(cls)), None)
        values[key] = value if owner is None else _checked(owner, key, key, value, where)
    return values


def _checked(cls, name: str, key: str, value, where: str):
    """`value` of field `name` (TOML `key`) of `cls` checked against its type and range; a list as a tuple where the
    field is a tuple."""
    kind = _field_types(cls)[name]
    allowed = _allowed(kind)
    if allowed and not _matches(value, kind):
        raise JaxcontamError(
            f"{where}: {key} = {value!r} is not allowed; {key} takes one of " + ", ".join(repr(a) for a in allowed)
        )
    if not _matches(value, kind):
        raise JaxcontamError(
            f"{where}: {key} = {value!r} is {type(value).__name__}, but {key} takes "
            f"{_type_name(kind)}; e.g. {key} = {_example(kind)}"
        )
    error = range_error(name, value, cls, where)
    if error:
        raise JaxcontamError(error)
    return tuple(value) if typing.get_origin(kind) is tuple and isinstance(value, list) else value


def _sub_dataclass(kind) -> tuple[type | None, bool]:
    """(the dataclass a field of type `kind` holds, whether as an array of tables): `Sub`, `Sub | None` and
    `tuple[Sub, ...]` hold one; other types (None, False)."""
    options = typing.get_args(kind) if typing.get_origin(kind) in (typing.Union, types.UnionType) else (kind,)
    for option in options:
        if isinstance(option, type) and dataclasses.is_dataclass(option):
            return option, False
        if typing.get_origin(option) is tuple:
            element = typing.get_args(option)[0]
            if isinstance(element, type) and dataclasses.is_dataclass(element):
                return element, True
    return None, False


@functools.cache
def table_keys(cls) -> dict[str, tuple[type, dataclasses.Field]]:
    """The TOML keys of dataclass `cls`'s table -> (the dataclass holding the field, the field): flat sub-dataclasses'
    keys included, derived fields left out."""
    keys = {}
    for f in dataclasses.fields(cls):
        if not f.init or f.metadata.get("derived"):
            continue
        if f.metadata.get("flat"):
            keys |= table_keys(_field_types(cls)[f.name])
        else:
            keys[f.metadata.get("key") or f.name] = (cls, f)
    return keys


def check_keys(table, known: Iterable[str], where: str) -> None:
    """Refuse a `table` that is not a table or holds a key not in `known` (naming it and the known ones)."""
    if not isinstance(table, dict):
        raise JaxcontamError(f"{where}: expected a table, got {type(table).__name__} {table!r}")
    unknown = sorted(set(table) - set(known))
    if unknown:
        raise JaxcontamError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(set(known)))}")


def _inner(where: str, key: str) -> str:
    """Where a sub-table `key` of the table at `where` is: "audit.toml [pacost]", then "audit.toml [pacost] gates"."""
    return f"{where} {key}" if "[" in where else f"{where} [{key}]"


def read_fields(cls, table: Mapping, where: str, extra: Iterable[str] = ()) -> dict[str, Any]:
    """The fields of dataclass `cls` that `table` sets (keys, types, ranges checked; sub-tables read as their
    dataclasses, flat ones always): the keyword arguments of `cls`, derived fields aside. `extra` keys are allowed
    and left to the caller."""
    check_keys(table, [*table_keys(cls), *extra], where)
    return _fields(cls, table, where)


def _fields(cls, table: Mapping, where: str) -> dict[str, Any]:
    values = {}
    for f in dataclasses.fields(cls):
        if not f.init or f.metadata.get("derived"):
            continue
        kind: Any = _field_types(cls)[f.name]
        if f.metadata.get("flat"):
            values[f.name] = kind(**_fields(kind, table, where))
            continue
        key = f.metadata.get("key") or f.name
        if key not in table:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise JaxcontamError(f"{where}: missing {key!r}")
            continue
        values[f.name] = _value(cls, f, key, table[key], where)
    return values


def _value(cls, f: dataclasses.Field, key: str, value, where: str):
    reader = f.metadata.get("read")
    if reader is not None:
        return reader(value, _inner(where, key))
    sub, entries = _sub_dataclass(_field_types(cls)[f.name])
    if sub is not None and entries:
        if not isinstance(value, list) or not all(isinstance(entry, dict) for entry in value):
            raise JaxcontamError(f"{where}: {key} must be written as [[{key}]] tables")
        return tuple(read_table(sub, entry, f"{where} [[{key}]] #{n}") for n, entry in enumerate(value, start=1))
    if sub is not None and isinstance(value, dict):
        return read_table(sub, value, _inner(where, key))
    return _checked(cls, f.name, key, value, where)


def read_table(cls, table: Mapping, where: str):
    """Dataclass `cls` from its config table (`read_fields`): unknown keys, types and ranges refused, naming them."""
    return cls(**read_fields(cls, table, where))


def resolve_paths(cls, table, resolve: Callable[[str], str]):
    """A copy of `table` with the values of `cls`'s path fields, in sub-tables and arrays of tables too, passed
    through `resolve`; values of the wrong shape are left for the reader to refuse."""
    if not isinstance(table, dict):
        return table
    resolved = dict(table)
    for key, (owner, f) in table_keys(cls).items():
        if key not in resolved:
            continue
        value = resolved[key]
        sub, entries = _sub_dataclass(_field_types(owner)[f.name])
        if f.metadata.get("path"):
            one = lambda v: resolve(v) if isinstance(v, str) else v  # noqa: E731
            resolved[key] = [one(v) for v in value] if isinstance(value, list) else one(value)
        elif sub is not None and entries and isinstance(value, list):
            resolved[key] = [resolve_paths(sub, entry, resolve) for entry in value]
        elif sub is not None:
            resolved[key] = resolve_paths(sub, value, resolve)
    return resolved


def table_of(settings) -> dict:
    """The config table of a settings dataclass, the inverse of `read_table`: the keys whose values differ from
    their defaults (required ones always), sub-tables as tables (left out when empty), flat ones laid in."""
    table = {}
    for f in dataclasses.fields(settings):
        if not f.init or f.metadata.get("derived"):
            continue
        value = getattr(settings, f.name)
        if f.metadata.get("flat"):
            table |= table_of(value)
            continue
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        if value == default:
            continue
        if dataclasses.is_dataclass(value):
            value = table_of(value)
        elif isinstance(value, tuple) and value and all(dataclasses.is_dataclass(v) for v in value):
            value = [table_of(v) for v in value]
        table[f.metadata.get("key") or f.name] = value
    return table


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
    return apply_settings(raw, [(f"--set {text!r}", *parse_override(text)) for text in overrides])


def apply_settings(raw: dict, settings: Iterable[tuple[str, tuple[str, ...], object]]) -> dict:
    """A copy of the TOML document `raw` with each (what sets it, dotted key, value) applied in order: `--set`
    overrides, and the named command-line options that alias a key."""
    raw = copy.deepcopy(raw)
    for text, path, value in settings:
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
                    raise JaxcontamError(f"{text}: {where} is a value ({child!r}), not a table")
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
