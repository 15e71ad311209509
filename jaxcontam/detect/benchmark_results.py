# pyright: standard
"""Per-benchmark summaries of per-item rows: accuracy, the likelihood detectors, and results against known labels.

Rows are the per-item records of `detect.audit_core` (`correct`, `correct_norm`, each detector's score,
`ground_truth_contaminated` True / False / None). A detector's direction ("higher means seen", except the
ratios in `likelihood.LOWER_MEANS_SEEN`) is applied before any AUC, so AUC > 0.5 always means "separates".
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from jaxcontam.detect.blind import BlindBaselineSummary
from jaxcontam.detect.json_values import json_float, json_optional_float
from jaxcontam.detect.likelihood import LIKELIHOOD_DETECTORS, LOWER_MEANS_SEEN
from jaxcontam.detect.pacost.settings import PacostSettings
from jaxcontam.detect.pacost.significance import paired_verdict
from jaxcontam.ngram.audit import METRICS
from jaxcontam.stats import separation


def finite(values) -> np.ndarray:
    """The finite values of `values` (None and NaN left out) as float64."""
    array = np.asarray([np.nan if v is None else v for v in values], np.float64)
    return array[np.isfinite(array)]


def _mean(values) -> float:
    values = finite(values)
    return float(values.mean()) if values.size else math.nan


@dataclasses.dataclass(frozen=True)
class Accuracy:
    """Accuracy on the original questions; `acc_norm` (per-character, lm-eval) for multiple choice only."""

    acc: float
    acc_norm: float | None

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, entry: dict) -> Accuracy:
        return cls(json_float(entry["acc"]), json_optional_float(entry["acc_norm"]))


def accuracy(rows: Sequence[dict]) -> Accuracy:
    norm = finite(r["correct_norm"] for r in rows)
    return Accuracy(float(np.mean([r["correct"] for r in rows])), float(norm.mean()) if norm.size else None)


@dataclasses.dataclass(frozen=True)
class DetectorSummary:
    """One likelihood detector over a benchmark; with known labels also its AUC and one-sided Mann-Whitney p."""

    mean: float
    median: float
    auc: float | None = None
    pvalue: float | None = None
    n_contaminated: int | None = None
    n_clean: int | None = None

    def to_dict(self) -> dict:
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None or k in ("mean", "median")}

    @classmethod
    def from_dict(cls, entry: dict) -> DetectorSummary:
        """The summary `to_dict` wrote: the separation fields only where written (a written null is NaN)."""
        separation = {key: json_float(entry[key]) for key in ("auc", "pvalue") if key in entry}
        counts = {key: entry[key] for key in ("n_contaminated", "n_clean") if key in entry}
        return cls(json_float(entry["mean"]), json_float(entry["median"]), **separation, **counts)


def signal_separation(rows: Sequence[dict], signal: str) -> dict:
    """AUC and p of `signal` between the rows known contaminated and known clean, in the signal's direction."""
    labelled = [r for r in rows if r.get("ground_truth_contaminated") is not None]
    values = [math.nan if r[signal] is None else r[signal] for r in labelled]
    return separation(values, [r["ground_truth_contaminated"] for r in labelled], signal not in LOWER_MEANS_SEEN)


def likelihood_result(rows: Sequence[dict], names: Sequence[str] = LIKELIHOOD_DETECTORS) -> dict[str, DetectorSummary]:
    """Each detector's mean and median, and its separation of the labelled rows when there are labels."""
    labelled = any(r.get("ground_truth_contaminated") is not None for r in rows)
    result = {}
    for name in names:
        values = finite(r[name] for r in rows)
        centre = (float(values.mean()), float(np.median(values))) if values.size else (math.nan, math.nan)
        result[name] = DetectorSummary(*centre, **(signal_separation(rows, name) if labelled else {}))
    return result


@dataclasses.dataclass(frozen=True)
class GroupSummary:
    """The known-contaminated or the known-clean items: size, accuracy, PaCoST p, mean of every signal."""

    n: int
    accuracy: float | None = None
    pacost_pvalue: float | None = None
    means: dict[str, float] = dataclasses.field(default_factory=dict)

    def to_dict(self) -> dict:
        extra = {k: v for k, v in (("accuracy", self.accuracy), ("pacost_pvalue", self.pacost_pvalue)) if v is not None}
        return {"n": self.n} | extra | {f"mean_{name}": value for name, value in self.means.items()}

    @classmethod
    def from_dict(cls, entry: dict) -> GroupSummary:
        """The group `to_dict` wrote: accuracy and PaCoST p only where written, each `mean_<signal>` a mean."""
        measured = {key: json_float(entry[key]) for key in ("accuracy", "pacost_pvalue") if key in entry}
        means = {key.removeprefix("mean_"): json_float(v) for key, v in entry.items() if key.startswith("mean_")}
        return cls(entry["n"], **measured, means=means)


@dataclasses.dataclass(frozen=True)
class GroundTruthResult:
    """The labelled items by group, each signal's AUC between the groups, and beside them the blind baseline (a
    model-free classifier's AUC on the same two sets: how far wording alone separates them; None where it did not
    run)."""

    groups: dict[str, GroupSummary]
    auc: dict[str, float]  # per signal: likelihood detectors and ConTAM metrics that ran
    blind_baseline: BlindBaselineSummary | None = None

    def to_dict(self) -> dict:
        blind = None if self.blind_baseline is None else self.blind_baseline.to_dict()
        groups = {k: g.to_dict() for k, g in self.groups.items()}
        return {"groups": groups, "auc": dict(self.auc), "blind_baseline": blind}

    @classmethod
    def from_dict(cls, entry: dict) -> GroundTruthResult:
        """The comparison `to_dict` wrote (one written before the blind baseline existed has none)."""
        groups = {name: GroupSummary.from_dict(group) for name, group in entry["groups"].items()}
        blind = entry.get("blind_baseline")
        return cls(
            groups,
            {signal: json_float(auc) for signal, auc in entry["auc"].items()},
            None if blind is None else BlindBaselineSummary.from_dict(blind),
        )


def _pacost_pvalue(rows: Sequence[dict], settings: PacostSettings) -> float:
    """PaCoST's p-value on the chosen confidence over `rows`."""
    assert settings.confidence is not None  # PacostSettings.__post_init__ fills it from the preset
    return paired_verdict(rows, settings.confidence, settings).pvalue


def ground_truth_result(
    rows: Sequence[dict],
    pacost: PacostSettings | None,
    has_contam: bool,
    likelihood: Sequence[str],
    blind: BlindBaselineSummary | None = None,
) -> GroundTruthResult | None:
    """Each signal on the known-contaminated and known-clean items, each signal's AUC between them, and the blind
    baseline's result on the same items (`detect.blind`) beside them when it ran; `likelihood`: the likelihood
    scores that ran (none: the stage did not)."""
    labelled = [r for r in rows if r.get("ground_truth_contaminated") is not None]
    if not labelled:
        return None
    signals = list(likelihood) + (list(METRICS) if has_contam else [])
    groups = {}
    for name, flag in (("contaminated", True), ("clean", False)):
        group = [r for r in labelled if r["ground_truth_contaminated"] is flag]
        if not group:
            groups[name] = GroupSummary(0)
            continue
        means = {"longest_match": _mean(r["longest_match"] for r in group)} if has_contam else {}
        means |= {d: _mean(r[d] for r in group) for d in likelihood}
        groups[name] = GroupSummary(
            len(group),
            accuracy=float(np.mean([r["correct"] for r in group])) if pacost else None,
            pacost_pvalue=_pacost_pvalue(group, pacost) if pacost else None,
            means=means,
        )
    return GroundTruthResult(groups, {s: signal_separation(labelled, s)["auc"] for s in signals}, blind)
