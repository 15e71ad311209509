"""P(True): the model's own confidence that a proposed answer is correct.

A judge prompt ends where the model states its verdict, and the verdict's
options are scored there. The built-in judge asks Kadavath et al.'s (2022)
question ("Question: ... Proposed Answer: ... Is the proposed answer ...") and
scores the words " True" / " False" after "The proposed answer is:". Kadavath et
al. list "(A) True (B) False" and score the letters, but a multiple-choice item
shown to the judge has option letters of its own (MMLU's "A. ... D. ..."), the
same tokens: p("A") would mix "True" with "the item's option A".
Each option is resolved to the tokens that follow the prompt when the option text
is appended to it (so a BPE " (" + "A" split is scored as "A", never as a
free-standing " A"). p(option) is the probability of its whole token sequence
after the prompt (one full-vocabulary softmax at the last prompt position when
every option is one token). The raw p(true option) and the normalised
P(True) = p_t / (p_t + p_f) are both returned.

PaCoST's published judge, which lets the model reply and reads P(yes) where it
says yes or no, is `engine.pacost_judge`.
"""

from __future__ import annotations

import dataclasses
import functools
import string
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxcontam.engine.chat import chat_prompt, encode_chat
from jaxcontam.engine.distributed import fetch, global_array, model_mesh, rows_for
from jaxcontam.engine.finite import check_finite
from jaxcontam.engine.packing import plan_batches
from jaxcontam.engine.scoring import score_logprobs
from jaxcontam.errors import JaxcontamError


@dataclasses.dataclass(frozen=True)
class JudgeTemplate:
    """A prompt with {question} and {answer} fields, ending where the verdict starts.

    `true_options` / `false_options`: the texts that, appended to the prompt, state
    the verdict (alternative spellings of one verdict are summed).
    """

    name: str
    text: str
    true_options: tuple[str, ...]
    false_options: tuple[str, ...]

    def __post_init__(self):
        parsed = list(string.Formatter().parse(self.text))
        fields = {f for _, f, _, _ in parsed if f is not None}
        if fields != {"question", "answer"}:
            raise JaxcontamError(
                f"judge template {self.name!r} has fields {sorted(fields)}; it must use exactly "
                "{question} and {answer} (write literal braces as {{ and }})"
            )
        if parsed[-1][1] is not None:
            raise JaxcontamError(
                f"judge template {self.name!r} ends with a field: end it with the fixed text "
                "after which the verdict is stated (e.g. 'Judgement:')"
            )
        for side in ("true_options", "false_options"):
            options = (getattr(self, side),) if isinstance(getattr(self, side), str) else tuple(getattr(self, side))
            if not options or not all(isinstance(o, str) and o for o in options):
                raise JaxcontamError(f"judge template {self.name!r}: {side} must be one or more non-empty strings")
            object.__setattr__(self, side, options)

    def render(self, question: str, answer: str) -> str:
        return self.text.format(question=question, answer=answer)


KADAVATH = JudgeTemplate(
    "kadavath",
    "Question: {question}\nProposed Answer: {answer}\nIs the proposed answer True or False?\nThe proposed answer is:",
    (" True",),
    (" False",),
)
TEMPLATES = {t.name: t for t in (KADAVATH,)}


def judge_template(template: JudgeTemplate | str) -> JudgeTemplate:
    """A template object from itself or its name."""
    if isinstance(template, JudgeTemplate):
        return template
    if template not in TEMPLATES:
        raise JaxcontamError(
            f"unknown judge template {template!r}: use one of {sorted(TEMPLATES)} or pass a JudgeTemplate"
        )
    return TEMPLATES[template]


@dataclasses.dataclass(frozen=True)
class PTrueResult:
    """normalised: p_t / (p_t + p_f); p_true, p_false: raw probabilities of the true / false options."""

    normalised: np.ndarray
    p_true: np.ndarray
    p_false: np.ndarray


def option_token_ids(tokenizer, template: JudgeTemplate) -> tuple[tuple[tuple[int, ...], ...], ...]:
    """(true, false): the token ids each option adds when appended to the rendered judge prompt.

    Resolved in context on a rendered prompt (the prompt's fixed ending decides how
    the boundary tokenizes). An option that merges with the prompt's last token,
    contains the unknown token, or is a prefix of another option is an error.
    """
    probe = template.render(question="Q", answer="A")
    base = list(tokenizer.encode(probe, add_special_tokens=False))
    unknown = getattr(tokenizer, "unk_token_id", None)
    sides = []
    for options in (template.true_options, template.false_options):
        sequences = []
        for option in options:
            full = list(tokenizer.encode(probe + option, add_special_tokens=False))
            added = tuple(full[len(base) :])
            if full[: len(base)] != base or not added:
                raise JaxcontamError(
                    f"judge template {template.name!r}: option {option!r} merges with the "
                    "prompt's last token; end the prompt so that the option starts a new token"
                )
            if unknown is not None and unknown in added:
                raise JaxcontamError(
                    f"judge template {template.name!r}: the tokenizer has no tokens for option "
                    f"{option!r}; choose option words it can spell"
                )
            if added not in sequences:
                sequences.append(added)
        sides.append(tuple(sequences))
    everything = [s for side in sides for s in side]
    for i, a in enumerate(everything):
        for j, b in enumerate(everything):
            if i != j and b[: len(a)] == a:
                raise JaxcontamError(
                    f"judge template {template.name!r}: option tokens {list(a)} start option "
                    f"tokens {list(b)}; choose options that tokenize apart"
                )
    return tuple(sides)


@functools.partial(jax.jit, static_argnames=("spec",))
def _last_position_logprobs(params, spec, tokens, positions, segment_ids, last, candidate_ids, candidate_sets):
    """log p of each candidate set at each row's last prompt token: float32 [B, num_sets]."""
    hidden = spec.hidden_states(params, tokens, positions, segment_ids)
    picked = jnp.take_along_axis(hidden, last[:, None, None], axis=1)[:, 0]
    logp = jax.nn.log_softmax(spec.logits_from_hidden(params, picked).astype(jnp.float32), axis=-1)
    cand = logp[:, candidate_ids]  # [B, C]
    member = candidate_sets[None, :, :]  # [1, S, C] bool
    return jax.nn.logsumexp(jnp.where(member, cand[:, None, :], -jnp.inf), axis=-1)


def _single_token_logprobs(model, prompts, sides, rows_per_batch: int) -> np.ndarray:
    """[N, 2] log p(true), log p(false) when every option is one token: one pass, the last position only."""
    candidates = np.asarray([s[0] for side in sides for s in side], np.int32)
    sets = np.zeros((2, len(candidates)), bool)
    sets[0, : len(sides[0])] = True
    sets[1, len(sides[0]) :] = True
    mesh = model_mesh(model)
    rows = rows_for(mesh, rows_per_batch)
    logp = np.zeros((len(prompts), 2))
    for batch in plan_batches(prompts, rows_per_batch=rows, pack=False):
        last = np.zeros(rows, np.int32)
        for p in batch.placements:
            last[p.row] = p.offset + p.length - 1
        arrays = [global_array(a, mesh) for a in (batch.tokens, batch.positions, batch.segment_ids, last)]
        out = fetch(_last_position_logprobs(model.params, model.config, *arrays, candidates, sets))
        for p in batch.placements:
            logp[p.index] = out[p.row]
    check_finite("judge log-probs", list(logp))
    return logp


def _sequence_logprobs(model, prompts, sides, rows_per_batch: int) -> np.ndarray:
    """[N, 2] log p(true), log p(false) when some option spans several tokens: each option scored after the prompt."""
    options = [(side, s) for side, sequences in enumerate(sides) for s in sequences]
    sequences = [list(p) + list(s) for p in prompts for _, s in options]
    spans = [(len(p), len(p) + len(s)) for p in prompts for _, s in options]
    scores = score_logprobs(model, sequences, spans, rows_per_batch=rows_per_batch)
    per_option = np.array([float(np.sum(x.logprobs, dtype=np.float64)) for x in scores]).reshape(len(prompts), -1)
    side_of = np.array([side for side, _ in options])
    return np.stack([np.logaddexp.reduce(per_option[:, side_of == side], axis=1) for side in (0, 1)], axis=1)


def p_true(
    model,
    questions: Sequence[str],
    answers: Sequence[str],
    *,
    template: JudgeTemplate | str = KADAVATH,
    chat: str = "never",
    rows_per_batch: int = 16,
) -> PTrueResult:
    """P(True) of each (question, answer) pair under `template`, in input order.

    chat: "auto" / "always" put the judge request in a user turn and the verdict cue at the start of the
    assistant's reply (`engine.chat`); "never" scores the plain prompt.
    """
    template = judge_template(template)
    if len(questions) != len(answers):
        raise JaxcontamError(f"got {len(questions)} questions but {len(answers)} answers: pass one answer each")
    if model.tokenizer is None:
        raise JaxcontamError("P(True) needs the model's tokenizer: the model directory has none")
    if not questions:
        return PTrueResult(np.zeros(0), np.zeros(0), np.zeros(0))
    sides = option_token_ids(model.tokenizer, template)
    tokenizer = model.tokenizer
    prompts = [
        encode_chat(tokenizer, chat_prompt(tokenizer, template.render(q, a), chat), chat)
        for q, a in zip(questions, answers)
    ]
    longest_option = max(len(s) for side in sides for s in side)
    if max(map(len, prompts)) + longest_option - 1 > model.config.max_position:
        raise JaxcontamError(
            f"a judge prompt exceeds the model's max_position ({model.config.max_position}): "
            "shorten the question or answer"
        )
    if longest_option == 1:
        logp = _single_token_logprobs(model, prompts, sides, rows_per_batch)
    else:
        logp = _sequence_logprobs(model, prompts, sides, rows_per_batch)
    normalised = np.exp(logp[:, 0] - np.logaddexp(logp[:, 0], logp[:, 1]))
    return PTrueResult(normalised, np.exp(logp[:, 0]), np.exp(logp[:, 1]))
