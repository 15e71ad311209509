"""RoPE in float32 as transformers computes it: inverse frequencies to the bit in nearly every entry, so log-probs
keep float32's precision at long positions (an angle carries its frequency's error times the position).

References: the inverse frequencies of transformers' own Llama rotary embedding, and a random Llama run by torch
transformers in float32 and float64.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
tf = pytest.importorskip("transformers")


def test_inverse_frequencies_equal_transformers_nearly_everywhere():
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    from jaxcontam.models import from_hf_config
    from jaxcontam.models.layers import rope_inverse_frequencies

    entries = differing = 0
    for theta in (10_000.0, 100_000.0, 500_000.0, 1_000_000.0, 10_000_000.0, 813_288.912, 12_345.678):
        for head_dim in (32, 64, 80, 96, 128, 256):
            hf = tf.LlamaConfig(hidden_size=head_dim * 2, num_attention_heads=2, head_dim=head_dim, rope_theta=theta)
            expected = LlamaRotaryEmbedding(hf).inv_freq
            got = rope_inverse_frequencies(from_hf_config(hf.to_dict()))
            assert got.dtype == np.float32
            ulps = np.abs(got.view(np.int32) - expected.numpy().view(np.int32))
            assert ulps.max() <= 2, (theta, head_dim)  # torch's float32 pow is not always correctly rounded
            entries, differing = entries + ulps.size, differing + int((ulps > 0).sum())
    assert differing <= 0.02 * entries, f"{differing} of {entries} entries differ from transformers'"


def test_float32_log_probs_keep_their_precision_at_long_positions(tmp_path):
    import jaxcontam
    from jaxcontam.engine.scoring import score_logprobs

    config = tf.LlamaConfig(
        vocab_size=256,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=2048,
        rope_theta=500_000.0,
    )
    torch.manual_seed(0)
    reference = tf.AutoModelForCausalLM.from_config(config)
    with torch.no_grad():
        for weight in reference.parameters():
            weight.mul_(5.0)  # sharp next-token distributions: log-probs that move with every angle
    reference.save_pretrained(tmp_path)
    tokens = np.random.default_rng(0).integers(0, 256, 1536)

    def torch_log_probs(dtype):
        model = tf.AutoModelForCausalLM.from_pretrained(tmp_path, dtype=dtype, attn_implementation="eager")
        with torch.no_grad():
            logits = model(torch.tensor(tokens[None])).logits[0, :-1].double()
        return torch.log_softmax(logits, -1).gather(-1, torch.tensor(tokens[1:, None])).numpy()[:, 0]

    exact, torch32 = torch_log_probs(torch.float64), torch_log_probs(torch.float32)
    model = jaxcontam.load_model(str(tmp_path))
    ours = score_logprobs(model, [tokens.tolist()], rows_per_batch=1, buckets=(len(tokens),))[0].logprobs
    late = slice(-256, None)
    torch_error = np.abs(torch32 - exact)[late].max()
    assert np.abs(ours - exact)[late].max() <= max(3 * torch_error, 3e-5)  # numpy's float32 pow: 7.5e-3 here
