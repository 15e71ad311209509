"""The decoder forward: embeddings, the layers (a `lax.scan` over stacked weights, or unrolled when
decoding), final norm, output projection.

Pure functions of (params, spec, arrays); `spec` is static under jit. Two entry points share the layer code:
`hidden_states` for packed full sequences (segment-masked causal attention) and `decode` for prefill and
single-token steps against a KV cache.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxcontam.cache_slots import write_slots
from jaxcontam.models import attention, experts, layers
from jaxcontam.models.config import DecoderConfig


def _embed(params: dict, spec: DecoderConfig, tokens: jax.Array, positions: jax.Array) -> jax.Array:
    x = jnp.take(params["embed"], tokens, axis=0)
    if spec.embed_scale is not None:
        x = x * jnp.asarray(spec.embed_scale, x.dtype)  # gemma rounds sqrt(d) to the weight dtype too
    if spec.learned_positions:
        x = x + jnp.take(params["pos_embed"], jnp.clip(positions, 0, spec.max_position - 1), axis=0)
    return x


def _rope(spec: DecoderConfig, positions: jax.Array, lengths: jax.Array | None) -> tuple:
    """(global, local) rope tables; local is None unless the sliding layers rotate with their own base (gemma3)."""
    if not spec.rope.rotary_dim:
        return (None, None), None
    local = layers.rope_tables(spec, positions, local=True) if spec.rope.local_theta is not None else None
    return layers.rope_tables(spec, positions, lengths), local


def _layer_rope(tables: tuple, window):
    """The rope tables of a layer: the local ones on sliding layers when there are any."""
    global_tables, local_tables = tables
    if local_tables is None:
        return global_tables
    if isinstance(window, int):
        return local_tables if window else global_tables
    return tuple(jnp.where(window > 0, lo, gl) for lo, gl in zip(local_tables, global_tables, strict=True))


def sequence_lengths(positions: jax.Array, segment_ids: jax.Array) -> jax.Array:
    """int32 [B, T]: the length (last position + 1) of the packed sequence each token belongs to."""
    batch, length = positions.shape
    ids = (jnp.arange(batch)[:, None] * (length + 1) + jnp.clip(segment_ids, 0, length)).reshape(-1)
    last = jax.ops.segment_max(positions.reshape(-1), ids, num_segments=batch * (length + 1))
    return last[ids].reshape(batch, length) + 1


def _windowed(allowed: jax.Array, q_pos: jax.Array, k_pos: jax.Array, window: jax.Array) -> jax.Array:
    """Restrict allowed [B, T, S] to keys with q_pos - k_pos < window when window > 0 (0 = global layer)."""
    inside = (q_pos[:, :, None] - k_pos[:, None, :]) < window
    return allowed & ((window == 0) | inside)


def _layer(spec: DecoderConfig, w: dict, x: jax.Array, rope: tuple, attend_fn):
    """One decoder layer; attend_fn(q, k, v) -> (attention output [B, T, H, Dh], cache outputs)."""
    h = layers.norm(spec, w["attn_norm"], x) if spec.norms.pre else x
    q, k, v = layers.attention_inputs(spec, w, h, *rope)
    o, carry_out = attend_fn(q, k, v)
    a = layers.attention_output(spec, w, o)
    if spec.norms.attn_post:
        a = layers.norm(spec, w["attn_post_norm"], a)
    if spec.parallel_residual:
        m = layers.mlp(spec, w, layers.norm(spec, w["mlp_norm"], x))
        return x + _residual(spec, a) + _residual(spec, m), carry_out
    x = x + _residual(spec, a)
    feed_forward = experts.mixture if spec.experts.count else layers.mlp
    m = feed_forward(spec, w, layers.norm(spec, w["mlp_norm"], x) if spec.norms.pre else x)
    if spec.norms.mlp_post:
        m = layers.norm(spec, w["mlp_post_norm"], m)
    return x + _residual(spec, m), carry_out


def _residual(spec: DecoderConfig, out: jax.Array) -> jax.Array:
    """A block's output as added to the residual stream: times `residual_scale` (granite) in float32, as torch
    multiplies a tensor by a Python float; unchanged when the scale is 1."""
    if spec.residual_scale == 1.0:
        return out
    return (out.astype(jnp.float32) * spec.residual_scale).astype(out.dtype)


def hidden_states(
    params: dict, spec: DecoderConfig, tokens: jax.Array, positions: jax.Array, segment_ids: jax.Array
) -> jax.Array:
    """Final-normed hidden states [B, T, D] of int32 [B, T] tokens.

    Attention is causal (by position) and within the same segment; segment 0 is padding, so several
    sequences can be packed in one row with their own positions starting at 0. Memory is linear in T
    (`attention.packed_attention`). On TPU the splash kernel masks by index within the row, which equals
    masking by position when each segment is one contiguous run of its row with positions rising by 1 (as
    `engine.packing` builds rows; not checked): for other positions use a spec with attention="jnp"
    (`load_model(..., attention="jnp")`; JAXCONTAM_ATTENTION=jnp for the commands).
    """
    x = _embed(params, spec, tokens, positions)
    lengths = sequence_lengths(positions, segment_ids) if spec.rope.scaling == "longrope" else None
    tables = _rope(spec, positions, lengths)
    windows = jnp.asarray(spec.layer_windows, jnp.int32)

    def body(x, layer):
        w, window = layer
        return _layer(
            spec,
            w,
            x,
            _layer_rope(tables, window),
            lambda q, k, v: (attention.packed_attention(spec, q, k, v, positions, segment_ids, window), None),
        )

    x, _ = jax.lax.scan(body, x, (params["layers"], windows), unroll=spec.execution.unroll_layers)
    return layers.norm(spec, params["final_norm"], x)


def split_layers(params: dict) -> dict:
    """`params` with "layers" as a list of per-layer weight dicts instead of arrays stacked on axis 0.

    For `decode`: split once outside jit, so a compiled decode loop reads each layer's weights in place
    instead of copying them out of the stacked arrays at every step.
    """
    if isinstance(params["layers"], list):
        return params
    return {**params, "layers": _unstack(params["layers"])}


@jax.jit
def _unstack(stacked: dict) -> list[dict]:
    count = jax.tree.leaves(stacked)[0].shape[0]
    return [jax.tree.map(lambda a, i=i: a[i], stacked) for i in range(count)]


def init_cache(spec: DecoderConfig, batch: int, max_len: int, dtype) -> dict:
    """Empty KV cache: per-layer lists of k, v [B, Hkv, max_len, Dh] in dtype and each slot's position (-1 = empty).

    One array per layer, so a step updates each layer's slots in place; heads before slots, the layout the
    attention dot products read without a transpose.
    """
    shape = (batch, spec.num_kv_heads, max_len, spec.head_dim)
    return {
        "k": [jnp.zeros(shape, dtype) for _ in range(spec.num_layers)],
        "v": [jnp.zeros(shape, dtype) for _ in range(spec.num_layers)],
        "pos": jnp.full((batch, max_len), -1, jnp.int32),
    }


def decode(
    params: dict, spec: DecoderConfig, tokens: jax.Array, positions: jax.Array, cache: dict, cache_index
) -> tuple[jax.Array, dict]:
    """Run t new tokens [B, t] written at cache slots cache_index..cache_index+t-1; returns (hidden [B, t, D], cache).
    `cache_index`: a scalar, or an int32 [B] with each row's own slot (`write_slots`).

    A query at position p attends to cached slots holding positions 0 <= q <= p (and within the layer's
    sliding window); positions < 0 mark padding, which is never attended to. The layers are unrolled;
    pass `split_layers(params)` to avoid slicing each layer's weights out of the stacked arrays.
    """
    x = _embed(params, spec, tokens, positions)
    lengths = None
    if spec.rope.scaling == "longrope":  # each row is one sequence, as long as its furthest position so far
        lengths = jnp.broadcast_to(jnp.max(positions, axis=1, keepdims=True) + 1, positions.shape)
    tables = _rope(spec, positions, lengths)
    slot_pos = write_slots(cache["pos"], positions.astype(jnp.int32), cache_index, axis=1)
    base = (slot_pos[:, None, :] >= 0) & (slot_pos[:, None, :] <= positions[:, :, None]) & (positions[:, :, None] >= 0)
    k_out, v_out = [], []
    for w, window, k_cache, v_cache in zip(
        split_layers(params)["layers"], spec.layer_windows, cache["k"], cache["v"], strict=True
    ):
        allowed = _windowed(base, positions, slot_pos, jnp.int32(window))

        def cached_attention(q, k, v, k_cache=k_cache, v_cache=v_cache, allowed=allowed):
            # write only the new slots, in place, and attend over the cache in its own [B, Hkv, S, Dh] layout
            k_all = write_slots(k_cache, jnp.swapaxes(k, 1, 2).astype(k_cache.dtype), cache_index, axis=2)
            v_all = write_slots(v_cache, jnp.swapaxes(v, 1, 2).astype(v_cache.dtype), cache_index, axis=2)
            return layers.attend(spec, q, k_all, v_all, allowed, heads_first=True), (k_all, v_all)

        x, (k_all, v_all) = _layer(spec, w, x, _layer_rope(tables, window), cached_attention)
        k_out.append(k_all)
        v_out.append(v_all)
    return layers.norm(spec, params["final_norm"], x), {"k": k_out, "v": v_out, "pos": slot_pos}


def output_projection(params: dict, spec: DecoderConfig) -> tuple[jax.Array, None]:
    """The [V, D] output matrix (the embedding when tied; divided by `logits_divisor` when the family divides its
    logits, granite) and its bias (always None for these families)."""
    weight = params["embed"] if spec.tie_word_embeddings else params["lm_head"]
    if spec.logits_divisor != 1.0:
        weight = weight / jnp.asarray(spec.logits_divisor, weight.dtype)
    return weight, None


def logits_from_hidden(params: dict, spec: DecoderConfig, hidden: jax.Array) -> jax.Array:
    """float32 logits [..., V] of hidden [..., D], soft-capped when the model caps them (gemma2)."""
    weight, _ = output_projection(params, spec)
    logits = jnp.einsum("...d,vd->...v", hidden, weight, preferred_element_type=jnp.float32)
    if spec.final_logit_softcap is not None:
        logits = spec.final_logit_softcap * jnp.tanh(logits / spec.final_logit_softcap)
    return logits
