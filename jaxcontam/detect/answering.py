"""The model under test answers benchmark items: chosen option for multiple choice, generated text otherwise.

Multiple choice follows lm-eval-harness: each choice's continuation (`Benchmark.continuation`) is scored
after the prompt, encoded apart from it; `acc` takes the choice with the largest summed log-prob, `acc_norm`
the largest per byte of continuation. Generative items are answered greedily (stop at EOS or a stop string)
and scored by the benchmark (exact match after its normalisation, e.g. the GSM8K final number). Each answer
also carries its mean log-prob per token given the prompt: the likelihood confidence of PaCoST.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from jaxcontam.engine import generate, score_logprobs

STOP_STRINGS = ("\n\n", "\nQuestion:")


@dataclasses.dataclass(frozen=True)
class Answer:
    """text: the answer (chosen continuation or generated text; "" = none); choice: chosen index (MC)."""

    text: str
    choice: int | None
    correct: float
    correct_norm: float | None
    answer_logprob: float  # mean log p per answer token given the prompt; NaN without an answer


def encode_prompt(tokenizer, text: str) -> list[int]:
    return tokenizer.encode(text)


def encode_continuation(tokenizer, text: str) -> list[int]:
    return tokenizer.encode(text, add_special_tokens=False)


def _mean_logprobs(model, prompts: list[list[int]], continuations: list[list[int]]) -> list[tuple[float, float]]:
    """(sum, mean) log-prob of each continuation after its prompt; NaN for an empty continuation."""
    scored = [i for i, c in enumerate(continuations) if c]
    results = [(math.nan, math.nan)] * len(prompts)
    if scored:
        sequences = [prompts[i] + continuations[i] for i in scored]
        spans = [(len(prompts[i]), len(prompts[i]) + len(continuations[i])) for i in scored]
        for i, scores in zip(scored, score_logprobs(model, sequences, spans)):
            results[i] = (float(np.sum(scores.logprobs, dtype=np.float64)), float(np.mean(scores.logprobs)))
    return results


def _answer_multiple_choice(model, benchmark, items, prompts: Sequence[str]) -> list[Answer]:
    tok = model.tokenizer
    flat_prompts, flat_conts, owners, texts = [], [], [], []
    for index, (item, prompt) in enumerate(zip(items, prompts)):
        prompt_ids = encode_prompt(tok, prompt)
        for choice in range(len(item.choices)):
            text = benchmark.continuation(item, choice)
            flat_prompts.append(prompt_ids)
            flat_conts.append(encode_continuation(tok, text))
            owners.append(index)
            texts.append(text)
    scores = _mean_logprobs(model, flat_prompts, flat_conts)
    answers, at = [], 0
    for item in items:
        k = len(item.choices)
        sums = np.array([scores[at + c][0] for c in range(k)])
        per_byte = sums / np.array([max(1, len(texts[at + c].encode("utf-8"))) for c in range(k)])
        chosen, chosen_norm = int(np.argmax(sums)), int(np.argmax(per_byte))
        answers.append(Answer(text=texts[at + chosen].strip(), choice=chosen,
                              correct=benchmark.score(item, chosen), correct_norm=benchmark.score(item, chosen_norm),
                              answer_logprob=scores[at + chosen][1]))
        at += k
    return answers


def _cut(text: str, stops: Sequence[str]) -> str:
    for stop in stops:
        text = text.split(stop, 1)[0]
    return text.strip()


def _answer_generative(model, benchmark, items, prompts: Sequence[str], max_new_tokens: int,
                       stop_strings: Sequence[str]) -> list[Answer]:
    tok = model.tokenizer
    prompt_ids = [encode_prompt(tok, p) for p in prompts]
    room = min(max_new_tokens, model.config.max_position - max(map(len, prompt_ids)))
    generations = generate(model, prompt_ids, max_new_tokens=max(1, room), stop_strings=stop_strings)
    texts = [_cut(g.text or "", stop_strings) for g in generations]
    conts = [encode_continuation(tok, " " + t) if t else [] for t in texts]
    scores = _mean_logprobs(model, prompt_ids, conts)
    return [Answer(text=t, choice=None, correct=benchmark.score(item, t) if t else 0.0, correct_norm=None,
                   answer_logprob=s[1]) for item, t, s in zip(items, texts, scores)]


def answer_items(model, benchmark, items, questions: Sequence[str] | None = None, *, max_new_tokens: int = 256,
                 stop_strings: Sequence[str] = STOP_STRINGS) -> list[Answer]:
    """The model's answer to each item, in order; `questions` swaps in rephrased questions."""
    questions = [item.question for item in items] if questions is None else list(questions)
    prompts = [benchmark.prompt(item, question=q) for item, q in zip(items, questions)]
    if not items:
        return []
    if items[0].choices is not None:
        return _answer_multiple_choice(model, benchmark, items, prompts)
    return _answer_generative(model, benchmark, items, prompts, max_new_tokens, stop_strings)
