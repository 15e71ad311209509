# pyright: standard
"""ConTAM's verdict on one benchmark (arXiv 2411.03923): EPG curve, selected threshold and the max-z test.

Per n-gram metric: the EPG curve over thresholds, the paper's threshold (largest z above z_crit with enough
clean and contaminated items), and `max_z_test`, the calibrated p-value of "some threshold shows a gain" over
the same search (significant at a level when pvalue <= level: `MetricVerdict.significant_at`, which the audit's
headline applies at the audit's level). Only the headline metric's test is pre-specified; the other metrics
are for comparison (four tests, no correction).
"""

from __future__ import annotations

import dataclasses
import math

from jaxcontam.dataclass_config import check_ranges, ranged
from jaxcontam.detect.json_values import json_float, json_optional_float
from jaxcontam.detect.status import TestOutcome
from jaxcontam.errors import JaxcontamError
from jaxcontam.ngram.audit import METRICS
from jaxcontam.stats import EPGRow, epg_curve, max_z_test, select_threshold
from jaxcontam.stats.paired import DEFAULT_RESAMPLES

EPG_CI_NOTE = (
    "epg_ci is a bootstrap interval with the threshold held at the selected value: it is conditional on "
    "that choice and ignores the threshold search; pvalue accounts for the search"
)


@dataclasses.dataclass(frozen=True)
class ContamSettings:
    """How ConTAM decides: the headline `metric`, the paper's threshold rule (largest z above `z_crit` with at
    least `min_clean` clean and `min_contaminated` contaminated items) and the max-z test (`resamples`
    permutations from `seed`; the level is the caller's: `MetricVerdict.significant_at`)."""

    metric: str = "longest_match"
    z_crit: float = ranged(1.645)
    min_clean: int = ranged(10, at_least=1)
    min_contaminated: int = ranged(10, at_least=1)
    resamples: int = ranged(DEFAULT_RESAMPLES, at_least=1)
    seed: int = ranged(0, at_least=0, below=2**32)

    def __post_init__(self):
        check_ranges(self, "[contam]")
        if self.metric not in METRICS:
            raise JaxcontamError(f"ConTAM metric {self.metric!r} is unknown: use one of {', '.join(METRICS)}")


_SELECTED_ROW = ("threshold", "frac_contaminated", "epg", "z", "accuracy_difference")  # the selected row's numbers


def _epg_row(entry: dict) -> EPGRow:
    """A row of an EPG curve as summary.json holds it: two counts, the rest floats."""
    counts = ("n_contaminated", "n_clean")
    numbers = {key: json_float(value) for key, value in entry.items() if key not in counts}
    return EPGRow(**numbers, n_contaminated=entry["n_contaminated"], n_clean=entry["n_clean"])


@dataclasses.dataclass(frozen=True)
class MetricVerdict:
    """One metric: the selected threshold's row (None when none qualifies, with `reason`), the max-z test (its
    statistic `max_z`, `pvalue`, `n_resamples`) and the EPG curve's rows (`curve`, as summary.json records them).

    `status`: no test when no threshold is sized for the max-z test (then `pvalue` is NaN).
    """

    threshold: float | None
    frac_contaminated: float | None
    epg: float | None
    epg_ci: tuple[float, float] | None
    z: float | None
    accuracy_difference: float | None
    reason: str | None
    max_z: float
    max_z_threshold: float | None
    pvalue: float
    n_resamples: int
    status: TestOutcome
    curve: tuple[EPGRow, ...] = dataclasses.field(repr=False, compare=False)

    @property
    def statistic(self) -> float:
        return self.max_z

    def significant_at(self, level: float) -> bool | None:
        """Whether the max-z test shows a gain at `level` (p <= level); None when it did not run."""
        return bool(self.pvalue <= level) if self.status.ran else None

    def to_dict(self, with_curve: bool = True) -> dict:
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "curve"}
        fields["epg_ci"] = None if self.epg_ci is None else list(self.epg_ci)
        fields["status"] = self.status.label
        return fields | ({"curve": [dataclasses.asdict(row) for row in self.curve]} if with_curve else {})

    @classmethod
    def from_dict(cls, entry: dict) -> MetricVerdict:
        """The test `to_dict` wrote; the selected row's nulls read as None (NaN and None are both written null); an
        older entry's verdict (`significant`) is not read."""
        epg_ci = entry["epg_ci"]
        status = TestOutcome.from_summary(entry)  # schema 1 stored "no test" as significant: false
        return cls(
            **{key: json_optional_float(entry[key]) for key in _SELECTED_ROW},
            epg_ci=None if epg_ci is None else (json_float(epg_ci[0]), json_float(epg_ci[1])),
            reason=entry["reason"],
            max_z=json_float(entry["max_z"]),
            max_z_threshold=json_optional_float(entry["max_z_threshold"]),
            pvalue=json_float(entry["pvalue"]),
            n_resamples=entry["n_resamples"],
            status=status,
            curve=tuple(_epg_row(row) for row in entry["curve"]),
        )


@dataclasses.dataclass(frozen=True)
class ContamResult:
    """Every metric's test; `metric` names the headline one."""

    metric: str
    metrics: dict[str, MetricVerdict]

    @property
    def headline(self) -> MetricVerdict:
        return self.metrics[self.metric]

    def to_dict(self) -> dict:
        return {
            "metric": self.metric,
            **self.headline.to_dict(with_curve=False),
            "epg_ci_note": EPG_CI_NOTE,
            "metrics": {m: v.to_dict() for m, v in self.metrics.items()},
        }

    @classmethod
    def from_dict(cls, entry: dict) -> ContamResult:
        """The result `to_dict` wrote; the headline's fields beside `metrics` repeat `metrics[metric]` (an older
        entry's level is the summary's, not read here)."""
        metrics = {name: MetricVerdict.from_dict(verdict) for name, verdict in entry["metrics"].items()}
        return cls(metric=entry["metric"], metrics=metrics)


def metric_verdict(scores, correct, settings: ContamSettings) -> MetricVerdict:
    curve = epg_curve(scores, correct)
    chosen = select_threshold(
        curve, z_crit=settings.z_crit, min_clean=settings.min_clean, min_contaminated=settings.min_contaminated
    )
    test = max_z_test(
        scores,
        correct,
        min_clean=settings.min_clean,
        min_contaminated=settings.min_contaminated,
        resamples=settings.resamples,
        seed=settings.seed,
    )
    row = chosen.row
    status = (
        TestOutcome.tested()
        if not math.isnan(test.pvalue)
        else TestOutcome.no_test(
            f"no threshold leaves >= {settings.min_clean} clean and >= {settings.min_contaminated} "
            f"contaminated items ({len(correct)} items)"
        )
    )
    return MetricVerdict(
        threshold=None if row is None else row.threshold,
        frac_contaminated=None if row is None else row.frac_contaminated,
        epg=None if row is None else row.epg,
        epg_ci=None if row is None else (row.epg_ci_low, row.epg_ci_high),
        z=None if row is None else row.z,
        accuracy_difference=None if row is None else row.accuracy_difference,
        reason=chosen.reason,
        max_z=test.statistic,
        max_z_threshold=test.threshold,
        pvalue=test.pvalue,
        n_resamples=test.n_resamples,
        status=status,
        curve=curve.rows,
    )


def contam_result(rows: list[dict], settings: ContamSettings = ContamSettings()) -> ContamResult:
    """ConTAM over per-item rows holding each metric and `correct`."""
    correct = [r["correct"] for r in rows]
    metrics = {m: metric_verdict([r[m] for r in rows], correct, settings) for m in METRICS}
    return ContamResult(metric=settings.metric, metrics=metrics)
