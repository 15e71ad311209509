"""Everything an audit reads before computing: benchmarks with rephrasings and ground truth, models, corpora.

All of it is checked up front, so a bad path or an unusable benchmark is reported before any model runs.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from jaxcontam.audit.config import AuditConfig, BenchmarkEntry
from jaxcontam.data import attach_paraphrases, load_benchmark, load_paraphrases
from jaxcontam.data.item import Benchmark
from jaxcontam.data.records import field, position_name, read_rows, require_file
from jaxcontam.errors import DataError, JaxcontamError


@dataclasses.dataclass(frozen=True)
class AuditBenchmark:
    entry: BenchmarkEntry
    benchmark: Benchmark
    truth: dict[str, bool] | None  # item id -> known contaminated, when a ground-truth file was given


def _ground_truth(path: str, benchmark: Benchmark) -> dict[str, bool]:
    """{id: contaminated} rows of `path` that name items of `benchmark` (one file may cover several)."""
    file = require_file(Path(path), "ground-truth file")
    known = benchmark.by_id()
    truth = {}
    for position, row in read_rows(file):
        where = position_name(file, position)
        item_id, label = str(field(row, "id", where)), field(row, "contaminated", where, "true or false")
        if not isinstance(label, bool):
            raise DataError(f"{where}: 'contaminated' must be true or false, got {label!r}")
        if item_id in known:
            truth[item_id] = label
    if not truth:
        raise DataError(f"{file}: no row names an item of {benchmark.name} ({benchmark.split}); ids look like "
                        f"{next(iter(known))!r}")
    return truth


def _check_answers(benchmark: Benchmark, entry: BenchmarkEntry) -> None:
    if len(benchmark) == 0:
        raise DataError(f"benchmark {entry.label} has no items (limit={entry.limit}); nothing to audit")
    missing = [item.id for item in benchmark if item.choices is None and not str(item.answer).strip()]
    if missing:
        raise DataError(f"benchmark {entry.label}: {len(missing)} item(s) have no gold answer (e.g. {missing[0]!r}); "
                        "an audit needs answers to score the model: use a labelled split")


def load_audit_benchmark(entry: BenchmarkEntry) -> AuditBenchmark:
    """The benchmark with its rephrasings attached (matched on the whole split, then cut to `limit`)."""
    benchmark = load_benchmark(entry.name, split=entry.split, path=entry.path, fields=entry.fields)
    if entry.paraphrases is not None:
        benchmark = attach_paraphrases(benchmark, load_paraphrases(entry.paraphrases, benchmark))
    if entry.limit is not None:
        benchmark = benchmark.replace_items(benchmark.items[: entry.limit])
    _check_answers(benchmark, entry)
    truth = _ground_truth(entry.ground_truth, benchmark) if entry.ground_truth else None
    return AuditBenchmark(entry, benchmark, truth)


def check_inputs(config: AuditConfig) -> list[AuditBenchmark]:
    """Load every benchmark and check every model and corpus path; raise on the first problem."""
    from jaxcontam.models.loading import read_config, resolve_path, weight_files

    if not config.models or not config.benchmarks:
        raise JaxcontamError("the audit names no model or no benchmark: add [[model]] and [[benchmark]] entries "
                             "or pass --model and --benchmark")
    labels = [entry.label for entry in config.benchmarks]
    if len(set(labels)) != len(labels):
        raise JaxcontamError(f"benchmark listed twice in the audit: {labels}; give each name:split once")
    for model in config.models:
        directory = resolve_path(model.path)
        read_config(directory)
        weight_files(directory)
    for corpus in config.corpora:
        if not Path(corpus).exists() and "/" not in corpus:
            raise DataError(f"corpus {corpus!r}: no such file or folder, and not a hub dataset name")
    if config.counts and not config.corpora:
        raise JaxcontamError("counts were given without corpora: name the corpora they were counted from "
                             "([corpus] paths or --corpus) so the saved counts can be checked against them")
    return [load_audit_benchmark(entry) for entry in config.benchmarks]
