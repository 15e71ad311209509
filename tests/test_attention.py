"""Query-blocked attention over packed rows against attention written from its definition (float64 loops)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import jax.numpy as jnp
import transformers as tf

from jaxcontam.models.attention import packed_attention
from jaxcontam.models.spec import from_hf_config

HEADS, KV_HEADS, HEAD_DIM = 4, 2, 8


def spec_with(softcap):
    shape = {"vocab_size": 11, "hidden_size": 32, "intermediate_size": 8, "num_hidden_layers": 1,
             "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS, "head_dim": HEAD_DIM,
             "max_position_embeddings": 64}
    config = (tf.Gemma2Config(**shape, attn_logit_softcapping=softcap, query_pre_attn_scalar=HEAD_DIM) if softcap
              else tf.LlamaConfig(**shape))
    return from_hf_config(config.to_dict())


def reference(q, k, v, positions, segments, window, scale, softcap):
    """out[b, t, h] = sum over allowed keys s of softmax_s(score) v[b, s, h // group]; None where nothing is allowed."""
    batch, length, heads, _ = q.shape
    group = heads // k.shape[2]
    out = np.full(q.shape, np.nan)
    for b in range(batch):
        for t in range(length):
            keys = [s for s in range(length) if segments[b, s] == segments[b, t] > 0
                    and positions[b, s] <= positions[b, t] and (window == 0 or positions[b, t] - positions[b, s] < window)]
            if not keys:
                continue
            for h in range(heads):
                scores = np.array([q[b, t, h] @ k[b, s, h // group] for s in keys]) * scale
                if softcap:
                    scores = softcap * np.tanh(scores / softcap)
                weights = np.exp(scores - scores.max())
                out[b, t, h] = (weights / weights.sum()) @ v[b, keys, h // group]
    return out


def packed_rows(lengths_per_row, width):
    positions = np.zeros((len(lengths_per_row), width), np.int32)
    segments = np.zeros((len(lengths_per_row), width), np.int32)
    for r, lengths in enumerate(lengths_per_row):
        offset = 0
        for seg, n in enumerate(lengths, start=1):
            n = min(n, width - offset)
            positions[r, offset:offset + n] = np.arange(n)
            segments[r, offset:offset + n] = seg
            offset += n
    return positions, segments


@settings(max_examples=25, deadline=None)
@given(rows=st.lists(st.lists(st.integers(1, 9), min_size=1, max_size=4), min_size=1, max_size=2),
       width=st.integers(5, 23), block=st.integers(2, 8), window=st.sampled_from([0, 3]),
       softcap=st.sampled_from([None, 2.0]), seed=st.integers(0, 99))
def test_blocked_attention_is_attention(rows, width, block, window, softcap, seed):
    spec = spec_with(softcap)
    rng = np.random.default_rng(seed)
    positions, segments = packed_rows(rows, width)
    q = rng.normal(size=(len(rows), width, HEADS, HEAD_DIM))
    k, v = (rng.normal(size=(len(rows), width, KV_HEADS, HEAD_DIM)) for _ in range(2))
    found = np.asarray(packed_attention(spec, *(jnp.asarray(x, jnp.float32) for x in (q, k, v)),
                                        jnp.asarray(positions), jnp.asarray(segments), jnp.int32(window), block=block))
    expected = reference(q, k, v, positions, segments, window, spec.attn_scale, spec.attn_logit_softcap)
    real = segments > 0
    np.testing.assert_allclose(found[real], expected[real], atol=2e-5)
    assert np.isfinite(found).all()
