"""Every supported family against torch transformers: tiny random models saved with save_pretrained.

Configs switch on each family's special feature (sliding windows shorter than the sequences, soft-capping,
Llama 3 / linear rope scaling, partial rotary, sequential and parallel residuals, with and without attention
biases, tied and untied outputs).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
import transformers as tf

import jaxcontam
import jaxcontam.models as M

VOCAB = 101
LENGTHS = (2, 9, 17, 30)
SMALL = {
    "vocab_size": VOCAB,
    "hidden_size": 32,
    "intermediate_size": 48,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "max_position_embeddings": 64,
}

CONFIGS = {
    "llama": lambda: tf.LlamaConfig(
        **SMALL,
        num_key_value_heads=2,
        tie_word_embeddings=False,
        rope_scaling={
            "rope_type": "llama3",
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 16,
        },
    ),
    "mistral": lambda: tf.MistralConfig(**SMALL, num_key_value_heads=2, head_dim=8, sliding_window=5),
    "qwen2": lambda: tf.Qwen2Config(
        **SMALL, num_key_value_heads=2, tie_word_embeddings=True, rope_scaling={"rope_type": "linear", "factor": 2.0}
    ),
    "qwen3": lambda: tf.Qwen3Config(**SMALL, num_key_value_heads=2, head_dim=16),
    "gemma": lambda: tf.GemmaConfig(**SMALL, num_key_value_heads=1, head_dim=8),
    "gemma2": lambda: tf.Gemma2Config(
        **{**SMALL, "num_hidden_layers": 3},
        num_key_value_heads=2,
        head_dim=8,
        sliding_window=4,
        query_pre_attn_scalar=12,
        attn_logit_softcapping=2.0,
        final_logit_softcapping=3.0,
    ),
    "gemma3": lambda: tf.Gemma3TextConfig(
        **{**SMALL, "num_hidden_layers": 3},
        num_key_value_heads=2,
        head_dim=8,
        sliding_window=4,
        query_pre_attn_scalar=12,
        final_logit_softcapping=3.0,
        layer_types=["sliding_attention", "full_attention", "sliding_attention"],
        rope_parameters={
            "full_attention": {"rope_type": "linear", "factor": 4.0, "rope_theta": 50000.0},
            "sliding_attention": {"rope_type": "default", "rope_theta": 300.0},
        },
    ),
    "olmo2": lambda: tf.Olmo2Config(
        **SMALL, num_key_value_heads=2, pad_token_id=None, eos_token_id=None, bos_token_id=None
    ),
    "phi3": lambda: tf.Phi3Config(
        **{**SMALL, "max_position_embeddings": 128},
        num_key_value_heads=2,
        pad_token_id=None,
        eos_token_id=None,
        bos_token_id=None,
        original_max_position_embeddings=20,
        rope_parameters={
            "rope_type": "longrope",
            "rope_theta": 10000.0,
            "partial_rotary_factor": 0.5,
            "short_factor": [1.0, 3.0],
            "long_factor": [5.0, 17.0],
        },
    ),
    "mixtral": lambda: tf.MixtralConfig(
        **SMALL, num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2, sliding_window=6
    ),
    "qwen3_moe": lambda: tf.Qwen3MoeConfig(
        **SMALL,
        num_key_value_heads=2,
        head_dim=8,
        num_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=24,
        norm_topk_prob=True,
    ),
    "gpt2": lambda: tf.GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=64),
    "gpt_neox": lambda: tf.GPTNeoXConfig(**SMALL, rotary_pct=0.5, use_parallel_residual=True),
    "gpt_neox_sequential": lambda: tf.GPTNeoXConfig(
        **SMALL, rotary_pct=0.25, use_parallel_residual=False, attention_bias=False
    ),
    "granite": lambda: tf.GraniteConfig(
        **SMALL,
        num_key_value_heads=2,
        embedding_multiplier=3.0,
        residual_multiplier=0.5,
        attention_multiplier=0.2,
        logits_scaling=2.5,
    ),
}

jit_decode = jax.jit(M.decode, static_argnums=1)
jit_hidden = jax.jit(M.hidden_states, static_argnums=1)
jit_logits = jax.jit(M.logits_from_hidden, static_argnums=1)


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def family(request, tmp_path_factory):
    """(name, torch model, checkpoint dir, token sequences, torch reference log-probs per sequence)."""
    torch.manual_seed(0)
    model = tf.AutoModelForCausalLM.from_config(CONFIGS[request.param](), attn_implementation="eager").eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.3)  # larger than the default init so every path moves the log-probs
    path = tmp_path_factory.mktemp(request.param)
    model.save_pretrained(path)
    rng = np.random.default_rng(1)
    seqs = [rng.integers(0, VOCAB, n).tolist() for n in LENGTHS]
    return request.param, model, path, seqs, [torch_logprobs(model, s) for s in seqs]


def torch_logprobs(model, seq):
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([seq])).logits[0].double(), -1)
    return logp[torch.arange(len(seq) - 1), torch.tensor(seq[1:])].numpy()


def test_float32_logprobs_match_torch(family):
    name, _, path, seqs, expected = family
    model = jaxcontam.load_model(path)
    got = model.logprobs(seqs)
    for seq, g, e in zip(seqs, got, expected, strict=True):
        assert g.shape == (len(seq) - 1,) and g.dtype == np.float32
        np.testing.assert_allclose(g, e, atol=1e-4, rtol=0, err_msg=name)


def test_bfloat16_weights_deviation_is_bounded(family):
    name, _, path, seqs, expected = family
    model = jaxcontam.load_model(path, dtype="bfloat16")
    assert jax.tree.leaves(model.params)[0].dtype == jnp.bfloat16
    deviation = max(np.abs(g - e).max() for g, e in zip(model.logprobs(seqs), expected, strict=True))
    print(f"{name}: bfloat16 weights, max |log-prob - torch float32| = {deviation:.4f}")
    assert deviation < 0.15


def test_special_features_are_active(family):
    """The configs really exercise what they claim to (else the parity above would prove less)."""
    name, _, path, _, _ = family
    spec = jaxcontam.load_model(path).config
    expected = {
        "llama": spec.rope.scaling == "llama3" and not spec.tie_word_embeddings,
        "mistral": set(spec.layer_windows) == {5},
        "qwen2": spec.rope.scaling == "linear" and spec.qkv_bias and spec.tie_word_embeddings,
        "qwen3": spec.norms.qk == "head",
        "gemma3": (
            spec.layer_windows == (4, 0, 4)
            and spec.rope.local_theta == 300.0
            and spec.rope.scaling == "linear"
            and spec.norms.qk == "head"
            and spec.final_logit_softcap == 3.0
            and spec.norms.attn_post
        ),
        "olmo2": spec.norms.qk == "full" and not spec.norms.pre and spec.norms.attn_post and spec.norms.mlp_post,
        "phi3": spec.rope.scaling == "longrope" and spec.rope.rotary_dim == 4 and not spec.tie_word_embeddings,
        "mixtral": spec.experts.count == 4 and spec.experts.per_token == 2 and set(spec.layer_windows) == {6},
        "qwen3_moe": (
            spec.experts.count == 4
            and spec.experts.norm_topk_prob
            and spec.intermediate_size == 24
            and spec.norms.qk == "head"
        ),
        "gemma": spec.norms.offset == 1.0 and spec.embed_scale == pytest.approx(32**0.5),
        "gemma2": (
            spec.layer_windows == (4, 0, 4) and spec.final_logit_softcap == 3.0 and spec.attn_logit_softcap == 2.0
        ),
        "gpt2": spec.learned_positions and spec.tie_word_embeddings,
        "gpt_neox": spec.parallel_residual and spec.rope.rotary_dim == 4 and not spec.tie_word_embeddings,
        "gpt_neox_sequential": not spec.parallel_residual and spec.rope.rotary_dim == 2 and not spec.qkv_bias,
        "granite": (
            spec.embed_scale == 3.0
            and spec.residual_scale == 0.5
            and spec.attn_scale == 0.2
            and spec.logits_divisor == 2.5
        ),
    }[name]
    assert expected, spec


def torch_cached_logprobs(model, seq, prefill):
    """torch's own KV-cached run: `prefill` tokens at once, then one token per call through its cache."""
    with torch.no_grad():
        out = model(torch.tensor([seq[:prefill]]), use_cache=True)
        logits = [out.logits[0]]
        for t in range(prefill, len(seq)):
            out = model(torch.tensor([[seq[t]]]), past_key_values=out.past_key_values, use_cache=True)
            logits.append(out.logits[0])
        logp = torch.log_softmax(torch.cat(logits).double(), -1)
    return logp[torch.arange(len(seq) - 1), torch.tensor(seq[1:])].numpy()


def test_decode_with_cache_matches_torch(family):
    """Left-padded prefill then single-token steps through the KV cache give torch's log-probs.

    LongRoPE (phi3) picks its factors from the length of each call's input, so torch's cached run differs from
    its full forward once a sequence outgrows the original context (the long row here: 16 tokens, then 30); that
    row is compared with torch's cached run, every other one with the full forward.
    """
    name, torch_model, path, seqs, expected = family
    model = jaxcontam.load_model(path)
    long, short = seqs[3], seqs[2]  # 30 and 17 tokens
    prefill = 16
    pad = len(long) - len(short)
    tokens = np.array([long[:prefill], [0] * pad + short[: prefill - pad]], np.int32)
    positions = np.array([np.arange(prefill), np.r_[np.full(pad, -1), np.arange(prefill - pad)]], np.int32)
    cache = M.init_cache(model.config, 2, len(long), jnp.float32)
    hidden, cache = jit_decode(model.params, model.config, tokens, positions, cache, 0)
    steps = [hidden]
    for t in range(prefill, len(long)):
        step_tokens = np.array([[long[t]], [short[t - pad]]], np.int32)
        hidden, cache = jit_decode(
            model.params, model.config, step_tokens, np.array([[t], [t - pad]], np.int32), cache, t
        )
        steps.append(hidden)
    logp = np.asarray(jax.nn.log_softmax(jit_logits(model.params, model.config, jnp.concatenate(steps, 1)), -1))
    got_long = logp[0, np.arange(len(long) - 1), long[1:]]
    got_short = logp[1, pad + np.arange(len(short) - 1), short[1:]]
    expected_long = torch_cached_logprobs(torch_model, long, prefill) if name == "phi3" else expected[3]
    np.testing.assert_allclose(got_long, expected_long, atol=1e-4, rtol=0, err_msg=name)
    np.testing.assert_allclose(got_short, expected[2], atol=1e-4, rtol=0, err_msg=name)


def test_packed_row_equals_sequences_alone(family):
    """Two sequences packed in one row (segments 1, 2, positions restarting) score as if alone."""
    name, _, path, seqs, expected = family
    model = jaxcontam.load_model(path)
    a, b = seqs[1], seqs[3]
    width = 48
    tokens = np.zeros((1, width), np.int32)
    tokens[0, : len(a) + len(b)] = a + b
    positions = np.zeros((1, width), np.int32)
    positions[0, : len(a) + len(b)] = np.r_[np.arange(len(a)), np.arange(len(b))]
    segments = np.zeros((1, width), np.int32)
    segments[0, : len(a) + len(b)] = [1] * len(a) + [2] * len(b)
    hidden = jit_hidden(model.params, model.config, tokens, positions, segments)
    logp = np.asarray(jax.nn.log_softmax(jit_logits(model.params, model.config, hidden), -1))[0]
    got_a = logp[np.arange(len(a) - 1), a[1:]]
    got_b = logp[len(a) + np.arange(len(b) - 1), b[1:]]
    np.testing.assert_allclose(got_a, expected[1], atol=1e-4, rtol=0, err_msg=name)
    np.testing.assert_allclose(got_b, expected[3], atol=1e-4, rtol=0, err_msg=name)
