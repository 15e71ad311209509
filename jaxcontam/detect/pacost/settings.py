# pyright: standard
"""PaCoST's settings and presets (`PRESETS`; a field set explicitly overrides the preset's choice):
- "jaxcontam": greedy answers, Kadavath's judge, the question's Min-K%++ as the tested confidence (issue 62's
  decision rule picks it with the model alone and with a reference model, where P(True) exceeds its level:
  docs/methods.md, "The decision rule of issue 62"; every other confidence is measured beside it), the sign-flip
  permutation test (which holds its level on P(True)-shaped data); its verdict is the audit's multiple-testing
  decision (`correction = "sweep"`: Holm by default).
- "paper": PaCoST as released (github.com/lleozhang/PaCoST, `test_model_pipeline.py` and `test.py` at commit
  fc80fc717269500491718c6df2b26261d9da9b02): sampled answers (`do_sample=True`; here at `temperature` and
  `top_p` with a recorded `seed`), the published judge's P(yes), pairs kept only where both confidences are
  > 0, and `scipy.stats.ttest_rel(original, rephrased, alternative="greater").pvalue < alpha`, uncorrected
  (`correction = "none"`: the sweep reports adjusted p-values beside it but never replaces the verdict).
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Literal

from jaxcontam.dataclass_config import check_ranges, ranged
from jaxcontam.detect.answering import MAX_NEW_TOKENS, Sampling
from jaxcontam.detect.likelihood import LikelihoodSettings
from jaxcontam.detect.pacost.confidences import CONFIDENCES
from jaxcontam.engine.chat import ChatMode, check_chat_mode
from jaxcontam.engine.pacost_judge import AUTHORS_MAX_NEW_TOKENS
from jaxcontam.engine.ptrue import TEMPLATES
from jaxcontam.errors import JaxcontamError
from jaxcontam.stats import default_paired_method
from jaxcontam.stats.batched import PairedMethod

Preset = Literal["jaxcontam", "paper"]
AnswerMode = Literal["greedy", "sampled"]
Correction = Literal["sweep", "none"]
Alternative = Literal["greater", "less", "two-sided"]
ANSWER_MODES: tuple[AnswerMode, ...] = typing.get_args(AnswerMode)
CORRECTIONS: tuple[Correction, ...] = typing.get_args(Correction)
PRESETS: dict[Preset, dict] = {
    "jaxcontam": {
        "template": "kadavath",
        "confidence": "question_min_k_plus_plus",  # the decision rule's pick (report/measured_evidence.json)
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
    it is the audit's `alpha`, the one level of every verdict, which the stage's headline applies
    (`detect.stage.DetectorStage.headline`).
    """

    preset: Preset = "jaxcontam"
    confidence: str | None = None  # p_true, p_true_raw, p_yes, answer_logprob, question_min_k_plus_plus (CONFIDENCES)
    template: str | None = None  # a name of engine.ptrue.TEMPLATES
    test: PairedMethod | None = None
    answers: AnswerMode | None = None
    correction: Correction | None = None
    alternative: Alternative = "greater"
    k: float = ranged(LikelihoodSettings.k, above=0, at_most=1)  # Min-K%++ of the question (`question_min_k_plus_plus`)
    max_new_tokens: int = ranged(MAX_NEW_TOKENS, at_least=1)
    judge_max_new_tokens: int = ranged(AUTHORS_MAX_NEW_TOKENS, at_least=1)
    seed: int = ranged(0, at_least=0, below=2**32)
    temperature: float = ranged(1.0, above=0)
    top_p: float = ranged(1.0, above=0, at_most=1)
    chat_template: ChatMode = "auto"  # "auto": answer and judge as chat turns when the tokenizer has a template
    given: tuple[str, ...] = dataclasses.field(init=False, repr=False, compare=False)  # preset fields set explicitly

    def __post_init__(self):
        check_ranges(self, "[pacost]")
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
