"""A decontamination run: every shard through the index, committed shard by shard, then the run's outputs.

Per shard (`process_shard`), under OUT: `cleaned/<shard>` (the input's format and compression),
`matches/<shard>.parquet`, `rejects/<shard>.rejects` (the lines `--on-bad-line skip` skipped, byte for byte, where
there were any), and last `shards/<shard>.json`, the shard's statistics (with the size and sha256 of the shard's
file as read) and its completion marker. A
shard whose marker exists is skipped, so a rerun (or a retried Ray task) never writes a completed shard again,
and a killed run leaves no half-written shard that reads as done (each file is committed whole).
After all shards (`finish`): `matches.parquet` (one row per document and item), `items.parquet` (per item: the
documents holding it, its n-grams and how many the corpus holds), `report.html`, and last `summary.json` (with the
manifest that repeats the run: `decontam.manifest`).
Engines: `local` (a process per core, shards in parallel; `workers=1` runs in this process; a worker ends itself
when this process dies) and `ray`. OUT must be empty or an earlier decontamination's (`storage.claim_output`). A run
removes the `.partial-*` scratch folders a killed run left in OUT first, and again once every shard is done: those of
its own attempts that died (a Ray node lost mid-shard, its task retried); only those that hold its scratch marker.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any, Literal

import numpy as np

from jaxcontam.decontam.common import BATCH_CHARACTERS, common_rows, count_shard, document_counts, summary_entry
from jaxcontam.decontam.index import DecontIndex, not_findable
from jaxcontam.decontam.manifest import (
    SCHEMA_VERSION,
    BenchmarkSource,
    DecontSummary,
    IndexEntry,
    Manifest,
    ShardEntry,
    absolute,
    jaxcontam_version,
)
from jaxcontam.decontam.matching import POLICIES, Policy, SpanSettings, apply_policy, find_batch
from jaxcontam.decontam.report import render as render_report
from jaxcontam.decontam.shards import (
    BadLine,
    CleanedWriter,
    Destination,
    Record,
    ShardDigest,
    ShardSpec,
    list_shards,
    parquet_schema,
    read_records,
)
from jaxcontam.errors import DataError
from jaxcontam.storage import claim_output

OnBadLine = Literal["stop", "skip"]
Engine = Literal["local", "ray"]
BAD_LINES_NAMED = 100  # per shard, in the summary


@dataclasses.dataclass(frozen=True)
class RunSettings:
    """What happens to a document that holds an item, and to a bad line."""

    policy: Policy = "spans"
    spans: SpanSettings = SpanSettings()
    text_field: str = "text"
    id_field: str = "id"
    annotate_field: str = "contamination"
    on_bad_line: OnBadLine = "stop"
    drop_common: int | None = None  # leave out n-grams held by more than this many documents (`decontam.common`)
    follow_symlinks: bool = False  # read the files a corpus folder's links lead to outside it (`storage.list_files`)

    def __post_init__(self):
        if self.policy not in POLICIES:
            raise DataError(f"--policy {self.policy}: choose one of {', '.join(POLICIES)}")
        if self.drop_common is not None and self.drop_common < 1:
            raise DataError(f"--drop-common {self.drop_common}: give the most documents an n-gram may be in (>= 1)")
        if self.on_bad_line not in ("stop", "skip"):
            raise DataError(f"--on-bad-line {self.on_bad_line}: choose stop or skip")

    @classmethod
    def from_dict(cls, entry: Mapping[str, Any]) -> RunSettings:
        """The settings a manifest recorded (`dataclasses.asdict`); keys it does not know are left out."""
        names = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in entry.items() if k in names}
        if "spans" in values:
            values["spans"] = SpanSettings(**values["spans"])
        return cls(**values)


def marker(shard: ShardSpec) -> str:
    return f"shards/{shard.label}.json"


def rejects_name(shard: ShardSpec) -> str:
    return f"rejects/{shard.label}.rejects"


class _ShardState:
    """Counts and outputs of one shard while it is read."""

    def __init__(
        self, index: DecontIndex, shard: ShardSpec, settings: RunSettings, writer: CleanedWriter, rejects: Path
    ):
        self.index, self.shard, self.settings, self.writer = index, shard, settings, writer
        self.rejects_path, self._rejects = rejects, None
        self.documents = self.matched = self.removed = self.split = self.units = self.units_removed = 0
        self.bad: list[str] = []
        self.bad_count = 0
        self.matches: list[dict] = []
        self.item_documents: collections.Counter = collections.Counter()
        self.benchmarks: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        self.rows: set[int] = set()

    def bad_line(self, bad: BadLine) -> None:
        if self.settings.on_bad_line == "stop":
            raise DataError(
                f"{bad.describe(self.shard.label)}. Fix or remove it, or pass --on-bad-line skip to count and skip "
                "bad lines; completed shards are kept, and a rerun resumes after them"
            )
        self.bad_count += 1
        if len(self.bad) < BAD_LINES_NAMED:
            self.bad.append(f"line {bad.line} (byte {bad.offset}): {bad.reason}")
        if bad.raw:  # byte for byte, as read (an over-long line's in pieces)
            if self._rejects is None:
                self._rejects = open(self.rejects_path, "wb")  # noqa: SIM115  # closed in close_rejects()
            for piece in [bad.raw] if isinstance(bad.raw, bytes) else bad.raw:
                self._rejects.write(piece)

    def close_rejects(self) -> bool:
        """Close the rejects file; whether there is one."""
        if self._rejects is None:
            return False
        self._rejects.close()
        return True

    def flush(self, batch: list[Record]) -> None:
        if not batch:
            return
        settings = self.settings
        for record, result in zip(batch, find_batch(self.index, [r.text for r in batch])):
            self.documents += 1
            self.units += result.units
            row = record.row if record.row is not None else {settings.text_field: record.text}
            doc_id = row.get(settings.id_field) if record.row is not None else None
            if settings.policy == "annotate":
                self.writer.write_row({**row, settings.annotate_field: result.items})
            elif not result.matches:
                self._keep(record, row)
            if not result.matches:
                continue
            self.matched += 1
            self.rows.update(result.rows.tolist())
            kept = apply_policy(record.text, result, settings.policy, settings.spans)
            removed_units = 0
            if settings.policy == "drop":
                removed_units = result.units
            elif settings.policy == "spans":
                removed_units = result.units - sum(len(e) for e in self.index.encode(kept))
                base = doc_id if doc_id is not None else record.index
                for k, piece in enumerate(kept):
                    self.writer.write_row({**row, settings.text_field: piece, settings.id_field: f"{base}#{k}"})
            if settings.policy != "annotate" and not kept:
                self.removed += 1
            elif settings.policy == "spans":
                self.split += 1
            self.units_removed += removed_units
            for benchmark in {m.benchmark for m in result.matches}:
                counts = self.benchmarks[benchmark]
                counts["documents"] += 1
                counts["removed_documents"] += int(settings.policy != "annotate" and not kept)
                counts["removed_units"] += removed_units
            for m in result.matches:
                self.item_documents[f"{m.benchmark}/{m.item_id}"] += 1
                self.matches.append(
                    {
                        "shard": self.shard.label,
                        "document": record.index,
                        "id": None if doc_id is None else str(doc_id),
                        "benchmark": m.benchmark,
                        "item": m.item_id,
                        "ngrams": m.ngrams,
                        "longest_chars": m.longest,
                        "first_start": m.start,
                        "first_end": m.end,
                    }
                )

    def _keep(self, record: Record, row: dict) -> None:
        if record.raw is not None:
            self.writer.write_line(record.raw)  # byte for byte
        else:
            self.writer.write_row(row)

    def stats(self) -> dict[str, Any]:
        return {
            "shard": self.shard.label,
            "documents": self.documents,
            "matched": self.matched,
            "removed": self.removed,
            "split": self.split,
            "units": self.units,
            "units_removed": self.units_removed,
            "bad_lines": self.bad_count,
            "bad": self.bad,
            "benchmarks": {b: dict(c) for b, c in sorted(self.benchmarks.items())},
            "item_documents": dict(sorted(self.item_documents.items())),
            "rows": sorted(self.rows),
        }


MATCH_COLUMNS = ("shard", "document", "id", "benchmark", "item", "ngrams", "longest_chars", "first_start", "first_end")


def _match_table(rows: list[dict]):
    import pyarrow as pa

    schema = pa.schema(
        [
            ("shard", pa.string()),
            ("document", pa.int64()),
            ("id", pa.string()),
            ("benchmark", pa.string()),
            ("item", pa.string()),
            ("ngrams", pa.int64()),
            ("longest_chars", pa.int64()),
            ("first_start", pa.int64()),
            ("first_end", pa.int64()),
        ]
    )
    return pa.Table.from_pylist(rows, schema=schema)


def process_shard(index: DecontIndex, shard: ShardSpec, settings: RunSettings, out: str) -> dict[str, Any]:
    """Decontaminate one shard into `out`, or read its statistics if a previous run completed it."""
    import pyarrow.parquet as pq

    destination = Destination(out)
    if destination.exists(marker(shard)):
        return json.loads(destination.read_bytes(marker(shard)))
    started = time.perf_counter()
    with destination.scratch() as folder:
        schema = None
        if shard.format == "parquet":
            schema = parquet_schema(shard)
            if settings.policy == "annotate":
                import pyarrow as pa

                schema = schema.append(pa.field(settings.annotate_field, pa.list_(pa.string())))
        writer = CleanedWriter(shard, folder / "cleaned", schema, settings.text_field)
        state = _ShardState(index, shard, settings, writer, folder / "rejects")
        digest = ShardDigest()
        try:
            batch: list[Record] = []
            size = 0
            for record in read_records(shard, settings.text_field, digest):
                if isinstance(record, BadLine):
                    state.bad_line(record)
                    continue
                batch.append(record)
                size += len(record.text)
                if size >= BATCH_CHARACTERS:
                    state.flush(batch)
                    batch, size = [], 0
            state.flush(batch)
        finally:
            writer.close()
            rejected = state.close_rejects()
        pq.write_table(_match_table(state.matches), folder / "matches.parquet")
        stats = state.stats() | {
            "bytes": digest.size,
            "sha256": digest.sha256,
            "rejects": rejects_name(shard) if rejected else None,
            "seconds": round(time.perf_counter() - started, 3),
            "pid": os.getpid(),
        }
        (folder / "marker.json").write_text(json.dumps(stats))
        destination.put(f"cleaned/{shard.label}", folder / "cleaned")
        destination.put(f"matches/{shard.label}.parquet", folder / "matches.parquet")
        if rejected:
            destination.put(rejects_name(shard), folder / "rejects")
        destination.put(marker(shard), folder / "marker.json")  # last: the shard is complete
    return stats


# engines ------------------------------------------------------------------------------------------------------

_WORKER_INDEX: DecontIndex | None = None


def _set_index(index: DecontIndex) -> None:
    global _WORKER_INDEX
    _WORKER_INDEX = index


PARENT_POLL_SECONDS = 0.5


def _init_worker(index: DecontIndex, parent: int) -> None:
    """A pool worker: the index, and an end of its own when `parent` (the run's process) dies, however it dies."""
    _set_index(index)
    if sys.platform.startswith("linux"):
        import ctypes

        try:  # the kernel sends SIGKILL when the parent exits (PR_SET_PDEATHSIG = 1)
            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # it died before prctl
        os._exit(1)

    def watch() -> None:  # elsewhere (and should prctl fail): the parent's id changes when it dies
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_SECONDS)
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="jaxcontam-parent-watch", daemon=True).start()


ShardWork = Callable[[DecontIndex, ShardSpec, Any, str], dict[str, Any]]


def _pool_shard(work: ShardWork, shard: ShardSpec, settings: RunSettings, out: str) -> dict[str, Any]:
    assert _WORKER_INDEX is not None
    return work(_WORKER_INDEX, shard, settings, out)


def run_local(
    index: DecontIndex,
    shards: Sequence[ShardSpec],
    settings: RunSettings,
    out: str,
    workers: int,
    work: ShardWork = process_shard,
) -> list[dict]:
    """`work` on every shard on this host: `workers` processes (each with the index, sent once), or this process."""
    if workers <= 1 or len(shards) <= 1:
        return [work(index, shard, settings, out) for shard in shards]
    context = multiprocessing.get_context("spawn")  # no fork of a process that may hold JAX's threads
    initargs = (index, os.getpid())
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_init_worker, initargs=initargs) as pool:
        futures = [pool.submit(_pool_shard, work, shard, settings, out) for shard in shards]
        done, pending = wait(futures, return_when=FIRST_EXCEPTION)
        failed = [f for f in done if f.exception() is not None]
        if failed:
            for future in pending:
                future.cancel()
            raise failed[0].exception()  # type: ignore[misc]
        return [f.result() for f in futures]


def decontaminate(
    index: DecontIndex,
    corpora: Sequence[str],
    out: str,
    settings: RunSettings = RunSettings(),
    *,
    engine: Engine = "local",
    workers: int | None = None,
    address: str | None = None,
    benchmarks: Sequence[BenchmarkSource] = (),
    shards: Sequence[ShardSpec] | None = None,
) -> dict[str, Any]:
    """Decontaminate `corpora` into `out` (local or a bucket URL); returns the summary (also OUT/summary.json).
    `benchmarks`: how the items' benchmarks were loaded, for the manifest; `shards`: `list_shards(corpora)`."""
    shards = list_shards(corpora, settings.follow_symlinks) if shards is None else list(shards)
    destination = Destination(out)
    claim_output(out, "decontaminate")  # an empty folder, or an earlier decontamination's
    _claim(destination, index, settings)
    destination.remove_scratch()  # a killed run's .partial-* folders (its own: marked as such)
    started = time.perf_counter()

    def each_shard(work: ShardWork, index: DecontIndex) -> list[dict]:
        if engine == "ray":
            from jaxcontam.decontam.ray_engine import run_ray

            return run_ray(index, shards, settings, out, work, address=address)
        return run_local(index, shards, settings, out, workers or os.cpu_count() or 1, work)

    common = None
    if settings.drop_common is not None:  # a first pass: the documents holding each n-gram
        counts, documents = document_counts(index, each_shard(count_shard, index))
        common = summary_entry(index, counts, documents, settings.drop_common)
        index = index.without_rows(common_rows(counts, settings.drop_common))
    stats = each_shard(process_shard, index)
    destination.remove_scratch()  # every shard is done: what is left is a dead attempt's (a lost Ray node's)
    seconds = time.perf_counter() - started
    return finish(
        index,
        shards,
        stats,
        settings,
        out,
        corpora,
        seconds=seconds,
        engine=engine,
        benchmarks=benchmarks,
        common=common,
    )


def _claim(destination: Destination, index: DecontIndex, settings: RunSettings) -> None:
    """OUT/run.json names what the shards in OUT were made with; a rerun must match it to reuse them."""
    run = dataclasses.asdict(settings) | {"on_bad_line": None}  # a completed shard is the same either way
    del run["follow_symlinks"]  # the listing chooses shards, not what a shard's outputs are (and older run.json)
    fingerprint = {
        "index": dataclasses.asdict(index.settings) | {"n": index.n},
        "table": index.table.checksum,
        "run": run,
    }
    text = json.dumps(fingerprint, sort_keys=True)
    if destination.exists("run.json"):
        before = destination.read_bytes("run.json").decode()
        if before != text:
            raise DataError(
                f"{destination.url} holds a decontamination run made with other settings ({before}); give a fresh "
                "--out, or the same settings to resume it"
            )
        return
    destination.write_bytes("run.json", text.encode())


# the run's outputs --------------------------------------------------------------------------------------------


def finish(
    index: DecontIndex,
    shards: Sequence[ShardSpec],
    stats: Sequence[dict],
    settings: RunSettings,
    out: str,
    corpora: Sequence[str],
    *,
    seconds: float,
    engine: str,
    benchmarks: Sequence[BenchmarkSource] = (),
    common: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """matches.parquet, items.parquet, report.html, then summary.json, from the shards' committed outputs;
    `common`: the n-grams `--drop-common` left out (`decontam.common.summary_entry`)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    destination = Destination(out)
    tables = [pq.read_table(destination.path(f"matches/{s.label}.parquet").open("rb")) for s in shards]
    matches = pa.concat_tables(tables) if tables else _match_table([])
    if matches.num_rows:
        matches = matches.sort_by([("shard", "ascending"), ("document", "ascending"), ("benchmark", "ascending")])
    documents: collections.Counter = collections.Counter()
    found = np.zeros(len(index.table.keys), bool)
    for s in stats:
        documents.update(s["item_documents"])
        found[np.asarray(s["rows"], np.int64)] = True
    positions = index.table.position_ngram
    item_of = np.searchsorted(index.table.items.item_offsets, np.arange(len(positions)), side="right") - 1
    present = positions >= 0
    found_positions = np.bincount(item_of[present], weights=found[positions[present]], minlength=len(index.items))
    items = [
        {
            "benchmark": item.benchmark,
            "item": item.id,
            "documents": documents.get(item.key, 0),
            "ngrams": int(index.item_ngrams[k]),
            "ngrams_found": int(found_positions[k]),
            "ngram_match": float(found_positions[k] / index.item_ngrams[k]) if index.item_ngrams[k] else 0.0,
        }
        for k, item in enumerate(index.items)
    ]
    summary = _summary(index, stats, items, settings, corpora, seconds, engine, out)
    if common is not None:
        summary["common_ngrams"] = common
    typed = _typed(summary, index, shards, stats, settings, corpora, benchmarks)
    summary = typed.to_dict()
    with destination.scratch() as folder:
        pq.write_table(matches, folder / "matches.parquet")
        pq.write_table(pa.Table.from_pylist(items), folder / "items.parquet")
        (folder / "report.html").write_text(render_report(typed), encoding="utf-8")
        (folder / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
        for name in ("matches.parquet", "items.parquet", "report.html", "summary.json"):  # summary last
            destination.put(name, folder / name)
    return summary


def _summary(index, stats, items, settings: RunSettings, corpora, seconds, engine, out) -> dict[str, Any]:
    benchmarks: dict[str, dict] = {}
    for item in items:
        entry = benchmarks.setdefault(
            item["benchmark"],
            {"items": 0, "items_found": 0, "documents": 0, "removed_documents": 0, "removed_units": 0},
        )
        entry["items"] += 1
        entry["items_found"] += int(item["documents"] > 0)
    for s in stats:
        for name, counts in s["benchmarks"].items():
            for key in ("documents", "removed_documents", "removed_units"):
                benchmarks[name][key] += counts.get(key, 0)
    total = {k: sum(s[k] for s in stats) for k in ("documents", "matched", "removed", "split", "units")}
    total |= {"units_removed": sum(s["units_removed"] for s in stats), "bad_lines": sum(s["bad_lines"] for s in stats)}
    settings_out = dataclasses.asdict(index.settings) | {"n": index.n}
    return {
        "corpora": list(corpora),
        "out": out,
        "engine": engine,
        "index": settings_out,
        "units": "tokens" if index.settings.unit == "tokens" else "words",
        "policy": settings.policy,
        "spans": dataclasses.asdict(settings.spans),
        "on_bad_line": settings.on_bad_line,
        "table_ngrams": len(index.table.keys),
        "seconds": round(seconds, 3),
        "total": total,
        "benchmarks": benchmarks,
        "not_findable": not_findable(index),  # items no copy can match: shorter than the floor, with the reason
        "shards": {
            s["shard"]: {k: s[k] for k in ("documents", "matched", "removed", "split", "units", "units_removed")}
            | {"bad_lines": s["bad_lines"], "bad": s["bad"]}
            for s in stats
        },
    }


def _typed(summary: dict, index, shards, stats, settings: RunSettings, corpora, benchmarks) -> DecontSummary:
    """summary.json as `DecontSummary`, with the run's manifest."""
    from jaxcontam.decontam.shards import file_digest

    entries = []
    for shard, s in zip(shards, stats):
        if "sha256" not in s:  # a shard completed by a jaxcontam before manifests
            digest = file_digest(shard)
            s = s | {"bytes": digest.size, "sha256": digest.sha256}
        entries.append(ShardEntry(shard.label, shard.url, shard.format, shard.compression, s["bytes"], s["sha256"]))
    manifest = Manifest(
        jaxcontam_version(),
        tuple(benchmarks),
        IndexEntry.of(index),
        dataclasses.asdict(settings),
        tuple(str(absolute(c)) for c in corpora),
        tuple(entries),
    )
    known = {"corpora", "index", "policy", "spans", "on_bad_line", "table_ngrams", "out", "engine", "units"}
    known |= {"seconds", "total", "benchmarks", "shards", "not_findable", "common_ngrams"}
    return DecontSummary(
        schema_version=SCHEMA_VERSION,
        manifest=manifest,
        out=summary["out"],
        engine=summary["engine"],
        units=summary["units"],
        seconds=summary["seconds"],
        total=summary["total"],
        benchmarks=summary["benchmarks"],
        shards=summary["shards"],
        rejects={s["shard"]: s["rejects"] for s in stats if s.get("rejects")},
        not_findable=tuple(summary["not_findable"]),
        common_ngrams=summary.get("common_ngrams"),
        extra={k: v for k, v in summary.items() if k not in known},
    )
