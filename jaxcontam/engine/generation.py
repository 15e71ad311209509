"""Batched text generation with a KV cache: greedy, or sampled with temperature and top-p.

Prompts are bucketed into a few fixed lengths and padded on the left (or the
right: padding slots get position -1 and are masked by the model, so both give
the same tokens). The whole decode loop (prefill, then one token per step until
every row has hit a stop token or max_new_tokens) is one jitted program per
bucket. Sampling keys are derived from (seed, prompt index, step), so a prompt's
sample does not depend on which other prompts share its batch.
"""

from __future__ import annotations

import dataclasses
import functools
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np

from jaxcontam.engine.distributed import fetch, global_array, model_mesh, rows_for
from jaxcontam.engine.packing import plan_batches
from jaxcontam.errors import JaxcontamError


@dataclasses.dataclass(frozen=True)
class Generation:
    """Generated token ids (stop token excluded), their text, why generation ended, and each token's log-prob.

    `token_logprobs[j]`: log p(token_ids[j] | prompt, earlier tokens) under the model's own distribution
    (untempered, full-vocabulary float32 softmax), so a generated answer's likelihood needs no second pass.
    """

    token_ids: list[int]
    text: str | None
    finish_reason: Literal["stop_token", "stop_string", "length"]
    token_logprobs: list[float] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class Progress:
    """Where a `generate` call stands after a batch: prompts finished, tokens generated, time since the start."""

    items_done: int
    items_total: int
    tokens: int
    seconds: float

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0

    @property
    def eta_seconds(self) -> float:
        """Time left at the rate so far (items per second)."""
        return self.seconds * (self.items_total - self.items_done) / max(self.items_done, 1)


def _progress_bar(total: int) -> Callable[[Progress], None]:
    """A tqdm bar over prompts (its ETA) whose postfix shows generated tokens/s."""
    from tqdm.auto import tqdm

    bar = tqdm(total=total, desc="generating", unit="prompt")

    def report(p: Progress) -> None:
        bar.set_postfix_str(f"{p.tokens_per_second:,.1f} tok/s", refresh=False)
        bar.update(p.items_done - bar.n)
        if p.items_done == p.items_total:
            bar.close()

    return report


def sample_next(logits: jax.Array, keys: jax.Array, temperature: jax.Array, top_p: jax.Array) -> jax.Array:
    """One token per row from float32 logits [B, V]: argmax when temperature == 0, else nucleus sampling.

    A runtime branch, so greedy decoding never pays for the sort over the vocabulary that sampling needs.
    """

    def greedy(logits):
        return jnp.argmax(logits, axis=-1).astype(jnp.int32)

    def nucleus(logits):
        scaled = logits / jnp.maximum(temperature, 1e-6)
        probs = jax.nn.softmax(scaled, axis=-1)
        sorted_probs = -jnp.sort(-probs, axis=-1)
        before = jnp.cumsum(sorted_probs, axis=-1) - sorted_probs  # mass of strictly more likely tokens
        kept = jnp.where(before < top_p, sorted_probs, jnp.inf)
        threshold = jnp.min(kept, axis=-1, keepdims=True)  # smallest probability still inside the nucleus
        masked = jnp.where(probs >= threshold, scaled, -jnp.inf)
        return jax.vmap(jax.random.categorical)(keys, masked).astype(jnp.int32)

    return jax.lax.cond(temperature > 0, nucleus, greedy, logits)


@functools.partial(jax.jit, static_argnames=("spec", "max_new_tokens"))
def _generate_bucket(params, spec, tokens, positions, last, lengths, prompt_index, seed, temperature, top_p,
                     stop_ids, *, max_new_tokens):
    """Prefill [B, P] prompts and decode up to max_new_tokens; returns int32 [B, max_new_tokens] (-1 after a stop)
    and each token's float32 log-prob under the untempered model.

    `params`: best split per layer (`models.split_layers`), so each step reads the weights in place.
    """
    from jaxcontam import models

    batch, prompt_len = tokens.shape
    dtype = jax.tree.leaves(params)[0].dtype
    cache = models.init_cache(spec, batch, prompt_len + max_new_tokens, dtype)
    keys = jax.vmap(lambda i: jax.random.fold_in(jax.random.key(seed), i))(prompt_index)
    hidden, cache = models.decode(params, spec, tokens, positions, cache, 0)
    h_last = jnp.take_along_axis(hidden, last[:, None, None], axis=1)[:, 0]

    def pick(h, step):
        logits = models.logits_from_hidden(params, spec, h).astype(jnp.float32)
        step_keys = jax.vmap(lambda k: jax.random.fold_in(k, step))(keys)
        token = sample_next(logits, step_keys, temperature, top_p)
        chosen = jnp.take_along_axis(logits, token[:, None], axis=-1)[:, 0]
        return token, chosen - jax.nn.logsumexp(logits, axis=-1)

    first, first_logp = pick(h_last, 0)
    out = jnp.full((batch, max_new_tokens), -1, jnp.int32).at[:, 0].set(first)
    out_logp = jnp.zeros((batch, max_new_tokens), jnp.float32).at[:, 0].set(first_logp)
    done = jnp.isin(first, stop_ids)

    def cond(state):
        step, _, _, done, _, _ = state
        return (step < max_new_tokens) & ~jnp.all(done)

    def body(state):
        step, token, cache, done, out, out_logp = state
        pos = (lengths + step - 1)[:, None]
        hidden, cache = models.decode(params, spec, token[:, None], pos, cache, prompt_len + step - 1)
        nxt, logp = pick(hidden[:, 0], step)
        out = out.at[:, step].set(jnp.where(done, -1, nxt))
        out_logp = out_logp.at[:, step].set(logp)
        return step + 1, nxt, cache, done | jnp.isin(nxt, stop_ids), out, out_logp

    *_, out, out_logp = jax.lax.while_loop(cond, body, (jnp.int32(1), first, cache, done, out, out_logp))
    return out, out_logp


_SPLIT_PARAMS: dict[int, tuple] = {}  # id(model) -> (weak reference to it, the params split, their split)


def _decode_params(model):
    """`model.params` split per layer for the decode loop, once per model (redone if its params are replaced).

    Keyed by identity: models are mutable dataclasses, hence unhashable; the entry goes when the model does.
    """
    from jaxcontam import models

    key = id(model)
    held = _SPLIT_PARAMS.get(key)
    if held is None or held[0]() is not model or held[1] is not model.params:
        try:
            alive = weakref.ref(model, lambda _, key=key: _SPLIT_PARAMS.pop(key, None))
        except TypeError:  # an object without weak references: split on every call
            return models.split_layers(model.params)
        held = (alive, model.params, models.split_layers(model.params))
        _SPLIT_PARAMS[key] = held
    return held[2]


def _layout(batch, rows: int, padding: str):
    """Re-lay a right-padded batch for decoding: tokens, positions (-1 on padding), last prompt index, lengths."""
    width = batch.tokens.shape[1]
    tokens = np.zeros((rows, width), np.int32)
    positions = np.full((rows, width), -1, np.int32)
    last = np.zeros(rows, np.int32)
    lengths = np.ones(rows, np.int32)
    for p in batch.placements:
        n = p.length
        start = width - n if padding == "left" else 0
        tokens[p.row, start : start + n] = batch.tokens[p.row, :n]
        positions[p.row, start : start + n] = np.arange(n)
        last[p.row] = start + n - 1
        lengths[p.row] = n
    return tokens, positions, last, lengths


def _truncate(tokens: list[int], logprobs: list[float], stop_ids, tokenizer, stop_strings) -> Generation:
    reason = "length"
    for j, t in enumerate(tokens):
        if t == -1 or t in stop_ids:
            tokens, reason = tokens[:j], "stop_token"
            break
    logprobs = logprobs[: len(tokens)]
    text = tokenizer.decode(tokens, skip_special_tokens=True) if tokenizer is not None else None
    if text is not None and stop_strings:
        cuts = [text.find(s) for s in stop_strings if s in text]
        if cuts:
            text, reason = text[: min(cuts)], "stop_string"
    return Generation(tokens, text, reason, logprobs)


def generate(
    model,
    prompts: Sequence[Sequence[int]],
    *,
    max_new_tokens: int = 64,
    temperature: float = 0.0,
    top_p: float = 1.0,
    seed: int = 0,
    stop_token_ids: Sequence[int] | None = None,
    stop_strings: Sequence[str] = (),
    padding: Literal["left", "right"] = "left",
    rows_per_batch: int = 16,
    buckets: Sequence[int] | None = None,
    progress: bool | Callable[[Progress], None] = False,
) -> list[Generation]:
    """Continue each prompt (token ids), in input order.

    Stops a row at any of `stop_token_ids` (default: the model's eos id) or
    after `max_new_tokens`; `stop_strings` cut the decoded text afterwards.
    Deterministic for a given seed. `progress`: True for a progress bar (prompts done, tokens/s, ETA), or a
    callable given a `Progress` after each batch.
    """
    if padding not in ("left", "right"):
        raise JaxcontamError(f"padding must be 'left' or 'right', got {padding!r}")
    if max_new_tokens < 1:
        raise JaxcontamError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    if temperature < 0 or not 0 < top_p <= 1:
        raise JaxcontamError(f"need temperature >= 0 and 0 < top_p <= 1, got {temperature}, {top_p}")
    spec = model.config
    if stop_token_ids is None:
        eos = spec.eos_token_id
        stop_token_ids = [] if eos is None else ([eos] if isinstance(eos, int) else list(eos))
    stop = np.asarray(list(stop_token_ids) or [-2], np.int32)  # -2 never occurs: no stop token
    longest = max(len(p) for p in prompts) + max_new_tokens
    if longest > spec.max_position:
        raise JaxcontamError(f"prompt + max_new_tokens reaches {longest} tokens, beyond the model's "
                             f"max_position ({spec.max_position}): shorten the prompts or lower max_new_tokens")
    mesh = model_mesh(model)
    rows = rows_for(mesh, rows_per_batch)
    results: list[Generation | None] = [None] * len(prompts)
    batches = plan_batches([list(p) for p in prompts], rows_per_batch=rows, buckets=buckets, pack=False)
    report = _progress_bar(len(prompts)) if progress is True else (progress or None)
    start, done, generated = time.perf_counter(), 0, 0
    params = _decode_params(model)
    for batch in batches:
        tokens, positions, last, lengths = _layout(batch, rows, padding)
        index = np.zeros(rows, np.int32)
        for p in batch.placements:
            index[p.row] = p.index
        out, out_logp = _generate_bucket(
            params, spec,
            *(global_array(a, mesh) for a in (tokens, positions, last, lengths, index)),
            np.uint32(seed), np.float32(temperature), np.float32(top_p), stop,
            max_new_tokens=max_new_tokens,
        )
        out, out_logp = fetch(out), fetch(out_logp)
        for p in batch.placements:
            results[p.index] = _truncate(out[p.row].tolist(), out_logp[p.row].tolist(), set(stop.tolist()),
                                         model.tokenizer, stop_strings)
            generated += len(results[p.index].token_ids)
        if report is not None:
            done += len(batch.placements)
            report(Progress(done, len(prompts), generated, time.perf_counter() - start))
    return results
