"""A test's outcome read from an audit's summary.json, either schema: contaminated, not detected, or not tested.

Schema 2 stores a test that could not run as `contaminated: null` (PaCoST, its `variants`, `calibrated`) or
`significant: null` (ConTAM's metrics), and each run's `verdicts` carry their `outcome`. Schema 1 stored the same
test as `contaminated: false` / `significant: false` beside `status: "no test: <reason>"` (the `calibrated` entry
had no status: its p-value was NaN, written null). So an entry is not tested when its status says "no test", its
p-value is missing or not finite, or its flag is null, whatever the flag says; only a tested entry's flag decides
between contaminated and not detected. The experiments' reports count the three apart: a rate's denominator is
the tested cases, and the untested ones are shown beside it, never counted as not detected.

Imported as `from experiments import summary_verdicts as verdicts`.
"""

from __future__ import annotations

import math

CONTAMINATED, NOT_DETECTED, NOT_TESTED = "contaminated", "not detected", "not tested"


def read_runs(path) -> list[dict]:
    """The run entries of an audit's summary.json (the file or its folder) as the library reads them
    (`jaxcontam.report.summary_schema.read_summary`: either schema, a version it does not know refused), in the
    version-2 layout summary.json is written in."""
    from jaxcontam.detect.json_values import json_ready
    from jaxcontam.report.summary_schema import read_summary

    return json_ready(read_summary(path).to_dict())["runs"]
FLAGS = ("contaminated", "significant")  # the keys a test entry states its verdict in (null: not tested, schema 2)


def finite(value) -> bool:
    """A real number that is not NaN or infinite (None, NaN and JSON null are no p-value)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def no_test_status(entry: dict) -> bool:
    """The entry's `status` says no test ran ("no test: <reason>")."""
    status = entry.get("status")
    return isinstance(status, str) and status.startswith("no test")


def tested(entry: dict | None) -> bool:
    """Whether the test of a summary.json entry ran (schema 1 or 2; see the module docstring)."""
    if not entry:
        return False
    if "outcome" in entry:  # a schema-2 headline verdict
        return entry["outcome"] != NOT_TESTED
    if no_test_status(entry) or not finite(entry.get("pvalue")):
        return False
    return not any(key in entry and entry[key] is None for key in FLAGS)


def outcome(entry: dict | None, flag: str = "contaminated") -> str:
    """CONTAMINATED, NOT_DETECTED or NOT_TESTED for a summary.json entry; `flag` is the key holding its verdict
    ("contaminated" for PaCoST and the headline verdicts, "significant" for ConTAM's metrics)."""
    if not tested(entry):
        return NOT_TESTED
    assert entry is not None
    if "outcome" in entry:
        return entry["outcome"]
    return CONTAMINATED if entry.get(flag) else NOT_DETECTED


def no_test_label(entry: dict | None) -> str:
    """Why an untested entry has no verdict, as summary.json words it: its "no test: <reason>" status, a schema-2
    verdict's reason, else "no test"."""
    entry = entry or {}
    if no_test_status(entry):
        return entry["status"]
    return f"no test: {entry['reason']}" if isinstance(entry.get("reason"), str) else "no test"


def pvalue_outcome(pvalue, alpha: float, tested_: bool = True) -> str:
    """The raw verdict of a p-value at `alpha` (p < alpha flags); NOT_TESTED where there is no p-value."""
    if not tested_ or not finite(pvalue):
        return NOT_TESTED
    return CONTAMINATED if pvalue < alpha else NOT_DETECTED


def tally(outcomes) -> dict:
    """{"flagged", "tested", "untested"} over outcomes: flagged among the tested, the untested apart."""
    outcomes = list(outcomes)
    untested = sum(o == NOT_TESTED for o in outcomes)
    return {"flagged": sum(o == CONTAMINATED for o in outcomes), "tested": len(outcomes) - untested,
            "untested": untested}
