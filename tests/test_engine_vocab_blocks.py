"""Blockwise log-softmax statistics vs a naive full-logits numpy reference."""

import jax.numpy as jnp
import numpy as np
import pytest

from jaxcontam.engine.vocab_blocks import token_logprob_stats


def naive_stats(hidden, weight, targets, bias=None, layout="vd", softcap=None):
    """float64 full logits, log-softmax, and the Min-K%++ moments straight from their definitions."""
    h = np.asarray(hidden, np.float64).reshape(-1, hidden.shape[-1])
    w = np.asarray(weight, np.float64)
    z = h @ (w.T if layout == "vd" else w)
    if bias is not None:
        z = z + np.asarray(bias, np.float64)
    if softcap is not None:
        z = softcap * np.tanh(z / softcap)
    logp = z - np.log(np.exp(z - z.max(-1, keepdims=True)).sum(-1, keepdims=True)) - z.max(-1, keepdims=True)
    p = np.exp(logp)
    mu = (p * logp).sum(-1)
    sigma = np.sqrt((p * logp**2).sum(-1) - mu**2)
    lp = np.take_along_axis(logp, np.asarray(targets).reshape(-1, 1), axis=1)[:, 0]
    shape = targets.shape
    return lp.reshape(shape), mu.reshape(shape), sigma.reshape(shape)


@pytest.mark.parametrize(
    "vocab,block,layout,softcap,use_bias",
    [
        (97, 16, "vd", None, False),  # V not a multiple of the block: overlapping last block
        (64, 64, "dv", None, True),  # one block
        (130, 32, "vd", 5.0, False),  # gemma2-style final softcap inside the blocks
        (50, 128, "dv", 30.0, True),  # block larger than V
    ],
)
def test_matches_full_logits(vocab, block, layout, softcap, use_bias):
    rng = np.random.default_rng(vocab + block)
    hidden = rng.normal(size=(3, 5, 24)).astype(np.float32)
    weight = rng.normal(scale=0.7, size=(vocab, 24) if layout == "vd" else (24, vocab)).astype(np.float32)
    bias = rng.normal(size=vocab).astype(np.float32) if use_bias else None
    targets = rng.integers(0, vocab, size=(3, 5))
    got = token_logprob_stats(
        jnp.asarray(hidden),
        jnp.asarray(weight),
        jnp.asarray(targets),
        bias=None if bias is None else jnp.asarray(bias),
        layout=layout,
        softcap=softcap,
        vocab_block=block,
        with_stats=True,
    )
    lp, mu, sigma = naive_stats(hidden, weight, targets, bias, layout, softcap)
    np.testing.assert_allclose(got.logprob, lp, rtol=1e-5, atol=2e-5)
    np.testing.assert_allclose(got.mean_logprob, mu, rtol=1e-5, atol=2e-5)
    np.testing.assert_allclose(got.std_logprob, sigma, rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(got.entropy, -mu, rtol=1e-5, atol=2e-5)


def test_peaked_distribution_is_stable():
    """Logits in the hundreds (a very confident model) must not overflow or lose the variance."""
    rng = np.random.default_rng(0)
    hidden = (rng.normal(size=(4, 16)) * 40).astype(np.float32)
    weight = rng.normal(size=(300, 16)).astype(np.float32)
    targets = rng.integers(0, 300, size=4)
    got = token_logprob_stats(jnp.asarray(hidden), jnp.asarray(weight), jnp.asarray(targets), vocab_block=64,
                              with_stats=True)
    lp, mu, sigma = naive_stats(hidden, weight, targets)
    assert np.all(np.isfinite(np.asarray(got.std_logprob)))
    np.testing.assert_allclose(got.logprob, lp, rtol=1e-5, atol=1e-3)
    np.testing.assert_allclose(got.mean_logprob, mu, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(got.std_logprob, sigma, rtol=1e-3, atol=1e-3)


def test_bfloat16_weights_give_float32_results():
    rng = np.random.default_rng(1)
    hidden = rng.normal(size=(2, 3, 32)).astype(np.float32)
    weight = rng.normal(size=(80, 32)).astype(np.float32)
    targets = rng.integers(0, 80, size=(2, 3))
    got = token_logprob_stats(jnp.asarray(hidden, jnp.bfloat16), jnp.asarray(weight, jnp.bfloat16),
                              jnp.asarray(targets), vocab_block=32)
    assert got.logprob.dtype == jnp.float32
    h16 = np.asarray(jnp.asarray(hidden, jnp.bfloat16).astype(jnp.float32))
    w16 = np.asarray(jnp.asarray(weight, jnp.bfloat16).astype(jnp.float32))
    lp, _, _ = naive_stats(h16, w16, targets)
    np.testing.assert_allclose(got.logprob, lp, rtol=1e-4, atol=1e-3)
