# pyright: standard
"""Everything an audit reads before computing: benchmarks with rephrasings and ground truth, models, corpora.

All of it is checked up front, so a bad path or an unusable benchmark is reported before any model runs.
"""

from __future__ import annotations

import dataclasses
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

from jaxcontam.audit.config import AuditConfig, BenchmarkEntry
from jaxcontam.data import attach_paraphrases, load_benchmark, load_paraphrases
from jaxcontam.data.item import Benchmark
from jaxcontam.data.paraphrases import covered_splits
from jaxcontam.data.records import field, position_name, read_rows, require_file
from jaxcontam.data.registry import resolve_spec
from jaxcontam.data.roots import DEFAULT_ROOTS
from jaxcontam.errors import DataError, JaxcontamError, JaxcontamWarning
from jaxcontam.storage import as_path, has_glob, is_url

# Below this share of the selected items with a rephrasing, a PaCoST run mostly answers items it then drops.
MIN_PARAPHRASE_SHARE = 0.1


@dataclasses.dataclass(frozen=True)
class AuditBenchmark:
    entry: BenchmarkEntry
    benchmark: Benchmark
    truth: dict[str, bool] | None  # item id -> known contaminated, when a ground-truth file was given


def _ground_truth(path: str, benchmark: Benchmark) -> dict[str, bool]:
    """{id: contaminated} rows of `path` that name items of `benchmark` (one file may cover several)."""
    file = require_file(as_path(path), "ground-truth file")
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
        raise DataError(
            f"{file}: no row names an item of {benchmark.name} ({benchmark.split}); ids look like {next(iter(known))!r}"
        )
    return truth


def _check_answers(benchmark: Benchmark, entry: BenchmarkEntry) -> None:
    if len(benchmark) == 0:
        fix = "; lower the offset: the split holds no item after it" if entry.offset else ""
        raise DataError(
            f"benchmark {entry.label} has no items (offset={entry.offset}, limit={entry.limit}); nothing to audit{fix}"
        )
    missing = [item.id for item in benchmark if item.choices is None and not str(item.answer).strip()]
    if missing:
        raise DataError(
            f"benchmark {entry.label}: {len(missing)} item(s) have no gold answer (e.g. {missing[0]!r}); "
            "an audit needs answers to score the model: use a labelled split"
        )


def _selected(entry: BenchmarkEntry, roots: Sequence[Path]) -> Benchmark:
    """The benchmark with its rephrasings attached (matched on the whole split, then cut to `limit` items after the
    first `offset`); local data is looked for under `roots`."""
    benchmark = load_benchmark(entry.name, split=entry.split, path=entry.path, fields=entry.fields, roots=roots)
    if entry.paraphrases is not None:
        benchmark = attach_paraphrases(benchmark, load_paraphrases(entry.paraphrases, benchmark, roots=roots))
    if entry.offset or entry.limit is not None:
        end = None if entry.limit is None else entry.offset + entry.limit
        benchmark = benchmark.replace_items(benchmark.items[entry.offset : end])
    return benchmark


def _covered(benchmark: Benchmark) -> int:
    return sum(1 for item in benchmark if item.paraphrases)


def _covers_enough(benchmark: Benchmark) -> bool:
    return _covered(benchmark) >= MIN_PARAPHRASE_SHARE * len(benchmark)


def _coverage_problem(entry: BenchmarkEntry, benchmark: Benchmark, roots: Sequence[Path]) -> DataError:
    """What the paraphrase source covers instead of the selection, and how to select that."""
    where = []
    for split in covered_splits(entry.paraphrases, benchmark.name) or (benchmark.split,):
        whole = _selected(dataclasses.replace(entry, split=split, limit=None, offset=0), roots)
        first = next((item.id for item in whole if item.paraphrases), None)
        where.append(
            f"split {split!r}: {_covered(whole)} of {len(whole)} items"
            + (f", from {first}" if first is not None else "")
        )
    return DataError(
        f"benchmark {entry.label}: paraphrase source {entry.paraphrases!r} covers {_covered(benchmark)} of the "
        f"{len(benchmark)} selected items of split {benchmark.split!r}, under the {MIN_PARAPHRASE_SHARE:.0%} a "
        f"PaCoST run needs (the others would be answered and then dropped from the test). It covers "
        f"{'; '.join(where)}. Select covered items (--split, --limit, --path), or add --rephrase-model to "
        f"rephrase the rest"
    )


def _candidate_splits(entry: BenchmarkEntry) -> tuple[str | None, list[str | None]]:
    """The default split's name and the splits to try: the given one; with none given, the default (None)
    when the paraphrase source covers it, then the source's other splits."""
    spec = resolve_spec(entry.name) if entry.fields is None else None
    if entry.split is not None or spec is None:
        return None, [entry.split]
    splits = covered_splits(entry.paraphrases, spec.name)
    first = [None] if spec.default_split in splits or not splits else []
    return spec.default_split, first + [s for s in splits if s != spec.default_split]


def _with_rephrasings(entry: BenchmarkEntry, roots: Sequence[Path]) -> tuple[BenchmarkEntry, Benchmark]:
    """The entry and its selection, refused (before any model work) when the paraphrase source covers too few
    of the selected items; with no split given, a split the source covers is chosen instead, and said so."""
    default, splits = _candidate_splits(entry)
    tried: tuple[BenchmarkEntry, Benchmark] | None = None
    for split in splits:
        chosen = dataclasses.replace(entry, split=split)
        benchmark = _selected(chosen, roots)
        tried = (chosen, benchmark)
        if _covers_enough(benchmark):
            if split != entry.split:
                warnings.warn(
                    f"benchmark {entry.name}: paraphrase source {entry.paraphrases!r} covers too few "
                    f"of the selected items of the default split {default!r}; using split {split!r} "
                    f"({_covered(benchmark)} of {len(benchmark)} covered). Pass --split to choose",
                    JaxcontamWarning,
                    stacklevel=2,
                )
            return chosen, benchmark
    assert tried is not None  # _candidate_splits gives at least one split to try
    raise _coverage_problem(*tried, roots)


def load_audit_benchmark(
    entry: BenchmarkEntry, *, needs_rephrasings: bool = False, roots: Sequence[Path] = DEFAULT_ROOTS
) -> AuditBenchmark:
    """The benchmark with its rephrasings attached (matched on the whole split, then cut to `offset`, `limit`).

    `needs_rephrasings`: the paraphrase source is the only source of rephrasings (PaCoST runs without a
    rephrase model), so it must cover at least `MIN_PARAPHRASE_SHARE` of the selected items.
    """
    if needs_rephrasings and entry.paraphrases is not None:
        entry, benchmark = _with_rephrasings(entry, roots)
    else:
        benchmark = _selected(entry, roots)
    _check_answers(benchmark, entry)
    truth = _ground_truth(entry.ground_truth, benchmark) if entry.ground_truth else None
    return AuditBenchmark(entry, benchmark, truth)


def _open_local_corpus(spec: str, text_field: str, follow_symlinks: bool):
    """A local corpus opened now (its files listed, non-corpus files skipped and reported, an empty or non-UTF-8
    one refused), not after the model work; None for a hub dataset id, opened when counting."""
    from jaxcontam.data.corpus import open_corpus

    if is_url(spec) or has_glob(spec) or Path(spec).exists():
        corpus = open_corpus(spec, field=text_field, follow_symlinks=follow_symlinks)
        print(f"corpus {spec}: {corpus.files}", file=sys.stderr, flush=True)
        return corpus
    if "/" not in spec:
        raise DataError(f"corpus {spec!r}: no such file or folder, and not a hub dataset name")
    return None


@dataclasses.dataclass(frozen=True)
class AuditInputs:
    """What `check_inputs` verified: the loaded benchmarks and the local corpora it opened (each opened once)."""

    benchmarks: list[AuditBenchmark]
    corpora: dict[str, object]


def check_inputs(config: AuditConfig) -> AuditInputs:
    """Load every benchmark and check every model and corpus path; raise on the first problem."""
    from jaxcontam.models.loading import read_config, resolve_path, weight_files

    if not config.models or not config.benchmarks:
        raise JaxcontamError(
            "the audit names no model or no benchmark: add [[model]] and [[benchmark]] entries "
            "or pass --model and --benchmark"
        )
    selections = [(entry.name, entry.split) for entry in config.benchmarks]  # reports name runs by name:split
    if len(set(selections)) != len(selections):
        labels = [entry.label for entry in config.benchmarks]
        raise JaxcontamError(f"benchmark listed twice in the audit: {labels}; give each name:split once")
    config.mesh.build()  # a mesh that does not match the devices is refused before any work
    if config.pacost.rephrase_model is not None:
        (config.pacost.rephrase_mesh or config.mesh).build()
    for model in config.models:
        directory = resolve_path(model.path)
        read_config(directory)
        weight_files(directory)
    corpora = {
        spec: _open_local_corpus(spec, config.corpus.text_field, config.corpus.follow_symlinks)
        for spec in config.corpus.paths
    }
    if config.corpus.counts and not config.corpus.paths:
        raise JaxcontamError(
            "counts were given without corpora: name the corpora they were counted from "
            "([corpus] paths or --corpus) so the saved counts can be checked against them"
        )
    needs_rephrasings = "pacost" in config.stages and config.pacost.rephrase_model is None
    benchmarks = [
        load_audit_benchmark(entry, needs_rephrasings=needs_rephrasings, roots=config.data_roots)
        for entry in config.benchmarks
    ]
    return AuditInputs(benchmarks, {spec: corpus for spec, corpus in corpora.items() if corpus is not None})
