# pyright: standard
"""PaCoST (Zhang et al. 2024, arXiv 2406.18326): is the model more confident on the original than on a rephrasing?

For each item with an accepted rephrasing, the model under test answers the original and the rephrased
question; a confidence is measured for each (question, own answer) pair, and a one-sided paired test asks
whether original confidences exceed rephrased ones (contamination inflates confidence on the seen wording).

Confidences (one chosen for the verdict, the others reported as variants) are registered in
`detect.confidences.CONFIDENCES`.

Presets (a field set explicitly overrides the preset's choice):
- "jaxcontam": greedy answers, Kadavath's judge, normalised P(True), the sign-flip permutation test (which holds
  its level on P(True)-shaped data); its verdict is the audit's multiple-testing decision (`correction =
  "sweep"`: Holm by default).
- "paper": PaCoST as released (github.com/lleozhang/PaCoST, `test_model_pipeline.py` and `test.py` at commit
  fc80fc717269500491718c6df2b26261d9da9b02): sampled answers (`do_sample=True`; here at `temperature` and
  `top_p` with a recorded `seed`), the published judge's P(yes), pairs kept only where both confidences are
  > 0, and `scipy.stats.ttest_rel(original, rephrased, alternative="greater").pvalue < alpha`, uncorrected
  (`correction = "none"`: the sweep reports adjusted p-values beside it but never replaces the verdict).
"""

from __future__ import annotations

import dataclasses
import math
import re
import typing
from typing import Literal

import numpy as np

from jaxcontam.detect.answering import MAX_NEW_TOKENS, Sampling, answer_items
from jaxcontam.detect.confidences import CONFIDENCES, SideEvidence
from jaxcontam.detect.likelihood import LikelihoodSettings
from jaxcontam.detect.status import TestOutcome
from jaxcontam.detect.summary_values import json_float
from jaxcontam.engine.chat import ChatMode, check_chat_mode, uses_chat
from jaxcontam.engine.pacost_judge import AUTHORS_MAX_NEW_TOKENS, yes_token_ids
from jaxcontam.engine.ptrue import TEMPLATES
from jaxcontam.errors import JaxcontamError
from jaxcontam.ngram.item_text import prompt_header
from jaxcontam.stage_clock import stage
from jaxcontam.stats import PairedTestResult, default_paired_method, minimum_detectable_effect, paired_test
from jaxcontam.stats.batched import PairedMethod
from jaxcontam.stats.multiple import DEFAULT_ALPHA
from jaxcontam.stats.paired import DEFAULT_RESAMPLES, minimum_pairs

Preset = Literal["jaxcontam", "paper"]
AnswerMode = Literal["greedy", "sampled"]
Correction = Literal["sweep", "none"]
Alternative = Literal["greater", "less", "two-sided"]
NO_VERDICT = "no yes/no in the judge's reply (confidence 0)"
ANSWER_MODES: tuple[AnswerMode, ...] = typing.get_args(AnswerMode)
CORRECTIONS: tuple[Correction, ...] = typing.get_args(Correction)
PRESETS: dict[Preset, dict] = {
    "jaxcontam": {
        "template": "kadavath",
        "confidence": "p_true",
        "test": default_paired_method(),
        "answers": "greedy",
        "correction": "sweep",
    },
    "paper": {"template": "kadavath", "confidence": "p_yes", "test": "t", "answers": "sampled", "correction": "none"},
}
_CHOICES = {"template": tuple(TEMPLATES), "answers": ANSWER_MODES, "correction": CORRECTIONS}


@dataclasses.dataclass(frozen=True)
class PacostSettings:
    """How PaCoST runs; the fields `PRESETS` name (template, confidence, test, answers, correction) left None come
    from `preset`.

    answers: "greedy" or "sampled" (at `temperature` / `top_p`, keyed by `seed`); correction: "sweep" (an audit's
    Holm/BH decision replaces the raw verdict) or "none" (the raw p < alpha verdict stands);
    judge_max_new_tokens: the length of the published judge's reply (`p_yes`). The level is not a PaCoST setting:
    it is the audit's `alpha`, the one level of every verdict (`detect.stage.StageInput.alpha`).
    """

    preset: Preset = "jaxcontam"
    confidence: str | None = None  # p_true, p_true_raw, p_yes, answer_logprob, question_min_k_plus_plus (CONFIDENCES)
    template: str | None = None  # a name of engine.ptrue.TEMPLATES
    test: PairedMethod | None = None
    answers: AnswerMode | None = None
    correction: Correction | None = None
    alternative: Alternative = "greater"
    k: float = LikelihoodSettings.k  # Min-K%++ of the question (`question_min_k_plus_plus`)
    max_new_tokens: int = MAX_NEW_TOKENS
    judge_max_new_tokens: int = AUTHORS_MAX_NEW_TOKENS
    seed: int = 0
    temperature: float = 1.0
    top_p: float = 1.0
    chat_template: ChatMode = "auto"  # "auto": answer and judge as chat turns when the tokenizer has a template
    given: tuple[str, ...] = dataclasses.field(init=False, repr=False, compare=False)  # preset fields set explicitly

    def __post_init__(self):
        check_chat_mode(self.chat_template)
        if self.preset not in PRESETS:
            raise JaxcontamError(f"PaCoST preset {self.preset!r} is unknown: use one of {', '.join(PRESETS)}")
        object.__setattr__(self, "given", tuple(k for k in PRESETS[self.preset] if getattr(self, k) is not None))
        for key, value in PRESETS[self.preset].items():
            if getattr(self, key) is None:
                object.__setattr__(self, key, value)
        for key, allowed in ({"confidence": CONFIDENCES.names()} | _CHOICES).items():
            if getattr(self, key) not in allowed:
                raise JaxcontamError(f"PaCoST {key} {getattr(self, key)!r} is unknown: use one of {', '.join(allowed)}")
        if self.answers == "sampled":
            Sampling(self.seed, self.temperature, self.top_p)  # checks them

    def with_preset(self, preset: str) -> PacostSettings:
        """These settings under `preset`: the fields it decides take its values, unless they were set explicitly."""
        return self.with_fields(preset=preset)

    def with_fields(self, **changes) -> PacostSettings:
        """These settings with `changes` set explicitly; the preset's fields not set explicitly stay its own."""
        kept = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.init and (f.name not in PRESETS[self.preset] or f.name in self.given)
        }
        return PacostSettings(**kept | changes)

    def to_dict(self) -> dict:
        """Every setting that changes results (summary.json's record and the resume key)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.init}

    def sampling(self, stream: str) -> Sampling | None:
        """How the answers of `stream` ("original" / "rephrased") are drawn; None when they are greedy."""
        return Sampling(self.seed, self.temperature, self.top_p, stream) if self.answers == "sampled" else None

    def measured(self) -> tuple[str, ...]:
        """The confidences a run measures: every one but the on-demand ones not chosen."""
        return tuple(c.name for c in CONFIDENCES.values() if not c.on_demand or c.name == self.confidence)


def needs_answer(confidence: str) -> bool:
    """Whether `confidence` measures the model's answer (so a pair without an answer cannot be tested)."""
    return CONFIDENCES[confidence].needs_answer


_ANSWER_CUE = re.compile(r"(?:\b(?:Answer|Solution)|(?:^|(?<=\n))A)\s*:\s*$")
_QUESTION_LABEL = re.compile(r"^(?:Question|Q)\s*:\s*")


def judge_question(benchmark, item, question: str) -> str:
    """What a judge is shown as the question: the benchmark prompt for `question`, minus its header and answer cue.

    The prompt carries what the model saw: context, the question (or its rephrasing), the lettered options
    of MMLU-style prompts, COPA's connector. Header lines shared by every item of the (sub)benchmark (MMLU's
    "The following are multiple choice questions (with answers) about ...", found as ConTAM's item text finds
    them: `ngram.item_text.prompt_header`) go, and so do the trailing cue ("Answer:", "A:", "Solution:") and a
    leading "Question:"/"Q:" label, since the judge template writes its own.
    """
    prompt = benchmark.prompt(item, question=question)
    header = prompt_header(benchmark, item)
    if header and prompt.startswith(header):
        prompt = prompt[len(header) :]
    shown = _ANSWER_CUE.sub("", prompt.strip()).rstrip()
    return _QUESTION_LABEL.sub("", shown)


def judged_answer(benchmark, item, answer) -> str:
    """What the judge is shown as the answer: the generated text, or the chosen option as text.

    A continuation that spells its option (COPA's lower-cased choice after the connector) is kept as the
    model scored it; a label continuation (" B" after lettered options) becomes the option's text.
    """
    if answer.choice is None:
        return answer.text
    option = item.choices[answer.choice].strip()
    said = benchmark.continuation(item, answer.choice).strip()
    return said if said.casefold() == option.casefold() else option


def _side(model, benchmark, items, questions: list[str], settings: PacostSettings, side: str) -> list[dict]:
    """Answers and every measured confidence (`PacostSettings.measured`) for one side (original or rephrased) of a
    list of items."""
    with stage("answer"):
        answers = answer_items(
            model,
            benchmark,
            items,
            questions,
            max_new_tokens=settings.max_new_tokens,
            chat=settings.chat_template,
            progress=True,
            sampling=settings.sampling(side),
        )
    judged = [i for i, a in enumerate(answers) if a.text]
    shown = (
        [judge_question(benchmark, items[i], questions[i]) for i in judged],
        [judged_answer(benchmark, items[i], answers[i]) for i in judged],
    )
    evidence = SideEvidence(model, benchmark, items, questions, answers, judged, shown, settings)
    columns: dict[str, list] = {}
    for name in settings.measured():
        confidence = CONFIDENCES[name]
        with stage(confidence.clock):
            columns |= confidence.measure(evidence)
    return [
        {f"answer_{side}": a.text, f"correct_{side}": a.correct, f"correct_norm_{side}": a.correct_norm}
        | {f"{column}_{side}": values[i] for column, values in columns.items()}
        for i, a in enumerate(answers)
    ]


def pacost_records(model, benchmark, items, rephrasings, settings: PacostSettings) -> list[dict]:
    """One record per item: both answers, correctness, every confidence on both sides (NaN where absent).

    `rephrasings[i]` is the accepted rephrased question of items[i], or None (the item is still answered
    on the original side, which gives its accuracy, and is dropped from the paired test).
    """
    chat = uses_chat(model.tokenizer, settings.chat_template)
    if "p_yes" in settings.measured():
        yes_token_ids(model.tokenizer)  # refuses a tokenizer that cannot say "yes" before anything is answered
    records = [
        {"id": item.id, "chat": chat} | r
        for item, r in zip(items, _side(model, benchmark, items, [it.question for it in items], settings, "original"))
    ]
    with_rephrase = [i for i, r in enumerate(rephrasings) if r]
    rephrased = (
        _side(
            model,
            benchmark,
            [items[i] for i in with_rephrase],
            [rephrasings[i] for i in with_rephrase],
            settings,
            "rephrased",
        )
        if with_rephrase
        else []
    )
    empty = (
        {
            key.replace("original", "rephrased"): (math.nan if isinstance(v, float) else None)
            for key, v in records[0].items()
            if key.endswith("_original")
        }
        if records
        else {}
    )
    for record in records:
        record.update(empty, rephrase=None)
    for i, side in zip(with_rephrase, rephrased):
        records[i].update(side, rephrase=rephrasings[i])
    return records


def _answered(records, side: str) -> np.ndarray:
    return np.array([bool(r[f"answer_{side}"]) for r in records])


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


def calibrated_verdict(
    records,
    reference_records,
    reference: str,
    settings: PacostSettings,
    seed: int = 0,
    resamples: int = DEFAULT_RESAMPLES,
    alpha: float = DEFAULT_ALPHA,
) -> CalibratedVerdict:
    """The calibrated test of the chosen confidence over the items both models answered with a rephrasing (the
    audit's paired test where `stats.calibrated.reference_test` has it, else the sign-flip permutation test), at
    level `alpha`."""
    from jaxcontam.stats.calibrated import REFERENCE_METHODS, reference_test

    confidence = settings.confidence
    assert confidence is not None  # PacostSettings fills it from the preset
    kept = [
        i for i, (a, b) in enumerate(zip(records, reference_records, strict=True)) if a["rephrase"] and b["rephrase"]
    ]
    method = settings.test if settings.test in REFERENCE_METHODS else "permutation"
    values = [
        [float(source[i][f"{confidence}_{side}"]) for i in kept]
        for source in (records, reference_records)
        for side in ("original", "rephrased")
    ]

    def no_test(reason: str, pairs: int) -> CalibratedVerdict:
        return CalibratedVerdict(
            reference, method, confidence, math.nan, None, pairs, math.nan, TestOutcome.no_test(reason)
        )

    if len(kept) < 2:
        return no_test(f"only {len(kept)} item(s) have a rephrasing in both models", len(kept))
    try:
        result = reference_test(
            *values, method=method, alternative=settings.alternative, seed=seed, resamples=resamples
        )
    except JaxcontamError as error:  # too few finite pairs: no test
        return no_test(str(error), 0)
    return CalibratedVerdict(
        reference,
        method,
        confidence,
        float(result.pvalue),
        bool(result.pvalue < alpha),
        int(result.n),
        float(result.mean_difference),
    )


@dataclasses.dataclass(frozen=True)
class SweepDecision:
    """An audit's decision on one PaCoST headline verdict (`audit.summary.sweep_decisions`): the correction the
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


def _no_test(base: dict, reason: str, power_note: str) -> PairedVerdict:
    return PairedVerdict(
        **base,
        status=TestOutcome.no_test(reason),
        pvalue=math.nan,
        mean_difference=math.nan,
        effect_size=math.nan,
        ci=(math.nan, math.nan),
        contaminated=None,
        power_note=power_note,
    )


def paired_verdict(
    records,
    confidence: str,
    settings: PacostSettings,
    seed: int = 0,
    resamples: int = DEFAULT_RESAMPLES,
    alpha: float = DEFAULT_ALPHA,
) -> PairedVerdict:
    """The paired test of one confidence over `records` (pairs dropped with reasons); `contaminated` is the raw
    p < alpha (an audit's sweep may replace it, `audit.summary`), None when no test could run.

    A pair is dropped for a missing answer only when the confidence measures the answer (`needs_answer`), and
    for a confidence of 0 where 0 means no verdict (`Confidence.positive`: the authors keep pairs with both > 0).
    `resamples`: Monte Carlo flips when the permutation test cannot enumerate (a sweep sizes it with
    `stats.sweep_resamples`, so the p-value floor 1 / (1 + resamples) never blocks the correction).
    """
    original = [r[f"{confidence}_original"] for r in records]
    rephrased = [r[f"{confidence}_rephrased"] for r in records]
    # no accepted rephrasing: None in the audit's records, NaN where pandas (3+) read them back from items.parquet
    kept = [i for i, r in enumerate(records) if isinstance(r["rephrase"], str)]
    no_rephrase = len(records) - len(kept)
    base = {
        "test": settings.test,
        "confidence": confidence,
        "alternative": settings.alternative,
        "n_pairs": 0,
        "n_dropped": len(records),
        "dropped_reasons": {"no accepted rephrasing": no_rephrase},
    }
    if len(kept) < 2:
        reason = f"only {len(kept)} item(s) have an accepted rephrasing"
        return _no_test(base, reason, f"{reason}: no test")
    # the published judge's confidence is 0 when its reply never says yes or no: such pairs are dropped
    silent = {
        i
        for i in kept
        if CONFIDENCES[confidence].positive and any(math.isfinite(v) and v <= 0 for v in (original[i], rephrased[i]))
    }
    kept = [i for i in kept if i not in silent]
    extra = {"no accepted rephrasing": no_rephrase, NO_VERDICT: len(silent)}
    extra = {reason: count for reason, count in extra.items() if count}
    test_method = default_paired_method() if settings.test is None else settings.test
    if silent and len(kept) < minimum_pairs(test_method):
        reason = (
            f"{len(kept)} usable pair(s) of {len(records)}: the judge's reply said neither yes nor no on "
            f"{len(silent)} of the {len(silent) + len(kept)} items with a rephrasing"
            + (f" ({no_rephrase} without one)" if no_rephrase else "")
            + f"; the {test_method!r} test needs {minimum_pairs(test_method)}. Give the judge a longer reply "
            "(pacost.judge_max_new_tokens) or a judge model that answers yes or no"
        )
        return _no_test(base | {"dropped_reasons": extra}, reason, f"{reason}: no test")
    try:
        with_answers = needs_answer(confidence)
        rows = [records[i] for i in kept]
        result = paired_test(
            [original[i] for i in kept],
            [rephrased[i] for i in kept],
            method=settings.test,
            alternative=settings.alternative,
            seed=seed,
            resamples=resamples,
            answered_original=_answered(rows, "original") if with_answers else None,
            answered_rephrased=_answered(rows, "rephrased") if with_answers else None,
        )
    except JaxcontamError as error:  # too few usable pairs: reported, not fatal for the sweep
        return _no_test(base | {"dropped_reasons": extra}, str(error), str(error))
    interval = result.confidence_interval(1 - alpha)
    mde = (
        minimum_detectable_effect(result.n, alpha=alpha, alternative=settings.alternative)
        if result.n >= 3
        else math.nan
    )
    return PairedVerdict(
        test=result.method,
        confidence=confidence,
        alternative=result.alternative,
        status=TestOutcome.tested(),
        pvalue=result.pvalue,
        n_pairs=result.n,
        n_dropped=result.n_dropped + sum(extra.values()),
        dropped_reasons=dict(result.drop_reasons) | extra,
        mean_difference=result.mean_difference,
        effect_size=result.effect_size,
        ci=(interval.low, interval.high),
        contaminated=bool(result.pvalue < alpha),
        pvalue_detail=result.detail,
        result=result,
        power_note=f"with {result.n} pairs the minimum detectable effect at 80% power is d_z = {mde:.2g}",
    )


def pacost_result(
    records,
    settings: PacostSettings,
    seed: int = 0,
    resamples: int = DEFAULT_RESAMPLES,
    alpha: float = DEFAULT_ALPHA,
) -> PacostResult:
    """The verdict on the chosen confidence at level `alpha` (the audit's), with every other measured confidence as
    a variant."""
    # PacostSettings.__post_init__ fills the fields a preset decides
    assert settings.template is not None and settings.confidence is not None
    return PacostResult(
        preset=settings.preset,
        template=settings.template,
        chat_template=settings.chat_template,
        chat_used=any(bool(r.get("chat")) for r in records),
        verdict=paired_verdict(records, settings.confidence, settings, seed, resamples, alpha),
        variants={
            c: paired_verdict(records, c, settings, seed, resamples, alpha)
            for c in settings.measured()
            if c != settings.confidence
        },
        settings=settings,
        alpha=alpha,
    )
