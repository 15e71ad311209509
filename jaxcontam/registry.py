"""`Registry[T]`: the one shape of everything that plugs into jaxcontam (detectors, model families, benchmarks,
PaCoST confidences), after lm-evaluation-harness's `lm_eval/api/registry.py`.

An entry is registered under its name (and aliases) in one of three ways: the object itself (`register(obj)`, or
`@register` / `@register(name=...)` as a decorator); lazily as "module:object" (`lazy(name, "pkg.mod:OBJ")`, imported
on first use, so a registry names its built-ins without importing them); or, for an installed package, an entry
point of the registry's group (`[project.entry-points."jaxcontam.detectors"] word_order = "word_order:STAGE"`),
found on first lookup or listing and imported when first used. Names keep registration order (built-ins first,
then entry points by name). An unknown name is a `JaxcontamError` listing the available ones; a resolved entry is
checked to be of the registry's type and to carry the name it was registered under.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Generic, TypeVar, overload

from jaxcontam.errors import JaxcontamError

T = TypeVar("T")


class _Lazy:
    """A placeholder: "module:object", or an installed package's entry point, imported on first use."""

    def __init__(self, target: str | importlib.metadata.EntryPoint):
        self.target = target

    @property
    def label(self) -> str:
        target = self.target
        return target if isinstance(target, str) else f"entry point {target.name} = {target.value!r} ({target.group})"

    def load(self) -> object:
        target = self.target
        if not isinstance(target, str):
            return target.load()
        module, _, attribute = target.partition(":")
        if not module or not attribute:
            raise JaxcontamError(f"lazy entry {target!r} is not 'module:object': write it as 'package.module:NAME'")
        return getattr(importlib.import_module(module), attribute)


class Registry(Generic[T]):
    """Named objects of one type, looked up by name or alias.

    kind: what an entry is, for messages ("detector"); of: the entries' type (checked when an entry resolves);
    name_of: the name an entry carries (`stage.name`), checked against the name it is registered under and used by
    `register(obj)`; aliases_of: the aliases an entry brings itself (a benchmark's hub ids), added when it is
    registered or resolves; group: the entry-point group installed packages register under; error: the error type of
    a failed lookup. An alias two entries claim names neither (`unknown` says which), unless `alias` settles it.
    """

    def __init__(
        self,
        kind: str,
        of: type[T],
        *,
        name_of: Callable[[T], str] | None = None,
        aliases_of: Callable[[T], Iterable[str]] | None = None,
        group: str | None = None,
        error: type[JaxcontamError] = JaxcontamError,
    ):
        self.kind, self.of, self.group, self.error = kind, of, group, error
        self._name_of, self._aliases_of = name_of, aliases_of
        self._entries: dict[str, T | _Lazy] = {}
        self._aliases: dict[str, str] = {}  # alias -> name
        self._ambiguous: dict[str, list[str]] = {}  # alias -> the names that claim it (it resolves to none of them)
        self._protected: frozenset[str] = frozenset()
        self._entry_points_read = group is None
        self._resolving: set[str] = set()

    # registration

    @overload
    def register(self, item: T, /, *, name: str | None = None, aliases: Sequence[str] = ()) -> T: ...

    @overload
    def register(
        self, item: None = None, /, *, name: str | None = None, aliases: Sequence[str] = ()
    ) -> Callable[[T], T]: ...

    def register(
        self, item: T | None = None, /, *, name: str | None = None, aliases: Sequence[str] = ()
    ) -> T | Callable[[T], T]:
        """Register `item` under `name` (default: the name it carries) and `aliases`; returns it. Without `item`, a
        decorator that does the same. A taken name is refused."""

        def store(obj: T) -> T:
            named = self._named(obj, name)
            own = () if self._aliases_of is None else tuple(self._aliases_of(obj))
            self._store(named, self._checked(obj, named), (*own, *aliases))
            return obj

        return store if item is None else store(item)

    def lazy(self, name: str, target: str, *, aliases: Sequence[str] = ()) -> None:
        """Register "module:object" under `name`, imported when first looked up."""
        self._store(name, _Lazy(target), aliases)

    def alias(self, alias: str, name: str) -> None:
        """Make `alias` stand for entry `name`, whoever else claimed it."""
        self._ambiguous.pop(alias, None)
        self._aliases[alias] = name

    def unregister(self, name: str) -> None:
        """Remove an entry (a test's toy, say); a protected (built-in) entry is refused."""
        if name in self._protected:
            raise JaxcontamError(f"{name!r} is a built-in {self.kind} and cannot be removed")
        self._entries.pop(name, None)
        for alias in [alias for alias, owner in self._aliases.items() if owner == name]:
            del self._aliases[alias]
        for alias, owners in list(self._ambiguous.items()):  # an alias it shared with one other goes back to it
            if name in owners:
                owners.remove(name)
                if len(owners) == 1:
                    del self._ambiguous[alias]
                    self._aliases[alias] = owners[0]

    def protect(self) -> None:
        """Mark every entry registered so far as built-in (`unregister` refuses them)."""
        self._protected = frozenset(self._entries)

    @property
    def protected(self) -> tuple[str, ...]:
        """The built-in entries' names, in registration order."""
        return tuple(name for name in self._entries if name in self._protected)

    # lookup

    def names(self) -> tuple[str, ...]:
        """Every entry's name, in registration order (installed packages' entry points included)."""
        self._read_entry_points()
        return tuple(self._entries)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.canonical(name) is not None

    def canonical(self, name: str) -> str | None:
        """The entry name `name` (a name or an alias) stands for, or None."""
        self._read_entry_points()
        if name in self._entries:
            return name
        if name not in self._aliases and name not in self._ambiguous and self._aliases_of is not None:
            self.values()  # an entry not imported yet may bring `name` as its alias
        return self._aliases.get(name)

    def get(self, name: str) -> T | None:
        """The entry `name` (or alias) stands for, or None."""
        found = self.canonical(name)
        return None if found is None else self._resolve(found)

    def __getitem__(self, name: str) -> T:
        """The entry `name` (or alias) stands for; unknown: an error listing the available names."""
        found = self.get(name)
        if found is None:
            raise self.error(self.unknown(name))
        return found

    def unknown(self, name: str) -> str:
        """The message for an unknown `name`: the ambiguity, or the available names."""
        if name in self._ambiguous:
            return f"{self.kind} {name!r} is ambiguous: it names {', '.join(self._ambiguous[name])}; use one of those"
        return f"unknown {self.kind} {name!r}; available: {', '.join(self.names())}"

    def values(self) -> list[T]:
        """Every entry, resolved, in registration order."""
        return [self._resolve(name) for name in self.names()]

    def items(self) -> list[tuple[str, T]]:
        """(name, entry) of every entry, resolved, in registration order."""
        return [(name, self._resolve(name)) for name in self.names()]

    # internals

    def _named(self, obj: T, name: str | None) -> str:
        if name is not None:
            return name
        if self._name_of is not None:
            return self._name_of(obj)
        given = getattr(obj, "__name__", None)
        if not isinstance(given, str):
            raise JaxcontamError(f"register a {self.kind} with a name: {obj!r} carries none (name=...)")
        return given

    def _checked(self, obj: object, name: str | None) -> T:
        if not isinstance(obj, self.of):
            raise JaxcontamError(f"{self.kind} {name or obj!r} is a {type(obj).__name__}, not a {self.of.__name__}")
        carried = self._name_of(obj) if self._name_of is not None else name
        if name is not None and carried != name:
            raise JaxcontamError(f"{self.kind} registered as {name!r} calls itself {carried!r}: give both one name")
        return obj

    def _store(self, name: str, entry: T | _Lazy, aliases: Iterable[str]) -> None:
        current = self._entries.get(name)
        if current is not None and not (isinstance(current, _Lazy) and name in self._resolving):
            raise JaxcontamError(f"a {self.kind} named {name!r} is already registered: give yours another name")
        self._entries[name] = entry
        self._alias(name, aliases)

    def _alias(self, name: str, aliases: Iterable[str]) -> None:
        for alias in aliases:
            if alias == name or self._aliases.get(alias) == name:
                continue
            if alias in self._entries or alias in self._aliases or alias in self._ambiguous:
                owners = self._ambiguous.setdefault(alias, [self._aliases.pop(alias, alias)])
                owners.append(name)
            else:
                self._aliases[alias] = name

    def _resolve(self, name: str) -> T:
        entry = self._entries[name]
        if not isinstance(entry, _Lazy):
            return entry
        self._resolving.add(name)
        try:
            loaded = entry.load()
        except JaxcontamError:
            raise
        except Exception as error:  # an import error of a plug-in names the plug-in, not a traceback into it
            raise JaxcontamError(f"{self.kind} {name!r} ({entry.label}) failed to load: {error}") from error
        finally:
            self._resolving.discard(name)
        registered = self._entries.get(name)
        if registered is not entry and registered is not loaded:  # importing it registered another object
            raise JaxcontamError(f"{self.kind} {name!r}: {entry.label} is not the object its module registered")
        obj = self._checked(loaded, name)
        self._entries[name] = obj
        if self._aliases_of is not None:
            self._alias(name, self._aliases_of(obj))
        return obj

    def _read_entry_points(self) -> None:
        """Add the group's entry points (once, by name; a name already registered keeps its entry)."""
        if self._entry_points_read:
            return
        self._entry_points_read = True
        assert self.group is not None  # `_entry_points_read` starts True without a group
        found = sorted(importlib.metadata.entry_points(group=self.group), key=lambda point: point.name)
        for point in found:
            if point.name not in self._entries:
                self._entries[point.name] = _Lazy(point)
