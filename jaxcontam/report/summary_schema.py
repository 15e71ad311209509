# pyright: standard
"""summary.json's versioned schema: `AuditSummary.from_dict` / `read_summary` read it for the report and the
console verdicts, refusing a version this jaxcontam does not know.

Version 2 is the layout `jaxcontam audit` writes: jaxcontam_version, alpha (the one level of every verdict),
correction, settings, one entry per (model, benchmark) in `runs` (`detect.audit_core.BenchmarkAudit.to_dict` plus
the model and `verdicts`, each registered detector's headline verdict: contaminated, not detected or not tested)
and the `sweep` (with the runs left out of it as untested); `evidence`: the situations the audit's inputs put it
in and the strongest measured evidence of each (`report.evidence.EvidenceStatement`; absent from older summaries).
A test that could not run stores `contaminated: null` (ConTAM's metrics `significant: null`), never false.

Version 1 (and summaries written before `schema_version` existed) is read too: a test whose status says "no test"
reads as not tested whatever its stored `contaminated: false`; the headline verdicts are derived from the entries
at the summary's alpha (PaCoST's own level was 0.05 then); a calibrated PaCoST entry reads as the headline,
uncorrected (version 1's sweep decided the authors' test, which is then shown beside it). Written back, it is
version 2.

Each detector's entry is read into its result class (`from_dict`, the inverse of the `to_dict` that wrote it), so
`AuditSummary.from_dict(summary).to_dict()` gives a version-2 summary.json's content back (NaN and infinities as
`json_ready` writes them).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from jaxcontam.detect.benchmark_results import Accuracy, GroundTruthResult
from jaxcontam.detect.registry import DETECTORS
from jaxcontam.detect.stage import BuiltInResults
from jaxcontam.detect.sweep import Sweep
from jaxcontam.detect.verdict import Verdict
from jaxcontam.errors import JaxcontamError
from jaxcontam.report.evidence import EvidenceStatement
from jaxcontam.stats.multiple import DEFAULT_ALPHA

SCHEMA_VERSION = 2
KNOWN_VERSIONS = (1, 2)


def headline_verdicts(results: Mapping[str, Any], alpha: float) -> tuple[Verdict, ...]:
    """Each registered detector's headline verdict on a run's results, in registry order (detectors that state
    none, and those that did not run, left out)."""
    verdicts = []
    for name, stage in DETECTORS.items():
        if name in results and stage.headline is not None:
            verdict = stage.headline(results[name], alpha)
            if verdict is not None:
                verdicts.append(verdict)
    return tuple(verdicts)


def _upgrade_pacost_v1(entry: dict | None) -> dict | None:
    """A version-1 PaCoST entry with a calibrated test: the sweep had decided the authors' test, so its decision is
    dropped (the raw verdict at 0.05 restored) and the calibrated test is read as the headline, uncorrected."""
    if not isinstance(entry, dict) or "calibrated" not in entry or "pvalue_adjusted" not in entry:
        return entry
    upgraded = {k: v for k, v in entry.items() if k != "pvalue_adjusted"}
    pvalue = entry.get("pvalue")
    tested = isinstance(pvalue, (int, float)) and str(entry.get("status", "tested")) == "tested"
    upgraded["contaminated"] = bool(pvalue < DEFAULT_ALPHA) if tested else None  # type: ignore[operator]
    upgraded["correction"] = "none" if entry.get("correction") == "none" else "sweep"
    return upgraded


@dataclasses.dataclass(frozen=True)
class RunEntry(BuiltInResults):
    """One (model, benchmark) run: accuracy, each registered detector's result (`results`: stage name -> result, for
    the detectors that ran; `detect.registry.DETECTORS`), their headline verdicts (`verdicts`, after the sweep) and the
    ground-truth comparison (None where it did not run)."""

    model: str
    benchmark: str
    split: str | None = None
    n_items: int | None = None
    accuracy: Accuracy | None = None
    results: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    ground_truth: GroundTruthResult | None = None
    verdicts: tuple[Verdict, ...] = ()

    @classmethod
    def from_dict(cls, entry: dict, where: str = "summary.json", alpha: float = DEFAULT_ALPHA) -> RunEntry:
        """The run `to_dict` wrote; a version-1 entry (no `verdicts`) has them derived at `alpha`."""
        if not isinstance(entry, dict) or "model" not in entry or "benchmark" not in entry:
            raise JaxcontamError(f"{where}: a run entry needs 'model' and 'benchmark', got {entry!r:.200}")
        if "verdicts" not in entry:
            entry = entry | {"pacost": _upgrade_pacost_v1(entry.get("pacost"))}

        def read(key: str, reader: Callable[[dict], Any]):
            return _read_result(entry.get(key), reader, f"{where} {key}")

        results = {name: read(name, stage.read_entry) for name, stage in DETECTORS.items()}
        results = {name: result for name, result in results.items() if result is not None}
        verdicts = entry.get("verdicts")
        return cls(
            entry["model"],
            entry["benchmark"],
            entry.get("split"),
            entry.get("n_items"),
            accuracy=read("accuracy", Accuracy.from_dict),
            results=results,
            ground_truth=read("ground_truth", GroundTruthResult.from_dict),
            verdicts=headline_verdicts(results, alpha) if verdicts is None else _read_verdicts(verdicts, where),
        )

    def to_dict(self) -> dict:
        """summary.json's run entry: the model, then `detect.audit_core.BenchmarkAudit.to_dict`'s layout."""

        def plain(result):
            return None if result is None else result.to_dict()

        detectors = {
            name: stage.summary_entry(self.results[name]) if name in self.results else None
            for name, stage in DETECTORS.items()
        }
        return (
            {"model": self.model, "benchmark": self.benchmark, "split": self.split, "n_items": self.n_items}
            | {"accuracy": plain(self.accuracy)}
            | detectors
            | {"ground_truth": plain(self.ground_truth), "verdicts": [v.to_dict() for v in self.verdicts]}
        )

    @property
    def label(self) -> str:
        return f"{self.model} | {self.benchmark}"


def _read_verdicts(entries, where: str) -> tuple[Verdict, ...]:
    """A run's `verdicts` list (schema 2), each entry checked as a result is."""
    if not isinstance(entries, list):
        raise JaxcontamError(f"{where} verdicts: expected a list of verdicts, got {type(entries).__name__}")
    verdicts = []
    for i, entry in enumerate(entries):
        verdict = _read_result(entry, Verdict.from_dict, f"{where} verdicts[{i}]")
        if verdict is None:
            raise JaxcontamError(f"{where} verdicts[{i}]: null is not a verdict; was it written by another version?")
        verdicts.append(verdict)
    return tuple(verdicts)


def _read_result(entry, read: Callable[[dict], Any], where: str):
    """`read(entry)` (None where the detector did not run); an entry it cannot read is refused, naming it."""
    if entry is None:
        return None
    try:
        return read(entry)
    except (KeyError, TypeError, ValueError, AttributeError, JaxcontamError) as error:
        problem = f"no {error}" if isinstance(error, KeyError) else str(error)
        raise JaxcontamError(
            f"{where}: not an entry this jaxcontam writes ({problem}); was it written by another version?"
        ) from None


@dataclasses.dataclass(frozen=True)
class AuditSummary:
    """An audit's summary.json; `schema_version` is the version it was read as (written: always `SCHEMA_VERSION`)."""

    schema_version: int
    jaxcontam_version: str | None
    alpha: float
    correction: str | None
    settings: dict
    runs: tuple[RunEntry, ...]
    sweep: Sweep | None
    timings: dict[str, float] | None = None  # wall seconds per stage (`jaxcontam.stage_clock`); older summaries: None
    evidence: EvidenceStatement | None = None  # what the inputs allow and the strongest measured; older: None

    @classmethod
    def from_dict(cls, summary: dict, where: str = "summary.json") -> AuditSummary:
        """The summary of `summary` (summary.json as loaded); an unknown `schema_version` is refused."""
        if not isinstance(summary, dict):
            raise JaxcontamError(f"{where}: expected a JSON object, got {type(summary).__name__}")
        version = summary.get("schema_version", 1)  # written before the version existed: version 1
        if isinstance(version, bool) or version not in KNOWN_VERSIONS:
            raise JaxcontamError(
                f"{where}: schema_version {version!r} is not one this jaxcontam reads "
                f"({', '.join(map(str, KNOWN_VERSIONS))}); it was written by jaxcontam "
                f"{summary.get('jaxcontam_version', '(unknown)')}: read it with that version, or rerun the audit"
            )
        runs = summary.get("runs") or []
        if not isinstance(runs, list):
            raise JaxcontamError(f"{where}: 'runs' must be a list of run entries, got {type(runs).__name__}")
        alpha = summary.get("alpha")
        alpha = DEFAULT_ALPHA if alpha is None else alpha
        return cls(
            schema_version=version,
            jaxcontam_version=summary.get("jaxcontam_version"),
            alpha=alpha,
            correction=summary.get("correction"),
            settings=summary.get("settings") or {},
            runs=tuple(RunEntry.from_dict(r, f"{where} runs[{i}]", alpha) for i, r in enumerate(runs)),
            sweep=_read_result(summary.get("sweep"), Sweep.from_dict, f"{where} sweep"),
            timings=summary.get("timings"),
            evidence=_read_result(summary.get("evidence"), EvidenceStatement.from_dict, f"{where} evidence"),
        )

    def to_dict(self) -> dict:
        """summary.json's content (before `json_ready`); `timings` and `evidence` only where they were recorded."""
        summary = {
            "schema_version": SCHEMA_VERSION,  # what was read is written as this version, whatever it was read as
            "jaxcontam_version": self.jaxcontam_version,
            "alpha": self.alpha,
            "correction": self.correction,
            "settings": self.settings,
            "runs": [run.to_dict() for run in self.runs],
            "sweep": None if self.sweep is None else self.sweep.to_dict(),
        }
        evidence = {} if self.evidence is None else {"evidence": self.evidence.to_dict()}
        return summary | evidence | ({} if self.timings is None else {"timings": self.timings})


def read_summary(path: str | Path) -> AuditSummary:
    """Read an audit's summary.json (a file, or the audit's output folder holding one)."""
    path = Path(path)
    if path.is_dir():
        path = path / "summary.json"
    if not path.is_file():
        raise JaxcontamError(f"{path} not found: pass an audit's summary.json or its output folder")
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise JaxcontamError(f"{path}: not valid JSON ({error}); is it an audit's summary.json?") from None
    return AuditSummary.from_dict(loaded, str(path))
