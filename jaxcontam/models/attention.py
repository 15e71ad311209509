"""Attention over whole packed sequences with memory linear in their length.

`hidden_states` scores rows of packed sequences: a query attends to keys of its own segment (segment 0 is
padding) at positions no later than its own, and within the layer's sliding window. Building that mask and
the scores for all T x T pairs at once costs memory quadratic in T (Llama-3.1-8B at 4 x 8192: 8.6 GiB of
temporaries per v5e chip). Rows longer than one block go flash-style instead: queries in blocks of `BLOCK`,
each block walking the keys `BLOCK` at a time with a running max, sum and weighted value sum (online
softmax, float32), its mask built per key block from positions and segment ids. Temporaries are then a few
[B, H, BLOCK, BLOCK] tiles, whatever T; rows of up to `BLOCK` tokens run as one dense block, as before.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxcontam.models import layers
from jaxcontam.models.spec import ModelSpec

BLOCK = 512


def allowed_keys(q_pos, q_seg, k_pos, k_seg, window) -> jax.Array:
    """[B, Tq, S] bool: same non-padding segment, key position <= query position, and inside the sliding
    window (q_pos - k_pos < window) when window > 0 (0 = a global layer)."""
    same = (q_seg[:, :, None] == k_seg[:, None, :]) & (q_seg[:, :, None] > 0)
    causal = k_pos[:, None, :] <= q_pos[:, :, None]
    inside = (q_pos[:, :, None] - k_pos[:, None, :]) < window
    return same & causal & ((window == 0) | inside)


def _blocks(x, block: int):
    """[B, T, ...] -> [T / block, B, block, ...], T padded with zeros (segment 0: padding) to a block multiple."""
    batch, length = x.shape[:2]
    count = -(-length // block)
    x = jnp.pad(x, [(0, 0), (0, count * block - length)] + [(0, 0)] * (x.ndim - 2))
    return jnp.moveaxis(x.reshape(batch, count, block, *x.shape[2:]), 1, 0)


def _query_block(spec: ModelSpec, q, q_pos, q_seg, key_blocks, window):
    """Online-softmax attention of one query block q [B, bq, H, Dh] over every key block."""
    batch, size, heads, head_dim = q.shape
    q = q.reshape(batch, size, spec.num_kv_heads, spec.num_groups, head_dim)
    floor = jnp.finfo(jnp.float32).min

    def visit(carry, keys):
        top, total, weighted = carry
        k, v, k_pos, k_seg = keys
        scores = jnp.einsum("btkgd,bskd->bkgts", q, k, preferred_element_type=jnp.float32) * spec.attn_scale
        if spec.attn_logit_softcap is not None:
            scores = spec.attn_logit_softcap * jnp.tanh(scores / spec.attn_logit_softcap)
        allowed = allowed_keys(q_pos, q_seg, k_pos, k_seg, window)[:, None, None]
        scores = jnp.where(allowed, scores, floor)
        new_top = jnp.maximum(top, scores.max(axis=-1))
        probs = jnp.where(allowed, jnp.exp(scores - new_top[..., None]), 0.0)
        rescale = jnp.exp(top - new_top)
        total = total * rescale + probs.sum(axis=-1)
        weighted = weighted * rescale[..., None] + jnp.einsum("bkgts,bskd->bkgtd", probs.astype(v.dtype), v,
                                                              preferred_element_type=jnp.float32)
        return (new_top, total, weighted), None

    stats = (batch, spec.num_kv_heads, spec.num_groups, size)
    start = (jnp.full(stats, floor), jnp.zeros(stats, jnp.float32), jnp.zeros((*stats, head_dim), jnp.float32))
    (_, total, weighted), _ = jax.lax.scan(visit, start, key_blocks)
    out = weighted / jnp.maximum(total, jnp.finfo(jnp.float32).tiny)[..., None]  # padding queries: 0
    return jnp.moveaxis(out, 3, 1).reshape(batch, size, heads, head_dim).astype(q.dtype)


def packed_attention(spec: ModelSpec, q, k, v, positions, segment_ids, window, block: int | None = None):
    """Attention of q [B, T, H, Dh] over k, v [B, T, Hkv, Dh] of the same packed rows, `block` (default `BLOCK`)
    queries and keys at a time."""
    block = block or BLOCK
    batch, length = positions.shape
    if length <= block:
        return layers.attend(spec, q, k, v, allowed_keys(positions, segment_ids, positions, segment_ids, window))
    key_blocks = tuple(_blocks(x, block) for x in (k, v, positions, segment_ids))
    out = jax.lax.map(lambda queries: _query_block(spec, *queries, key_blocks, window),
                      tuple(_blocks(x, block) for x in (q, positions, segment_ids)))
    return jnp.moveaxis(out, 0, 1).reshape(batch, -1, *q.shape[2:])[:, :length]
