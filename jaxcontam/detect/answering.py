# pyright: standard
"""The model under test answers benchmark items: chosen option for multiple choice, generated text otherwise.

Each item takes its own path (`item.choices is not None` is multiple choice), so a mixed list is
answered correctly and the answers come back in input order.

Multiple choice follows lm-eval-harness (`TemplateLM._encode_pair`, `HFLM._loglikelihood_tokens`):
- the context is the prompt, the continuation is lm-eval's target delimiter (one space) followed by its
  `doc_to_choice` text (`Benchmark.continuation`; COPA's starts with a space of its own, so two);
  whitespace that ends the prompt moves to the front of the continuation;
- the two are encoded together: the continuation's ids are `encode(context + continuation)` after the
  first `len(encode(context))` ids, so tokens that merge across the boundary are scored as the model
  would see them. Encoding uses the tokenizer's own special tokens (a BOS where it adds one), as
  lm-eval's HF model does when `add_bos_token` is not set; an empty context becomes the BOS (else EOS)
  id; a context too long for the model is cut from the left;
- `acc` takes the choice with the largest summed log-prob of its continuation ids, `acc_norm` the
  largest sum divided by the choice's length in characters (lm-eval's `doc_to_choice` text, without
  the delimiter: `Benchmark.choice_text`), not UTF-8 bytes.

Generative items are answered greedily (stop at EOS or a stop string) and scored by the benchmark (exact
match after its normalisation, e.g. the GSM8K final number). With `Sampling` (PaCoST's released code samples
its answers) a generative answer is sampled at the given temperature and top-p, and a multiple-choice answer
is drawn from the choices with probability proportional to p(continuation) ** (1 / temperature), cut to the
top-p nucleus of the choices; `correct` is then the drawn answer's score (`correct_norm` stays lm-eval's
acc_norm). Each item's draw is keyed by (seed, `Sampling.stream`, item id), so it is the same whatever
else is answered with it and however a run is split into chunks. The answer's log-prob is that of the
generated ids themselves, after exactly the prompt ids the model saw, read from the generation's own
per-token log-probs (no second pass): the generated text is cut at the first stop string, and the
answer's ids are the shortest prefix of the generated ids whose decoded text starts with the whole cut
text (a token holding the answer's last characters and the start of the stop string is kept). Each
answer carries its mean log-prob per token given the prompt: the likelihood confidence of PaCoST.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Sequence

import numpy as np

from jaxcontam.engine import SequenceScores, generate, score_logprobs
from jaxcontam.engine.chat import chat_prompt, encode_chat, uses_chat
from jaxcontam.errors import JaxcontamError

STOP_STRINGS = ("\n\n", "\nQuestion:")
MAX_NEW_TOKENS = 256  # an answer's length cap (PacostSettings.max_new_tokens' default)


@dataclasses.dataclass(frozen=True)
class Answer:
    """text: the answer (chosen continuation or generated text; "" = none); choice / choice_norm: the
    index `acc` / `acc_norm` picks (multiple choice only)."""

    text: str
    choice: int | None
    correct: float
    correct_norm: float | None
    answer_logprob: float  # mean log p per answer token given the prompt; NaN without an answer
    choice_norm: int | None = None


@dataclasses.dataclass(frozen=True)
class Sampling:
    """Sampled answers: temperature > 0, nucleus top_p, and the seed with a `stream` name (e.g. "original",
    "rephrased": independent draws per side) that key each item's draw."""

    seed: int
    temperature: float = 1.0
    top_p: float = 1.0
    stream: str = ""

    def __post_init__(self):
        if not 0 <= self.seed < 2**32:
            raise JaxcontamError(f"sampling seed {self.seed} must be an integer in [0, 2**32)")
        if self.temperature <= 0 or not 0 < self.top_p <= 1:
            raise JaxcontamError(
                f"sampling needs temperature > 0 and 0 < top_p <= 1, got {self.temperature}, {self.top_p}"
            )

    def key(self, item_id: str) -> int:
        """The item's sampling key in [0, 2**31), from its id and the stream."""
        digest = hashlib.sha256(f"{self.stream}\x00{item_id}".encode()).digest()
        return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF

    def draw(self, item_id: str, logprobs: np.ndarray) -> int:
        """One index drawn from log-probabilities `logprobs` at the temperature, within the top-p nucleus."""
        scaled = (logprobs - logprobs.max()) / self.temperature
        probs = np.exp(scaled) / np.exp(scaled).sum()
        order = np.argsort(-probs, kind="stable")
        before = np.cumsum(probs[order]) - probs[order]  # mass of strictly earlier choices
        kept = np.zeros_like(probs)
        kept[order[before < self.top_p]] = probs[order[before < self.top_p]]
        rng = np.random.default_rng([self.seed, self.key(item_id)])
        return int(rng.choice(len(probs), p=kept / kept.sum()))


def encode_prompt(tokenizer, text: str, chat: str = "never") -> list[int]:
    """A prompt's ids, with the tokenizer's default special tokens (lm-eval's `tok_encode`); a chat-rendered
    prompt (`engine.chat`) carries its own and gets none added."""
    return encode_chat(tokenizer, text, chat)


def encode_pair(tokenizer, context: str, continuation: str, chat: str = "never") -> tuple[list[int], list[int]]:
    """(context ids, continuation ids) split as lm-eval's `_encode_pair` does (see the module docstring)."""
    spaces = len(context) - len(context.rstrip())
    if spaces:
        context, continuation = context[:-spaces], context[-spaces:] + continuation
    context_ids = encode_prompt(tokenizer, context, chat) if context else []
    if not context_ids:
        prefix = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
        return [prefix], tokenizer.encode(continuation, add_special_tokens=False)
    return context_ids, encode_prompt(tokenizer, context + continuation, chat)[len(context_ids) :]


def continuation_scores(
    model,
    pairs: Sequence[tuple[list[int], list[int]]],
    *,
    with_max: bool = False,
    rows_per_batch: int = 16,
    max_length: int | None = None,
) -> list[SequenceScores]:
    """Scores of each continuation's ids after its context (contexts cut from the left so context and
    continuation fit in `max_length`, default the model's positions); `with_max` adds each position's greedy
    log-prob (`SequenceScores.max_logprobs`)."""
    limit = min(max_length or model.config.max_position, model.config.max_position)
    sequences, spans = [], []
    for context, continuation in pairs:
        if len(continuation) >= limit:
            raise JaxcontamError(
                f"a continuation of {len(continuation)} tokens leaves no room for its prompt in "
                f"the model's {limit} positions; shorten the choices or use a longer-context model"
            )
        sequence = (context + continuation)[-limit:]
        sequences.append(sequence)
        spans.append((len(sequence) - len(continuation), len(sequence)))
    return score_logprobs(model, sequences, spans, with_max=with_max, rows_per_batch=rows_per_batch)


def _answer_multiple_choice(
    model, benchmark, items, prompts: Sequence[str], chat: str, sampling: Sampling | None
) -> list[Answer]:
    pairs = []
    for item, prompt in zip(items, prompts):
        for choice in range(len(item.choices)):
            context_ids, continuation_ids = encode_pair(
                model.tokenizer, prompt, benchmark.continuation(item, choice), chat
            )
            if not continuation_ids:
                raise JaxcontamError(
                    f"item {item.id!r}: choice {choice} ({item.choices[choice]!r}) encodes to no "
                    "tokens after the prompt; give every choice some text"
                )
            pairs.append((context_ids, continuation_ids))
    logprobs = iter(np.asarray(s.logprobs, np.float64) for s in continuation_scores(model, pairs))
    answers = []
    for item in items:
        scores = [next(logprobs) for _ in item.choices]
        sums = np.array([s.sum() for s in scores])
        lengths = np.array([max(1, len(benchmark.choice_text(item, c))) for c in range(len(scores))])
        chosen = int(np.argmax(sums)) if sampling is None else sampling.draw(item.id, sums)
        chosen_norm = int(np.argmax(sums / lengths))
        answers.append(
            Answer(
                text=benchmark.continuation(item, chosen).strip(),
                choice=chosen,
                choice_norm=chosen_norm,
                correct=benchmark.score(item, chosen),
                correct_norm=benchmark.score(item, chosen_norm),
                answer_logprob=float(scores[chosen].mean()),
            )
        )
    return answers


def answer_token_count(tokenizer, token_ids: Sequence[int], answer: str) -> int:
    """How many of `token_ids` make up `answer`, the start of their decoded text: the shortest prefix whose
    decoded text starts with `answer` (all of them if none does, e.g. after decoder clean-up)."""
    if not answer:
        return 0
    for count in range(1, len(token_ids) + 1):
        if tokenizer.decode(token_ids[:count], skip_special_tokens=True).startswith(answer):
            return count
    return len(token_ids)


def _cut(text: str, stops: Sequence[str]) -> str:
    """`text` up to the first occurrence of any stop string."""
    return text[: min((text.find(s) for s in stops if s in text), default=len(text))]


def _answer_generative(
    model,
    benchmark,
    items,
    prompts: Sequence[str],
    max_new_tokens: int,
    stop_strings: Sequence[str],
    chat: str,
    progress: bool,
    sampling: Sampling | None,
) -> list[Answer]:
    tok = model.tokenizer
    prompt_ids = [encode_prompt(tok, p, chat) for p in prompts]
    room = min(max_new_tokens, model.config.max_position - max(map(len, prompt_ids)))
    drawn = (
        {}
        if sampling is None
        else {
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "seed": sampling.seed,
            "sample_keys": [sampling.key(item.id) for item in items],
        }
    )
    generations = generate(
        model, prompt_ids, max_new_tokens=max(1, room), stop_strings=stop_strings, progress=progress, **drawn
    )
    cut = [_cut(tok.decode(g.token_ids, skip_special_tokens=True), stop_strings) for g in generations]
    counts = [answer_token_count(tok, g.token_ids, c) if c.strip() else 0 for g, c in zip(generations, cut)]
    # the answer's mean log-prob given the prompt, from the generation's own per-token log-probs (no rescoring)
    means = [float(np.mean(g.token_logprobs[:n])) if n else math.nan for g, n in zip(generations, counts)]
    texts = [c.strip() for c in cut]
    return [
        Answer(text=t, choice=None, correct=benchmark.score(item, t) if t else 0.0, correct_norm=None, answer_logprob=m)
        for item, t, m in zip(items, texts, means)
    ]


def answer_items(
    model,
    benchmark,
    items,
    questions: Sequence[str] | None = None,
    *,
    max_new_tokens: int = MAX_NEW_TOKENS,
    stop_strings: Sequence[str] | None = None,
    chat: str = "never",
    progress: bool = False,
    sampling: Sampling | None = None,
) -> list[Answer]:
    """The model's answer to each item, in order; `questions` swaps in rephrased questions.

    Multiple-choice and generative items may be mixed: each group is answered on its own path.
    chat: "auto" / "always" ask as a chat turn (`engine.chat.chat_prompt`: the prompt's last line, e.g.
    "Answer:", opens the assistant's reply); a chat reply then ends at the model's end-of-turn id, so the
    default stop strings (STOP_STRINGS, which would cut multi-paragraph reasoning) apply only without chat.
    progress: show generation progress per batch (prompts done, tokens/s, ETA) on stderr.
    sampling: sample the answers (see the module docstring) instead of the greedy / most likely one.
    """
    questions = [item.question for item in items] if questions is None else list(questions)
    tokenizer = model.tokenizer
    prompts = [chat_prompt(tokenizer, benchmark.prompt(item, question=q), chat) for item, q in zip(items, questions)]
    if stop_strings is None:
        stop_strings = () if uses_chat(tokenizer, chat) else STOP_STRINGS
    answers: dict[int, Answer] = {}  # by position in `items`
    choice_group = [i for i, item in enumerate(items) if item.choices is not None]
    generative_group = [i for i, item in enumerate(items) if item.choices is None]
    if choice_group:
        found = _answer_multiple_choice(
            model, benchmark, [items[i] for i in choice_group], [prompts[i] for i in choice_group], chat, sampling
        )
        for i, answer in zip(choice_group, found):
            answers[i] = answer
    if generative_group:
        found = _answer_generative(
            model,
            benchmark,
            [items[i] for i in generative_group],
            [prompts[i] for i in generative_group],
            max_new_tokens,
            stop_strings,
            chat,
            progress,
            sampling,
        )
        for i, answer in zip(generative_group, found):
            answers[i] = answer
    return [answers[i] for i in range(len(items))]
