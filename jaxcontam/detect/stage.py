# pyright: standard
"""A detector as a registered stage of the audit core (`detect.audit_core.audit_benchmark` loops over them).

A `DetectorStage` names the detector, its settings type and config table (and what of it summary.json records), its
per-item work (`records`, run in chunks that `jaxcontam audit` stores and resumes under `resume_key`), the columns it
derives per item, its result (`result`, from every item's row), its headline verdict (three outcomes:
`detect.verdict.Verdict`) and its view (`DetectorView`: console phrase, report section, figures). The console, the
report, the config reader and the audit's multiple-testing sweep loop over the registry (`detect.registry.DETECTORS`)
and name no detector. A detector, built-in (`jaxcontam/detectors/`) or plug-in, is its own module plus one
registration line (docs/adding_a_detector.md).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from jaxcontam.dataclass_config import non_default_values
from jaxcontam.errors import JaxcontamError

if TYPE_CHECKING:
    from jaxcontam.data.item import Benchmark, Item
    from jaxcontam.detect.benchmark_results import DetectorSummary
    from jaxcontam.detect.contam import ContamResult
    from jaxcontam.detect.exchangeability import ExchangeabilityResult
    from jaxcontam.detect.pacost.results import PacostResult
    from jaxcontam.detect.verdict import Verdict

Settings = TypeVar("Settings")
Result = TypeVar("Result")


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

    def rephrasing_of(self) -> dict[str, str | None]:
        """Item id -> its accepted rephrasing (or None)."""
        return {item.id: r for item, r in zip(self.benchmark, self.rephrasings)}


NO_REFERENCE_MODEL = "no reference model"  # the reason of a detector that needs a reference model and has none


@dataclasses.dataclass(frozen=True)
class ReferenceModel:
    """A model believed clean on the audited benchmarks (a base checkpoint, another family), loaded once per audit and
    given to every detector (`StageInput.reference`): `name` is how summary.json and the report name it (its path),
    `model` a loaded model of the audited model's interface, with its own tokenizer. A detector that uses it names it
    in its resume key (`PerItemWork.resume_key`: the stored chunks' key holds the audited model, not the reference);
    one that needs it and has none states "not tested" with the reason `NO_REFERENCE_MODEL`."""

    name: str
    model: Any


@dataclasses.dataclass(frozen=True)
class StageInput:
    """What every stage of one (model, benchmark) reads: the model, the target, the audit-wide seed and Monte Carlo
    resamples, and the audit's reference model (None without one: `--reference-model`, `reference_model` in the TOML
    file). No level: a result holds evidence, and `DetectorStage.headline` gets the audit's level."""

    model: Any
    target: AuditTarget
    seed: int
    resamples: int
    reference: ReferenceModel | None = dataclasses.field(default=None, kw_only=True)


def fingerprint(key: dict) -> str:
    """A short stable hash of a JSON-able key (a stage's stored chunks are named by it)."""
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:16]


@dataclasses.dataclass(frozen=True)
class PerItemWork(Generic[Settings]):
    """A stage's per-item work: `records(input, settings, items)` gives one JSON-able dict per item of a chunk
    (`jaxcontam audit` stores finished chunks and resumes them), holding its id and the columns `writes(settings)`
    declares; `resume_key(input, settings)` is everything besides the model and benchmark those records depend on
    (`key` adds the declared columns, so a stored chunk is reused only for the columns it holds; the audit core takes
    every stage's key before any stage works, so a key may refuse settings that do not fit the model); `clock` the
    `stage_clock` stage its time counts as (None: the work times its own parts)."""

    records: Callable[[StageInput, Settings, Sequence[Item]], list[dict]]
    resume_key: Callable[[StageInput, Settings], dict]
    writes: Callable[[Settings], Sequence[str]]
    clock: str | None = None

    def compute(self, stage_input: StageInput, settings: Settings) -> Callable[[Sequence[Item]], list[dict]]:
        """The records of a chunk of items, as `run_stage` calls it."""
        return lambda chunk: self.records(stage_input, settings, chunk)

    def key(self, stage_input: StageInput, settings: Settings) -> dict:
        """What its stored chunks are named by: its resume key and the columns it computes (a confidence or score
        added later changes it, so an older folder's chunks are computed again, never read without the column)."""
        return self.resume_key(stage_input, settings) | {"columns": sorted(self.writes(settings))}

    def check(self, name: str, settings: Settings, records: Sequence[dict]) -> None:
        """Refuse records that lack a declared column (a stage that writes other columns than it declares)."""
        declared = set(self.writes(settings)) | {"id"}
        for record in records:
            if not declared <= set(record):
                missing = ", ".join(sorted(declared - set(record)))
                raise JaxcontamError(
                    f"detector {name!r}: its records lack the column(s) {missing} its per-item work declares "
                    "(PerItemWork.writes); declare exactly the columns `records` writes"
                )


@dataclasses.dataclass(frozen=True)
class DetectorView(Generic[Result]):
    """How a detector shows itself. console(result): its phrase on the run's console line; section(result, figures):
    its report section (HTML, every input text escaped: `report.html_parts.text`; `figures`: the run's plots by kind);
    figures(run, items, plots_dir, stem): its PNGs by kind. Each may be None (nothing to show there)."""

    console: Callable[[Result], str] | None = None
    section: Callable[[Result, Mapping[str, Path]], str] | None = None
    figures: Callable[[Any, list[dict], Path, str], dict[str, Path]] | None = None


@dataclasses.dataclass(frozen=True)
class DetectorStage(Generic[Settings, Result]):
    """One detector of the audit core.

    per_item: its per-item work (`PerItemWork`, with the columns it writes), or None for a detector that works on the
        benchmark as a whole.
    columns(settings, row): the per-item columns derived from an item's stored record (not stored themselves), the
        ones `derives` names.
    reads: the per-item columns of other stages its result needs (ConTAM reads PaCoST's `correct`); without a stage
        that runs and writes or derives them, the detector has no result.
    result(input, settings, rows): the detector's result from every item's row (all stages' columns, ngram too),
        timed as `result_clock`; None when it has nothing to work on (ConTAM without a corpus).
    summary_entry(result) / read_entry(entry): summary.json's entry, and the result read back from it.
    headline(result, alpha): its headline verdict at the audit's level `alpha`, the one place its result meets a
        level (None: the detector states no verdict, e.g. scores without a test); a verdict with `swept` enters the
        audit's multiple-testing family, whose decision is made on the verdict (`Verdict.decided`), never on the
        result.
    title: its name as a reader sees it; view: how it shows itself on the console and in the report (`DetectorView`).
    parse_table(table, where): its settings from its config table (`[name]`, keys checked); None: the settings
        type's fields, checked by `dataclass_config.table_values`.
    settings_entry(settings): what summary.json's `settings` records of it (`record_settings`); None: `{name: the
        fields that differ from their defaults}`.
    """

    name: str
    settings_type: type[Settings]
    result_type: type
    result: Callable[[StageInput, Settings, list[dict]], Result | None]
    summary_entry: Callable[[Result], dict]
    read_entry: Callable[[dict], Result]
    per_item: PerItemWork[Settings] | None = None
    columns: Callable[[Settings, dict], dict] | None = None
    derives: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()
    result_clock: str = "verdicts"
    title: str = ""
    headline: Callable[[Result, float], Verdict | None] | None = None
    parse_table: Callable[[dict, str], Settings] | None = None
    view: DetectorView[Result] = DetectorView()
    settings_entry: Callable[[Settings], dict] | None = None

    @property
    def heading(self) -> str:
        """Its name as a reader sees it (the report's section title)."""
        return self.title or self.name

    def provides(self, settings: Settings) -> set[str]:
        """The per-item columns it gives every other stage: the ones its work writes and the ones it derives."""
        return set(self.derives) | (set() if self.per_item is None else set(self.per_item.writes(settings)))

    def record_settings(self, settings: Settings) -> dict:
        """summary.json's `settings` entries of this detector (its `settings_entry`, else its non-default fields
        under its name), so that no detector's settings go unrecorded."""
        if self.settings_entry is not None:
            return self.settings_entry(settings)
        return {self.name: non_default_values(settings)}


class BuiltInResults:
    """The built-in detectors' results by name, from `results` (stage name -> result; None where a detector did not
    run): shared by the audit core's `BenchmarkAudit` and summary.json's `RunEntry`."""

    results: Mapping[str, Any]

    @property
    def pacost(self) -> PacostResult | None:
        return self.results.get("pacost")

    @property
    def likelihood(self) -> dict[str, DetectorSummary] | None:
        return self.results.get("likelihood")

    @property
    def exchangeability(self) -> ExchangeabilityResult | None:
        return self.results.get("exchangeability")

    @property
    def contam(self) -> ContamResult | None:
        return self.results.get("contam")
