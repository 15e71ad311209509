"""The building blocks of every decoder layer, as pure functions over weight dicts.

Norms, softmax and rope angles are computed in float32 whatever the weight dtype, so bfloat16 weights only
round the matmul inputs; activations come back in the weight dtype.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxcontam.models.config import DecoderConfig


def norm(spec: DecoderConfig, weights: dict, x: jax.Array) -> jax.Array:
    """RMSNorm (scale by w, or 1 + w for gemma) or LayerNorm with bias, over the last axis."""
    xf = x.astype(jnp.float32)
    if spec.norms.kind == "rms":
        y = xf * jax.lax.rsqrt(jnp.mean(xf * xf, axis=-1, keepdims=True) + spec.norms.eps)
        return (y * (weights["scale"].astype(jnp.float32) + spec.norms.offset)).astype(x.dtype)
    mean = jnp.mean(xf, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(xf - mean), axis=-1, keepdims=True)
    y = (xf - mean) * jax.lax.rsqrt(var + spec.norms.eps)
    return (y * weights["scale"].astype(jnp.float32) + weights["bias"].astype(jnp.float32)).astype(x.dtype)


def activation(name: str, x: jax.Array) -> jax.Array:
    if name == "silu":
        return jax.nn.silu(x)
    if name == "gelu_tanh":
        return jax.nn.gelu(x, approximate=True)
    if name == "gelu":
        return jax.nn.gelu(x, approximate=False)
    if name == "relu":
        return jax.nn.relu(x)
    raise ValueError(f"unknown activation {name!r}")  # unreachable: DecoderConfig only holds the names above


def _rope_powers(base: float, dim: int) -> np.ndarray:
    """float32 [dim // 2] base ** (2i / dim), base and exponents rounded to float32 as torch does and each power
    rounded once from float64: transformers' float32 values in all but 18 of 2,296 entries (thetas 1e4-1e7 and two
    unround ones, head dims 32-256; those within 2 units in the last place), where numpy's float32 pow is off in 415.
    An angle (position x inverse frequency) carries that error times the position: in the random Llama of
    `tests/test_rope_precision.py`, 7.5e-3 of a log-prob from transformers' float64 over positions 1,280-1,535 with
    numpy's powers, 5.1e-4 with these (torch's float32 3.4e-4)."""
    exponents = (np.arange(0, dim, 2).astype(np.float32) / np.float32(dim)).astype(np.float32)
    return (np.float64(np.float32(base)) ** exponents.astype(np.float64)).astype(np.float32)  # torch's float32 base


def rope_inverse_frequencies(spec: DecoderConfig, theta: float | None = None) -> np.ndarray:
    """float32 [rotary_dim // 2] inverse frequencies, with linear or Llama 3 scaling, as transformers computes them.
    `theta`: an unscaled base of its own (gemma3's sliding layers)."""
    rope = spec.rope
    base = rope.theta if theta is None else theta
    inv = (np.float32(1.0) / _rope_powers(base, rope.rotary_dim)).astype(np.float32)
    if theta is not None:
        return inv
    if rope.scaling == "linear":
        return (inv / np.float32(rope.factor)).astype(np.float32)
    if rope.scaling == "llama3":
        factor, low, high = rope.factor, rope.low_freq_factor, rope.high_freq_factor
        old_len = rope.original_max_position
        assert factor and low and high and old_len, rope  # `hf_config.rope` sets all four for llama3
        # torch computes a number over a tensor as the tensor's reciprocal times the number: the same here
        wavelen = (np.float32(1.0) / inv) * np.float32(2 * math.pi)
        scaled = np.where(wavelen > old_len / low, inv / factor, inv)
        smooth = ((np.float32(1.0) / wavelen) * np.float32(old_len) - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < old_len / high) & ~(wavelen > old_len / low)
        return np.where(medium, smoothed, scaled).astype(np.float32)
    return inv


def _longrope_frequencies(spec: DecoderConfig, lengths: jax.Array) -> jax.Array:
    """float32 [B, T, rotary_dim // 2]: each token's inverse frequencies under LongRoPE, from the short factors
    when its sequence (`lengths`: tokens in the sequence it belongs to) fits the original context, else the long."""
    base = _rope_powers(spec.rope.theta, spec.rope.rotary_dim)
    short = 1.0 / (np.asarray(spec.rope.short_factor, np.float32) * base)
    long = 1.0 / (np.asarray(spec.rope.long_factor, np.float32) * base)
    original = spec.rope.original_max_position
    assert original, spec.rope  # `hf_config.rope` sets it for longrope
    beyond = lengths > original
    return jnp.where(beyond[..., None], jnp.asarray(long, jnp.float32), jnp.asarray(short, jnp.float32))


def rope_tables(
    spec: DecoderConfig, positions: jax.Array, lengths: jax.Array | None = None, local: bool = False
) -> tuple[jax.Array, jax.Array]:
    """cos, sin float32 [B, T, rotary_dim] for integer positions (halves repeated, rotate-half layout).

    `lengths` [B, T]: the length of each token's sequence, which LongRoPE needs to pick its factors; `local`:
    the tables of gemma3's sliding layers (their own unscaled base).
    """
    scale = 1.0
    if local:
        inv = jnp.asarray(rope_inverse_frequencies(spec, spec.rope.local_theta))
    elif spec.rope.scaling == "longrope":
        if lengths is None:
            raise ValueError("LongRoPE tables need `lengths`, the length of each token's sequence")
        inv = _longrope_frequencies(spec, lengths)
        scale = spec.rope.attention_factor
        assert scale, spec.rope  # `hf_config.rope` sets it for longrope
    else:
        inv = jnp.asarray(rope_inverse_frequencies(spec))
    angles = positions.astype(jnp.float32)[..., None] * inv
    angles = jnp.concatenate([angles, angles], axis=-1)
    if scale == 1.0:
        return jnp.cos(angles), jnp.sin(angles)
    return jnp.cos(angles) * scale, jnp.sin(angles) * scale


def apply_rope(x: jax.Array, cos: jax.Array, sin: jax.Array) -> jax.Array:
    """Rotate the first rotary_dim dims of each head of x [B, T, H, Dh] (the rest pass through)."""
    rot = cos.shape[-1]
    xr = x[..., :rot].astype(jnp.float32)
    half = rot // 2
    rotated = jnp.concatenate([-xr[..., half:], xr[..., :half]], axis=-1)
    out = xr * cos[:, :, None, :] + rotated * sin[:, :, None, :]
    return jnp.concatenate([out.astype(x.dtype), x[..., rot:]], axis=-1)


def attention_inputs(spec: DecoderConfig, w: dict, h: jax.Array, cos, sin):
    """Project normed hidden h [B, T, D] to q [B, T, H, Dh] and k, v [B, T, Hkv, Dh], with bias, q/k norm, rope."""
    q = jnp.einsum("btd,dhk->bthk", h, w["wq"])
    k = jnp.einsum("btd,dhk->bthk", h, w["wk"])
    v = jnp.einsum("btd,dhk->bthk", h, w["wv"])
    if spec.qkv_bias:
        q, k, v = q + w["bq"], k + w["bk"], v + w["bv"]
    if spec.norms.qk == "head":
        q, k = norm(spec, w["q_norm"], q), norm(spec, w["k_norm"], k)
    elif spec.norms.qk == "full":  # olmo2: over all heads of the projection at once
        q = norm(spec, w["q_norm"], q.reshape(*q.shape[:2], -1)).reshape(q.shape)
        k = norm(spec, w["k_norm"], k.reshape(*k.shape[:2], -1)).reshape(k.shape)
    if spec.rope.rotary_dim:
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
    return q, k, v


def attend(
    spec: DecoderConfig, q: jax.Array, k: jax.Array, v: jax.Array, allowed: jax.Array, heads_first: bool = False
) -> jax.Array:
    """Grouped-query attention of q [B, T, H, Dh] over k, v where allowed [B, T, S]; float32 softmax.

    k, v are [B, S, Hkv, Dh], or [B, Hkv, S, Dh] with `heads_first` (the KV cache's layout, read without a
    transpose). A single query (a decode step) of grouped heads multiplies and sums instead of calling dot: one
    fused pass over the cache, 3x faster on CPU than many tiny batched matrix products (SmolLM2, 3 query heads per
    key head). Without groups (one query head per key head) that fused pass is 10-70x slower on CPU than dot
    (the bundled 4-head model's decode step: 95 ms against 2.2 ms per layer at 64 rows x 456 slots), so such
    models take dot.
    """
    batch, length, heads, head_dim = q.shape
    q = q.reshape(batch, length, spec.num_kv_heads, spec.num_groups, head_dim)
    fused = heads_first and length == 1 and spec.num_groups > 1
    if fused:
        scores = jnp.sum(q[:, 0, :, :, None, :].astype(jnp.float32) * k[:, :, None], axis=-1)[:, :, :, None]
    else:
        kv = "bksd" if heads_first else "bskd"
        scores = jnp.einsum(f"btkgd,{kv}->bkgts", q, k, preferred_element_type=jnp.float32)
    scores = scores * spec.attn_scale
    if spec.attn_logit_softcap is not None:
        scores = spec.attn_logit_softcap * jnp.tanh(scores / spec.attn_logit_softcap)
    scores = jnp.where(allowed[:, None, None], scores, jnp.finfo(jnp.float32).min)
    probs = jax.nn.softmax(scores, axis=-1)
    if fused:
        out = jnp.sum(probs[:, :, :, 0, :, None] * v[:, :, None].astype(jnp.float32), axis=-2)[:, None].astype(v.dtype)
    else:
        out = jnp.einsum(f"bkgts,{kv}->btkgd", probs.astype(v.dtype), v)
    return out.reshape(batch, length, heads, head_dim)


def attention_output(spec: DecoderConfig, w: dict, o: jax.Array) -> jax.Array:
    out = jnp.einsum("bthk,hkd->btd", o, w["wo"])
    return out + w["bo"] if spec.out_bias else out


def mlp(spec: DecoderConfig, w: dict, h: jax.Array) -> jax.Array:
    """Gated (act(h Wg) * h Wu) Wd, or plain act(h Wi + bi) Wo + bo."""
    if spec.gated_mlp:
        inner = activation(spec.activation, h @ w["w_gate"]) * (h @ w["w_up"])
        return inner @ w["w_down"]
    inner = h @ w["w_in"]
    if spec.mlp_bias:
        inner = inner + w["b_in"]
    out = activation(spec.activation, inner) @ w["w_out"]
    return out + w["b_out"] if spec.mlp_bias else out
