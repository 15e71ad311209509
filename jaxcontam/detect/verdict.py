# pyright: standard
"""A detector's headline verdict: contaminated, not detected, or not tested (with its reason), never two outcomes.

Results hold evidence (statistic, p-value, n, `confidence_interval(level)`, as scipy's do) and no level; a verdict is
made in one place: every registered stage's `headline(result, alpha)` (`detect.stage.DetectorStage.headline`) states
one `Verdict` per (model, benchmark) at the audit's level (the test whose decision a user acts on: PaCoST's
calibrated test when a reference exists, else the authors' test, labelled uncalibrated), and the audit's sweep
(`audit.sweep`) corrects the swept ones (`Verdict.decided`: the adjusted p-value and the correction that decided
it). A test that could not run is `NOT_TESTED`: summary.json stores `contaminated: null` for it, never `false`.

The level's one definition is `level_field` (a number in (0, 1), `Level.alpha`): the audit's config field, its
`--alpha` option and `--set alpha=` take its range, and `check_level` applies it where a level enters from Python or
from a file.
"""

from __future__ import annotations

import dataclasses
import enum
import math

from jaxcontam.dataclass_config import range_error, ranged
from jaxcontam.detect.json_values import json_float
from jaxcontam.detect.status import TestOutcome
from jaxcontam.errors import JaxcontamError
from jaxcontam.stats.multiple import DEFAULT_ALPHA


def level_field():
    """The dataclass field of a significance level: 0.05 by default, a number in (0, 1)."""
    return ranged(DEFAULT_ALPHA, above=0, below=1)


@dataclasses.dataclass(frozen=True)
class Level:
    """The audit's significance level, the one level of every verdict, defined once (`level_field`):
    `AuditConfig.alpha` is this field, and with it the TOML file, `--set alpha=` and `--alpha` read its range;
    `check_level` applies it where a level enters elsewhere."""

    alpha: float = level_field()


def check_level(alpha: float, where: str = "audit") -> float:
    """`alpha` as a level (`Level.alpha`'s range; a `JaxcontamError` naming `where` otherwise)."""
    error = range_error("alpha", alpha, Level, where)
    if error:
        raise JaxcontamError(error)
    return float(alpha)


class Outcome(enum.Enum):
    CONTAMINATED = "contaminated"
    NOT_DETECTED = "not detected"
    NOT_TESTED = "not tested"

    @classmethod
    def of(cls, contaminated: bool | None) -> Outcome:
        """The outcome of a three-valued verdict (None: no test)."""
        if contaminated is None:
            return cls.NOT_TESTED
        return cls.CONTAMINATED if contaminated else cls.NOT_DETECTED


def flagged(status: TestOutcome, pvalue: float, alpha: float) -> bool | None:
    """A test's raw verdict at `alpha`: p < alpha, or None when it did not run (or has no p-value)."""
    if not status.ran or not math.isfinite(pvalue):
        return None
    return bool(pvalue < alpha)


@dataclasses.dataclass(frozen=True)
class Verdict:
    """One detector's headline verdict on one (model, benchmark).

    detector: the stage's name; test: what was tested, as a reader sees it ("calibrated against base-model",
    "authors' test, uncalibrated"); contaminated: True / False / None (not tested, `reason` says why);
    pvalue: the raw p-value; pvalue_adjusted: the sweep's adjusted p (None outside the sweep's family, NaN where no
    test ran); correction: what decided the verdict ("holm", "bh", or "none": raw p < alpha); swept: whether the
    verdict enters the audit's multiple-testing family; note: a caveat a reader must see beside it (e.g. how often
    an uncalibrated test flags clean models).
    """

    detector: str
    test: str
    contaminated: bool | None
    pvalue: float
    pvalue_adjusted: float | None = None
    correction: str = "none"
    swept: bool = False
    reason: str | None = None
    note: str | None = None

    def __post_init__(self):
        if (self.contaminated is None) != (self.reason is not None):
            raise ValueError(f"{self.detector}: a reason is given exactly when no test ran, got {self.reason!r}")

    @property
    def outcome(self) -> Outcome:
        return Outcome.of(self.contaminated)

    @property
    def label(self) -> str:
        """The verdict as one phrase: "contaminated", "not detected" or "no test: <reason>"."""
        return self.outcome.value if self.reason is None else f"no test: {self.reason}"

    def decided(self, pvalue_adjusted: float, correction: str, contaminated: bool | None) -> Verdict:
        """This verdict after the sweep's decision (a new verdict)."""
        return dataclasses.replace(
            self, pvalue_adjusted=pvalue_adjusted, correction=correction, contaminated=contaminated
        )

    def to_dict(self) -> dict:
        return {
            "detector": self.detector,
            "test": self.test,
            "outcome": self.outcome.value,
            "contaminated": self.contaminated,
            "pvalue": self.pvalue,
            "pvalue_adjusted": self.pvalue_adjusted,
            "correction": self.correction,
            "swept": self.swept,
            "reason": self.reason,
            "note": self.note,
        }

    @classmethod
    def from_dict(cls, entry: dict) -> Verdict:
        adjusted = entry.get("pvalue_adjusted")
        return cls(
            detector=entry["detector"],
            test=entry["test"],
            contaminated=entry["contaminated"],
            pvalue=json_float(entry["pvalue"]),
            pvalue_adjusted=None if adjusted is None else json_float(adjusted),
            correction=entry["correction"],
            swept=entry["swept"],
            reason=entry["reason"],
            note=entry.get("note"),
        )
