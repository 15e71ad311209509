"""The fused Pallas kernel (interpret mode on the CPU) against a float64 full-logits reference and the jnp path."""

import jax.numpy as jnp
import numpy as np
import pytest

from helpers import naive_stats
from jaxcontam.errors import JaxcontamError
from jaxcontam.kernels.vocab_blocks import token_logprob_stats
from jaxcontam.kernels.vocab_logprobs import fused_token_logprob_stats


@pytest.mark.parametrize(
    "n,vocab,d,d_block,layout,softcap,use_bias",
    [
        (37, 300, 256, 128, "vd", None, False),  # ragged last row block and vocabulary block, D in two tiles
        (16, 256, 128, 128, "dv", 10.0, True),  # gemma2-style softcap, bias, [D, V] layout
        (5, 64, 32, 1024, "vd", None, True),  # everything smaller than one block: whole-array blocks
    ],
)
def test_kernel_matches_full_logits_and_jnp_path(n, vocab, d, d_block, layout, softcap, use_bias):
    rng = np.random.default_rng(n)
    hidden = rng.normal(size=(n, d)).astype(np.float32)
    weight = rng.normal(scale=0.5, size=(vocab, d) if layout == "vd" else (d, vocab)).astype(np.float32)
    bias = rng.normal(size=vocab).astype(np.float32) if use_bias else None
    targets = rng.integers(0, vocab, size=n)
    kwargs = {
        "bias": None if bias is None else jnp.asarray(bias),
        "layout": layout,
        "softcap": softcap,
        "with_stats": True,
    }
    args = (jnp.asarray(hidden), jnp.asarray(weight), jnp.asarray(targets))
    got = fused_token_logprob_stats(*args, vocab_block=128, row_block=16, d_block=d_block, interpret=True, **kwargs)
    jnp_path = token_logprob_stats(*args, vocab_block=64, **kwargs)
    want = naive_stats(hidden, weight, targets, bias, layout, softcap)
    for name, reference in zip(("logprob", "mean_logprob", "std_logprob"), want):
        np.testing.assert_allclose(getattr(got, name), reference, rtol=1e-4, atol=1e-4, err_msg=name)
        np.testing.assert_allclose(getattr(got, name), getattr(jnp_path, name), rtol=1e-4, atol=1e-4, err_msg=name)


def test_illegal_tpu_block_is_refused():
    hidden, weight, targets = jnp.zeros((8, 128)), jnp.zeros((512, 128)), jnp.zeros(8, jnp.int32)
    with pytest.raises(JaxcontamError, match="vocab_block=200 must be a multiple of 128"):
        fused_token_logprob_stats(hidden, weight, targets, vocab_block=200, interpret=True)
