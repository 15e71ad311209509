# pyright: standard
"""A detector across the audit's models (a sweep-level stage), registered in `detect.registry.FAMILY_DETECTORS`.

Some tests need a family of models, not one: ConStat compares each audited model's accuracy with what reference
models believed clean predict. A `FamilyStage` runs once per audit, after every (model, benchmark) has been audited
(`audit.run.write_outputs`), on every run's per-item rows cut to the columns it declares it `reads` (and `id`), with
the benchmark whose items they are. It owns its config table (`[name]`, which turns it on), its result over the whole
audit (summary.json's top-level `family`), a headline verdict per (model, benchmark) it tests (each run's `verdicts`,
so the verdict table, the console and `--fail-on` see them) and its view: console lines and a report section
(docs/adding_a_detector.md).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from jaxcontam.dataclass_config import non_default_values
from jaxcontam.errors import JaxcontamError

if TYPE_CHECKING:
    from jaxcontam.data.item import Benchmark
    from jaxcontam.detect.verdict import Verdict

Settings = TypeVar("Settings")
Result = TypeVar("Result")
RunKey = tuple[str, str, "str | None"]  # (model, benchmark, split): the run a verdict belongs to


@dataclasses.dataclass(frozen=True)
class FamilyRun:
    """One audited (model, benchmark) as a family stage sees it: the model's name (its [[model]] name), the benchmark
    (its items, in the order of `rows`) and each item's row, holding `id` and the columns the stage reads."""

    model: str
    benchmark: Benchmark
    rows: tuple[dict, ...]

    @property
    def key(self) -> RunKey:
        return (self.model, self.benchmark.name, self.benchmark.split)


@dataclasses.dataclass(frozen=True)
class FamilyInput:
    """Every run of the audit, in run order (each model's benchmarks, model by model), and the audit's seed."""

    runs: tuple[FamilyRun, ...]
    seed: int


@dataclasses.dataclass(frozen=True)
class FamilyView(Generic[Result]):
    """How a family stage shows itself: console(result, alpha), its lines under the runs' lines; section(result,
    alpha), its report section (HTML, every input text escaped: `report.html_parts.text`); `alpha` is the audit's
    level, for the verdicts they state. Either may be None."""

    console: Callable[[Result, float], list[str]] | None = None
    section: Callable[[Result, float], str] | None = None


@dataclasses.dataclass(frozen=True)
class FamilyStage(Generic[Settings, Result]):
    """One detector across the audit's models.

    reads: the per-item columns of the audit's stages it needs (ConStat: PaCoST's `correct_original` and
        `correct_rephrased`); an audit whose stages do not provide them all is refused before any work.
    result(input, settings): its result over every run (`FamilyInput`), timed as the audit's verdicts.
    summary_entry(result) / read_entry(entry): summary.json's `family` entry, and the result read back from it.
    headlines(result, alpha): its headline verdict per run it tests, by (model, benchmark, split) (`RunKey`), at the
        audit's level; a run it does not test (ConStat's reference models) has none.
    check(settings, models, where): refuses settings that do not fit the audit's models (their [[model]] names),
        before any work; None: nothing to check.
    title: its name as a reader sees it; view: its console lines and report section (`FamilyView`).
    settings_entry(settings): what summary.json's `settings` record of it; None: `{name: the fields that differ from
        their defaults}`.
    """

    name: str
    settings_type: type[Settings]
    result_type: type
    result: Callable[[FamilyInput, Settings], Result]
    summary_entry: Callable[[Result], dict]
    read_entry: Callable[[dict], Result]
    reads: tuple[str, ...] = ()
    headlines: Callable[[Result, float], Mapping[RunKey, Verdict]] | None = None
    check: Callable[[Settings, Sequence[str], str], None] | None = None
    title: str = ""
    view: FamilyView[Result] = FamilyView()
    settings_entry: Callable[[Settings], dict] | None = None

    @property
    def heading(self) -> str:
        """Its name as a reader sees it (the report's section title)."""
        return self.title or self.name

    def record_settings(self, settings: Settings) -> dict:
        """summary.json's `settings` entries of this stage (its `settings_entry`, else its non-default fields)."""
        if self.settings_entry is not None:
            return self.settings_entry(settings)
        return {self.name: non_default_values(settings)}

    def check_reads(self, provided: set[str], where: str) -> None:
        """Refuse an audit whose stages do not provide every per-item column this stage reads."""
        missing = sorted(set(self.reads) - provided)
        if missing:
            raise JaxcontamError(
                f"{where} [{self.name}] reads the per-item column(s) {', '.join(missing)}, which no stage of this "
                "audit writes: run the stage that writes them too (PaCoST's answers: add pacost to the stages)"
            )

    def family_input(self, runs: Sequence[tuple[str, Benchmark, Sequence[dict]]], seed: int) -> FamilyInput:
        """The input of `result`: each (model, benchmark, rows) with its rows cut to `id` and the columns read."""
        kept = ("id", *self.reads)
        return FamilyInput(
            tuple(
                FamilyRun(model, benchmark, tuple({key: row[key] for key in kept} for row in rows))
                for model, benchmark, rows in runs
            ),
            seed,
        )


def family_verdicts(stages: Mapping[str, FamilyStage], results: Mapping[str, Any], alpha: float) -> dict:
    """Each run's family verdicts ((model, benchmark, split) -> its verdicts, in registry order) at `alpha`."""
    verdicts: dict[RunKey, list[Verdict]] = {}
    for name, stage in stages.items():
        if name in results and stage.headlines is not None:
            for key, verdict in stage.headlines(results[name], alpha).items():
                verdicts.setdefault(key, []).append(verdict)
    return verdicts
