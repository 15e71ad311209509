"""Fused Pallas kernel: output projection + online log-softmax sums, never writing logits to memory.

Same result as `jaxcontam.kernels.vocab_blocks.token_logprob_stats` (its
reference), of which it replaces only the per-shard vocabulary pass: the
target logits, the merge over the "model" axis (`shard_map`, `pmax` / `psum`)
and the final statistics are shared. Written for TPU (Mosaic): the grid is
(row blocks, vocabulary blocks, hidden blocks); each step multiplies a
[row_block, d_block] tile of hidden states by a [vocab_block, d_block] tile of
the output matrix into a float32 VMEM accumulator, and on the last hidden block
folds those logits into the running max / sums of its rows, which stay in VMEM
(the output block) across the whole vocabulary. Blocks obey Mosaic's rule (last
two dims multiples of (8, 128) or the whole dim); a ragged last row or
vocabulary block is masked, so neither the weight nor the rows are padded.
Tested in interpret mode on the CPU and compiled for a TPU topology in CI.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from jaxcontam.errors import JaxcontamError
from jaxcontam.kernels.vocab_blocks import (
    Partials,
    TokenStats,
    WeightLayout,
    cap_logits,
    fold_block,
    token_logprob_stats,
)

_SUBLANES, _LANES = 8, 128


def kernel_available() -> bool:
    """True where the fused kernel compiles natively (TPU); elsewhere use the jnp path."""
    return jax.default_backend() == "tpu"


def _kernel(h_ref, w_ref, *refs, vocab, vocab_block, layout, softcap, with_moments, has_bias):
    b_ref, refs = (refs[0], refs[1:]) if has_bias else (None, refs)
    m_ref, s_ref, a_ref, q_ref, acc_ref = refs
    j, k = pl.program_id(1), pl.program_id(2)

    @pl.when((j == 0) & (k == 0))
    def _start_rows():
        m_ref[...] = jnp.full(m_ref.shape, -jnp.inf, jnp.float32)
        for ref in (s_ref, a_ref, q_ref):
            ref[...] = jnp.zeros(ref.shape, jnp.float32)

    @pl.when(k == 0)
    def _start_block():
        acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.float32)

    contract = ((1,), (1,)) if layout == "vd" else ((1,), (0,))
    acc_ref[...] += jax.lax.dot_general(
        h_ref[...], w_ref[...], (contract, ((), ())), preferred_element_type=jnp.float32
    )

    @pl.when(k == pl.num_programs(2) - 1)
    def _fold():
        z = acc_ref[...]
        if b_ref is not None:
            z = z + b_ref[...].astype(jnp.float32)
        z = cap_logits(z, softcap)
        column = j * vocab_block + jax.lax.broadcasted_iota(jnp.int32, z.shape, 1)
        carry = (m_ref[...], s_ref[...], a_ref[...], q_ref[...])
        for ref, value in zip((m_ref, s_ref, a_ref, q_ref), fold_block(carry, z, column < vocab, with_moments)):
            ref[...] = value


def _block(requested: int, full: int, multiple: int, name: str) -> int:
    """`requested` if it is a legal Mosaic block (a multiple of `multiple`) smaller than `full`, else `full`."""
    if requested % multiple:
        raise JaxcontamError(
            f"{name}={requested} must be a multiple of {multiple} for the TPU kernel: "
            f"round it to {max(multiple, requested // multiple * multiple)}"
        )
    return min(requested, full)


def _cost(hidden, weight, grid, softcap) -> pl.CostEstimate:
    """What XLA should assume the kernel costs: the weight is streamed once per row block, hidden tiles once
    per vocabulary block when D is tiled (else once)."""
    n, d = hidden.shape
    vocab = weight.size // d
    hidden_reads = grid[1] if grid[2] > 1 else 1
    return pl.CostEstimate(
        flops=2 * n * vocab * d,
        transcendentals=n * vocab * (1 if softcap is None else 2),
        bytes_accessed=weight.size * weight.dtype.itemsize * grid[0]
        + hidden.size * hidden.dtype.itemsize * hidden_reads
        + 4 * n * 4,
    )


def fused_vocab_sums(
    hidden, weight, bias, *, layout, softcap, vocab_block, with_moments, row_block=256, d_block=1024, interpret=False
) -> Partials:
    """`Partials` of hidden [N, D] over all columns of `weight` (see module docstring), as one pallas_call.

    The hidden dimension is split into `d_block` tiles when that divides D, else taken whole.
    """
    n, d = hidden.shape
    vocab = weight.shape[0] if layout == "vd" else weight.shape[1]
    rows = _block(row_block, n, _SUBLANES, "row_block")
    cols = _block(vocab_block, vocab, _LANES, "vocab_block")
    depth = _block(d_block, d, _LANES, "d_block")
    depth = depth if d % depth == 0 else d
    grid = (pl.cdiv(n, rows), pl.cdiv(vocab, cols), d // depth)
    if layout == "vd":
        weight_spec = pl.BlockSpec((cols, depth), lambda i, j, k: (j, k))
    else:
        weight_spec = pl.BlockSpec((depth, cols), lambda i, j, k: (k, j))
    in_specs = [pl.BlockSpec((rows, depth), lambda i, j, k: (i, k)), weight_spec]
    args = [hidden, weight]
    if bias is not None:
        in_specs.append(pl.BlockSpec((1, cols), lambda i, j, k: (0, j)))
        args.append(bias.reshape(1, vocab))
    row_spec = pl.BlockSpec((rows, 1), lambda i, j, k: (i, 0))
    kernel = functools.partial(
        _kernel,
        vocab=vocab,
        vocab_block=cols,
        layout=layout,
        softcap=softcap,
        with_moments=with_moments,
        has_bias=bias is not None,
    )
    sums = pl.pallas_call(
        kernel,
        grid=grid,
        in_specs=in_specs,
        out_specs=[row_spec] * 4,
        out_shape=[jax.ShapeDtypeStruct((n, 1), jnp.float32)] * 4,
        scratch_shapes=[pltpu.VMEM((rows, cols), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "arbitrary", "arbitrary")),
        cost_estimate=_cost(hidden, weight, grid, softcap),
        interpret=interpret,
    )(*args)
    return tuple(x[:, 0] for x in sums)


@functools.partial(
    jax.jit,
    static_argnames=("layout", "softcap", "vocab_block", "row_block", "d_block", "with_stats", "interpret"),
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
    row_block: int = 256,
    d_block: int = 1024,
    with_stats: bool = False,
    interpret: bool = False,
) -> TokenStats:
    """Drop-in for `token_logprob_stats` with the vocabulary pass as the fused kernel (vocab-parallel too)."""
    sums = functools.partial(fused_vocab_sums, row_block=row_block, d_block=d_block, interpret=interpret)
    return token_logprob_stats(
        hidden,
        weight,
        targets,
        bias=bias,
        layout=layout,
        softcap=softcap,
        vocab_block=vocab_block,
        with_stats=with_stats,
        vocab_sums=sums,
    )
