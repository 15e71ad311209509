"""PaCoST's published judge: the model replies to "is the answer correct?", and its confidence is P(yes) where
the reply states the verdict.

As in the authors' released code (github.com/lleozhang/PaCoST, `test_model_pipeline.py` at commit
fc80fc717269500491718c6df2b26261d9da9b02: `confidence_prompt`, `calculate_confidence_with_logits`,
`chat_with_lm_logits`):
- the request is their system prompt (`JUDGE_SYSTEM`, with its one worked example) and the user turn
  `JUDGE_REQUEST`, in the chat template of the model under test: they write Llama 2's
  `<s> [INST] <<SYS>> ... <</SYS>> ... [/INST]` and note that the prompt "should be modified according to the
  model to be tested". Without a chat template: the system text, a blank line, the request and a newline. The
  runs of spaces their Python line continuations leave inside the strings are written as one space;
- the reply is greedy, at most `max_new_tokens` tokens (theirs: 1024), and ends at the model's stop ids;
- at every reply step whose argmax token, decoded alone and lower-cased, contains "yes" or "no" (their test,
  so "not" or "know" count too), p = softmax(logits)[yes] at that step; the confidence is the largest such p,
  and 0 when no step qualifies (a pair is then dropped: they keep pairs whose two confidences are > 0);
- "yes": they read one id hard-coded for Llama 2 (3869, "▁Yes"); here every vocabulary token whose text,
  stripped and lower-cased, is "yes" ("Yes" opening a reply, " Yes" after a space, "yes", "YES"), their
  probabilities summed, so the confidence does not hinge on how a tokenizer spells the reply's first word.
P(yes) is read inside the greedy decode itself (`generate(watch_ids=...)`), from the same logits whose argmax
is the reply's token.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence

import numpy as np

from jaxcontam.engine.chat import chat_text, encode_chat, uses_chat
from jaxcontam.engine.generation import generate
from jaxcontam.errors import JaxcontamError

JUDGE_SYSTEM = (
    "You are an expert in judging whether the answer is correct. You will be given a question and a "
    "corresponding answer. Your job is to determine whether this answer is correct. You should only respond with "
    'Yes or No. For example, given question "What is the value of 1+1? A. 1 B. 2 C. 3 D. 4" and answer "B", the '
    'correct response should be "Yes".'
)
JUDGE_REQUEST = "The question is {question}. The answer is {answer}. Is the answer correct according to the question?"
AUTHORS_MAX_NEW_TOKENS = 1024


@dataclasses.dataclass(frozen=True)
class JudgeReply:
    """The judge's greedy reply, its confidence (largest P(yes) over the verdict steps, 0 without one) and how many
    reply steps said yes or no."""

    text: str
    confidence: float
    verdict_steps: int


def says_yes_or_no(token_text: str) -> bool:
    """The authors' test of a reply step's argmax token: its text contains "yes" or "no", lower-cased."""
    lowered = token_text.lower()
    return "yes" in lowered or "no" in lowered


@functools.lru_cache(maxsize=8)
def yes_token_ids(tokenizer) -> tuple[int, ...]:
    """Every token id whose text, decoded alone, stripped and lower-cased, is "yes"."""
    texts = tokenizer.batch_decode([[i] for i in range(len(tokenizer))])
    found = tuple(i for i, text in enumerate(texts) if text.strip().lower() == "yes")
    if not found:
        raise JaxcontamError(
            "the model's tokenizer has no token spelling 'yes', which PaCoST's published judge "
            "reads: use the jaxcontam preset (or another confidence) for this model"
        )
    return found


def judge_text(tokenizer, question: str, answer: str, chat: str) -> str:
    """The judge's request for one (question, answer) pair, ending where the model's reply starts."""
    request = JUDGE_REQUEST.format(question=question, answer=answer)
    return chat_text(tokenizer, request, chat, "" if uses_chat(tokenizer, chat) else "\n", system=JUDGE_SYSTEM)


def pacost_judge(
    model,
    questions: Sequence[str],
    answers: Sequence[str],
    *,
    chat: str = "auto",
    max_new_tokens: int = AUTHORS_MAX_NEW_TOKENS,
    rows_per_batch: int | None = None,
) -> list[JudgeReply]:
    """The published judge's reply and confidence for each (question, answer) pair, in input order.

    The reply is cut to the room the model's context leaves after the longest prompt.
    """
    tokenizer = model.tokenizer
    if tokenizer is None:
        raise JaxcontamError("PaCoST's judge needs the model's tokenizer: the model directory has none")
    if len(questions) != len(answers):
        raise JaxcontamError(f"got {len(questions)} questions but {len(answers)} answers: pass one answer each")
    if not questions:
        return []
    yes = yes_token_ids(tokenizer)
    prompts = [encode_chat(tokenizer, judge_text(tokenizer, q, a, chat), chat) for q, a in zip(questions, answers)]
    room = min(max_new_tokens, model.config.max_position - max(map(len, prompts)))
    if room < 1:
        raise JaxcontamError(
            f"a judge prompt fills the model's {model.config.max_position} positions: shorten the question or answer"
        )
    replies = generate(
        model, prompts, max_new_tokens=room, rows_per_batch=rows_per_batch, watch_ids=yes, progress=True
    )  # the replies run up to 1,024 tokens: a long wait deserves a progress bar
    steps = [[j for j, t in enumerate(r.token_ids) if says_yes_or_no(tokenizer.decode([t]))] for r in replies]
    return [
        JudgeReply(
            text=r.text or "",
            confidence=float(np.exp(max(r.watched_logprobs[j] for j in s))) if s else 0.0,
            verdict_steps=len(s),
        )
        for r, s in zip(replies, steps)
    ]
