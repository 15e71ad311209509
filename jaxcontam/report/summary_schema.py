# pyright: standard
"""summary.json's versioned schema: `AuditSummary.from_dict` / `read_summary` read it for the report and the
console verdicts, refusing a version this jaxcontam does not know.

Version 3 is the layout `jaxcontam audit` writes: jaxcontam_version, alpha (the one level of every verdict, stored
once), correction, settings, one entry per (model, benchmark) in `runs` (`detect.audit_core.BenchmarkAudit.to_dict`:
each registered detector's evidence, no verdict (null where it did not run), plus the model and `verdicts`, each
detector's headline verdict at alpha as the sweep decided it: contaminated, not detected or not tested, then the
verdicts of the detectors across the models on it), the `sweep` (with the runs left out of it as untested),
`family`, each registered detector across the models (`detect.registry.FAMILY_DETECTORS`) by name: its result over
the whole audit, null where it did not run, and `evidence`: the situations the audit's inputs put it in and the
strongest measured evidence of each (`report.evidence.EvidenceStatement`). A test that could not run stores
`contaminated: null`, never false.

Version 2 (written before 2026-12-02) is read too: its entries' verdict keys (PaCoST's and ConTAM's `alpha`,
`contaminated` / `significant` and the sweep's decision on PaCoST's headline, `settings` repeating `alpha`) are left
unread and the run's stored `verdicts` stand; the detectors, `family` and `evidence` it predates read as absent.

Version 1 (and summaries written before `schema_version` existed) is read too: a test whose status says "no test"
reads as not tested whatever its stored `contaminated: false`; the headline verdicts are derived from the entries at
the summary's alpha (PaCoST's own level was 0.05 then), with the sweep's decision stored in PaCoST's headline entry
on them; a calibrated PaCoST entry reads as the headline, uncorrected (version 1's sweep decided the authors' test,
which is then shown beside it). Written back, either is version 3.

Each detector's entry is read into its result class (`from_dict`, the inverse of the `to_dict` that wrote it), so
`AuditSummary.from_dict(summary).to_dict()` gives a version-3 summary.json's content back (NaN and infinities as
`json_ready` writes them).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from jaxcontam.detect.audit_core import headline_verdicts
from jaxcontam.detect.benchmark_results import Accuracy, GroundTruthResult
from jaxcontam.detect.json_values import json_float
from jaxcontam.detect.registry import DETECTORS, FAMILY_DETECTORS
from jaxcontam.detect.stage import BuiltInResults
from jaxcontam.detect.status import TestOutcome
from jaxcontam.detect.sweep import Sweep
from jaxcontam.detect.verdict import Verdict, check_level
from jaxcontam.errors import JaxcontamError
from jaxcontam.report.evidence import EvidenceStatement
from jaxcontam.stats.multiple import DEFAULT_ALPHA

SCHEMA_VERSION = 3
KNOWN_VERSIONS = (1, 2, 3)


def _upgrade_pacost_v1(entry: dict | None) -> dict | None:
    """A version-1 PaCoST entry with a calibrated test: the sweep had decided the authors' test, so its decision is
    dropped and the entry's correction is the settings' again ("sweep" unless it was "none"); the calibrated test
    is read as the headline, uncorrected."""
    if not isinstance(entry, dict) or "calibrated" not in entry or "pvalue_adjusted" not in entry:
        return entry
    upgraded = {k: v for k, v in entry.items() if k != "pvalue_adjusted"}
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
            verdicts=_version_1_verdicts(entry, results, alpha)
            if verdicts is None
            else _read_verdicts(verdicts, where),
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

    def verdict_of(self, detector: str) -> Verdict | None:
        """Detector `detector`'s headline verdict on this run (None: it states none here)."""
        return next((v for v in self.verdicts if v.detector == detector), None)


def _version_1_verdicts(entry: dict, results: Mapping[str, Any], alpha: float) -> tuple[Verdict, ...]:
    """A version-1 run's headline verdicts: derived from its results at the summary's `alpha`, PaCoST's at its own
    level then (0.05) with the sweep's decision its headline entry stored (`pvalue_adjusted`, the correction and the
    verdict) on it."""
    at_alpha, at_pacost_level = headline_verdicts(results, alpha), headline_verdicts(results, DEFAULT_ALPHA)
    pacost = next((v for v in at_pacost_level if v.detector == "pacost"), None)
    stored = entry.get("pacost")
    headline = (stored.get("calibrated") or stored) if isinstance(stored, dict) else None
    if pacost is not None and isinstance(headline, dict) and "pvalue_adjusted" in headline:
        status = TestOutcome.from_summary(headline)  # version 1 stored a test that could not run as contaminated: false
        contaminated = headline["contaminated"] if status.ran else None
        pacost = pacost.decided(json_float(headline["pvalue_adjusted"]), headline["correction"], contaminated)
    return tuple(pacost if v.detector == "pacost" and pacost is not None else v for v in at_alpha)


def _read_verdicts(entries, where: str) -> tuple[Verdict, ...]:
    """A run's `verdicts` list (schema 2 and 3), each entry checked as a result is."""
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
    family: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # family stage name -> result (those that ran)
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
        alpha = DEFAULT_ALPHA if alpha is None else check_level(alpha, where)
        return cls(
            schema_version=version,
            jaxcontam_version=summary.get("jaxcontam_version"),
            alpha=alpha,
            correction=summary.get("correction"),
            settings={k: v for k, v in (summary.get("settings") or {}).items() if k != "alpha"},  # stored once
            runs=tuple(RunEntry.from_dict(r, f"{where} runs[{i}]", alpha) for i, r in enumerate(runs)),
            sweep=_read_result(summary.get("sweep"), Sweep.from_dict, f"{where} sweep"),
            timings=summary.get("timings"),
            family=_read_family(summary.get("family"), where),
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
            "family": {
                name: stage.summary_entry(self.family[name]) if name in self.family else None
                for name, stage in FAMILY_DETECTORS.items()
            },
        }
        evidence = {} if self.evidence is None else {"evidence": self.evidence.to_dict()}
        return summary | evidence | ({} if self.timings is None else {"timings": self.timings})


def _read_family(entries, where: str) -> dict[str, Any]:
    """summary.json's `family` (absent before it existed): each registered family stage's result that is there."""
    if entries is None:
        return {}
    if not isinstance(entries, dict):
        raise JaxcontamError(f"{where} family: expected an object of family detectors, got {type(entries).__name__}")
    results = {
        name: _read_result(entries.get(name), stage.read_entry, f"{where} family {name}")
        for name, stage in FAMILY_DETECTORS.items()
    }
    return {name: result for name, result in results.items() if result is not None}


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
