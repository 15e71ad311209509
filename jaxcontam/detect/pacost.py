"""PaCoST (Zhang et al. 2024, arXiv 2406.18326): is the model more confident on the original than on a rephrasing?

For each item with an accepted rephrasing, the model under test answers the original and the rephrased
question; a confidence is measured for each (question, own answer) pair, and a one-sided paired test asks
whether original confidences exceed rephrased ones (contamination inflates confidence on the seen wording).

Confidences (all computed, one chosen for the verdict, the others reported as variants):
- `p_true`: normalised P(True) of the model's own answer under a judge template (the paper's measure);
- `answer_logprob`: mean log-prob per token of the model's own answer given the prompt;
- `question_min_k_plus_plus`: Min-K%++ of the question text itself (membership of the wording).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from jaxcontam.detect.answering import answer_items
from jaxcontam.detect.likelihood import min_k_plus_plus
from jaxcontam.engine import p_true, score_logprobs
from jaxcontam.errors import JaxcontamError
from jaxcontam.stats import minimum_detectable_effect, paired_test

CONFIDENCES = ("p_true", "answer_logprob", "question_min_k_plus_plus")


@dataclasses.dataclass(frozen=True)
class PacostSettings:
    confidence: str = "p_true"
    template: str = "kadavath"
    test: str | None = None  # None: stats.default_paired_method(), the test that holds its level on P(True) shapes
    alternative: str = "greater"
    alpha: float = 0.05
    k: float = 0.2
    max_new_tokens: int = 256

    def __post_init__(self):
        if self.confidence not in CONFIDENCES:
            raise JaxcontamError(f"PaCoST confidence {self.confidence!r} is unknown: use one of {', '.join(CONFIDENCES)}")


def judge_question(item, question: str) -> str:
    """What the P(True) judge is shown as the question: the context (if any) and the question."""
    return f"{item.context.strip()}\n{question}" if item.context else question


def _question_min_k_plus_plus(model, questions: list[str], k: float) -> list[float]:
    ids = [model.tokenizer.encode(q) for q in questions]
    scored = [i for i, t in enumerate(ids) if len(t) >= 2]
    values = [math.nan] * len(ids)
    for i, s in zip(scored, score_logprobs(model, [ids[i] for i in scored], with_stats=True)):
        values[i] = min_k_plus_plus(s.logprobs, s.mean_logprobs, s.std_logprobs, k)
    return values


def _side(model, benchmark, items, questions: list[str], settings: PacostSettings, side: str) -> list[dict]:
    """Answers and every confidence for one side (original or rephrased) of a list of items."""
    answers = answer_items(model, benchmark, items, questions, max_new_tokens=settings.max_new_tokens)
    judged = [i for i, a in enumerate(answers) if a.text]
    ptrue = [math.nan] * len(items)
    if judged:
        result = p_true(model, [judge_question(items[i], questions[i]) for i in judged],
                        [answers[i].text for i in judged], template=settings.template)
        for i, value in zip(judged, result.normalised):
            ptrue[i] = float(value)
    minkpp = _question_min_k_plus_plus(model, questions, settings.k)
    return [{
        f"answer_{side}": a.text, f"correct_{side}": a.correct, f"correct_norm_{side}": a.correct_norm,
        f"p_true_{side}": ptrue[i], f"answer_logprob_{side}": a.answer_logprob,
        f"question_min_k_plus_plus_{side}": minkpp[i],
    } for i, a in enumerate(answers)]


def pacost_records(model, benchmark, items, rephrasings, settings: PacostSettings) -> list[dict]:
    """One record per item: both answers, correctness, every confidence on both sides (NaN where absent).

    `rephrasings[i]` is the accepted rephrased question of items[i], or None (the item is still answered
    on the original side, which gives its accuracy, and is dropped from the paired test).
    """
    records = [{"id": item.id} | r for item, r in zip(items, _side(model, benchmark, items,
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


def paired_summary(records, confidence: str, settings: PacostSettings, seed: int = 0) -> dict:
    """The paired test of one confidence over `records` as a JSON-ready dict (pairs dropped with reasons)."""
    original = [r[f"{confidence}_original"] for r in records]
    rephrased = [r[f"{confidence}_rephrased"] for r in records]
    no_rephrase = sum(r["rephrase"] is None for r in records)
    kept = [i for i, r in enumerate(records) if r["rephrase"] is not None]
    base = {"test": settings.test, "confidence": confidence, "alternative": settings.alternative,
            "n_pairs": 0, "n_dropped": len(records), "dropped_reasons": {"no accepted rephrasing": no_rephrase}}
    if len(kept) < 2:
        return base | {"pvalue": math.nan, "mean_difference": math.nan, "effect_size": math.nan,
                       "ci": [math.nan, math.nan], "contaminated": False,
                       "power_note": f"only {len(kept)} item(s) have an accepted rephrasing: no test"}
    try:
        result = paired_test([original[i] for i in kept], [rephrased[i] for i in kept], method=settings.test,
                             alternative=settings.alternative, seed=seed,
                             answered_original=_answered([records[i] for i in kept], "original"),
                             answered_rephrased=_answered([records[i] for i in kept], "rephrased"))
    except JaxcontamError as error:  # too few usable pairs: reported, not fatal for the sweep
        return base | {"pvalue": math.nan, "mean_difference": math.nan, "effect_size": math.nan,
                       "ci": [math.nan, math.nan], "contaminated": False, "power_note": str(error)}
    interval = result.confidence_interval(1 - settings.alpha)
    mde = minimum_detectable_effect(result.n, alpha=settings.alpha, alternative=settings.alternative) \
        if result.n >= 3 else math.nan
    reasons = dict(result.drop_reasons) | ({"no accepted rephrasing": no_rephrase} if no_rephrase else {})
    return {
        "test": result.method, "confidence": confidence, "alternative": result.alternative,
        "pvalue": result.pvalue, "n_pairs": result.n, "n_dropped": result.n_dropped + no_rephrase,
        "dropped_reasons": reasons, "mean_difference": result.mean_difference, "effect_size": result.effect_size,
        "ci": [interval.low, interval.high], "contaminated": bool(result.pvalue <= settings.alpha),
        "power_note": f"with {result.n} pairs the minimum detectable effect at 80% power is d_z = {mde:.2g}",
    }


def pacost_summary(records, settings: PacostSettings, seed: int = 0) -> dict:
    """The verdict on the chosen confidence, with every other confidence as a variant."""
    summary = paired_summary(records, settings.confidence, settings, seed)
    summary["variants"] = {c: paired_summary(records, c, settings, seed) for c in CONFIDENCES
                           if c != settings.confidence}
    return summary
