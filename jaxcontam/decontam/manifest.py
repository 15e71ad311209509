"""summary.json of a decontamination run, typed and versioned, with the manifest that repeats the run.

`Manifest` holds what a run needs to be repeated: the jaxcontam version; each benchmark as it was named (name,
`--path`, `--split`), the files it was read from (size and sha256) and a sha256 of the rows it gave; the index
(unit, rule, n, fields, tokenizer and its sha256, the n-gram table's sha256); the run's settings (policy, spans,
fields of a row, bad lines); the corpora as given and every shard with its size and the sha256 of its bytes as
stored. `jaxcontam decontaminate --reproduce OUT/summary.json --out OUT2` loads the benchmarks and lists the shards
again, refuses any that changed (naming it), rebuilds the index (refused where its table differs: another
jaxcontam changed the rule or the item text) and runs with the same settings: the same bytes out.

`DecontSummary` is summary.json: `from_dict(to_dict())` round-trips it; keys it does not know are kept as they are
(`extra`), an unknown `schema_version` is refused. A summary written before schema_version existed (version 0)
has no manifest and cannot be reproduced.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from jaxcontam.errors import DataError

SCHEMA_VERSION = 1
KNOWN_VERSIONS = (0, 1)


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while data := handle.read(1 << 20):
            digest.update(data)
    return digest.hexdigest()


@dataclasses.dataclass(frozen=True)
class FileHash:
    """One file: its path (absolute where it was local), size in bytes and sha256."""

    path: str
    bytes: int
    sha256: str

    @classmethod
    def of(cls, path: Path) -> FileHash:
        return cls(str(path.resolve()), path.stat().st_size, _sha256_file(path))

    @classmethod
    def from_dict(cls, entry: Mapping[str, Any]) -> FileHash:
        return cls(str(entry["path"]), int(entry["bytes"]), str(entry["sha256"]))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def jaxcontam_version() -> str:
    """This jaxcontam's version. The package root sits above this layer (it imports detect), so it is not imported
    here: it is always loaded before any of its modules, and read from `sys.modules` at run time."""
    import importlib.metadata
    import sys

    version = getattr(sys.modules.get("jaxcontam"), "__version__", None)
    return str(version) if version else importlib.metadata.version("jaxcontam")


def absolute(location: str | None) -> str | None:
    """A local path made absolute (so the manifest reads the same from any folder); a bucket URL as it is."""
    import os

    from jaxcontam.storage import is_url

    if location is None or is_url(str(location)):
        return location
    return os.path.abspath(str(location))


def rows_sha256(benchmark) -> str:
    """sha256 of a loaded benchmark's rows (each item's fields as JSON, in order): what the index was built from."""
    digest = hashlib.sha256()
    for item in benchmark.items:
        row = {f.name: getattr(item, f.name) for f in dataclasses.fields(item)}
        row["meta"] = dict(row.get("meta") or {})
        digest.update(json.dumps(row, sort_keys=True, ensure_ascii=False, default=str).encode() + b"\n")
    return digest.hexdigest()


@dataclasses.dataclass(frozen=True)
class BenchmarkSource:
    """A benchmark as named on the command line, where its rows came from, and their hash."""

    name: str  # --benchmark
    path: str | None  # --path (a local one made absolute)
    split: str | None  # --split, as given (None: the loader's default)
    loaded_split: str
    items: int
    rows_sha256: str
    files: tuple[FileHash, ...] = ()  # the local file(s) read; () where the rows came from the hub

    @classmethod
    def from_dict(cls, entry: Mapping[str, Any]) -> BenchmarkSource:
        return cls(
            str(entry["name"]),
            entry.get("path"),
            entry.get("split"),
            str(entry["loaded_split"]),
            int(entry["items"]),
            str(entry["rows_sha256"]),
            tuple(FileHash.from_dict(f) for f in entry.get("files", ())),
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {"files": [f.to_dict() for f in self.files]}


def _benchmark_files(name: str, path: str | None, split: str | None, roots: Sequence[Path]) -> tuple[FileHash, ...]:
    """The local files `load_benchmark(name, split, path, roots=roots)` reads (a split's file or folder)."""
    from jaxcontam.data.registry import locate, resolve_spec
    from jaxcontam.storage import as_path, is_url

    if str(name).startswith("lm_eval:"):
        where = path
    else:
        spec = resolve_spec(str(name))
        if spec is None:
            where = path if path is not None else name
        else:
            found = locate(spec, split or spec.default_split, path, roots)
            where = None if found is None else str(found)
    if where is None or is_url(str(where)):
        return ()  # the hub's rows, or a bucket: the rows' hash stands for them
    local = Path(str(as_path(where)))
    if local.is_file():
        return (FileHash.of(local),)
    if local.is_dir():
        return tuple(FileHash.of(p) for p in sorted(local.rglob("*"), key=str) if p.is_file())
    return ()


def load_benchmarks(
    names: Sequence[str], path: str | None, split: str | None, roots: Sequence[Path]
) -> tuple[list[Any], tuple[BenchmarkSource, ...]]:
    """The benchmarks (`data.load_benchmark`) and how each was loaded, for the manifest."""
    from jaxcontam.data import load_benchmark
    from jaxcontam.data.registry import resolve_spec

    if path is not None and len(names) > 1:
        raise DataError("--path names one benchmark's files; give one --benchmark with it, or drop --path")
    loaded, sources = [], []
    for name in names:
        benchmark = load_benchmark(name, split=split or None, path=path, roots=roots)
        loaded.append(benchmark)
        files = _benchmark_files(name, path, split, roots)
        if resolve_spec(str(name)) is None and not str(name).startswith("lm_eval:") and Path(str(name)).exists():
            name = str(absolute(str(name)))  # a benchmark file named by its path: from anywhere
        sources.append(
            BenchmarkSource(name, absolute(path), split, benchmark.split, len(benchmark), rows_sha256(benchmark), files)
        )
    return loaded, tuple(sources)


@dataclasses.dataclass(frozen=True)
class ShardEntry:
    """One input shard: its label in the outputs, where it was read, and its bytes as stored."""

    label: str
    url: str
    format: str
    compression: str
    bytes: int
    sha256: str

    @classmethod
    def from_dict(cls, entry: Mapping[str, Any]) -> ShardEntry:
        return cls(
            str(entry["label"]),
            str(entry["url"]),
            str(entry["format"]),
            str(entry["compression"]),
            int(entry["bytes"]),
            str(entry["sha256"]),
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class IndexEntry:
    """The index: `settings` (IndexSettings as a dict, `n` resolved), the tokenizer's and the table's sha256."""

    settings: Mapping[str, Any]
    tokenizer_sha256: str | None
    table_sha256: str
    table_ngrams: int

    @classmethod
    def of(cls, index) -> IndexEntry:
        settings = dataclasses.asdict(index.settings) | {"n": index.n, "fields": list(index.settings.fields)}
        if settings.get("tokenizer") and Path(str(settings["tokenizer"])).exists():  # a local file: from anywhere
            settings["tokenizer"] = absolute(str(settings["tokenizer"]))
        tokenizer = None if index.units is None else index.units.sha256
        return cls(settings, tokenizer, index.table.checksum, len(index.table.keys))

    def index_settings(self):
        from jaxcontam.decontam.index import IndexSettings

        names = {f.name for f in dataclasses.fields(IndexSettings)}
        values: dict[str, Any] = {k: v for k, v in self.settings.items() if k in names}
        values["fields"] = tuple(values.get("fields", ("item",)))
        values.setdefault("escapes", False)  # a run recorded before escapes were decoded read them as they are
        values.setdefault("letter_share", 0.0)  # ... and before n-grams needed letters
        return IndexSettings(**values)

    @classmethod
    def from_dict(cls, entry: Mapping[str, Any]) -> IndexEntry:
        return cls(
            dict(entry["settings"]),
            entry.get("tokenizer_sha256"),
            str(entry["table_sha256"]),
            int(entry["table_ngrams"]),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "settings": dict(self.settings),
            "tokenizer_sha256": self.tokenizer_sha256,
            "table_sha256": self.table_sha256,
            "table_ngrams": self.table_ngrams,
        }


@dataclasses.dataclass(frozen=True)
class Manifest:
    """What a run needs to be repeated (see the module docstring)."""

    jaxcontam_version: str
    benchmarks: tuple[BenchmarkSource, ...]
    index: IndexEntry
    run: Mapping[str, Any]  # RunSettings as a dict (`decontam.run.RunSettings.from_dict` reads it back)
    corpora: tuple[str, ...]  # as given, local ones made absolute
    shards: tuple[ShardEntry, ...]

    @classmethod
    def from_dict(cls, entry: Mapping[str, Any]) -> Manifest:
        return cls(
            str(entry["jaxcontam_version"]),
            tuple(BenchmarkSource.from_dict(b) for b in entry["benchmarks"]),
            IndexEntry.from_dict(entry["index"]),
            dict(entry["run"]),
            tuple(entry["corpora"]),
            tuple(ShardEntry.from_dict(s) for s in entry["shards"]),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "jaxcontam_version": self.jaxcontam_version,
            "benchmarks": [b.to_dict() for b in self.benchmarks],
            "index": self.index.to_dict(),
            "run": dict(self.run),
            "corpora": list(self.corpora),
            "shards": [s.to_dict() for s in self.shards],
        }


@dataclasses.dataclass(frozen=True)
class DecontSummary:
    """summary.json. `shards` and `benchmarks` are the per-shard and per-benchmark counts; `rejects` names each
    shard's rejects file (`--on-bad-line skip`); `extra` holds keys this version does not know, written back as
    they were."""

    schema_version: int
    manifest: Manifest | None  # None: written before manifests (version 0)
    out: str
    engine: str
    units: str
    seconds: float
    total: Mapping[str, int]
    benchmarks: Mapping[str, Mapping[str, int]]
    shards: Mapping[str, Mapping[str, Any]]
    rejects: Mapping[str, str] = dataclasses.field(default_factory=dict)
    not_findable: tuple[Mapping[str, Any], ...] | None = None  # items no copy can match, with the reason
    common_ngrams: Mapping[str, Any] | None = None  # what `--drop-common` left out (`decontam.common.summary_entry`)
    extra: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    # written from the manifest for readers of the layout before it (version 0)
    _DERIVED = ("jaxcontam_version", "corpora", "index", "policy", "spans", "on_bad_line", "table_ngrams")
    _FIELDS = ("schema_version", "manifest", "out", "engine", "units", "seconds", "total", "benchmarks", "shards")

    @classmethod
    def from_dict(cls, summary: Mapping[str, Any], where: str = "summary.json") -> DecontSummary:
        if not isinstance(summary, Mapping):
            raise DataError(f"{where}: expected a JSON object, got {type(summary).__name__}")
        version = summary.get("schema_version", 0)
        if isinstance(version, bool) or version not in KNOWN_VERSIONS:
            raise DataError(
                f"{where}: schema_version {version!r} is not one this jaxcontam reads "
                f"({', '.join(map(str, KNOWN_VERSIONS))}); it was written by jaxcontam "
                f"{summary.get('jaxcontam_version', '(unknown)')}: read it with that version"
            )
        try:
            manifest = Manifest.from_dict(summary["manifest"]) if "manifest" in summary else None
            known = set(cls._FIELDS) | {"rejects", "not_findable", "common_ngrams"}
            known |= set(cls._DERIVED) if manifest is not None else set()
            not_findable = summary.get("not_findable")
            return cls(
                version,
                manifest,
                str(summary.get("out", "")),
                str(summary.get("engine", "local")),
                str(summary.get("units", "words")),
                float(summary.get("seconds", 0.0)),
                dict(summary["total"]),
                dict(summary["benchmarks"]),
                dict(summary["shards"]),
                dict(summary.get("rejects") or {}),
                None if not_findable is None else tuple(dict(item) for item in not_findable),
                summary.get("common_ngrams"),
                {k: v for k, v in summary.items() if k not in known},
            )
        except (KeyError, TypeError, ValueError) as error:
            problem = f"no {error}" if isinstance(error, KeyError) else str(error)
            raise DataError(f"{where}: not a decontamination summary this jaxcontam reads ({problem})") from None

    def to_dict(self) -> dict[str, Any]:
        head: dict[str, Any] = {"schema_version": SCHEMA_VERSION}
        if self.manifest is not None:
            m = self.manifest
            head |= {
                "jaxcontam_version": m.jaxcontam_version,
                "corpora": list(m.corpora),
                "index": dict(m.index.settings),
                "policy": m.run.get("policy"),
                "spans": m.run.get("spans"),
                "on_bad_line": m.run.get("on_bad_line"),
                "table_ngrams": m.index.table_ngrams,
            }
        return (
            head
            | {"out": self.out, "engine": self.engine, "units": self.units, "seconds": self.seconds}
            | {"total": dict(self.total), "benchmarks": dict(self.benchmarks), "shards": dict(self.shards)}
            | {"rejects": dict(self.rejects)}
            | ({"not_findable": [dict(item) for item in self.not_findable]} if self.not_findable is not None else {})
            | ({"common_ngrams": self.common_ngrams} if self.common_ngrams is not None else {})
            | dict(self.extra)
            | ({"manifest": self.manifest.to_dict()} if self.manifest is not None else {})
        )


def read_summary(path: str | Path) -> DecontSummary:
    """summary.json at `path` (local, or a bucket URL)."""
    from jaxcontam.storage import as_path

    where = str(path)
    try:
        text = as_path(where).read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise DataError(f"{where} does not exist; give the summary.json of a decontamination run") from None
    try:
        summary = json.loads(text)
    except json.JSONDecodeError as error:
        raise DataError(f"{where}: not JSON ({error.msg} at line {error.lineno})") from None
    return DecontSummary.from_dict(summary, where)


def check_shards(manifest: Manifest, shards) -> None:
    """Refuse a reproduction whose inputs differ from the manifest's: a shard missing, added, or changed."""
    from jaxcontam.decontam.shards import file_digest

    recorded = {s.label: s for s in manifest.shards}
    now = {s.label: s for s in shards}
    missing = sorted(set(recorded) - set(now))
    added = sorted(set(now) - set(recorded))
    if missing or added:
        parts = ([f"missing: {', '.join(missing)}"] if missing else []) + (
            [f"not in the run: {', '.join(added)}"] if added else []
        )
        raise DataError(
            f"the corpora {', '.join(manifest.corpora)} no longer hold the run's shards ({'; '.join(parts)}); "
            "restore them to reproduce the run, or run decontaminate without --reproduce on the corpus as it is"
        )
    for label, entry in recorded.items():
        digest = file_digest(now[label])
        if (digest.size, digest.sha256) != (entry.bytes, entry.sha256):
            raise DataError(
                f"input shard {label} ({now[label].url}) changed since the run: {digest.size} bytes, sha256 "
                f"{digest.sha256[:16]}..., where the manifest has {entry.bytes} bytes, sha256 {entry.sha256[:16]}...; "
                "restore that file to reproduce the run, or run decontaminate without --reproduce to decontaminate "
                "the corpus as it is now"
            )


def check_benchmarks(manifest: Manifest, sources: Sequence[BenchmarkSource]) -> None:
    """Refuse a reproduction whose benchmark files or rows differ from the manifest's, naming the file."""
    for before, now in zip(manifest.benchmarks, sources):
        old = {f.path: f for f in before.files}
        for f in now.files:
            if f.path in old and (old[f.path].bytes, old[f.path].sha256) != (f.bytes, f.sha256):
                raise DataError(
                    f"benchmark {before.name}: file {f.path} changed since the run ({f.bytes} bytes, sha256 "
                    f"{f.sha256[:16]}..., where the manifest has {old[f.path].bytes} bytes, sha256 "
                    f"{old[f.path].sha256[:16]}...); restore it to reproduce the run"
                )
        if now.rows_sha256 != before.rows_sha256 or now.items != before.items:
            files = ", ".join(f.path for f in now.files) or "the hub"
            raise DataError(
                f"benchmark {before.name} ({before.loaded_split}) gives other rows than in the run ({now.items} items, "
                f"rows sha256 {now.rows_sha256[:16]}..., where the manifest has {before.items}, "
                f"{before.rows_sha256[:16]}...; read from {files}); restore the benchmark's files to reproduce the run"
            )


def check_index(manifest: Manifest, index) -> None:
    """Refuse a reproduction whose rebuilt index differs (another tokenizer, or another jaxcontam's rule or item
    text)."""
    now = IndexEntry.of(index)
    if manifest.index.tokenizer_sha256 != now.tokenizer_sha256:
        raise DataError(
            f"tokenizer {manifest.index.settings.get('tokenizer')} differs from the run's (sha256 "
            f"{now.tokenizer_sha256} where the manifest has {manifest.index.tokenizer_sha256}); restore it"
        )
    if manifest.index.table_sha256 != now.table_sha256:
        raise DataError(
            f"the rebuilt n-gram table differs from the run's ({now.table_ngrams} n-grams, sha256 "
            f"{now.table_sha256[:16]}..., where the manifest has {manifest.index.table_ngrams}, "
            f"{manifest.index.table_sha256[:16]}...): the benchmark files are the same, so this jaxcontam "
            f"({jaxcontam_version()}) makes the items' n-grams otherwise than jaxcontam "
            f"{manifest.jaxcontam_version} did; reproduce with that version"
        )
