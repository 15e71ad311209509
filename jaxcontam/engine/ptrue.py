"""P(True): the model's own confidence that a proposed answer is correct.

A judge prompt (Kadavath et al. 2022's "Is the proposed answer: (A) True (B)
False", the PaCoST yes/no judge, or a user template) is scored once, and the
next-token distribution at its last position gives p(true word) and p(false
word), each summed over the tokenizer's spellings of the word (with and without
a leading space, case variants). The normalised P(True) = p_t / (p_t + p_f) is
what PaCoST compares; the raw full-vocabulary p_t is kept too.
"""

from __future__ import annotations

import dataclasses
import functools
import string
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxcontam.engine.distributed import fetch, global_array, model_mesh, rows_for
from jaxcontam.engine.packing import plan_batches
from jaxcontam.errors import JaxcontamError


@dataclasses.dataclass(frozen=True)
class JudgeTemplate:
    """A prompt with {question} and {answer} fields and the words meaning true and false."""

    name: str
    text: str
    true_word: str
    false_word: str

    def __post_init__(self):
        fields = {f for _, f, _, _ in string.Formatter().parse(self.text) if f is not None}
        if fields != {"question", "answer"}:
            raise JaxcontamError(
                f"judge template {self.name!r} has fields {sorted(fields)}; it must use exactly "
                "{question} and {answer} (write literal braces as {{ and }})"
            )

    def render(self, question: str, answer: str) -> str:
        return self.text.format(question=question, answer=answer)


KADAVATH = JudgeTemplate(
    "kadavath",
    "Question: {question}\nProposed Answer: {answer}\nIs the proposed answer:\n (A) True\n (B) False\n"
    "The proposed answer is:",
    "True",
    "False",
)
PACOST = JudgeTemplate(
    "pacost",
    "Question: {question}\nAnswer: {answer}\nIs the above answer correct? Please answer Yes or No.\n"
    "Judgement:",
    "Yes",
    "No",
)
TEMPLATES = {t.name: t for t in (KADAVATH, PACOST)}


@dataclasses.dataclass(frozen=True)
class PTrueResult:
    """normalised: p_t / (p_t + p_f); p_true, p_false: raw full-vocabulary probabilities."""

    normalised: np.ndarray
    p_true: np.ndarray
    p_false: np.ndarray


def word_token_ids(tokenizer, word: str) -> tuple[int, ...]:
    """Ids of single tokens spelling `word`: with/without a leading space, as given, lower, upper, title case.

    The unknown token never counts as a spelling. Falls back to the first token
    of the plain spelling when no variant is a single token.
    """
    unknown = getattr(tokenizer, "unk_token_id", None)
    ids = []
    for case in dict.fromkeys((word, word.lower(), word.upper(), word.capitalize())):
        for variant in (case, " " + case):
            encoded = tokenizer.encode(variant, add_special_tokens=False)
            if len(encoded) == 1 and encoded[0] not in ids and encoded[0] != unknown:
                ids.append(encoded[0])
    if not ids:
        encoded = tokenizer.encode(word, add_special_tokens=False) or tokenizer.encode(" " + word,
                                                                                       add_special_tokens=False)
        if not encoded:
            raise JaxcontamError(f"the tokenizer encodes the judge word {word!r} to no tokens: choose another word")
        ids.append(encoded[0])
    return tuple(ids)


@functools.partial(jax.jit, static_argnames=("spec",))
def _last_position_logprobs(params, spec, tokens, positions, segment_ids, last, candidate_ids, candidate_sets):
    """log p of each candidate set at each row's last prompt token: float32 [B, num_sets]."""
    from jaxcontam import models

    hidden = models.hidden_states(params, spec, tokens, positions, segment_ids)
    picked = jnp.take_along_axis(hidden, last[:, None, None], axis=1)[:, 0]
    logp = jax.nn.log_softmax(models.logits_from_hidden(params, spec, picked).astype(jnp.float32), axis=-1)
    cand = logp[:, candidate_ids]  # [B, C]
    member = candidate_sets[None, :, :]  # [1, S, C] bool
    return jax.nn.logsumexp(jnp.where(member, cand[:, None, :], -jnp.inf), axis=-1)


def p_true(
    model,
    questions: Sequence[str],
    answers: Sequence[str],
    *,
    template: JudgeTemplate | str = KADAVATH,
    rows_per_batch: int = 16,
) -> PTrueResult:
    """P(True) of each (question, answer) pair under `template`, in input order."""
    if isinstance(template, str):
        if template not in TEMPLATES:
            raise JaxcontamError(f"unknown judge template {template!r}: use one of {sorted(TEMPLATES)} "
                                 "or pass a JudgeTemplate")
        template = TEMPLATES[template]
    if len(questions) != len(answers):
        raise JaxcontamError(f"got {len(questions)} questions but {len(answers)} answers: pass one answer each")
    if model.tokenizer is None:
        raise JaxcontamError("P(True) needs the model's tokenizer: the model directory has none")
    true_ids = word_token_ids(model.tokenizer, template.true_word)
    false_ids = word_token_ids(model.tokenizer, template.false_word)
    if set(true_ids) & set(false_ids):
        raise JaxcontamError(f"judge words {template.true_word!r} and {template.false_word!r} share tokens "
                             f"{sorted(set(true_ids) & set(false_ids))}: choose words that tokenize apart")
    candidates = np.asarray(true_ids + false_ids, np.int32)
    sets = np.zeros((2, len(candidates)), bool)
    sets[0, : len(true_ids)] = True
    sets[1, len(true_ids) :] = True
    prompts = [model.tokenizer.encode(template.render(q, a)) for q, a in zip(questions, answers)]
    spec = model.config
    mesh = model_mesh(model)
    rows = rows_for(mesh, rows_per_batch)
    if max(len(p) for p in prompts) > spec.max_position:
        raise JaxcontamError(f"a judge prompt exceeds the model's max_position ({spec.max_position}): shorten it")
    logp = np.zeros((len(prompts), 2))
    for batch in plan_batches(prompts, rows_per_batch=rows, pack=False):
        last = np.zeros(rows, np.int32)
        for p in batch.placements:
            last[p.row] = p.offset + p.length - 1
        arrays = [global_array(a, mesh) for a in (batch.tokens, batch.positions, batch.segment_ids, last)]
        out = fetch(_last_position_logprobs(model.params, spec, *arrays,
                                               candidates, sets))
        for p in batch.placements:
            logp[p.index] = out[p.row]
    p_t, p_f = np.exp(logp[:, 0]), np.exp(logp[:, 1])
    normalised = np.exp(logp[:, 0] - np.logaddexp(logp[:, 0], logp[:, 1]))
    return PTrueResult(normalised, p_t, p_f)
