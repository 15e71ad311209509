"""The jitted programs behind `generate`: rows of a KV cache that are refilled with new prompts as others finish.

A batch of B rows decodes together, but each row holds its own prompt and stops on its own: when rows finish
(a stop token, or max_new_tokens), `decode_rows` returns to the host, which puts the next prompts into those
rows with `fill_rows` and decodes on (continuous batching). A batch then runs as long as its prompts need on
average, not as long as its longest answer: on GSM8K, SmolLM2's median answer is 92 tokens while 15% run to a
256-token cap, so a fixed batch of 16 nearly always ran all 256 steps.

Each row writes its cache at its own slot (`decode` with an index per row), so rows filled at different times
share one cache. The row state is a dict of [B, ...] arrays:
  cache      the model's KV cache for B rows (every leaf has the row axis first)
  slot       next cache slot of each row;  position  position of the token fed next
  token      the token fed next (the last one sampled);  index  the prompt each row holds (sampling keys)
  count      tokens generated so far;  done  finished (or empty) rows
  out, logp  [B, max_new_tokens] generated ids (-1 past the end) and their log-probs
  watched    [B, max_new_tokens] log p(next token in `watch_ids`) at each step (a judge's P(yes), read where
             the reply says it, with no second pass)
Sampling keys are derived from (seed, prompt index, step), so a prompt's sample does not depend on which other
prompts share its batch or when it entered it.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from jaxcontam.engine.sampling import sample_next
from jaxcontam.mesh import batch_sharding


def _pick(params, spec, hidden, index, step, seed, temperature, top_p, watch_ids):
    """Next token of each row from hidden [R, D], its log-prob under the untempered model, and the log-prob of the
    set `watch_ids`."""
    logits = spec.logits_from_hidden(params, hidden).astype(jnp.float32)
    keys = jax.vmap(lambda i, s: jax.random.fold_in(jax.random.fold_in(jax.random.key(seed), i), s))(index, step)
    token = sample_next(logits, keys, temperature, top_p)
    chosen = jnp.take_along_axis(logits, token[:, None], axis=-1)[:, 0]
    total = jax.nn.logsumexp(logits, axis=-1)
    return token, chosen - total, jax.nn.logsumexp(logits[:, watch_ids], axis=-1) - total


@functools.partial(jax.jit, static_argnames=("spec", "rows", "capacity", "max_new_tokens"))
def empty_rows(params, spec, *, rows: int, capacity: int, max_new_tokens: int) -> dict:
    """The state of `rows` empty (done) rows with `capacity` cache slots each."""
    dtype = jax.tree.leaves(params)[0].dtype
    zeros = jnp.zeros(rows, jnp.int32)
    return {
        "cache": spec.init_cache(rows, capacity, dtype),
        "slot": zeros,
        "position": zeros,
        "token": zeros,
        "index": zeros,
        "count": zeros,
        "done": jnp.ones(rows, bool),
        "out": jnp.full((rows, max_new_tokens), -1, jnp.int32),
        "logp": jnp.zeros((rows, max_new_tokens), jnp.float32),
        "watched": jnp.zeros((rows, max_new_tokens), jnp.float32),
    }


def empty_rows_on_mesh(params, spec, *, rows: int, capacity: int, max_new_tokens: int, mesh) -> dict:
    """`empty_rows` with its rows over the mesh's "data" axis, as every later state is laid out (so the first fill
    compiles the program the others reuse).

    One process: made and placed, with no program to compile per shape. Several processes (`jax.distributed`): made
    by a program, because placing arrays made on the host compares every process's copy in a collective, which
    costs a gather and fails mid-way when a peer dies."""
    if jax.process_count() == 1:
        state = empty_rows(params, spec, rows=rows, capacity=capacity, max_new_tokens=max_new_tokens)
        return jax.tree.map(lambda leaf: jax.device_put(leaf, batch_sharding(mesh, leaf.ndim)), state)
    return _empty_rows_program(params, spec, rows=rows, capacity=capacity, max_new_tokens=max_new_tokens, mesh=mesh)


@functools.partial(jax.jit, static_argnames=("spec", "rows", "capacity", "max_new_tokens", "mesh"))
def _empty_rows_program(params, spec, *, rows: int, capacity: int, max_new_tokens: int, mesh) -> dict:
    state = empty_rows(params, spec, rows=rows, capacity=capacity, max_new_tokens=max_new_tokens)
    return jax.tree.map(lambda leaf: jax.lax.with_sharding_constraint(leaf, batch_sharding(mesh, leaf.ndim)), state)


@functools.partial(jax.jit, static_argnames=("spec", "capacity"), donate_argnames=("state",))
def fill_rows(
    params,
    spec,
    state,
    rows,
    tokens,
    positions,
    last,
    lengths,
    index,
    seed,
    temperature,
    top_p,
    stop_ids,
    watch_ids,
    *,
    capacity: int,
):
    """Put n prompts [n, P] (positions -1 on padding) into rows `rows` [n] of `state` (a row index >= B drops that
    prompt: padding of the group), prefill their cache slots [0, P) and sample their first token."""
    count, width = tokens.shape
    limit = state["out"].shape[1]
    fresh = spec.init_cache(count, capacity, jax.tree.leaves(params)[0].dtype)
    hidden, fresh = spec.decode(params, tokens, positions, fresh, 0)
    h_last = jnp.take_along_axis(hidden, last[:, None, None], axis=1)[:, 0]
    first, first_logp, first_watched = _pick(
        params, spec, h_last, index, jnp.zeros(count, jnp.int32), seed, temperature, top_p, watch_ids
    )

    def put(target, value):
        return target.at[rows].set(value.astype(target.dtype), mode="drop")

    return {
        "cache": jax.tree.map(put, state["cache"], fresh),
        "slot": put(state["slot"], jnp.full(count, width)),
        "position": put(state["position"], lengths),
        "token": put(state["token"], first),
        "index": put(state["index"], index),
        "count": put(state["count"], jnp.ones(count, jnp.int32)),
        "done": put(state["done"], jnp.isin(first, stop_ids) | (limit == 1)),
        "out": put(state["out"], jnp.full((count, limit), -1, jnp.int32).at[:, 0].set(first)),
        "logp": put(state["logp"], jnp.zeros((count, limit), jnp.float32).at[:, 0].set(first_logp)),
        "watched": put(state["watched"], jnp.zeros((count, limit), jnp.float32).at[:, 0].set(first_watched)),
    }


def _step_each_row(params, spec, tokens, positions, cache, slots):
    """`decode` of one token per row, each row writing its own cache slot (rows entered at different times)."""
    hidden, cache = spec.decode(params, tokens[:, None], positions[:, None], cache, slots)
    return hidden[:, 0], cache


@functools.partial(jax.jit, static_argnames=("spec",), donate_argnames=("state",))
def decode_rows(params, spec, state, seed, temperature, top_p, stop_ids, watch_ids, until_done):
    """Decode every unfinished row until `until_done` rows are done (the host has prompts for the freed rows) or
    all are; finished rows idle (their results stay in `out` until the host refills them). At most
    max_new_tokens steps: no row needs more (a bound `jaxcontam plan` reads as the loop's trip count)."""
    limit = state["out"].shape[1]
    rows = jnp.arange(state["done"].shape[0])

    def cond(carry):
        step, s = carry
        return (step < limit) & ~jnp.all(s["done"]) & (jnp.sum(s["done"]) < until_done)

    def body(carry):
        step, s = carry
        live = ~s["done"]
        hidden, cache = _step_each_row(params, spec, s["token"], s["position"], s["cache"], s["slot"])
        token, logp, watched = _pick(params, spec, hidden, s["index"], s["count"], seed, temperature, top_p, watch_ids)
        at = jnp.where(live, s["count"], limit)  # finished rows write nowhere (dropped)
        count = s["count"] + live
        return step + 1, {
            "cache": cache,
            "slot": s["slot"] + live,
            "position": s["position"] + live,
            "token": jnp.where(live, token, s["token"]),
            "index": s["index"],
            "count": count,
            "done": s["done"] | jnp.isin(token, stop_ids) | (count >= limit),
            "out": s["out"].at[rows, at].set(token, mode="drop"),
            "logp": s["logp"].at[rows, at].set(logp, mode="drop"),
            "watched": s["watched"].at[rows, at].set(watched, mode="drop"),
        }

    return jax.lax.while_loop(cond, body, (jnp.int32(0), state))[1]
