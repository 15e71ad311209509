"""Log-softmax over the vocabulary, one block of columns at a time, split over the mesh "model" axis.

Scoring needs, per position, log p(target) and (for Min-K%++) the mean and
standard deviation of log p under the model's own distribution. Building the
float32 [N, V] logits would make memory grow with the vocabulary (256k for
gemma), so the output projection is applied to `vocab_block` columns at a time
inside a `lax.scan` and the statistics are folded in with an online
log-sum-exp: peak memory is N x vocab_block, whatever V is.

Under tensor parallelism (a `jax.set_mesh` mesh whose "model" axis has several
devices and divides V, which is how `models.sharding` places the output matrix)
each device folds only its own vocabulary columns inside `jax.shard_map`, and
the per-row partial sums and target logits are merged with `pmax` / `psum`:
the [V, D] matrix is never gathered.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Literal

import jax
import jax.numpy as jnp

WeightLayout = Literal["vd", "dv"]
VOCAB_AXIS = "model"

# Per-row running sums over the vocabulary, each float32 [N]: (max z, sum e, sum e w, sum e w^2) with
# e = exp(z - max) and w = z - max. `VocabSums` computes them for one (local) output matrix:
# (hidden [N, D], weight, bias or None, *, layout, softcap, vocab_block, with_moments) -> Partials.
Partials = tuple[jax.Array, jax.Array, jax.Array, jax.Array]
VocabSums = Callable[..., Partials]


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class TokenStats:
    """Per-position results, each float32 with the leading shape of `hidden`.

    logprob: log p(target). mean_logprob: mu = sum_v p_v log p_v.
    std_logprob: sigma = sqrt(sum_v p_v (log p_v)^2 - mu^2). entropy: -mu.
    The last three are None when `with_stats=False`. max_logprob: max_v log p_v, the greedy token's log p
    (free: the online log-sum-exp keeps the max), so target == greedy token when logprob reaches it.
    """

    logprob: jax.Array
    mean_logprob: jax.Array | None = None
    std_logprob: jax.Array | None = None
    max_logprob: jax.Array | None = None

    @property
    def entropy(self) -> jax.Array | None:
        return None if self.mean_logprob is None else -self.mean_logprob


def cap_logits(z, softcap):
    """Gemma2's final-logit soft-capping, softcap * tanh(z / softcap); identity when `softcap` is None."""
    return z if softcap is None else softcap * jnp.tanh(z / softcap)


def _raw_target_logits(hidden, weight, targets, bias, layout):
    """Uncapped float32 logit of each row's own target [N]: one weight row per position, no vocabulary pass."""
    rows = weight[targets] if layout == "vd" else weight[:, targets].T
    z = jnp.einsum("nd,nd->n", hidden, rows, preferred_element_type=jnp.float32)
    if bias is not None:
        z = z + bias[targets].astype(jnp.float32)
    return z


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
    return cap_logits(z, softcap)


def recentre(m_old, m_new, s, a, b):
    """Move sums centred on `m_old` to the centre `m_new` >= m_old (sums of a row with m_old = -inf are zero)."""
    empty = m_old == -jnp.inf
    d = jnp.where(empty, 0.0, m_old - m_new)  # <= 0
    scale = jnp.where(empty, 0.0, jnp.exp(d))
    return scale * s, scale * (a + d * s), scale * (b + 2.0 * d * a + d * d * s)


def fold_block(carry, z, valid, with_moments=True):
    """Fold one block of logits `z` [N, b] into the running sums, each [N, 1] (see `Partials`).

    Sums stay centred on the running max so the variance does not cancel
    catastrophically. Columns where `valid` is False (already seen, or past the
    end of the vocabulary) are ignored whatever `z` holds there, even NaN.
    Without `with_moments` the two weighted sums stay zero (plain log-probs).
    """
    m, s, a, b = carry
    m_new = jnp.maximum(m, jnp.max(jnp.where(valid, z, -jnp.inf), axis=-1, keepdims=True))
    s, a, b = recentre(m, m_new, s, a, b)
    w = jnp.where(valid, z - m_new, 0.0)
    e = jnp.where(valid, jnp.exp(w), 0.0)
    s = s + jnp.sum(e, axis=-1, keepdims=True)
    if with_moments:
        a = a + jnp.sum(e * w, axis=-1, keepdims=True)
        b = b + jnp.sum(e * w * w, axis=-1, keepdims=True)
    return m_new, s, a, b


def blockwise_sums(hidden, weight, bias, *, layout, softcap, vocab_block, with_moments) -> Partials:
    """`Partials` of every row of `hidden` [N, D] over all columns of `weight`, `vocab_block` at a time."""
    vocab = weight.shape[0] if layout == "vd" else weight.shape[1]
    block = min(vocab_block, vocab)
    n = hidden.shape[0]
    zeros = jnp.zeros((n, 1), jnp.float32)
    init = (jnp.full((n, 1), -jnp.inf, jnp.float32), zeros, zeros, zeros)

    def step(carry, i):
        nominal = i * block
        start = jnp.minimum(nominal, vocab - block)  # the last block is shifted back to stay in range
        z = _block_logits(hidden, weight, bias, start, block, layout, softcap)
        valid = (start + jnp.arange(block) >= nominal)[None, :]
        return fold_block(carry, z, valid, with_moments), None

    (m, s, a, b), _ = jax.lax.scan(step, init, jnp.arange(-(-vocab // block)))
    return m[:, 0], s[:, 0], a[:, 0], b[:, 0]


def merge_over_axis(sums: Partials, axis_name: str) -> Partials:
    """Combine the `Partials` of disjoint vocabulary shards along mesh axis `axis_name` (inside shard_map)."""
    m, s, a, b = sums
    top = jax.lax.pmax(m, axis_name)
    return (top, *(jax.lax.psum(x, axis_name) for x in recentre(m, top, s, a, b)))


def finish(m, s, a, b, t, with_stats):
    """Turn the merged sums and the capped target logits `t` into log p(target), mu and sigma of log p."""
    lse = m + jnp.log(s)
    logprob = t - lse
    if not with_stats:
        return TokenStats(logprob, max_logprob=m - lse)
    mean_w = a / s
    mean = mean_w + m - lse
    var = jnp.maximum(b / s - mean_w * mean_w, 0.0)
    return TokenStats(logprob, mean, jnp.sqrt(var), m - lse)


def vocab_parallel_mesh(vocab: int):
    """The current mesh if its "model" axis can split the vocabulary (several devices dividing V), else None."""
    mesh = jax.sharding.get_abstract_mesh()
    if mesh.empty or VOCAB_AXIS not in mesh.axis_names:
        return None
    size = mesh.shape[VOCAB_AXIS]
    manual = mesh.axis_types[mesh.axis_names.index(VOCAB_AXIS)] == jax.sharding.AxisType.Manual
    return mesh if size > 1 and vocab % size == 0 and not manual else None


def _vocab_parallel(sums_fn, hidden, weight, targets, bias, layout, softcap, mesh):
    """Sums and capped target logits with the vocabulary split over "model", rows over the other mesh axes."""
    others = tuple(a for a in mesh.axis_names if a != VOCAB_AXIS)
    row_devices = 1
    for a in others:
        row_devices *= mesh.shape[a]
    rows = others if others and hidden.shape[0] % row_devices == 0 else None  # else every row on every device
    vocab_dim = 0 if layout == "vd" else 1
    weight_spec = jax.P(VOCAB_AXIS, None) if layout == "vd" else jax.P(None, VOCAB_AXIS)

    def local(h, w, tg, *b):
        b = b[0] if b else None
        local_vocab = w.shape[vocab_dim]
        ids = tg - jax.lax.axis_index(VOCAB_AXIS) * local_vocab
        mine = (ids >= 0) & (ids < local_vocab)
        raw = _raw_target_logits(h, w, jnp.clip(ids, 0, local_vocab - 1), b, layout)
        t = cap_logits(jax.lax.psum(jnp.where(mine, raw, 0.0), VOCAB_AXIS), softcap)
        return merge_over_axis(sums_fn(h, w, b), VOCAB_AXIS), t

    args = (hidden, weight, targets) + (() if bias is None else (bias,))
    specs = (jax.P(rows, None), weight_spec, jax.P(rows)) + (() if bias is None else (jax.P(VOCAB_AXIS),))
    # check_vma=False: the Pallas interpreter cannot type-check mixed varying axes (jax 0.10); every collective
    # here reduces a per-shard value, so the unchecked semantics are the intended ones.
    return jax.shard_map(
        local, mesh=mesh, in_specs=specs, out_specs=((jax.P(rows),) * 4, jax.P(rows)), check_vma=False
    )(*args)


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
    vocab_sums: VocabSums = blockwise_sums,
) -> TokenStats:
    """log p(targets) under softmax(softcap(hidden @ W + bias)), never building [.., V] logits.

    hidden [..., D]; weight [V, D] (`layout="vd"`, tied-embedding style) or
    [D, V] (`"dv"`); targets int [...]. Target ids outside [0, V) give garbage
    log-probs: mask them out afterwards (padding positions). Under a mesh whose
    "model" axis divides V the vocabulary stays split over it (module docstring).
    `vocab_sums` computes the per-shard sums: the jnp scan, or the fused kernel
    (`jaxcontam.kernels.vocab_logprobs`).
    """
    lead = hidden.shape[:-1]
    h = hidden.reshape(-1, hidden.shape[-1])
    tg = targets.reshape(-1).astype(jnp.int32)
    vocab = weight.shape[0] if layout == "vd" else weight.shape[1]
    sums_fn = functools.partial(
        vocab_sums, layout=layout, softcap=softcap, vocab_block=vocab_block, with_moments=with_stats
    )
    mesh = vocab_parallel_mesh(vocab)
    if mesh is None:
        sums = sums_fn(h, weight, bias)
        t = cap_logits(_raw_target_logits(h, weight, jnp.clip(tg, 0, vocab - 1), bias, layout), softcap)
    else:
        sums, t = _vocab_parallel(sums_fn, h, weight, tg, bias, layout, softcap, mesh)
    stats = finish(*sums, t, with_stats)
    return jax.tree.map(lambda x: x.reshape(lead), stats)


def logits_logprob_stats(
    logits: jax.Array, targets: jax.Array, *, softcap: float | None = None, with_stats: bool = False
) -> TokenStats:
    """`token_logprob_stats` for a model that hands over its [..., V] logits (no output matrix to block over):
    the same log p(target), mu and sigma, from one float32 log-softmax per position."""
    logp = jax.nn.log_softmax(cap_logits(logits.astype(jnp.float32), softcap), axis=-1)
    vocab = logp.shape[-1]
    logprob = jnp.take_along_axis(logp, jnp.clip(targets, 0, vocab - 1)[..., None].astype(jnp.int32), axis=-1)[..., 0]
    top = jnp.max(logp, axis=-1)
    if not with_stats:
        return TokenStats(logprob, max_logprob=top)
    p = jnp.exp(logp)
    mean = jnp.sum(p * logp, axis=-1)
    var = jnp.maximum(jnp.sum(p * logp * logp, axis=-1) - mean * mean, 0.0)
    return TokenStats(logprob, mean, jnp.sqrt(var), top)
