# pyright: standard
"""PaCoST's results: the paired test of one confidence (`PairedVerdict`), the calibrated test (`CalibratedVerdict`),
the sweep's decision on the headline (`SweepDecision`) and the benchmark's result (`PacostResult`), each with the
summary.json entry it writes and reads back (schema 1's entries included)."""

from __future__ import annotations

import dataclasses
from typing import Literal

from jaxcontam.detect.json_values import json_float
from jaxcontam.detect.pacost.settings import PacostSettings
from jaxcontam.detect.status import TestOutcome
from jaxcontam.stats import PairedTestResult
from jaxcontam.stats.multiple import DEFAULT_ALPHA


@dataclasses.dataclass(frozen=True)
class PairedVerdict:
    """The paired test of one confidence: `status` says whether it ran (when not, `pvalue` is NaN and `contaminated`
    is None: not tested); `result` is the underlying `stats.PairedTestResult` when a test ran here (not in
    summary.json: None when read back)."""

    test: str
    confidence: str
    alternative: str
    status: TestOutcome
    pvalue: float
    n_pairs: int
    n_dropped: int
    dropped_reasons: dict
    mean_difference: float
    effect_size: float
    ci: tuple[float, float]
    contaminated: bool | None
    power_note: str
    pvalue_detail: str | None = None
    result: PairedTestResult | None = dataclasses.field(default=None, repr=False, compare=False)

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
        """The verdict `to_dict` wrote (in a PaCoST entry too: its other keys are left alone)."""
        low, high = entry["ci"]
        status = TestOutcome.from_summary(entry)  # schema 1 stored "no test" as contaminated: false
        return cls(
            test=entry["test"],
            confidence=entry["confidence"],
            alternative=entry["alternative"],
            status=status,
            pvalue=json_float(entry["pvalue"]),
            n_pairs=entry["n_pairs"],
            n_dropped=entry["n_dropped"],
            dropped_reasons=dict(entry["dropped_reasons"]),
            mean_difference=json_float(entry["mean_difference"]),
            effect_size=json_float(entry["effect_size"]),
            ci=(json_float(low), json_float(high)),
            contaminated=entry["contaminated"] if status.ran else None,
            power_note=entry["power_note"],
            pvalue_detail=entry.get("pvalue_detail"),
        )


@dataclasses.dataclass(frozen=True)
class CalibratedVerdict:
    """PaCoST calibrated against a reference model believed clean on the benchmark (docs/methods.md, "Calibrated
    PaCoST"): a one-sided paired test on gap(audited) - gap(reference) per item, gap = original minus rephrased
    confidence, so the bias a rephrasing carries for any model cancels. `contaminated`: p < alpha, uncorrected;
    None when no test ran (`status` says why)."""

    reference: str
    test: str
    confidence: str
    pvalue: float
    contaminated: bool | None
    n_pairs: int
    mean_difference: float
    status: TestOutcome = TestOutcome.tested()

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)} | {"status": self.status.label}

    @classmethod
    def from_dict(cls, entry: dict) -> CalibratedVerdict:
        """The verdict `to_dict` wrote; schema 1 had no status (a NaN p-value was no test, stored as false)."""
        status = TestOutcome.from_summary(
            entry if "status" in entry else {"pvalue": entry["pvalue"], "reason": "too few pairs in both models"}
        )
        return cls(
            reference=entry["reference"],
            test=entry["test"],
            confidence=entry["confidence"],
            pvalue=json_float(entry["pvalue"]),
            contaminated=entry["contaminated"] if status.ran else None,
            n_pairs=entry["n_pairs"],
            mean_difference=json_float(entry["mean_difference"]),
            status=status,
        )


@dataclasses.dataclass(frozen=True)
class SweepDecision:
    """An audit's decision on one PaCoST headline verdict (`audit.sweep.sweep_decisions`): the correction the
    verdict used ("holm", "bh", or "none": the raw p < alpha stands), the adjusted p-value (NaN where no test ran)
    and the verdict (None: not tested)."""

    correction: Literal["holm", "bh", "none"]
    pvalue_adjusted: float
    contaminated: bool | None


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
    then the headline. The settings' `correction` is "none" (the headline is the raw p < alpha and stays so) or
    "sweep" (an audit's sweep decides it); `decision` is that sweep's decision on the headline test, once an audit
    has made it (a new result: none is changed after it is made). `alpha` is the audit's level."""

    preset: str
    template: str
    chat_template: str
    chat_used: bool
    verdict: PairedVerdict
    variants: dict[str, PairedVerdict]
    settings: PacostSettings = dataclasses.field(repr=False)
    decision: SweepDecision | None = None
    calibrated: CalibratedVerdict | None = None  # with a reference model (`--reference-model`)
    alpha: float = DEFAULT_ALPHA

    @property
    def headline_status(self) -> TestOutcome:
        """Whether the headline test (the calibrated one where a reference was given) ran."""
        return self.verdict.status if self.calibrated is None else self.calibrated.status

    @property
    def headline_pvalue(self) -> float:
        return self.verdict.pvalue if self.calibrated is None else self.calibrated.pvalue

    @property
    def contaminated(self) -> bool | None:
        """The final headline verdict: the sweep's decision where one was made, else the raw p < alpha; None when
        the headline test did not run."""
        if self.decision is not None:
            return self.decision.contaminated
        return self.verdict.contaminated if self.calibrated is None else self.calibrated.contaminated

    @property
    def correction(self) -> str:
        """The correction the final verdict used: the sweep's decision's where one was made, else the settings'."""
        correction = self.settings.correction if self.decision is None else self.decision.correction
        assert correction is not None  # PacostSettings.__post_init__ fills it from the preset
        return correction

    @property
    def pvalue_adjusted(self) -> float | None:
        """The sweep's adjusted p-value of the headline test (NaN where no test ran); None before a sweep decided."""
        return None if self.decision is None else self.decision.pvalue_adjusted

    @property
    def headline_test(self) -> str:
        """The headline test as a reader names it."""
        if self.calibrated is not None:
            return f"PaCoST[{self.calibrated.confidence}] calibrated against {self.calibrated.reference}"
        return f"PaCoST[{self.verdict.confidence}] authors' test (uncalibrated)"

    def to_dict(self) -> dict:
        """summary.json's entry: the authors' test's fields, with the sweep's correction, verdict and adjusted p
        where it is the headline; the calibrated test (with the sweep's decision: it is then the headline)."""
        entry = self._raw_dict()
        decided = {}
        if self.decision is not None:
            decided = {"correction": self.decision.correction, "contaminated": self.decision.contaminated}
            decided["pvalue_adjusted"] = self.decision.pvalue_adjusted
        if self.calibrated is None:
            return entry | decided
        return entry | {"calibrated": self.calibrated.to_dict() | decided}

    def _raw_dict(self) -> dict:
        settings = self.settings
        answers = {"answers": settings.answers} | (
            {"seed": settings.seed, "temperature": settings.temperature, "top_p": settings.top_p}
            if settings.answers == "sampled"
            else {}
        )
        return (
            {
                "preset": self.preset,
                "template": self.template,
                "chat_template": self.chat_template,
                "chat_used": self.chat_used,
            }
            | answers
            | {"alpha": self.alpha, "correction": settings.correction}
            | self.verdict.to_dict()
            | {"variants": {name: v.to_dict() for name, v in self.variants.items()}}
        )

    @classmethod
    def from_dict(cls, entry: dict) -> PacostResult:
        """The result `to_dict` wrote, its flattened parts rebuilt: the verdict, the settings (`_written_settings`)
        and, where the headline entry (the calibrated one, else the entry itself) has `pvalue_adjusted`, the sweep's
        decision. The entry's verdict is then the decision's, so the raw one is taken from the decision where it kept
        it ("none") and is p < alpha again otherwise (schema 1 did not record PaCoST's level: 0.05, its default)."""
        calibrated_entry = entry.get("calibrated")
        headline = entry if calibrated_entry is None else calibrated_entry
        decision = _written_decision(headline)
        settings = _written_settings(entry, decision)
        alpha = entry.get("alpha", DEFAULT_ALPHA)
        verdict = PairedVerdict.from_dict(entry)
        calibrated = None if calibrated_entry is None else CalibratedVerdict.from_dict(calibrated_entry)
        if decision is not None:
            raw = decision.contaminated if decision.correction == "none" else None
            if calibrated is None:
                verdict = dataclasses.replace(
                    verdict, contaminated=raw if raw is not None else _raw(verdict.status, verdict.pvalue, alpha)
                )
            else:
                calibrated = dataclasses.replace(
                    calibrated,
                    contaminated=raw if raw is not None else _raw(calibrated.status, calibrated.pvalue, alpha),
                )
        return cls(
            preset=entry["preset"],
            template=entry["template"],
            chat_template=entry["chat_template"],
            chat_used=entry["chat_used"],
            verdict=verdict,
            variants={name: PairedVerdict.from_dict(variant) for name, variant in entry["variants"].items()},
            settings=settings,
            decision=decision,
            calibrated=calibrated,
            alpha=alpha,
        )


def _raw(status: TestOutcome, pvalue: float, alpha: float) -> bool | None:
    return bool(pvalue < alpha) if status.ran else None


def _written_decision(entry: dict) -> SweepDecision | None:
    """The sweep's decision in a PaCoST headline entry: its correction, adjusted p and verdict (schema 1 stored a
    test that could not run as contaminated: false; it reads as None, not tested)."""
    if "pvalue_adjusted" not in entry:
        return None
    status = TestOutcome.from_summary(entry)
    contaminated = entry["contaminated"] if status.ran else None
    return SweepDecision(entry["correction"], json_float(entry["pvalue_adjusted"]), contaminated)


def _written_settings(entry: dict, decision: SweepDecision | None) -> PacostSettings:
    """The settings a PaCoST entry records (preset, template, chat template, confidence, test, alternative, the
    answers and their sampling, correction); the others are PacostSettings' defaults. Under a sweep's decision the
    entry's correction is the decision's: "holm" or "bh" means the settings said "sweep", and after "none" the
    settings' own is not recorded (the preset's is taken). With a calibrated headline the entry's own correction is
    the settings'."""
    if decision is None or "calibrated" in entry:
        correction = entry["correction"]
    else:
        correction = None if decision.correction == "none" else "sweep"
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
