# pyright: standard
"""PaCoST's confidences (`CONFIDENCES`): how sure the model is of its answer to one side (the original or the
rephrased question) of each item. PaCoST tests one of them (`PacostSettings.confidence`) and reports the others as
exploratory variants. Each is a registered `Confidence` with its properties and its measure; installed packages add
theirs through the `jaxcontam.confidences` entry-point group.

- `p_true`: normalised P(True) p_t / (p_t + p_f) of the model's own answer under a scored judge template;
- `p_true_raw`: the raw probability p_t of the true option;
- `p_yes`: PaCoST's released judge (`engine.pacost_judge`): the model replies to "Is the answer correct?" and the
  confidence is P(yes) where it says yes or no; measured only when chosen (it generates a reply per answer);
- `answer_logprob`: mean log-prob per token of the model's own answer given the prompt;
- `question_min_k_plus_plus`: Min-K%++ of the question text itself (membership of the wording; needs no answer).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

from jaxcontam.detect.answering import Answer
from jaxcontam.detect.likelihood import min_k_plus_plus
from jaxcontam.engine import p_true, pacost_judge, score_logprobs
from jaxcontam.registry import Registry


@dataclasses.dataclass(frozen=True)
class SideEvidence:
    """One side of a chunk of items, as its confidences measure it: the model, the benchmark, the items, the questions
    asked (originals or rephrasings), the model's answers, the indices of the answers a judge is shown (`judged`: the
    ones with text) with what it is shown (`shown`: questions and answers as `detect.pacost.records.judge_question` and
    `judged_answer` write them) and the PaCoST settings. What two confidences share is measured once."""

    model: Any
    benchmark: Any
    items: Sequence[Any]
    questions: Sequence[str]
    answers: Sequence[Answer]
    judged: Sequence[int]
    shown: tuple[list[str], list[str]]
    settings: Any  # detect.pacost.settings.PacostSettings

    def per_item(self, values: Sequence, fill: Any = math.nan) -> list:
        """Values of the judged answers spread over every item (`fill` elsewhere)."""
        spread = [fill] * len(self.items)
        for i, value in zip(self.judged, values):
            spread[i] = value
        return spread

    @functools.cached_property
    def p_true(self) -> tuple[list[float], list[float]]:
        """(normalised, raw) P(True) of each judged answer under the settings' template, NaN elsewhere."""
        if not self.judged:
            return [math.nan] * len(self.items), [math.nan] * len(self.items)
        template, chat = self.settings.template, self.settings.chat_template
        result = p_true(self.model, *self.shown, template=template, chat=chat)
        normalised = self.per_item([float(v) for v in result.normalised])
        return normalised, self.per_item([float(v) for v in result.p_true])


def _p_true(side: SideEvidence) -> dict[str, list]:
    return {"p_true": side.p_true[0]}


def _p_true_raw(side: SideEvidence) -> dict[str, list]:
    return {"p_true_raw": side.p_true[1]}


def _p_yes(side: SideEvidence) -> dict[str, list]:
    """The published judge's P(yes) and its reply (None where no answer was judged)."""
    settings = side.settings
    replies = (
        pacost_judge(side.model, *side.shown, chat=settings.chat_template, max_new_tokens=settings.judge_max_new_tokens)
        if side.judged
        else []
    )
    return {
        "p_yes": side.per_item([reply.confidence for reply in replies]),
        "judge_reply": side.per_item([reply.text for reply in replies], fill=None),
    }


def _answer_logprob(side: SideEvidence) -> dict[str, list]:
    return {"answer_logprob": [answer.answer_logprob for answer in side.answers]}


def _question_min_k_plus_plus(side: SideEvidence) -> dict[str, list]:
    """Min-K%++ of each question's tokens (NaN for a question under two tokens)."""
    model = side.model
    ids = [model.tokenizer.encode(q) for q in side.questions]
    scored = [i for i, t in enumerate(ids) if len(t) >= 2]
    values = [math.nan] * len(ids)
    for i, s in zip(scored, score_logprobs(model, [ids[i] for i in scored], with_stats=True)):
        values[i] = min_k_plus_plus(s.logprobs, s.mean_logprobs, s.std_logprobs, side.settings.k)
    return {"question_min_k_plus_plus": values}


@dataclasses.dataclass(frozen=True)
class Confidence:
    """One PaCoST confidence. measure(side): its per-item column (under its name) and any columns beside it, for one
    side; clock: the `stage_clock` stage its time counts as; needs_answer: it measures the model's answer (a pair
    without an answer is dropped from its test); on_demand: measured only when it is the chosen confidence (it costs
    a generation per answer); positive: 0 means "no verdict" (the pair is dropped, as the authors keep pairs with both
    confidences > 0); beside: the columns `measure` writes beside its own (the judge's reply)."""

    name: str
    measure: Callable[[SideEvidence], dict[str, list]]
    clock: str = "judge"
    needs_answer: bool = True
    on_demand: bool = False
    positive: bool = False
    beside: tuple[str, ...] = ()

    @property
    def columns(self) -> tuple[str, ...]:
        """The per-side columns it writes: its own, then those beside it."""
        return (self.name, *self.beside)


CONFIDENCES: Registry[Confidence] = Registry(
    "PaCoST confidence", Confidence, name_of=lambda confidence: confidence.name, group="jaxcontam.confidences"
)
CONFIDENCES.register(Confidence("p_true", _p_true))
CONFIDENCES.register(Confidence("p_true_raw", _p_true_raw))
CONFIDENCES.register(Confidence("p_yes", _p_yes, on_demand=True, positive=True, beside=("judge_reply",)))
CONFIDENCES.register(Confidence("answer_logprob", _answer_logprob, clock="answer"))
CONFIDENCES.register(Confidence("question_min_k_plus_plus", _question_min_k_plus_plus, "score", needs_answer=False))
CONFIDENCES.protect()
