# pyright: standard
"""The audit of one model on one benchmark, shared by `jaxcontam audit` and the in-training `AuditCallback`.

    result = audit_benchmark(model, AuditTarget(benchmark, rephrasings), AuditSettings())
    result.pacost.verdict.pvalue, result.likelihood["min_k_plus_plus"].mean, result.to_dict()
    result.verdicts(alpha=0.05)   # each detector's headline verdict at a level

`model` is any `jaxcontam.LanguageModel`-backed model (a loaded checkpoint, or a Flax model wrapped by
`jaxcontam.flax_models`). The detectors are the registered stages of `detect.registry.DETECTORS` (`pacost`: answers,
confidences and the paired test; `likelihood`: mean log-prob, zlib, Min-K%, Min-K%++ of each item's solved text;
`exchangeability`: Oren et al.'s test of the items in benchmark order; `contam`: with per-item ConTAM metrics
(`AuditTarget.ngram`) and PaCoST's correctness, the EPG test; `blind_baseline`: with known labels, a model-free
classifier's AUC between the labelled sets), run in registry order; their results hold evidence, and
`headline_verdicts` (`BenchmarkAudit.verdicts`) turns them into verdicts at a level, the one place a result meets
one; with known labels (`AuditTarget.contaminated`), each signal against the truth, the blind baseline beside it.
Per-item work goes through `run_stage(stage, items, compute)`, which the command line wraps to store and resume
finished chunks.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from jaxcontam.detect.benchmark_results import Accuracy, GroundTruthResult, accuracy, ground_truth_result
from jaxcontam.detect.pacost.settings import PacostSettings
from jaxcontam.detect.registry import CORPUS_STAGES, DEFAULT_DETECTORS, DETECTORS
from jaxcontam.detect.registry import settings_of as stage_settings
from jaxcontam.detect.stage import AuditTarget, BuiltInResults, DetectorStage, ReferenceModel, StageInput
from jaxcontam.detect.verdict import Verdict, check_level
from jaxcontam.engine.finite import NonFiniteScoresError
from jaxcontam.errors import JaxcontamError
from jaxcontam.stage_clock import stage as timed
from jaxcontam.stats.paired import DEFAULT_RESAMPLES

__all__ = [
    "DEFAULT_DETECTORS",
    "DETECTORS",
    "AuditSettings",
    "AuditTarget",
    "BenchmarkAudit",
    "ReferenceModel",
    "audit_benchmark",
    "headline_verdicts",
]


def headline_verdicts(results: Mapping[str, Any], alpha: float) -> tuple[Verdict, ...]:
    """Each registered detector's headline verdict on a run's results at level `alpha` (`DetectorStage.headline`),
    in registry order (detectors that state none, and those that did not run, left out): where results become
    verdicts, for the audit (then corrected by its sweep), the Python API and an older summary.json's reader."""
    verdicts = []
    for name, stage in DETECTORS.items():
        if name in results and stage.headline is not None:
            verdict = stage.headline(results[name], alpha)
            if verdict is not None:
                verdicts.append(verdict)
    return tuple(verdicts)


@dataclasses.dataclass(frozen=True)
class AuditSettings:
    """Which detectors run (the corpus stages, ConTAM, run too: they have a result only with a corpus's metrics),
    each one's settings (`detector_settings`: stage name -> an instance of the stage's settings type; a stage left
    out runs with its type's defaults), the Monte Carlo resamples (sized to the sweep) and seed. No level: the
    verdicts are made from the results (`BenchmarkAudit.verdicts`)."""

    detectors: tuple[str, ...] = DEFAULT_DETECTORS
    detector_settings: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    resamples: int = DEFAULT_RESAMPLES
    seed: int = 0

    def __post_init__(self):
        known = DETECTORS.names()
        unknown = sorted((set(self.detectors) | set(self.detector_settings)) - set(known))
        if unknown:
            raise JaxcontamError(f"unknown detector(s) {', '.join(unknown)}: use some of {', '.join(known)}")
        for name, value in self.detector_settings.items():
            expected = DETECTORS[name].settings_type
            if not isinstance(value, expected):
                raise JaxcontamError(f"{name} settings must be a {expected.__name__}, got {type(value).__name__}")

    def settings_of(self, name: str) -> Any:
        """The settings detector `name` runs with."""
        return stage_settings(name, self.detector_settings)

    @property
    def pacost(self) -> PacostSettings:
        return self.settings_of("pacost")

    def stages(self) -> list[DetectorStage]:
        """The detectors that run, in registry order."""
        return [stage for name, stage in DETECTORS.items() if name in self.detectors or name in CORPUS_STAGES]


@dataclasses.dataclass(frozen=True)
class BenchmarkAudit(BuiltInResults):
    """Everything one model's audit found on one benchmark: `results` holds each detector that gave a result (stage
    name -> its result; ConTAM's only with a corpus); accuracy and the ground-truth comparison are None where their
    inputs are missing."""

    benchmark: str
    split: str | None
    rows: list[dict] = dataclasses.field(repr=False)
    accuracy: Accuracy | None
    results: Mapping[str, Any]
    ground_truth: GroundTruthResult | None
    seconds: dict[str, float]

    def verdicts(self, alpha: float) -> tuple[Verdict, ...]:
        """Each detector's headline verdict at level `alpha` (checked: `detect.verdict.check_level`), uncorrected:
        an audit's sweep corrects the swept ones across its runs (`audit.sweep`)."""
        return headline_verdicts(self.results, check_level(alpha))

    def to_dict(self) -> dict:
        """summary.json's entry, without the per-item rows and the timings (a resumed run's outputs equal an
        uninterrupted run's)."""

        def plain(value):
            return None if value is None else value.to_dict()

        detectors = {
            name: stage.summary_entry(self.results[name]) if name in self.results else None
            for name, stage in DETECTORS.items()
        }
        return (
            {"benchmark": self.benchmark, "split": self.split, "n_items": len(self.rows)}
            | {"accuracy": plain(self.accuracy)}
            | detectors
            | {"ground_truth": plain(self.ground_truth)}
        )


@contextlib.contextmanager
def naming_items(where: str, items: Sequence):
    """A NaN or inf score (`engine.finite`) met while a stage works on `items` says where: the benchmark, the stage
    and the items (the engine numbers sequences, several per item)."""
    try:
        yield
    except NonFiniteScoresError as error:
        if error.where:
            raise
        ids = [str(item.id) for item in items]
        shown = f"items {ids[0]} .. {ids[-1]} ({len(ids)})" if len(ids) > 1 else f"item {''.join(ids) or '?'}"
        raise error.naming((), f"{where}, {shown}") from None


def chunk_naming_items(compute: Callable, where: str) -> Callable:
    """`compute` of a chunk, its NaN or inf scores named by the chunk's items (`naming_items`)."""

    def named(chunk):
        with naming_items(where, chunk):
            return compute(chunk)

    return named


def _whole(name, key, items, compute):
    return compute(items)


def audit_benchmark(
    model,
    target: AuditTarget,
    settings: AuditSettings = AuditSettings(),
    run_stage: Callable = _whole,
    reference: ReferenceModel | None = None,
) -> BenchmarkAudit:
    """Run `settings.detectors` on `target` and summarise; `run_stage(name, key, items, compute)` runs a stage's
    per-item work (`key`: its resume key, what a store of finished chunks is named by); `reference`: the audit's
    reference model, which every stage reads as `StageInput.reference` (None: the stages that need one state "not
    tested")."""
    benchmark, items = target.benchmark, list(target.benchmark)
    if len(target.rephrasings) != len(items):
        raise JaxcontamError(
            f"{benchmark.name}: {len(target.rephrasings)} rephrasings for {len(items)} items: give "
            "one (or None) per item, in benchmark order"
        )
    truth = [None] * len(items) if target.contaminated is None else list(target.contaminated)
    rows = [
        {"id": item.id, "ground_truth_contaminated": None if t is None else bool(t)} for item, t in zip(items, truth)
    ]
    stage_input = StageInput(model, target, settings.seed, settings.resamples, reference=reference)
    stages = settings.stages()
    seconds = {}
    # every stage's key before any stage works: a key that checks its settings against the model (DC-PDD's frequency
    # table against its tokenizer) refuses them before the hours of another stage's work, not after
    keys = {s.name: s.per_item.key(stage_input, settings.settings_of(s.name)) for s in stages if s.per_item}
    for stage in stages:  # per-item work first: every stage's result may read every column
        work = stage.per_item
        if work is None:
            continue
        stage_settings = settings.settings_of(stage.name)
        start = time.perf_counter()
        key = keys[stage.name]
        with timed(work.clock) if work.clock else contextlib.nullcontext():
            compute = chunk_naming_items(work.compute(stage_input, stage_settings), f"{benchmark.name}: {stage.name}")
            records = run_stage(stage.name, key, items, compute)
        work.check(stage.name, stage_settings, records)
        seconds[stage.name] = time.perf_counter() - start
        for row, record in zip(rows, records, strict=True):
            row.update({k: v for k, v in record.items() if k != "id"})
            if stage.columns is not None:
                row.update(stage.columns(stage_settings, row))
    if target.ngram is not None:
        for row in rows:
            metrics = target.ngram[row["id"]]
            row.update(
                {k: v for k, v in metrics.items() if k not in ("benchmark", "id", "num_tokens")},
                ngram_num_tokens=metrics.get("num_tokens"),
            )
    provided = set().union(*(stage.provides(settings.settings_of(stage.name)) for stage in stages))
    results = {}
    for stage in stages:
        if not set(stage.reads) <= provided:
            continue  # the columns it reads come from a detector that did not run (ConTAM without PaCoST)
        start = time.perf_counter()
        with timed(stage.result_clock), naming_items(f"{benchmark.name}: {stage.name}", items):
            result = stage.result(stage_input, settings.settings_of(stage.name), rows)
        if result is not None:  # None: the stage had nothing to work on (ConTAM without a corpus)
            results[stage.name] = result
        if stage.per_item is None:
            seconds[stage.name] = time.perf_counter() - start
    ran_pacost = "pacost" in results
    has_contam = "contam" in results
    with timed("verdicts"):
        return BenchmarkAudit(
            benchmark=benchmark.name,
            split=benchmark.split,
            rows=rows,
            accuracy=accuracy(rows) if ran_pacost else None,
            results=results,
            ground_truth=ground_truth_result(
                rows,
                settings.pacost if ran_pacost else None,
                has_contam,
                tuple(results.get("likelihood", ())),
                results.get("blind_baseline"),
            ),
            seconds=seconds,
        )
