# pyright: standard
"""The audit of one model on one benchmark, shared by `jaxcontam audit` and the in-training `AuditCallback`.

    result = audit_benchmark(model, AuditTarget(benchmark, rephrasings), AuditSettings())
    result.pacost.verdict.pvalue, result.likelihood["min_k_plus_plus"].mean, result.to_dict()

`model` is any `jaxcontam.LanguageModel`-backed model (a loaded checkpoint, or a Flax model wrapped by
`jaxcontam.flax_models`). Detectors: `pacost` (answers, confidences and the paired test), `likelihood` (mean log-prob,
zlib, Min-K%, Min-K%++ of each item's solved text) and `exchangeability` (Oren et al.'s test of the items in
benchmark order). With per-item ConTAM metrics (`AuditTarget.ngram`) and PaCoST's correctness, the EPG verdict
too; with known labels (`AuditTarget.contaminated`), each signal against the truth. Per-item work goes through
`run_stage(name, items, compute)`, which the command line wraps to store and resume finished chunks.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from jaxcontam.detect.contam import ContamResult, ContamSettings, contam_result
from jaxcontam.detect.exchangeability import (
    ITEM_SEPARATOR,
    ExchangeabilityTestResult,
    exchangeability_test,
    fitting_chunks,
)
from jaxcontam.detect.likelihood import LikelihoodSettings, detector_scores
from jaxcontam.detect.pacost import (
    PacostResult,
    PacostSettings,
    calibrated_verdict,
    needs_answer,
    pacost_records,
    pacost_result,
)
from jaxcontam.detect.status import TestOutcome
from jaxcontam.detect.summaries import (
    Accuracy,
    DetectorSummary,
    GroundTruthResult,
    accuracy,
    ground_truth_result,
    likelihood_result,
)
from jaxcontam.engine import score_logprobs
from jaxcontam.errors import JaxcontamError
from jaxcontam.stage_clock import stage as timed
from jaxcontam.stats.paired import DEFAULT_RESAMPLES

if TYPE_CHECKING:
    from jaxcontam.data.item import Benchmark

DETECTORS = ("pacost", "likelihood", "exchangeability")
DEFAULT_DETECTORS = ("pacost", "likelihood")  # an audit's model-based stages unless [exchangeability] adds its test


@dataclasses.dataclass(frozen=True)
class AuditTarget:
    """One benchmark: its items in order, each item's accepted rephrasing (or None), optional evidence and truth.

    `ngram`: item id -> ConTAM metrics (`ngram.audit.item_rows`); `contaminated`: True / False / None per item;
    `reference`: a reference model's PaCoST records of the same items (`pacost_records`), for the calibrated verdict.
    """

    benchmark: Benchmark
    rephrasings: Sequence[str | None]
    contaminated: Sequence[bool | None] | None = None
    ngram: Mapping[str, dict] | None = None
    reference: tuple[str, Sequence[dict]] | None = None  # (its name, a clean reference model's PaCoST records)


@dataclasses.dataclass(frozen=True)
class AuditSettings:
    detectors: tuple[str, ...] = DEFAULT_DETECTORS
    pacost: PacostSettings = PacostSettings()
    k: float = LikelihoodSettings.k  # Min-K% and Min-K%++ fraction
    chunks: int = 10  # exchangeability test: at least this many contiguous chunks (more if needed to fit)
    permutations: int = 10
    contam: ContamSettings = ContamSettings()
    resamples: int = DEFAULT_RESAMPLES  # Monte Carlo flips of PaCoST's permutation test (sized to the sweep)
    seed: int = 0

    def __post_init__(self):
        unknown = sorted(set(self.detectors) - set(DETECTORS))
        if unknown:
            raise JaxcontamError(f"unknown detector(s) {', '.join(unknown)}: use some of {', '.join(DETECTORS)}")


@dataclasses.dataclass(frozen=True)
class ExchangeabilityResult:
    """The test with the chunking used, or `reason` why it could not run (then `test` is None)."""

    chunks: int | None
    permutations: int
    test: ExchangeabilityTestResult | None
    reason: str | None = None

    @property
    def pvalue(self) -> float:
        return math.nan if self.test is None else self.test.pvalue

    @property
    def status(self) -> TestOutcome:
        if self.test is not None:
            return TestOutcome.tested()
        assert self.reason is not None  # set exactly when no test ran
        return TestOutcome.no_test(self.reason)

    def to_dict(self) -> dict:
        if self.test is None:
            return {"pvalue": math.nan, "status": self.status.label, "permutations": self.permutations}
        return {
            "statistic": self.test.statistic,
            "pvalue": self.test.pvalue,
            "status": self.status.label,
            "chunks": self.chunks,
            "permutations": self.permutations,
        }


@dataclasses.dataclass(frozen=True)
class BenchmarkAudit:
    """Everything one model's audit found on one benchmark; a detector that did not run is None."""

    benchmark: str
    split: str | None
    rows: list[dict] = dataclasses.field(repr=False)
    accuracy: Accuracy | None
    pacost: PacostResult | None
    likelihood: dict[str, DetectorSummary] | None
    exchangeability: ExchangeabilityResult | None
    contam: ContamResult | None
    ground_truth: GroundTruthResult | None
    seconds: dict[str, float]

    def to_dict(self) -> dict:
        """summary.json's entry, without the per-item rows and the timings (a resumed run's outputs equal an
        uninterrupted run's)."""

        def plain(value):
            return None if value is None else value.to_dict()

        return {
            "benchmark": self.benchmark,
            "split": self.split,
            "n_items": len(self.rows),
            "accuracy": plain(self.accuracy),
            "pacost": plain(self.pacost),
            "likelihood": None if self.likelihood is None else {k: v.to_dict() for k, v in self.likelihood.items()},
            "exchangeability": plain(self.exchangeability),
            "contam": plain(self.contam),
            "ground_truth": plain(self.ground_truth),
        }


def likelihood_records(model, benchmark, items, k: float) -> list[dict]:
    """Reference-free detectors of each item's solved text (prompt + gold answer)."""
    texts = [benchmark.solved_text(item) for item in items]
    scores = score_logprobs(model, [model.tokenizer.encode(t) for t in texts], with_stats=True)
    return [{"id": item.id, **detector_scores(s, text, k)} for item, text, s in zip(items, texts, scores)]


def exchangeability_result(model, benchmark, settings: AuditSettings) -> ExchangeabilityResult:
    """The items in benchmark order, in the fewest chunks (>= settings.chunks) that fit the model's context."""
    tokenizer = model.tokenizer
    examples = [
        tokenizer.encode(benchmark.solved_text(item) + ITEM_SEPARATOR, add_special_tokens=False) for item in benchmark
    ]
    chunks = fitting_chunks([len(e) for e in examples], model.config.max_position - 1, settings.chunks)
    if chunks is None:
        return ExchangeabilityResult(
            None, settings.permutations, None, "no chunking of the items (>= 2 per chunk) fits the model's context"
        )
    prefix = [tokenizer.bos_token_id] if tokenizer.bos_token_id is not None else []
    test = exchangeability_test(
        model,
        examples,
        num_chunks=chunks,
        permutations=settings.permutations,
        seed=settings.seed,
        prefix=prefix,
        progress=True,
    )
    return ExchangeabilityResult(chunks, settings.permutations, test)


def _pacost_columns(record: dict, confidence: str) -> dict:
    """Accuracy (on the original questions) and the chosen confidence pair with whether it enters the test."""
    original, rephrased = record[f"{confidence}_original"], record[f"{confidence}_rephrased"]
    answered = not needs_answer(confidence) or bool(record["answer_original"] and record["answer_rephrased"])
    kept = bool(record["rephrase"]) and answered and all(math.isfinite(v) for v in (original, rephrased))
    return {
        "correct": record["correct_original"],
        "correct_norm": record["correct_norm_original"],
        "pacost_conf_original": original,
        "pacost_conf_rephrased": rephrased,
        "pacost_kept": kept,
    }


def _pacost(rows: list[dict], target: AuditTarget, settings: AuditSettings) -> PacostResult:
    """The authors' verdict, and beside it the calibrated one when the target has a reference model's records."""
    result = pacost_result(rows, settings.pacost, settings.seed, settings.resamples)
    if target.reference is None:
        return result
    name, records = target.reference
    calibrated = calibrated_verdict(rows, records, name, settings.pacost, settings.seed, settings.resamples)
    return dataclasses.replace(result, calibrated=calibrated)


def _whole(name, items, compute):
    return compute(items)


def audit_benchmark(
    model, target: AuditTarget, settings: AuditSettings = AuditSettings(), run_stage: Callable = _whole
) -> BenchmarkAudit:
    """Run `settings.detectors` on `target` and summarise; `run_stage(name, items, compute)` runs per-item work."""
    benchmark, items = target.benchmark, list(target.benchmark)
    if len(target.rephrasings) != len(items):
        raise JaxcontamError(
            f"{benchmark.name}: {len(target.rephrasings)} rephrasings for {len(items)} items: give "
            "one (or None) per item, in benchmark order"
        )
    rephrase_of = {item.id: r for item, r in zip(items, target.rephrasings)}
    truth = [None] * len(items) if target.contaminated is None else list(target.contaminated)
    rows = [
        {"id": item.id, "ground_truth_contaminated": None if t is None else bool(t)} for item, t in zip(items, truth)
    ]
    seconds = {}

    def stage(name, compute):
        start = time.perf_counter()
        records = run_stage(name, items, compute)
        seconds[name] = time.perf_counter() - start
        for row, record in zip(rows, records, strict=True):
            row.update({k: v for k, v in record.items() if k != "id"})

    pacost_settings = settings.pacost
    if "pacost" in settings.detectors:
        stage(
            "pacost",
            lambda chunk: pacost_records(
                model, benchmark, chunk, [rephrase_of[it.id] for it in chunk], pacost_settings
            ),
        )
        confidence = pacost_settings.confidence
        assert confidence is not None  # PacostSettings.__post_init__ fills it from the preset
        for row in rows:
            row.update(_pacost_columns(row, confidence))
    if "likelihood" in settings.detectors:
        with timed("score"):
            stage("likelihood", lambda chunk: likelihood_records(model, benchmark, chunk, settings.k))
    exchangeability = None
    if "exchangeability" in settings.detectors:
        start = time.perf_counter()
        with timed("score"):
            exchangeability = exchangeability_result(model, benchmark, settings)
        seconds["exchangeability"] = time.perf_counter() - start
    if target.ngram is not None:
        for row in rows:
            metrics = target.ngram[row["id"]]
            row.update(
                {k: v for k, v in metrics.items() if k not in ("benchmark", "id", "num_tokens")},
                ngram_num_tokens=metrics.get("num_tokens"),
            )
    ran_pacost = "pacost" in settings.detectors
    has_contam = target.ngram is not None and ran_pacost  # EPG needs the correctness PaCoST measures
    ran_likelihood = "likelihood" in settings.detectors
    with timed("epg"):
        contam = contam_result(rows, settings.contam) if has_contam else None
    with timed("verdicts"):
        return BenchmarkAudit(
            benchmark=benchmark.name,
            split=benchmark.split,
            rows=rows,
            accuracy=accuracy(rows) if ran_pacost else None,
            pacost=_pacost(rows, target, settings) if ran_pacost else None,
            likelihood=likelihood_result(rows) if ran_likelihood else None,
            exchangeability=exchangeability,
            contam=contam,
            ground_truth=ground_truth_result(rows, pacost_settings if ran_pacost else None, has_contam, ran_likelihood),
            seconds=seconds,
        )
