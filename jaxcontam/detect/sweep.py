# pyright: standard
"""The sweep's record: Holm and BH over the PaCoST p-values of every (model, benchmark) of an audit, as
`audit.summary.sweep_decisions` computes them and summary.json's `sweep` holds them (here, below the report that
reads them)."""

from __future__ import annotations

import dataclasses

from jaxcontam.detect.summary_values import json_float


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
    """Holm and BH over the p-values of the runs with a test (`labels` in run order)."""

    labels: tuple[str, ...]
    pvalues: tuple[float, ...]
    holm: Adjusted
    bh: Adjusted

    def to_dict(self) -> dict:
        methods = {"holm": self.holm.to_dict(), "bh": self.bh.to_dict()}
        return {"labels": list(self.labels), "pvalues": list(self.pvalues)} | methods

    @classmethod
    def from_dict(cls, entry: dict) -> Sweep:
        return cls(
            tuple(entry["labels"]),
            tuple(json_float(p) for p in entry["pvalues"]),
            Adjusted.from_dict(entry["holm"]),
            Adjusted.from_dict(entry["bh"]),
        )
