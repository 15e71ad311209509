"""PaCoST (Zhang et al. 2024, arXiv 2406.18326): is the model more confident on the original than on a rephrasing?

For each item with an accepted rephrasing, the model under test answers the original and the rephrased
question; a confidence is measured for each (question, own answer) pair, and a one-sided paired test asks
whether original confidences exceed rephrased ones (contamination inflates confidence on the seen wording).

Confidences (all computed, one chosen for the verdict, the others reported as variants):
- `p_true`: normalised P(True) p_t / (p_t + p_f) of the model's own answer under a judge template;
- `p_true_raw`: the raw probability p_t of the true option (the paper's P(Yes));
- `answer_logprob`: mean log-prob per token of the model's own answer given the prompt;
- `question_min_k_plus_plus`: Min-K%++ of the question text itself (membership of the wording; needs no answer).

Presets: "jaxcontam" (Kadavath's lettered judge, normalised P(True), the sign-flip permutation test, which
holds its level on P(True)-shaped data) and "paper" (PaCoST as published: its Yes/No judge, raw P(Yes), the
paired t-test; both at alpha 0.05). A field set explicitly overrides the preset's choice.
"""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np

from jaxcontam.detect.answering import answer_items
from jaxcontam.detect.likelihood import min_k_plus_plus
from jaxcontam.engine import p_true, score_logprobs
from jaxcontam.engine.chat import check_chat_mode, uses_chat
from jaxcontam.engine.ptrue import TEMPLATES
from jaxcontam.errors import JaxcontamError
from jaxcontam.stats import PairedTestResult, default_paired_method, minimum_detectable_effect, paired_test
from jaxcontam.stats.paired import DEFAULT_RESAMPLES

CONFIDENCES = ("p_true", "p_true_raw", "answer_logprob", "question_min_k_plus_plus")
ANSWER_FREE_CONFIDENCES = ("question_min_k_plus_plus",)  # measured on the question alone
PRESETS = {
    "jaxcontam": {"template": "kadavath", "confidence": "p_true", "test": default_paired_method()},
    "paper": {"template": "pacost", "confidence": "p_true_raw", "test": "t"},
}


@dataclasses.dataclass(frozen=True)
class PacostSettings:
    """How PaCoST runs; `template`, `confidence` and `test` left None come from `preset`."""

    preset: str = "jaxcontam"
    confidence: str | None = None
    template: str | None = None
    test: str | None = None
    alternative: str = "greater"
    alpha: float = 0.05
    k: float = 0.2
    max_new_tokens: int = 256
    chat_template: str = "auto"  # "auto": answer and judge as chat turns when the tokenizer has a template

    def __post_init__(self):
        check_chat_mode(self.chat_template)
        if self.preset not in PRESETS:
            raise JaxcontamError(f"PaCoST preset {self.preset!r} is unknown: use one of {', '.join(PRESETS)}")
        for key, value in PRESETS[self.preset].items():
            if getattr(self, key) is None:
                object.__setattr__(self, key, value)
        if self.confidence not in CONFIDENCES:
            raise JaxcontamError(f"PaCoST confidence {self.confidence!r} is unknown: use one of "
                                 f"{', '.join(CONFIDENCES)}")
        if self.template not in TEMPLATES:
            raise JaxcontamError(f"PaCoST judge template {self.template!r} is unknown: use one of "
                                 f"{', '.join(TEMPLATES)}")


def needs_answer(confidence: str) -> bool:
    """Whether `confidence` measures the model's answer (so a pair without an answer cannot be tested)."""
    return confidence not in ANSWER_FREE_CONFIDENCES


_ANSWER_CUE = re.compile(r"(?:\b(?:Answer|Solution)|(?:^|(?<=\n))A)\s*:\s*$")
_QUESTION_LABEL = re.compile(r"^(?:Question|Q)\s*:\s*")


def judge_question(benchmark, item, question: str) -> str:
    """What the P(True) judge is shown as the question: the benchmark prompt for `question`, minus its answer cue.

    The prompt carries what the model saw: context, the question (or its rephrasing), the lettered options
    of MMLU-style prompts, COPA's connector. Its trailing cue ("Answer:", "A:", "Solution:") and a leading
    "Question:"/"Q:" label go, since the judge template writes its own.
    """
    shown = _ANSWER_CUE.sub("", benchmark.prompt(item, question=question).strip()).rstrip()
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


def _question_min_k_plus_plus(model, questions: list[str], k: float) -> list[float]:
    ids = [model.tokenizer.encode(q) for q in questions]
    scored = [i for i, t in enumerate(ids) if len(t) >= 2]
    values = [math.nan] * len(ids)
    for i, s in zip(scored, score_logprobs(model, [ids[i] for i in scored], with_stats=True)):
        values[i] = min_k_plus_plus(s.logprobs, s.mean_logprobs, s.std_logprobs, k)
    return values


def _side(model, benchmark, items, questions: list[str], settings: PacostSettings, side: str) -> list[dict]:
    """Answers and every confidence for one side (original or rephrased) of a list of items."""
    answers = answer_items(model, benchmark, items, questions, max_new_tokens=settings.max_new_tokens,
                           chat=settings.chat_template, progress=True)
    judged = [i for i, a in enumerate(answers) if a.text]
    normalised, raw = [math.nan] * len(items), [math.nan] * len(items)
    if judged:
        result = p_true(model, [judge_question(benchmark, items[i], questions[i]) for i in judged],
                        [judged_answer(benchmark, items[i], answers[i]) for i in judged], template=settings.template,
                        chat=settings.chat_template)
        for i, value, value_raw in zip(judged, result.normalised, result.p_true):
            normalised[i], raw[i] = float(value), float(value_raw)
    minkpp = _question_min_k_plus_plus(model, questions, settings.k)
    return [{
        f"answer_{side}": a.text, f"correct_{side}": a.correct, f"correct_norm_{side}": a.correct_norm,
        f"p_true_{side}": normalised[i], f"p_true_raw_{side}": raw[i], f"answer_logprob_{side}": a.answer_logprob,
        f"question_min_k_plus_plus_{side}": minkpp[i],
    } for i, a in enumerate(answers)]


def pacost_records(model, benchmark, items, rephrasings, settings: PacostSettings) -> list[dict]:
    """One record per item: both answers, correctness, every confidence on both sides (NaN where absent).

    `rephrasings[i]` is the accepted rephrased question of items[i], or None (the item is still answered
    on the original side, which gives its accuracy, and is dropped from the paired test).
    """
    chat = uses_chat(model.tokenizer, settings.chat_template)
    records = [{"id": item.id, "chat": chat} | r for item, r in zip(items, _side(model, benchmark, items,
                                                                     [it.question for it in items], settings,
                                                                     "original"))]
    with_rephrase = [i for i, r in enumerate(rephrasings) if r]
    rephrased = _side(model, benchmark, [items[i] for i in with_rephrase],
                      [rephrasings[i] for i in with_rephrase], settings, "rephrased") if with_rephrase else []
    empty = {key.replace("original", "rephrased"): (math.nan if isinstance(v, float) else None)
             for key, v in records[0].items() if key.endswith("_original")} if records else {}
    for record in records:
        record.update(empty, rephrase=None)
    for i, side in zip(with_rephrase, rephrased):
        records[i].update(side, rephrase=rephrasings[i])
    return records


def _answered(records, side: str) -> np.ndarray:
    return np.array([bool(r[f"answer_{side}"]) for r in records])


@dataclasses.dataclass(frozen=True)
class PairedVerdict:
    """The paired test of one confidence: `status` is "tested" or "no test: <reason>" (then `pvalue` is NaN and
    `contaminated` is no verdict); `result` is the underlying `stats.PairedTestResult` when a test ran."""

    test: str
    confidence: str
    alternative: str
    status: str
    pvalue: float
    n_pairs: int
    n_dropped: int
    dropped_reasons: dict
    mean_difference: float
    effect_size: float
    ci: tuple[float, float]
    contaminated: bool
    power_note: str
    pvalue_detail: str | None = None
    result: PairedTestResult | None = dataclasses.field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict:
        """JSON-ready (summary.json's layout); `pvalue_detail` only where a test ran."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "result"}
        fields["ci"] = list(self.ci)
        if self.pvalue_detail is None:
            fields.pop("pvalue_detail")
        return fields


@dataclasses.dataclass(frozen=True)
class PacostResult:
    """PaCoST on one benchmark: the verdict on the chosen confidence and every other confidence as a variant."""

    preset: str
    template: str
    chat_template: str
    chat_used: bool
    verdict: PairedVerdict
    variants: dict[str, PairedVerdict]

    def to_dict(self) -> dict:
        return {"preset": self.preset, "template": self.template, "chat_template": self.chat_template,
                "chat_used": self.chat_used} | self.verdict.to_dict() | {
            "variants": {name: v.to_dict() for name, v in self.variants.items()}}


def _no_test(base: dict, reason: str, power_note: str) -> PairedVerdict:
    return PairedVerdict(**base, status=f"no test: {reason}", pvalue=math.nan, mean_difference=math.nan,
                         effect_size=math.nan, ci=(math.nan, math.nan), contaminated=False, power_note=power_note)


def paired_verdict(records, confidence: str, settings: PacostSettings, seed: int = 0,
                   resamples: int = DEFAULT_RESAMPLES) -> PairedVerdict:
    """The paired test of one confidence over `records` (pairs dropped with reasons).

    A pair is dropped for a missing answer only when the confidence measures the answer (`needs_answer`).
    `resamples`: Monte Carlo flips when the permutation test cannot enumerate (a sweep sizes it with
    `stats.sweep_resamples`, so the p-value floor 1 / (1 + resamples) never blocks the correction).
    """
    original = [r[f"{confidence}_original"] for r in records]
    rephrased = [r[f"{confidence}_rephrased"] for r in records]
    no_rephrase = sum(r["rephrase"] is None for r in records)
    kept = [i for i, r in enumerate(records) if r["rephrase"] is not None]
    base = {"test": settings.test, "confidence": confidence, "alternative": settings.alternative,
            "n_pairs": 0, "n_dropped": len(records), "dropped_reasons": {"no accepted rephrasing": no_rephrase}}
    if len(kept) < 2:
        reason = f"only {len(kept)} item(s) have an accepted rephrasing"
        return _no_test(base, reason, f"{reason}: no test")
    try:
        answered = {f"answered_{side}": _answered([records[i] for i in kept], side)
                    for side in ("original", "rephrased")} if needs_answer(confidence) else {}
        result = paired_test([original[i] for i in kept], [rephrased[i] for i in kept], method=settings.test,
                             alternative=settings.alternative, seed=seed, resamples=resamples, **answered)
    except JaxcontamError as error:  # too few usable pairs: reported, not fatal for the sweep
        return _no_test(base, str(error), str(error))
    interval = result.confidence_interval(1 - settings.alpha)
    mde = minimum_detectable_effect(result.n, alpha=settings.alpha, alternative=settings.alternative) \
        if result.n >= 3 else math.nan
    reasons = dict(result.drop_reasons) | ({"no accepted rephrasing": no_rephrase} if no_rephrase else {})
    return PairedVerdict(
        test=result.method, confidence=confidence, alternative=result.alternative, status="tested",
        pvalue=result.pvalue, n_pairs=result.n, n_dropped=result.n_dropped + no_rephrase, dropped_reasons=reasons,
        mean_difference=result.mean_difference, effect_size=result.effect_size, ci=(interval.low, interval.high),
        contaminated=bool(result.pvalue <= settings.alpha), pvalue_detail=result.detail, result=result,
        power_note=f"with {result.n} pairs the minimum detectable effect at 80% power is d_z = {mde:.2g}")


def pacost_result(records, settings: PacostSettings, seed: int = 0,
                  resamples: int = DEFAULT_RESAMPLES) -> PacostResult:
    """The verdict on the chosen confidence, with every other confidence as a variant."""
    return PacostResult(
        preset=settings.preset, template=settings.template, chat_template=settings.chat_template,
        chat_used=any(bool(r.get("chat")) for r in records),
        verdict=paired_verdict(records, settings.confidence, settings, seed, resamples),
        variants={c: paired_verdict(records, c, settings, seed, resamples) for c in CONFIDENCES
                  if c != settings.confidence})
