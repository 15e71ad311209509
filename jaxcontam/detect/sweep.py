# pyright: standard
"""The sweep's record: Holm and BH over the swept headline p-values (PaCoST's, calibrated where a reference was given)
of every (model, benchmark) of an audit, as `audit.sweep.sweep_decisions` computes them and summary.json's `sweep`
holds them (here, below the report that reads them); the runs whose headline test could not run are left out of
the family and listed with their reasons."""

from __future__ import annotations

import dataclasses

from jaxcontam.detect.json_values import json_float


@dataclasses.dataclass(frozen=True)
class Adjusted:
    """One correction's adjusted p-values and rejections, in the sweep's order."""

    adjusted: tuple[float, ...]
    reject: tuple[bool, ...]

    def to_dict(self) -> dict:
        return {"adjusted": list(self.adjusted), "reject": list(self.reject)}

    @classmethod
    def from_dict(cls, entry: dict) -> Adjusted:
        return cls(tuple(json_float(p) for p in entry["adjusted"]), tuple(entry["reject"]))


@dataclasses.dataclass(frozen=True)
class Sweep:
    """Holm and BH over the p-values of the runs with a test (`labels` in run order; `tests`: which test each is,
    empty in summaries written before schema 2), and the runs left out (`untested`: label -> why no test ran)."""

    labels: tuple[str, ...]
    pvalues: tuple[float, ...]
    holm: Adjusted
    bh: Adjusted
    tests: tuple[str, ...] = ()
    untested: dict[str, str] = dataclasses.field(default_factory=dict)

    def to_dict(self) -> dict:
        methods = {"holm": self.holm.to_dict(), "bh": self.bh.to_dict()}
        tested = {"labels": list(self.labels), "tests": list(self.tests), "pvalues": list(self.pvalues)}
        return tested | methods | {"untested": dict(self.untested)}

    @classmethod
    def from_dict(cls, entry: dict) -> Sweep:
        return cls(
            tuple(entry["labels"]),
            tuple(json_float(p) for p in entry["pvalues"]),
            Adjusted.from_dict(entry["holm"]),
            Adjusted.from_dict(entry["bh"]),
            tests=tuple(entry.get("tests", ())),
            untested=dict(entry.get("untested", {})),
        )
