# pyright: standard
"""PaCoST's results, evidence without a level: the paired test of one confidence (`PairedVerdict`), the calibrated
test (`CalibratedVerdict`) and the benchmark's result (`PacostResult`), each with the summary.json entry it writes
and reads back (older entries included, whose verdicts and `alpha` are left to the summary's reader). The verdict
at the audit's level is the stage's headline (`detectors.pacost`), corrected by the audit's sweep."""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

from jaxcontam.detect.json_values import json_float
from jaxcontam.detect.pacost.settings import PacostSettings
from jaxcontam.detect.status import TestOutcome
from jaxcontam.errors import JaxcontamError
from jaxcontam.stats import ConfidenceInterval, PairedTestResult

if TYPE_CHECKING:
    from jaxcontam.stats.calibrated import CalibratedResult

INTERVAL_LEVEL = 0.95  # the level of the interval summary.json records (`ci`), scipy's default confidence level


def _interval(result, stored: tuple[float, float], level: float, name: str) -> ConfidenceInterval:
    """The test's interval at `level`: its underlying result's, or summary.json's `ci` at `INTERVAL_LEVEL` (a test
    read back keeps no data for another level)."""
    if result is not None:
        return result.confidence_interval(level)
    if level == INTERVAL_LEVEL:
        return ConfidenceInterval(*stored)
    raise JaxcontamError(
        f"{name}: read from summary.json, it holds the {INTERVAL_LEVEL:g} interval only, not {level!r}; recompute "
        "the test from items.parquet (detect.pacost.significance) for another level"
    )


@dataclasses.dataclass(frozen=True)
class PairedVerdict:
    """The paired test of one confidence, as scipy's results: `statistic`, `pvalue`, `n` (`n_pairs`) and
    `confidence_interval(level)` of the mean difference (`ci`: at `INTERVAL_LEVEL`), and no verdict (the headline
    applies the audit's level). `status` says whether it ran (when not, `pvalue` and `statistic` are NaN);
    `result` is the underlying `stats.PairedTestResult` when a test ran here (not in summary.json: None when read
    back). `power_note`: the smallest effect it detects with 80% power at level 0.05."""

    test: str
    confidence: str
    alternative: str
    status: TestOutcome
    statistic: float
    pvalue: float
    n_pairs: int
    n_dropped: int
    dropped_reasons: dict
    mean_difference: float
    effect_size: float
    ci: tuple[float, float]
    power_note: str
    pvalue_detail: str | None = None
    result: PairedTestResult | None = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def n(self) -> int:
        return self.n_pairs

    def confidence_interval(self, level: float = INTERVAL_LEVEL) -> ConfidenceInterval:
        """The interval of the mean difference at `level`, one-sided like the test."""
        return _interval(self.result, self.ci, level, f"PaCoST[{self.confidence}]")

    def to_dict(self) -> dict:
        """JSON-ready (summary.json's layout); `pvalue_detail` only where a test ran."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "result"}
        fields["ci"] = list(self.ci)
        fields["status"] = self.status.label
        if self.pvalue_detail is None:
            fields.pop("pvalue_detail")
        return fields

    @classmethod
    def from_dict(cls, entry: dict) -> PairedVerdict:
        """The test `to_dict` wrote (in a PaCoST entry too: its other keys are left alone; an older entry's verdict,
        `contaminated`, is not read, and its missing `statistic` reads as NaN)."""
        low, high = entry["ci"]
        status = TestOutcome.from_summary(entry)  # schema 1 stored "no test" as contaminated: false
        return cls(
            test=entry["test"],
            confidence=entry["confidence"],
            alternative=entry["alternative"],
            status=status,
            statistic=json_float(entry.get("statistic", math.nan)),
            pvalue=json_float(entry["pvalue"]),
            n_pairs=entry["n_pairs"],
            n_dropped=entry["n_dropped"],
            dropped_reasons=dict(entry["dropped_reasons"]),
            mean_difference=json_float(entry["mean_difference"]),
            effect_size=json_float(entry["effect_size"]),
            ci=(json_float(low), json_float(high)),
            power_note=entry["power_note"],
            pvalue_detail=entry.get("pvalue_detail"),
        )


@dataclasses.dataclass(frozen=True)
class CalibratedVerdict:
    """PaCoST calibrated against a reference model believed clean on the benchmark (docs/methods.md, "Calibrated
    PaCoST"): a one-sided paired test on gap(audited) - gap(reference) per item, gap = original minus rephrased
    confidence, so the bias a rephrasing carries for any model cancels. Evidence as scipy's: `statistic`, `pvalue`,
    `n` (`n_pairs`), `confidence_interval(level)` where the test ran here (`result`, not in summary.json); NaN
    p-value and statistic when no test ran (`status` says why)."""

    reference: str
    test: str
    confidence: str
    pvalue: float
    n_pairs: int
    mean_difference: float
    status: TestOutcome = TestOutcome.tested()
    statistic: float = math.nan
    result: CalibratedResult | None = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def n(self) -> int:
        return self.n_pairs

    def confidence_interval(self, level: float = INTERVAL_LEVEL) -> ConfidenceInterval:
        """The interval of the mean gap difference at `level` (only for a test run here: summary.json keeps none)."""
        if self.result is None:
            raise JaxcontamError(
                "calibrated PaCoST read from summary.json keeps no interval: recompute the test from items.parquet "
                "(detect.pacost.significance.calibrated_verdict)"
            )
        return self.result.confidence_interval(level)

    def to_dict(self) -> dict:
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "result"}
        return fields | {"status": self.status.label}

    @classmethod
    def from_dict(cls, entry: dict) -> CalibratedVerdict:
        """The test `to_dict` wrote; schema 1 had no status (a NaN p-value was no test, stored as false)."""
        status = TestOutcome.from_summary(
            entry if "status" in entry else {"pvalue": entry["pvalue"], "reason": "too few pairs in both models"}
        )
        return cls(
            reference=entry["reference"],
            test=entry["test"],
            confidence=entry["confidence"],
            pvalue=json_float(entry["pvalue"]),
            n_pairs=entry["n_pairs"],
            mean_difference=json_float(entry["mean_difference"]),
            status=status,
            statistic=json_float(entry.get("statistic", math.nan)),
        )


UNCALIBRATED_NOTE = (
    "uncalibrated: a clean model can prefer the original wording. On SmolLM2-135M fine-tuned on general text only, "
    "this test flagged 5 of 24 halves at p < 0.05 where 1.2 are expected, the calibrated test 2 of 24 "
    "(experiments/real_contamination, docs/results.md); give --reference-model (a model believed clean on the "
    "benchmark) for the calibrated verdict"
)


@dataclasses.dataclass(frozen=True)
class PacostResult:
    """PaCoST on one benchmark: the authors' test on the chosen confidence (`verdict`), every other measured
    confidence as an exploratory variant, and with a reference model the calibrated test (`calibrated`), which is
    then the headline. Evidence only: the headline verdict at the audit's level is the stage's (`headline`), and the
    settings' `correction` says whether the audit's sweep decides it ("sweep") or its raw p < alpha stands ("none")."""

    preset: str
    template: str
    chat_template: str
    chat_used: bool
    verdict: PairedVerdict
    variants: dict[str, PairedVerdict]
    settings: PacostSettings = dataclasses.field(repr=False)
    calibrated: CalibratedVerdict | None = None  # with a reference model (`--reference-model`)

    @property
    def headline_status(self) -> TestOutcome:
        """Whether the headline test (the calibrated one where a reference was given) ran."""
        return self.verdict.status if self.calibrated is None else self.calibrated.status

    @property
    def headline_pvalue(self) -> float:
        return self.verdict.pvalue if self.calibrated is None else self.calibrated.pvalue

    @property
    def correction(self) -> str:
        """The settings' correction: "sweep" (the audit's sweep decides the headline) or "none"."""
        correction = self.settings.correction
        assert correction is not None  # PacostSettings.__post_init__ fills it from the preset
        return correction

    @property
    def headline_test(self) -> str:
        """The headline test as a reader names it."""
        if self.calibrated is not None:
            return f"PaCoST[{self.calibrated.confidence}] calibrated against {self.calibrated.reference}"
        return f"PaCoST[{self.verdict.confidence}] authors' test (uncalibrated)"

    def to_dict(self) -> dict:
        """summary.json's entry: the settings it ran with, the authors' test's fields, the variants and the
        calibrated test (no verdict: the run's `verdicts` hold them)."""
        settings = self.settings
        answers = {"answers": settings.answers} | (
            {"seed": settings.seed, "temperature": settings.temperature, "top_p": settings.top_p}
            if settings.answers == "sampled"
            else {}
        )
        entry = (
            {
                "preset": self.preset,
                "template": self.template,
                "chat_template": self.chat_template,
                "chat_used": self.chat_used,
            }
            | answers
            | {"correction": settings.correction}
            | self.verdict.to_dict()
            | {"variants": {name: v.to_dict() for name, v in self.variants.items()}}
        )
        return entry if self.calibrated is None else entry | {"calibrated": self.calibrated.to_dict()}

    @classmethod
    def from_dict(cls, entry: dict) -> PacostResult:
        """The result `to_dict` wrote, its flattened parts rebuilt: the tests and the settings
        (`_written_settings`); an older entry's verdicts, sweep decision and `alpha` are not read here."""
        calibrated_entry = entry.get("calibrated")
        return cls(
            preset=entry["preset"],
            template=entry["template"],
            chat_template=entry["chat_template"],
            chat_used=entry["chat_used"],
            verdict=PairedVerdict.from_dict(entry),
            variants={name: PairedVerdict.from_dict(variant) for name, variant in entry["variants"].items()},
            settings=_written_settings(entry),
            calibrated=None if calibrated_entry is None else CalibratedVerdict.from_dict(calibrated_entry),
        )


def _written_settings(entry: dict) -> PacostSettings:
    """The settings a PaCoST entry records (preset, template, chat template, confidence, test, alternative, the
    answers and their sampling, correction); the others are PacostSettings' defaults. An entry written before the
    verdicts left it holds the sweep's decision on its headline (`pvalue_adjusted` beside it) and, with no
    calibrated test, the decision's correction for the settings': "holm" or "bh" means the settings said "sweep",
    and after "none" the settings' own is not recorded (the preset's is taken)."""
    decided = "pvalue_adjusted" in entry and "calibrated" not in entry
    correction = entry["correction"]
    if decided:
        correction = None if correction == "none" else "sweep"
    sampling = {key: entry[key] for key in ("seed", "temperature", "top_p")} if entry["answers"] == "sampled" else {}
    return PacostSettings(
        preset=entry["preset"],
        confidence=entry["confidence"],
        template=entry["template"],
        test=entry["test"],
        answers=entry["answers"],
        correction=correction,
        alternative=entry["alternative"],
        chat_template=entry["chat_template"],
        **sampling,
    )
