# pyright: standard
"""ConStat across the audit's models (`stats.constat.constat_test`; Dekoninck et al., NeurIPS 2024): is a model's
accuracy on a benchmark's original items higher than its accuracy on their rephrasings predicts, by the relation the
reference models (believed clean: `[constat] reference_models`) show between the two?

Per benchmark and audited model (every model of the audit not named a reference): the original benchmark is each
item's correctness on its original question (PaCoST's `correct_original`), the reference benchmark the same item's
correctness on its accepted rephrasing (`correct_rephrased`), over the items with both measured for every model;
the random guesser sits at the items' chance accuracy (1 / options for multiple choice, 0 for generated answers) on
both. With fewer than `MIN_REFERENCE_MODELS` reference models on the benchmark, items missing, or reference models
whose accuracies coincide so that no replicate keeps 5 distinct ones, the run is not tested, with the reason.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from jaxcontam.dataclass_config import check_ranges, ranged
from jaxcontam.detect.family_stage import FamilyInput, FamilyRun, RunKey
from jaxcontam.detect.json_values import json_float
from jaxcontam.detect.status import TestOutcome
from jaxcontam.errors import JaxcontamError
from jaxcontam.stats.constat import MIN_REFERENCE_MODELS, constat_test
from jaxcontam.stats.validation import StatsInputError

READS = ("correct_original", "correct_rephrased")  # PaCoST's per-item correctness on each side
CI_LEVEL = 0.95  # the level of the interval summary.json records


@dataclasses.dataclass(frozen=True)
class ConStatSettings:
    """The [constat] table (which turns it on): the reference models by their [[model]] names, and the test's
    bootstrap (`stats.constat.constat_test`)."""

    reference_models: tuple[str, ...] = ()  # [[model]] names believed uncontaminated: the reference family
    resamples: int = ranged(1000, at_least=2)  # bootstrap replicates (the authors' default)
    min_delta: float = ranged(0.0, at_least=0, below=1)  # H0: delta <= min_delta (the authors' p_value_delta)
    bootstrap_models: bool = True  # resample the reference models too (with more than 5, as the authors)

    def __post_init__(self):
        check_ranges(self, "[constat]")
        repeated = sorted({name for name in self.reference_models if self.reference_models.count(name) > 1})
        if repeated:
            raise JaxcontamError(f"[constat] reference_models names {', '.join(repeated)} twice: name each once")


def check_references(settings: ConStatSettings, models: Sequence[str], where: str) -> None:
    """Refuse a reference model that is no [[model]] of the audit."""
    unknown = [name for name in settings.reference_models if name not in models]
    if unknown:
        raise JaxcontamError(
            f"{where} [constat] reference_models: {', '.join(map(repr, unknown))} is no [[model]] of this audit "
            f"(its models: {', '.join(models)}); name each reference model by its [[model]] name"
        )


@dataclasses.dataclass(frozen=True)
class ConStatEntry:
    """ConStat on one audited (model, benchmark). statistic: delta, the mean over bootstrap replicates of the
    model's original accuracy minus the one the reference models predict from its rephrased accuracy; pvalue: of
    delta <= min_delta (the authors' basic-bootstrap rule; it can be 0); ci95: delta's basic bootstrap interval;
    predicted: the mean predicted original accuracy; accuracy_original / accuracy_rephrased: the model's on the
    items used (`n`); chance: the random guesser's accuracy; n_models: the reference models; `status`: why no
    test ran."""

    model: str
    benchmark: str
    split: str | None
    statistic: float
    pvalue: float
    ci95: tuple[float, float]
    predicted: float
    accuracy_original: float
    accuracy_rephrased: float
    chance: float
    n: int
    n_models: int
    status: TestOutcome

    @property
    def key(self) -> RunKey:
        return (self.model, self.benchmark, self.split)

    def to_dict(self) -> dict:
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return fields | {"ci95": list(self.ci95), "status": self.status.label}

    @classmethod
    def from_dict(cls, entry: dict) -> ConStatEntry:
        low, high = entry["ci95"]
        return cls(
            model=entry["model"],
            benchmark=entry["benchmark"],
            split=entry["split"],
            statistic=json_float(entry["statistic"]),
            pvalue=json_float(entry["pvalue"]),
            ci95=(json_float(low), json_float(high)),
            predicted=json_float(entry["predicted"]),
            accuracy_original=json_float(entry["accuracy_original"]),
            accuracy_rephrased=json_float(entry["accuracy_rephrased"]),
            chance=json_float(entry["chance"]),
            n=entry["n"],
            n_models=entry["n_models"],
            status=TestOutcome.from_label(entry["status"]),
        )


@dataclasses.dataclass(frozen=True)
class ConStatFamilyResult:
    """ConStat over the audit: the reference models named, the bootstrap's replicates, and one entry per audited
    (model, benchmark), in run order (none for the reference models themselves)."""

    reference_models: tuple[str, ...]
    resamples: int
    entries: tuple[ConStatEntry, ...]

    def to_dict(self) -> dict:
        return {
            "reference_models": list(self.reference_models),
            "resamples": self.resamples,
            "entries": [entry.to_dict() for entry in self.entries],
        }

    @classmethod
    def from_dict(cls, entry: dict) -> ConStatFamilyResult:
        return cls(
            tuple(entry["reference_models"]),
            entry["resamples"],
            tuple(ConStatEntry.from_dict(e) for e in entry["entries"]),
        )


def _finite(value) -> bool:
    return value is not None and math.isfinite(value)


def shared_items(runs: Sequence[FamilyRun]) -> list[str]:
    """The ids (in the first run's order) of the items whose correctness on both sides every run measured."""
    measured = [{row["id"] for row in run.rows if all(_finite(row[column]) for column in READS)} for run in runs]
    common = set.intersection(*measured)
    return [row["id"] for row in runs[0].rows if row["id"] in common]


def correctness(run: FamilyRun, ids: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The run's correctness on the original and on the rephrased questions of items `ids`, in that order."""
    by_id = {row["id"]: row for row in run.rows}
    original, rephrased = ([by_id[i][column] for i in ids] for column in READS)
    return np.array(original, dtype=np.float64), np.array(rephrased, dtype=np.float64)


def chance_accuracy(run: FamilyRun, ids: Sequence[str]) -> float:
    """A uniform random guesser's expected accuracy on items `ids`: 1 / options (multiple choice), 0 (generated)."""
    options = [run.benchmark.by_id()[i].choices for i in ids]
    return float(np.mean([0.0 if choices is None else 1.0 / len(choices) for choices in options]))


def _untested(run: FamilyRun, reason: str, n: int, n_models: int, chance: float = math.nan) -> ConStatEntry:
    nan = math.nan
    model, benchmark, split = run.key
    return ConStatEntry(
        model, benchmark, split, nan, nan, (nan, nan), nan, nan, nan, chance, n, n_models, TestOutcome.no_test(reason)
    )


def constat_entry(
    run: FamilyRun, references: Sequence[FamilyRun], settings: ConStatSettings, seed: int
) -> ConStatEntry:
    """ConStat on one audited run against the reference models' runs of the same benchmark."""
    if len(references) < MIN_REFERENCE_MODELS:
        named = ", ".join(r.model for r in references) or "none"
        return _untested(
            run,
            f"{len(references)} reference model(s) on this benchmark ({named}); ConStat needs at least "
            f"{MIN_REFERENCE_MODELS}: name more in [constat] reference_models",
            0,
            len(references),
        )
    ids = shared_items([run, *references])
    if not ids:
        return _untested(
            run, "no item has its original and its rephrased question answered by every model", 0, len(references)
        )
    chance = chance_accuracy(run, ids)
    original, rephrased = correctness(run, ids)
    sides = [correctness(reference, ids) for reference in references]
    try:
        result = constat_test(
            original,
            rephrased,
            np.stack([side[0] for side in sides]),
            np.stack([side[1] for side in sides]),
            resamples=settings.resamples,
            seed=seed,
            bootstrap_models=settings.bootstrap_models,
            chance=(chance, chance),
            min_delta=settings.min_delta,
        )
    except StatsInputError as error:  # reference models that score too alike: no replicate keeps 5 distinct ones
        return _untested(run, str(error), len(ids), len(references), chance)
    interval = result.confidence_interval(CI_LEVEL)
    model, benchmark, split = run.key
    return ConStatEntry(
        model,
        benchmark,
        split,
        result.statistic,
        result.pvalue,
        (interval.low, interval.high),
        result.predicted,
        result.actual,
        float(rephrased.mean()),
        chance,
        len(ids),
        len(references),
        TestOutcome.tested(),
    )


def constat_result(family: FamilyInput, settings: ConStatSettings) -> ConStatFamilyResult:
    """ConStat on every audited (model, benchmark) of the audit, against the reference models' runs of the
    benchmark, each test's bootstrap seeded with the audit's seed."""
    by_benchmark: dict[tuple[str, str | None], list[FamilyRun]] = {}
    for run in family.runs:
        by_benchmark.setdefault((run.benchmark.name, run.benchmark.split), []).append(run)
    references = set(settings.reference_models)
    entries = {}
    for runs in by_benchmark.values():
        family_references = [run for run in runs if run.model in references]
        for run in runs:
            if run.model not in references:
                entries[run.key] = constat_entry(run, family_references, settings, family.seed)
    ordered = [entries[run.key] for run in family.runs if run.key in entries]
    return ConStatFamilyResult(settings.reference_models, settings.resamples, tuple(ordered))
