"""The fused Pallas kernel (interpret mode on the CPU) against its plain-jnp reference."""

import jax.numpy as jnp
import numpy as np
import pytest

from jaxcontam.engine.vocab_blocks import token_logprob_stats
from jaxcontam.kernels.vocab_logprobs import fused_token_logprob_stats


@pytest.mark.parametrize(
    "n,vocab,layout,softcap,use_bias",
    [(37, 200, "vd", None, False), (16, 96, "dv", 10.0, True), (5, 64, "vd", None, True)],
)
def test_kernel_matches_jnp_reference(n, vocab, layout, softcap, use_bias):
    rng = np.random.default_rng(n)
    d = 32
    hidden = jnp.asarray(rng.normal(size=(n, d)), jnp.float32)
    weight = jnp.asarray(rng.normal(scale=0.5, size=(vocab, d) if layout == "vd" else (d, vocab)), jnp.float32)
    bias = jnp.asarray(rng.normal(size=vocab), jnp.float32) if use_bias else None
    targets = jnp.asarray(rng.integers(0, vocab, size=n))
    kwargs = {"bias": bias, "layout": layout, "softcap": softcap, "with_stats": True}
    want = token_logprob_stats(hidden, weight, targets, vocab_block=64, **kwargs)
    got = fused_token_logprob_stats(hidden, weight, targets, vocab_block=48, row_block=16, interpret=True, **kwargs)
    for name in ("logprob", "mean_logprob", "std_logprob"):
        np.testing.assert_allclose(getattr(got, name), getattr(want, name), rtol=1e-5, atol=1e-5, err_msg=name)
