# pyright: standard
"""`run_audit`: n-gram evidence, rephrasings, then per model and benchmark the shared audit core
(`detect.audit_core`: PaCoST, likelihood detectors, ConTAM's EPG verdict), each stage resumable; then the
sweep's corrections, the detectors across the models (`detect.family_stage`: ConStat), items.parquet, summary.json,
plots and report.html."""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jaxcontam import __version__
from jaxcontam.audit.config import AuditConfig
from jaxcontam.audit.inputs import AuditBenchmark, AuditInputs, check_inputs
from jaxcontam.audit.store import StageStore, items_key, run_chunked, write_atomic
from jaxcontam.audit.sweep import audit_verdicts
from jaxcontam.cluster import is_writer
from jaxcontam.dataclass_config import non_default_values
from jaxcontam.detect.audit_core import AuditSettings, chunk_naming_items
from jaxcontam.detect.family_stage import RunKey, family_verdicts
from jaxcontam.detect.json_values import json_ready
from jaxcontam.detect.stage import AuditTarget, ReferenceModel, StageInput, fingerprint
from jaxcontam.engine.finite import NonFiniteScoresError, weights_cause
from jaxcontam.report import write_report
from jaxcontam.report.evidence import EvidenceStatement, evidence_statement
from jaxcontam.report.summary_schema import SCHEMA_VERSION, AuditSummary, RunEntry
from jaxcontam.stage_clock import StageClock, stage
from jaxcontam.stats import sweep_resamples
from jaxcontam.stats.paired import DEFAULT_RESAMPLES
from jaxcontam.storage import check_output, claim_output, output_folder

if TYPE_CHECKING:
    from jaxcontam.data.item import Benchmark
    from jaxcontam.detect.audit_core import BenchmarkAudit
    from jaxcontam.detect.verdict import Verdict


@dataclasses.dataclass(frozen=True)
class ItemRow:
    """One items.parquet row: the item and its rephrasing, then the audit core's per-item columns (`scores`:
    `BenchmarkAudit.rows`, whose columns depend on the detectors that ran)."""

    model: str
    benchmark: str
    split: str | None
    id: str
    question: str
    gold: str
    rephrase_source: str
    rephrase_reason: str | None
    scores: dict

    def to_row(self) -> dict:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "scores"} | self.scores


@dataclasses.dataclass(frozen=True)
class ModelRun:
    """One model's audit of one benchmark (summary.json's run entry once the sweep has decided), with the benchmark
    audited (its items, which a detector across the models may read)."""

    model: str
    audit: BenchmarkAudit
    benchmark: Benchmark

    @property
    def label(self) -> str:
        return f"{self.model} | {self.audit.benchmark}:{self.audit.split}"

    @property
    def key(self) -> RunKey:
        """(model, benchmark, split): what a family stage's verdicts are keyed by."""
        return (self.model, self.audit.benchmark, self.audit.split)

    def entry(self, verdicts: tuple[Verdict, ...], family: Sequence[Verdict] = ()) -> RunEntry:
        """This run as summary.json's run entry, with its headline `verdicts` (as the sweep decided them) and, after
        them, the family stages' verdicts on it (`family`)."""
        audit = self.audit
        return RunEntry(
            self.model,
            audit.benchmark,
            audit.split,
            len(audit.rows),
            accuracy=audit.accuracy,
            results=audit.results,
            ground_truth=audit.ground_truth,
            verdicts=verdicts + tuple(family),
        )


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _progress(label: str):
    start = time.perf_counter()

    def report(done: int, total: int, reused: bool) -> None:
        status = "reused from an earlier run" if reused else f"{time.perf_counter() - start:.0f} s"
        _say(f"  {label}: chunk {done}/{total} ({status})")

    return report


def ngram_rows(config: AuditConfig, inputs: AuditInputs, out: Path) -> dict | None:
    """(benchmark name, item id) -> ConTAM metrics, or None without corpora. Counts are saved and reused."""
    if not config.corpus.paths:
        return None
    from jaxcontam.data.corpus import open_corpus
    from jaxcontam.ngram.audit import ensure_counts, item_rows
    from jaxcontam.ngram.units import load_units

    settings, scoring = config.ngram.counting, config.ngram.scoring
    tokenizer = config.ngram.tokenizer or config.models[0].path
    units = load_units(tokenizer)
    follow = config.corpus.follow_symlinks
    corpora = [
        (c, inputs.corpora.get(c) or open_corpus(c, field=config.corpus.text_field, follow_symlinks=follow))
        for c in config.corpus.paths
    ]
    loaded = [b.benchmark for b in inputs.benchmarks]
    selection = items_key([item for benchmark in loaded for item in benchmark])  # other items: their own folder
    counts_dir = (
        output_folder(config.corpus.counts)  # a bucket URL: its counts are read back, and new ones uploaded
        if config.corpus.counts
        else out
        / "counts"
        / fingerprint(
            {"tokenizer": str(tokenizer), "corpora": list(config.corpus.paths), **dataclasses.asdict(settings)}
            | {"items": selection}
        )
    )
    _say(f"n-gram counts ({settings.n}-grams, scope {settings.scope}) over {len(corpora)} corpus/corpora")
    counted, scanned = ensure_counts(loaded, corpora, units, settings, counts_dir)
    _say(f"  {'counted' if scanned else 'reused'} {counts_dir}")
    rows = item_rows(loaded, counted, units, settings, mincount=scoring.mincount, skip_budget=scoring.skip_budget)
    return {(r["benchmark"], r["id"]): r for r in rows}


def rephrasings(config: AuditConfig, audit_benchmark: AuditBenchmark, out: Path) -> list[dict]:
    """The accepted rephrasing (or the reason there is none) of each item; generated ones are stored."""
    from jaxcontam.detect.rephrase import rephrase_items

    items = list(audit_benchmark.benchmark)
    model = None
    if config.pacost.rephrase_model is not None:
        import jaxcontam

        layout = config.pacost.rephrase_mesh or config.mesh
        model = jaxcontam.load_model(
            config.pacost.rephrase_model,
            dtype=config.pacost.rephrase_dtype,
            mesh=layout.build(),
            fsdp=layout.fsdp,
            attention=layout.attention,
        )

    def compute(chunk):
        return [dataclasses.asdict(c) for c in rephrase_items(chunk, config.pacost.gates, model=model)]

    if model is None:
        return compute(items)
    store = StageStore(
        out / "state",
        "rephrase",
        {
            "benchmark": audit_benchmark.entry.label,
            "model": config.pacost.rephrase_model,
            "dtype": config.pacost.rephrase_dtype,
            "gates": non_default_values(config.pacost.gates),
            "chunk_size": config.chunk_size,
        },
    )
    return run_chunked(store, items, config.chunk_size, compute, _progress(f"rephrase {audit_benchmark.entry.label}"))


def _stage_key(config: AuditConfig, model_path: str, dtype: str, bench: AuditBenchmark) -> dict:
    """What every stage's stored chunks of one (model, benchmark) depend on."""
    model = str(Path(model_path).resolve()) if Path(model_path).exists() else model_path
    return {"model": model, "dtype": dtype, "benchmark": bench.entry.label, "chunk_size": config.chunk_size}


def audit_one(
    config: AuditConfig,
    entry,
    model,
    bench: AuditBenchmark,
    choices: list[dict],
    ngram: dict | None,
    settings: AuditSettings,
    out: Path,
    reference: ReferenceModel | None = None,
) -> tuple[ModelRun, list[ItemRow]]:
    """The audit and the per-item rows of one (model, benchmark), through the shared audit core; per-item work is
    stored in resumable chunks. `reference`: the audit's reference model, given to every detector; with PaCoST
    running, its PaCoST records of the same items (stored and resumed) give the calibrated verdict."""
    from jaxcontam.detect.audit_core import audit_benchmark

    benchmark = bench.benchmark
    items = list(benchmark)
    rephrase_of = {c["item_id"]: c["rephrase"] for c in choices}
    truth = bench.truth
    target = AuditTarget(
        benchmark,
        [rephrase_of[item.id] for item in items],
        None if truth is None else [truth.get(item.id) for item in items],
        None if ngram is None else {item.id: ngram[(benchmark.name, item.id)] for item in items},
    )
    if reference is not None and "pacost" in settings.detectors:
        records = reference_records(config, reference, bench, target, settings, out)
        target = dataclasses.replace(target, reference=(reference.name, records))
    key = _stage_key(config, entry.path, entry.dtype, bench)
    label = f"{entry.name} | {bench.entry.label}"

    def run_stage(name, stage_key, stage_items, compute):
        store = StageStore(out / "state", name, key | stage_key)
        return run_chunked(store, stage_items, config.chunk_size, compute, _progress(f"{name} {label}"))

    try:
        result = audit_benchmark(model, target, settings, run_stage, reference)
    except NonFiniteScoresError as error:  # stop the audit: no verdict from a model that computes NaN (engine.finite)
        raise error.naming(error.names, f"model {entry.name} ({entry.path}) on {error.where}") from None
    rows = [
        ItemRow(
            model=entry.name,
            benchmark=benchmark.name,
            split=benchmark.split,
            id=item.id,
            question=item.question,
            gold=item.answer_text,
            rephrase_source=choice["source"],
            rephrase_reason=choice["reason"],
            scores=row,
        )
        for item, choice, row in zip(items, choices, result.rows)
    ]
    return ModelRun(entry.name, result, benchmark), rows


def reference_records(
    config: AuditConfig,
    reference: ReferenceModel,
    bench: AuditBenchmark,
    target: AuditTarget,
    settings: AuditSettings,
    out: Path,
) -> list[dict]:
    """The reference model's PaCoST records of the benchmark's items, stored and resumed as an audited model's
    (the PaCoST stage's records and resume key)."""
    from jaxcontam.detect.registry import DETECTORS

    work = DETECTORS["pacost"].per_item
    assert work is not None  # PaCoST answers per item
    stage_input = StageInput(reference.model, target, settings.seed, settings.resamples)
    key = _stage_key(config, reference.name, "float32", bench)
    store = StageStore(out / "state", "pacost", key | work.key(stage_input, settings.pacost))
    progress = _progress(f"pacost reference | {bench.entry.label}")
    compute = chunk_naming_items(work.compute(stage_input, settings.pacost), f"{bench.entry.label}: pacost reference")
    return run_chunked(store, list(bench.benchmark), config.chunk_size, compute, progress)


def family_results(config: AuditConfig, runs: Sequence[ModelRun]) -> dict[str, Any]:
    """The result of each detector across the audit's models that runs (`AuditConfig.family_stages`), by name, on
    every run's per-item rows."""
    seed = config.audit_settings(DEFAULT_RESAMPLES).seed
    runs_rows = [(run.model, run.benchmark, run.audit.rows) for run in runs]
    return {
        name: stage.result(stage.family_input(runs_rows, seed), config.family[name])
        for name, stage in config.family_stages()
    }


def audit_evidence(config: AuditConfig, runs: list[ModelRun], family: dict[str, Any]) -> EvidenceStatement:
    """What this audit's inputs allow and the strongest measured evidence (`report.evidence`), for the detectors
    that ran (the detectors across the models among them)."""
    ran = list(dict.fromkeys([*(name for run in runs for name in run.audit.results), *family]))
    return evidence_statement(
        reference=config.reference_model is not None,
        corpus=bool(config.corpus.paths or config.corpus.counts),
        models=len(config.models),
        ran=ran,
        confidence=config.settings_of("pacost").confidence or "",
    )


def write_outputs(config: AuditConfig, runs: list[ModelRun], items: list[ItemRow], clock: StageClock) -> AuditSummary:
    """items.parquet, summary.json (the sweep's corrections decided here, over every run, then the detectors across
    the models) and the report, written by process 0 alone under `jax.distributed` (every process returns the
    summary). summary.json's `timings` are `clock`'s seconds per stage, the report's included."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = output_folder(config.out)
    with stage("verdicts"):
        sweep, verdicts = audit_verdicts(
            [(run.label, run.audit.results) for run in runs], config.alpha, config.correction
        )
        family = family_results(config, runs)
        family_found = family_verdicts(dict(config.family_stages()), family, config.alpha)
        summary = AuditSummary(
            schema_version=SCHEMA_VERSION,
            jaxcontam_version=__version__,
            alpha=config.alpha,
            correction=config.correction,
            settings=config.settings(),
            runs=tuple(
                run.entry(found, family_found.get(run.key, ())) for run, found in zip(runs, verdicts, strict=True)
            ),
            sweep=sweep,
            family=family,
            evidence=audit_evidence(config, runs, family),
        )
    if is_writer():
        with stage("report"):
            rows = [item.to_row() for item in items]
            columns = list(dict.fromkeys(key for row in rows for key in row))
            table = pa.table({c: [row.get(c) for row in rows] for c in columns})
            write_atomic(out / "items.parquet", lambda path: pq.write_table(table, path))
            write_report(summary, rows, out)
    summary = dataclasses.replace(summary, timings=clock.to_dict())
    if not is_writer():
        return summary
    written = summary.to_dict()
    write_atomic(  # last: a summary.json on disk (or in the bucket) means every other output is there
        out / "summary.json",
        lambda path: path.write_text(json.dumps(json_ready(written), indent=2) + "\n", encoding="utf-8"),
    )
    return summary


def run_audit(config: AuditConfig, command: str = "audit") -> AuditSummary:
    """Run every stage of the audit described by `config`; returns the summary (also written to `config.out`, which
    must be empty or an earlier run's of the same `command`: `storage.claim_output`)."""
    import jaxcontam

    with StageClock() as clock:
        check_output(config.out, command)
        with stage("load"):
            inputs = check_inputs(config)
        claim_output(config.out, command)  # the inputs are sound: the folder is the audit's from here on
        out = output_folder(config.out)
        benchmarks = inputs.benchmarks
        with stage("ngram"):
            ngram = ngram_rows(config, inputs, out)
        with stage("rephrase"):
            choices = {b.entry.label: rephrasings(config, b, out) for b in benchmarks}
        rows, runs = [], []
        resamples = sweep_resamples(len(config.models) * len(benchmarks), config.alpha, DEFAULT_RESAMPLES)
        settings = config.audit_settings(resamples)  # every (model, benchmark) runs the same detectors the same way
        reference = None  # loaded once, given to every detector of every (model, benchmark)
        if config.reference_model is not None:
            _say(f"reference model {config.reference_model}")
            with stage("load"):
                loaded = jaxcontam.load_model(
                    config.reference_model,
                    mesh=config.mesh.build(),
                    fsdp=config.mesh.fsdp,
                    attention=config.mesh.attention,
                )
            reference = ReferenceModel(config.reference_model, loaded)
        for entry in config.models:
            _say(f"model {entry.name} ({entry.path})")
            layout = config.mesh
            with stage("load"):
                model = jaxcontam.load_model(
                    entry.path, dtype=entry.dtype, mesh=layout.build(), fsdp=layout.fsdp, attention=layout.attention
                )
            for audit_benchmark in benchmarks:
                try:
                    run, run_rows = audit_one(
                        config,
                        entry,
                        model,
                        audit_benchmark,
                        choices[audit_benchmark.entry.label],
                        ngram,
                        settings,
                        out,
                        reference,
                    )
                except NonFiniteScoresError as error:  # say which cause it is: a broken tensor, or finite weights
                    used = [(f"model {entry.name}", model.params)]
                    used += [] if reference is None else [(f"reference model {reference.name}", reference.model.params)]
                    raise error.explained(weights_cause(used)) from None
                runs.append(run)
                rows += run_rows
        return write_outputs(config, runs, rows, clock)
