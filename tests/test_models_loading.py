"""Checkpoint loading: sharded index files, tokenizer presence, and the refusals with their messages."""

import json

import numpy as np
import pytest
import torch
import transformers as tf
from hypothesis import given, settings
from hypothesis import strategies as st
from safetensors.numpy import load_file, save_file

import jaxcontam
from jaxcontam.errors import JaxcontamError, ModelError
from jaxcontam.models import from_hf_config, make_mesh
from jaxcontam.models.layers import rope_inverse_frequencies

CONFIG = {
    "vocab_size": 67,
    "hidden_size": 16,
    "intermediate_size": 24,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "max_position_embeddings": 32,
}
SEQS = [[5, 9, 3, 60, 2], [1, 2], [7] * 11]


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory):
    torch.manual_seed(0)
    model = tf.LlamaForCausalLM(tf.LlamaConfig(**CONFIG)).eval()
    path = tmp_path_factory.mktemp("llama")
    model.save_pretrained(path)
    return path


def copy_checkpoint(src, dst, edit_config=None, edit_tensors=None):
    dst.mkdir()
    config = json.loads((src / "config.json").read_text())
    (dst / "config.json").write_text(json.dumps(edit_config(config) if edit_config else config))
    tensors = load_file(src / "model.safetensors")
    save_file(edit_tensors(tensors) if edit_tensors else tensors, dst / "model.safetensors")
    return dst


def test_sharded_checkpoint_with_index_loads_the_same(llama_dir, tmp_path):
    model = tf.LlamaForCausalLM.from_pretrained(llama_dir)
    model.save_pretrained(tmp_path, max_shard_size="20KB")
    assert (tmp_path / "model.safetensors.index.json").exists() and len(list(tmp_path.glob("*.safetensors"))) > 1
    single, sharded = jaxcontam.load_model(llama_dir), jaxcontam.load_model(tmp_path)
    for a, b in zip(single.logprobs(SEQS), sharded.logprobs(SEQS), strict=True):
        np.testing.assert_array_equal(a, b)
    assert single.tokenizer is None


def test_pickle_checkpoint_is_refused(llama_dir, tmp_path):
    (tmp_path / "config.json").write_text((llama_dir / "config.json").read_text())
    torch.save(tf.LlamaForCausalLM.from_pretrained(llama_dir).state_dict(), tmp_path / "pytorch_model.bin")
    with pytest.raises(ModelError, match=r"pytorch_model\.bin.*arbitrary code.*safe_serialization=True"):
        jaxcontam.load_model(tmp_path)
    with pytest.raises(ModelError, match="arbitrary code"):
        jaxcontam.load_model(tmp_path / "pytorch_model.bin")


def test_unknown_model_type_lists_supported(llama_dir, tmp_path):
    path = copy_checkpoint(llama_dir, tmp_path / "bert", edit_config=lambda c: {**c, "model_type": "bert"})
    with pytest.raises(
        ModelError,
        match="'bert' is not supported.*gemma, gemma2, gemma3_text, gpt2, gpt_neox, granite, llama, mistral, "
        "mixtral, olmo2, phi3, qwen2, qwen3, qwen3_moe",
    ):
        jaxcontam.load_model(path)


def test_multimodal_gemma3_points_to_the_text_decoder(llama_dir, tmp_path):
    path = copy_checkpoint(llama_dir, tmp_path / "gemma3", edit_config=lambda c: {**c, "model_type": "gemma3"})
    with pytest.raises(ModelError, match="multimodal Gemma 3.*'gemma3_text'"):
        jaxcontam.load_model(path)


@pytest.mark.parametrize("rope", [{"rope_type": "yarn", "factor": 4.0}, {"rope_type": "dynamic", "factor": 2.0}])
def test_unimplemented_rope_scaling_is_named(llama_dir, tmp_path, rope):
    path = copy_checkpoint(
        llama_dir,
        tmp_path / rope["rope_type"],
        edit_config=lambda c: {**c, "rope_parameters": {**rope, "rope_theta": 1e4}},
    )
    with pytest.raises(ModelError, match=f"rope_type' = '{rope['rope_type']}' is not supported.*longrope"):
        jaxcontam.load_model(path)


def test_qwen3_moe_with_dense_layers_is_refused(llama_dir, tmp_path):
    def moe(config):
        return {
            **config,
            "model_type": "qwen3_moe",
            "num_experts": 4,
            "num_experts_per_tok": 2,
            "moe_intermediate_size": 8,
            "mlp_only_layers": [0],
        }

    with pytest.raises(ModelError, match="mlp_only_layers.*an expert block in every layer"):
        jaxcontam.load_model(copy_checkpoint(llama_dir, tmp_path / "moe", edit_config=moe))


def test_missing_weight_is_named(llama_dir, tmp_path):
    def drop(tensors):
        del tensors["model.layers.1.mlp.up_proj.weight"]
        return tensors

    path = copy_checkpoint(llama_dir, tmp_path / "missing", edit_tensors=drop)
    with pytest.raises(ModelError, match=r"missing weight 'model\.layers\.1\.mlp\.up_proj\.weight'"):
        jaxcontam.load_model(path)


def test_shape_mismatch_names_the_tensor(llama_dir, tmp_path):
    path = copy_checkpoint(llama_dir, tmp_path / "mismatch", edit_config=lambda c: {**c, "intermediate_size": 32})
    with pytest.raises(
        ModelError,
        match=r"'model\.layers\.0\.mlp\.gate_proj\.weight' has shape \[24, 16\] but "
        r"config\.json implies \[32, 16\]",
    ):
        jaxcontam.load_model(path)


def test_unimplemented_rope_scaling_is_refused(llama_dir, tmp_path):
    def yarn(config):
        config["rope_parameters"] = {"rope_type": "yarn", "factor": 4.0, "rope_theta": 10000.0}
        return config

    with pytest.raises(ModelError, match="'yarn' is not supported.*default, linear, llama3"):
        jaxcontam.load_model(copy_checkpoint(llama_dir, tmp_path / "yarn", edit_config=yarn))


def test_bad_inputs_are_refused(llama_dir):
    model = jaxcontam.load_model(llama_dir)
    with pytest.raises(JaxcontamError, match=r"token_ids\[1\].*\[0, 67\)"):
        model.logprobs([[1, 2], [3, 67]])
    with pytest.raises(JaxcontamError, match=r"token_ids\[0\].*max_position \(32\)"):
        model.logprobs([[1] * 33])
    with pytest.raises(ModelError, match="dtype 'float16'"):
        jaxcontam.load_model(llama_dir, dtype="float16")
    with pytest.raises(ModelError, match="no such directory"):
        jaxcontam.load_model(llama_dir / "nope" / "deeper")
    with pytest.raises(ModelError, match="mesh"):
        make_mesh(data=3, model=5)


@settings(max_examples=30, deadline=None)
@given(
    factor=st.floats(1.5, 32),
    low=st.floats(0.5, 2.0),
    gap=st.floats(0.5, 8.0),
    old=st.integers(8, 8192),
    theta=st.floats(100, 1e6),
    head_dim=st.sampled_from([8, 16, 64, 128]),
)
def test_llama3_rope_frequencies_match_transformers(factor, low, gap, old, theta, head_dim):
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    params = {
        "rope_type": "llama3",
        "factor": factor,
        "low_freq_factor": low,
        "high_freq_factor": low + gap,
        "original_max_position_embeddings": old,
        "rope_theta": theta,
    }
    hf = tf.LlamaConfig(hidden_size=head_dim * 2, num_attention_heads=2, head_dim=head_dim, rope_parameters=params)
    expected, _ = ROPE_INIT_FUNCTIONS["llama3"](hf)
    spec = from_hf_config(hf.to_dict())
    # float32 both ways, torch's operations mirrored; the powers still differ by an ulp in about one entry in a
    # hundred, which the smoothing blend amplified up to 9x in 300 random configurations
    np.testing.assert_allclose(rope_inverse_frequencies(spec), expected.numpy(), rtol=4e-6)


def test_hub_id_downloads_only_config_tokenizer_and_safetensors(llama_dir, monkeypatch):
    """A name that is no local path goes to snapshot_download, never fetching pickles (no network here)."""
    import huggingface_hub

    calls = []

    def fake_snapshot_download(repo_id, allow_patterns):
        calls.append((repo_id, allow_patterns))
        return str(llama_dir)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download)
    model = jaxcontam.load_model("some-org/tiny-llama")
    assert calls[0][0] == "some-org/tiny-llama" and "*.safetensors" in calls[0][1]
    assert not any(pattern.endswith((".bin", ".pt", ".pth", ".py")) for pattern in calls[0][1])
    assert model.config.model_type == "llama"

    def offline(repo_id, allow_patterns):
        raise OSError("no network")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", offline)
    with pytest.raises(ModelError, match="hub download failed.*no network"):
        jaxcontam.load_model("some-org/tiny-llama")
