"""Log-softmax over the vocabulary, one block of columns at a time.

Scoring needs, per position, log p(target) and (for Min-K%++) the mean and
standard deviation of log p under the model's own distribution. Building the
float32 [N, V] logits would make memory grow with the vocabulary (256k for
gemma), so the output projection is applied to `vocab_block` columns at a time
inside a `lax.scan` and the statistics are folded in with an online
log-sum-exp: peak memory is N x vocab_block, whatever V is.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import jax
import jax.numpy as jnp

WeightLayout = Literal["vd", "dv"]


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class TokenStats:
    """Per-position results, each float32 with the leading shape of `hidden`.

    logprob: log p(target). mean_logprob: mu = sum_v p_v log p_v.
    std_logprob: sigma = sqrt(sum_v p_v (log p_v)^2 - mu^2). entropy: -mu.
    The last three are None when `with_stats=False`.
    """

    logprob: jax.Array
    mean_logprob: jax.Array | None = None
    std_logprob: jax.Array | None = None

    @property
    def entropy(self) -> jax.Array | None:
        return None if self.mean_logprob is None else -self.mean_logprob


def _cap(z, softcap):
    return z if softcap is None else softcap * jnp.tanh(z / softcap)


def target_logits(hidden, weight, targets, bias, layout, softcap):
    """float32 logit of each row's own target [N]: one weight row per position, no pass over the vocabulary."""
    rows = weight[targets] if layout == "vd" else weight[:, targets].T
    z = jnp.einsum("nd,nd->n", hidden, rows, preferred_element_type=jnp.float32)
    if bias is not None:
        z = z + bias[targets].astype(jnp.float32)
    return _cap(z, softcap)


def _block_logits(hidden, weight, bias, start, size, layout, softcap):
    """float32 logits of vocabulary columns [start, start + size) for every row of `hidden`."""
    if layout == "vd":
        w = jax.lax.dynamic_slice_in_dim(weight, start, size, axis=0)
        z = jnp.einsum("nd,vd->nv", hidden, w, preferred_element_type=jnp.float32)
    else:
        w = jax.lax.dynamic_slice_in_dim(weight, start, size, axis=1)
        z = jnp.einsum("nd,dv->nv", hidden, w, preferred_element_type=jnp.float32)
    if bias is not None:
        z = z + jax.lax.dynamic_slice_in_dim(bias, start, size).astype(jnp.float32)
    return _cap(z, softcap)


def fold_block(carry, z, valid, with_moments=True):
    """Fold one block of logits `z` [N, b] into the running (max, sum, sum w, sum w^2).

    Sums are of exp(z - max) weighted by w = z - max, kept centred on the running
    max so the variance does not cancel catastrophically. `valid` masks columns
    already seen (the last block overlaps the previous one when V % b != 0).
    Without `with_moments` the two weighted sums stay zero (plain log-probs).
    """
    m, s, a, b = carry
    z_masked = jnp.where(valid, z, -jnp.inf)
    m_new = jnp.maximum(m, jnp.max(z_masked, axis=-1))
    empty = m == -jnp.inf  # nothing folded yet: the old sums are zero, shift them by nothing
    d = jnp.where(empty, 0.0, m - m_new)  # <= 0: shift of the old sums to the new centre
    scale = jnp.where(empty, 0.0, jnp.exp(d))
    w = z - m_new[:, None]
    e = jnp.where(valid, jnp.exp(jnp.where(valid, w, 0.0)), 0.0)
    if with_moments:
        a_old = a
        a = scale * (a_old + d * s) + jnp.sum(e * w, axis=-1)
        b = scale * (b + 2.0 * d * a_old + d * d * s) + jnp.sum(e * w * w, axis=-1)
    s = scale * s + jnp.sum(e, axis=-1)
    return m_new, s, a, b


def finish(m, s, a, b, t, with_stats):
    """Turn the folded sums and the target logits `t` into log p(target), mu and sigma of log p."""
    lse = m + jnp.log(s)
    logprob = t - lse
    if not with_stats:
        return TokenStats(logprob)
    mean_w = a / s
    mean = mean_w + m - lse
    var = jnp.maximum(b / s - mean_w * mean_w, 0.0)
    return TokenStats(logprob, mean, jnp.sqrt(var))


def token_logprob_stats(
    hidden: jax.Array,
    weight: jax.Array,
    targets: jax.Array,
    *,
    bias: jax.Array | None = None,
    layout: WeightLayout = "vd",
    softcap: float | None = None,
    vocab_block: int = 2048,
    with_stats: bool = False,
) -> TokenStats:
    """log p(targets) under softmax(softcap(hidden @ W + bias)), never building [.., V] logits.

    hidden [..., D]; weight [V, D] (`layout="vd"`, tied-embedding style) or
    [D, V] (`"dv"`); targets int [...]. Target ids outside [0, V) give garbage
    log-probs: mask them out afterwards (padding positions).
    """
    lead = hidden.shape[:-1]
    h = hidden.reshape(-1, hidden.shape[-1])
    tg = targets.reshape(-1).astype(jnp.int32)
    vocab = weight.shape[0] if layout == "vd" else weight.shape[1]
    block = min(vocab_block, vocab)
    num_blocks = -(-vocab // block)
    n = h.shape[0]
    zeros = jnp.zeros((n,), jnp.float32)
    init = (jnp.full((n,), -jnp.inf, jnp.float32), zeros, zeros, zeros)

    def step(carry, i):
        nominal = i * block
        start = jnp.minimum(nominal, vocab - block)  # the last block is shifted back to stay in range
        z = _block_logits(h, weight, bias, start, block, layout, softcap)
        valid = (start + jnp.arange(block) >= nominal)[None, :]
        return fold_block(carry, z, valid, with_stats), None

    (m, s, a, b), _ = jax.lax.scan(step, init, jnp.arange(num_blocks))
    t = target_logits(h, weight, jnp.clip(tg, 0, vocab - 1), bias, layout, softcap)
    stats = finish(m, s, a, b, t, with_stats)
    return jax.tree.map(lambda x: x.reshape(lead), stats)
