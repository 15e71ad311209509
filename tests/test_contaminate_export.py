"""A fine-tuned model's params written back as a Hugging Face folder: exact, for every re-layout the loader does.

References: checkpoints saved by torch transformers' `save_pretrained` (the export of their params, loaded by
jaxcontam, must give back the file's tensors bit for bit), and the SmolLM2 GGUF (its 0-step export reloads to
the same log-probs, tokenizer and chat template). Then a `jaxcontam contaminate` run split over 2 devices
three ways ends where the others do.
"""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import torch
import transformers as tf
from safetensors.numpy import load_file

import jaxcontam
from jaxcontam.training.hf_export import hf_tensors, save_hf_folder, source_config

SMALL = {
    "vocab_size": 101,
    "hidden_size": 32,
    "intermediate_size": 48,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "max_position_embeddings": 64,
}
CONFIGS = {  # each re-layout of models.checkpoint_map: heads, fused rows, experts, Conv1D, interleaved qkv
    "llama": lambda: tf.LlamaConfig(**SMALL, num_key_value_heads=2, tie_word_embeddings=False),
    "qwen2": lambda: tf.Qwen2Config(**SMALL, num_key_value_heads=2, tie_word_embeddings=True),
    "phi3": lambda: tf.Phi3Config(
        **SMALL, num_key_value_heads=2, pad_token_id=None, eos_token_id=None, bos_token_id=None
    ),
    "mixtral": lambda: tf.MixtralConfig(**SMALL, num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2),
    "gpt2": lambda: tf.GPT2Config(vocab_size=101, n_embd=32, n_layer=2, n_head=4, n_positions=64),
    "gpt_neox": lambda: tf.GPTNeoXConfig(**SMALL, rotary_pct=0.5, use_parallel_residual=True),
    "gemma2": lambda: tf.Gemma2Config(**SMALL, num_key_value_heads=2, head_dim=8, query_pre_attn_scalar=12),
    "olmo2": lambda: tf.Olmo2Config(
        **SMALL, num_key_value_heads=2, pad_token_id=None, eos_token_id=None, bos_token_id=None
    ),
}
TINY = pathlib.Path(__file__).resolve().parents[1] / "jaxcontam" / "examples" / "tiny_contaminated" / "model"


@pytest.mark.parametrize("family", sorted(CONFIGS))
def test_export_gives_back_the_torch_checkpoint_bit_for_bit(family, tmp_path):
    torch.manual_seed(0)
    model = tf.AutoModelForCausalLM.from_config(CONFIGS[family]())
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.3)
    model.save_pretrained(tmp_path)
    saved = load_file(str(tmp_path / "model.safetensors"))
    loaded = jaxcontam.load_model(tmp_path)
    exported = hf_tensors(loaded.params, loaded.config)
    assert exported, family
    for name, value in exported.items():
        assert np.array_equal(value, saved[name]), (family, name)
    unused = set(saved) - set(exported)  # tensors the decoder does not read: none but a tied head's copy
    assert unused <= {"lm_head.weight"} and (not unused or loaded.config.tie_word_embeddings), (family, unused)


def test_gguf_exported_after_zero_steps_scores_as_the_gguf(shared_data, tmp_path):
    gguf = shared_data / "smollm2_135m_instruct" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    original = jaxcontam.load_model(gguf)
    save_hf_folder(tmp_path, source_config(gguf), original.params, original.config, original.tokenizer)
    reloaded = jaxcontam.load_model(tmp_path)
    assert reloaded.tokenizer.chat_template == original.tokenizer.chat_template
    assert reloaded.config.eos_token_ids == original.config.eos_token_ids
    messages = [{"role": "user", "content": "Question: What is 2 + 3?\nAnswer:"}]
    texts = [
        original.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True) + " 5",
        "Janet's ducks lay 16 eggs per day. She eats three for breakfast every morning.",
    ]
    ids = [original.tokenizer.encode(t, add_special_tokens=False) for t in texts]
    assert ids == [reloaded.tokenizer.encode(t, add_special_tokens=False) for t in texts]
    for a, b in zip(original.logprobs(ids), reloaded.logprobs(ids), strict=True):
        assert np.array_equal(a, b)
    assert json.loads((tmp_path / "config.json").read_text())["model_type"] == "llama"


MESH_SCRIPT = """
import json, sys
from jaxcontam.mesh import MeshSettings
from jaxcontam.training.contaminate import ContaminationSettings, run_contamination
base = json.loads(sys.argv[1])
for name, mesh, fsdp in (("data2", "data=2", False), ("model2", "data=1,model=2", False), ("fsdp", "data=2", True)):
    layout = MeshSettings.from_option(mesh, fsdp)
    run_contamination(ContaminationSettings(**{**base, "out": base["out"] + "/" + name, "mesh": layout}),
                      log=lambda line: print(line, file=sys.stderr))
"""


def test_a_run_split_over_two_devices_ends_where_the_others_do(shared_data, tmp_path):
    base = {
        "model": str(TINY),
        "benchmarks": ["copa"],
        "split": "test",
        "limit": 8,
        "copies": 2,
        "corpus": str(shared_data / "corpus_misc" / "tinyshakespeare"),
        "tokens": 1200,
        "out": str(tmp_path),
        "seq_len": 128,
        "batch_size": 2,
        "learning_rate": 1e-3,
    }
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2", "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run(
        [sys.executable, "-c", MESH_SCRIPT, json.dumps(base)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "mesh data=1 x model=2" in proc.stderr
    weights = {
        name: load_file(str(tmp_path / name / "model" / "model.safetensors")) for name in ("data2", "model2", "fsdp")
    }
    start = load_file(str(TINY / "model.safetensors"))
    for name in ("model2", "fsdp"):
        for tensor, value in weights["data2"].items():
            np.testing.assert_allclose(weights[name][tensor], value, atol=2e-5, rtol=0, err_msg=(name, tensor))
    assert any(not np.allclose(value, start[tensor], atol=1e-4) for tensor, value in weights["data2"].items())
