"""Attention over whole packed sequences with memory linear in their length.

`hidden_states` scores rows of packed sequences: a query attends to keys of its own segment (segment 0 is
padding) at positions no later than its own, and within the layer's sliding window. Building that mask and
the scores for all T x T pairs at once costs memory quadratic in T (Llama-3.1-8B at 4 x 8192: 8.6 GiB of
temporaries per v5e chip). Here the queries go in blocks of `QUERY_BLOCK` rows: each block builds its own
[B, block, T] mask from positions and segment ids and attends to every key, so temporaries grow linearly with T
and short rows (T <= block) run exactly as one dense block.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxcontam.models import layers
from jaxcontam.models.spec import ModelSpec

QUERY_BLOCK = 512


def allowed_keys(q_pos, q_seg, k_pos, k_seg, window) -> jax.Array:
    """[B, Tq, S] bool: same non-padding segment, key position <= query position, and inside the sliding
    window (q_pos - k_pos < window) when window > 0 (0 = a global layer)."""
    same = (q_seg[:, :, None] == k_seg[:, None, :]) & (q_seg[:, :, None] > 0)
    causal = k_pos[:, None, :] <= q_pos[:, :, None]
    inside = (q_pos[:, :, None] - k_pos[:, None, :]) < window
    return same & causal & ((window == 0) | inside)


def packed_attention(spec: ModelSpec, q, k, v, positions, segment_ids, window, block: int = QUERY_BLOCK):
    """Attention of q [B, T, H, Dh] over k, v [B, T, Hkv, Dh] of the same packed rows, queries `block` at a time."""
    batch, length = positions.shape
    if length <= block:
        return layers.attend(spec, q, k, v, allowed_keys(positions, segment_ids, positions, segment_ids, window))
    blocks = -(-length // block)
    pad = blocks * block - length

    def split(x):  # [B, T, ...] -> [blocks, B, block, ...], padded queries in segment 0 (attend to nothing)
        x = jnp.pad(x, [(0, 0), (0, pad)] + [(0, 0)] * (x.ndim - 2))
        return jnp.moveaxis(x.reshape(batch, blocks, block, *x.shape[2:]), 1, 0)

    def one_block(inputs):
        q_block, q_pos, q_seg = inputs
        return layers.attend(spec, q_block, k, v, allowed_keys(q_pos, q_seg, positions, segment_ids, window))

    out = jax.lax.map(one_block, (split(q), split(positions), split(segment_ids)))
    out = jnp.moveaxis(out, 0, 1).reshape(batch, blocks * block, *q.shape[2:])
    return out[:, :length]
