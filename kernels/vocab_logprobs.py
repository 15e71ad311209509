"""Fused Pallas kernel: output projection + online log-softmax statistics, per block of rows.

Same result as `jaxcontam.engine.vocab_blocks.token_logprob_stats` (its
reference): each program takes `row_block` hidden rows, walks the vocabulary
`vocab_block` columns at a time, and keeps the running max / sums in registers,
so the [rows, V] logits never reach memory (the target logits are one
weight-row dot product per position, outside the kernel). Written in the GPU (Triton) style:
one program per row block with the vocabulary loop inside. Tested in interpret
mode on the CPU; opt-in (`score_logprobs(..., use_kernel=True)`) on GPU backends only.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

from jaxcontam.engine.vocab_blocks import (
    TokenStats,
    WeightLayout,
    finish,
    fold_block,
    target_logits,
)


def kernel_available() -> bool:
    """True where the fused kernel compiles natively (GPU); elsewhere use the jnp path."""
    return jax.default_backend() == "gpu"


def _kernel(h_ref, w_ref, b_ref, m_ref, s_ref, a_ref, q_ref, *, vocab, block, layout, softcap, with_stats):
    h = h_ref[...]
    rows = h.shape[0]
    num_blocks = -(-vocab // block)

    def body(i, carry):
        nominal = i * block
        start = jnp.minimum(nominal, vocab - block)
        if layout == "vd":
            w = w_ref[pl.ds(start, block), :]
            z = jax.lax.dot_general(h, w, (((1,), (1,)), ((), ())), preferred_element_type=jnp.float32)
        else:
            w = w_ref[:, pl.ds(start, block)]
            z = jnp.dot(h, w, preferred_element_type=jnp.float32)
        if b_ref is not None:
            z = z + b_ref[pl.ds(start, block)].astype(jnp.float32)[None, :]
        if softcap is not None:
            z = softcap * jnp.tanh(z / softcap)
        valid = (start + jax.lax.broadcasted_iota(jnp.int32, (1, block), 1)) >= nominal
        return fold_block(carry, z, valid, with_stats)

    zeros = jnp.zeros((rows,), jnp.float32)
    m, s, a, q = jax.lax.fori_loop(0, num_blocks, body, (jnp.full((rows,), -jnp.inf, jnp.float32), zeros, zeros, zeros))
    m_ref[...] = m
    s_ref[...] = s
    a_ref[...] = a
    q_ref[...] = q


@functools.partial(
    jax.jit, static_argnames=("layout", "softcap", "vocab_block", "row_block", "with_stats", "interpret")
)
def fused_token_logprob_stats(
    hidden: jax.Array,
    weight: jax.Array,
    targets: jax.Array,
    *,
    bias: jax.Array | None = None,
    layout: WeightLayout = "vd",
    softcap: float | None = None,
    vocab_block: int = 512,
    row_block: int = 64,
    with_stats: bool = False,
    interpret: bool = False,
) -> TokenStats:
    """Drop-in for `token_logprob_stats` backed by one Pallas kernel (see module docstring)."""
    lead = hidden.shape[:-1]
    d = hidden.shape[-1]
    h = hidden.reshape(-1, d)
    tg = targets.reshape(-1).astype(jnp.int32)
    n = h.shape[0]
    padded = -(-n // row_block) * row_block
    h_padded = jnp.pad(h, ((0, padded - n), (0, 0)))
    vocab = weight.shape[0] if layout == "vd" else weight.shape[1]
    block = min(vocab_block, vocab)
    row_spec = pl.BlockSpec((row_block,), lambda i: (i,))
    # The weight (and bias) are whole-array operands indexed by the vocabulary loop inside the kernel.
    in_specs = [pl.BlockSpec((row_block, d), lambda i: (i, 0)), pl.BlockSpec(weight.shape, lambda i: (0, 0))]
    args = [h_padded, weight]
    if bias is not None:
        in_specs.append(pl.BlockSpec(bias.shape, lambda i: (0,)))
        args.append(bias)
    kernel = functools.partial(_kernel, vocab=vocab, block=block, layout=layout, softcap=softcap,
                               with_stats=with_stats)
    if bias is None:
        kernel = functools.partial(_no_bias, kernel)
    outs = pl.pallas_call(
        kernel,
        grid=(padded // row_block,),
        in_specs=in_specs,
        out_specs=[row_spec] * 4,
        out_shape=[jax.ShapeDtypeStruct((padded,), jnp.float32)] * 4,
        interpret=interpret,
    )(*args)
    t = target_logits(h, weight, jnp.clip(tg, 0, vocab - 1), bias, layout, softcap)
    stats = finish(*(o[:n] for o in outs), t, with_stats)
    return jax.tree.map(lambda x: x.reshape(lead), stats)


def _no_bias(kernel, h_ref, w_ref, *out_refs):
    return kernel(h_ref, w_ref, None, *out_refs)
