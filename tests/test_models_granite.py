"""Granite, the family added as one module and one registry entry: torch parity of log-probs, and each of its four
scalars really applied (dropping any one from config.json moves the log-probs far from torch's)."""

import json

import numpy as np
import pytest
import torch
import transformers as tf

import jaxcontam

MULTIPLIERS = {
    "embedding_multiplier": 3.0,
    "residual_multiplier": 0.5,
    "attention_multiplier": 0.2,
    "logits_scaling": 2.5,
}


@pytest.fixture(scope="module")
def granite(tmp_path_factory):
    """(checkpoint dir, token sequences, torch float64 log-probs of each sequence)."""
    torch.manual_seed(0)
    config = tf.GraniteConfig(
        vocab_size=97,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        **MULTIPLIERS,
    )
    model = tf.GraniteForCausalLM(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.3)
    path = tmp_path_factory.mktemp("granite")
    model.save_pretrained(path)  # safetensors
    rng = np.random.default_rng(0)
    seqs = [rng.integers(0, 97, n).tolist() for n in (5, 23)]
    expected = []
    with torch.no_grad():
        for seq in seqs:
            logp = torch.log_softmax(model(torch.tensor([seq])).logits[0].double(), -1)
            expected.append(logp[torch.arange(len(seq) - 1), torch.tensor(seq[1:])].numpy())
    return path, seqs, expected


def test_float32_logprobs_match_torch_closely(granite):
    path, seqs, expected = granite
    model = jaxcontam.load_model(path)
    assert model.config.model_type == "granite"
    for got, want in zip(model.logprobs(seqs), expected, strict=True):
        np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)


@pytest.mark.parametrize("field", sorted(MULTIPLIERS))
def test_each_multiplier_is_applied(granite, field, tmp_path):
    path, seqs, expected = granite
    for item in path.iterdir():
        (tmp_path / item.name).symlink_to(item)
    config = json.loads((path / "config.json").read_text())
    (tmp_path / "config.json").unlink()
    (tmp_path / "config.json").write_text(json.dumps({**config, field: 1.0}))
    deviation = max(
        np.abs(g - e).max() for g, e in zip(jaxcontam.load_model(tmp_path).logprobs(seqs), expected, strict=True)
    )
    assert deviation > 1e-2, field
