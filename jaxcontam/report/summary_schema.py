# pyright: standard
"""summary.json's versioned schema: `AuditSummary.from_dict` / `read_summary` read it for the report and the
console verdicts, refusing a version this jaxcontam does not know.

Version 1 is the layout `jaxcontam audit` writes: jaxcontam_version, alpha, correction, settings, one entry per
(model, benchmark) in `runs` (`detect.audit_core.BenchmarkAudit.to_dict` plus the model and the sweep's
adjusted p-value) and the `sweep`. A summary written before `schema_version` existed has the same layout and
is read as version 1.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from jaxcontam.errors import JaxcontamError
from jaxcontam.stats.multiple import DEFAULT_ALPHA

SCHEMA_VERSION = 1
KNOWN_VERSIONS = (1,)


@dataclasses.dataclass(frozen=True)
class RunEntry:
    """One (model, benchmark) run; a detector that did not run is None (its parts stay summary.json's dicts)."""

    model: str
    benchmark: str
    split: str | None = None
    n_items: int | None = None
    accuracy: dict | None = None
    pacost: dict | None = None
    likelihood: dict | None = None
    exchangeability: dict | None = None
    contam: dict | None = None
    ground_truth: dict | None = None

    @classmethod
    def from_dict(cls, entry: dict, where: str = "summary.json") -> RunEntry:
        if not isinstance(entry, dict) or "model" not in entry or "benchmark" not in entry:
            raise JaxcontamError(f"{where}: a run entry needs 'model' and 'benchmark', got {entry!r:.200}")
        fields: dict[str, Any] = {f.name: entry.get(f.name) for f in dataclasses.fields(cls)}
        return cls(**fields)

    @property
    def label(self) -> str:
        return f"{self.model} | {self.benchmark}"


@dataclasses.dataclass(frozen=True)
class AuditSummary:
    schema_version: int
    jaxcontam_version: str | None
    alpha: float
    correction: str | None
    settings: dict
    runs: tuple[RunEntry, ...]
    sweep: dict | None
    timings: dict[str, float] | None = None  # wall seconds per stage (`jaxcontam.stage_clock`); older summaries: None

    @classmethod
    def from_dict(cls, summary: dict, where: str = "summary.json") -> AuditSummary:
        """The summary of `summary` (summary.json as loaded); an unknown `schema_version` is refused."""
        if not isinstance(summary, dict):
            raise JaxcontamError(f"{where}: expected a JSON object, got {type(summary).__name__}")
        version = summary.get("schema_version", SCHEMA_VERSION)
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
        return cls(
            schema_version=version,
            jaxcontam_version=summary.get("jaxcontam_version"),
            alpha=DEFAULT_ALPHA if alpha is None else alpha,
            correction=summary.get("correction"),
            settings=summary.get("settings") or {},
            runs=tuple(RunEntry.from_dict(r, f"{where} runs[{i}]") for i, r in enumerate(runs)),
            sweep=summary.get("sweep"),
            timings=summary.get("timings"),
        )


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
