"""The same log-probs on meshes (1,1), (8,1), (4,2), (2,4) of 8 CPU devices, with weights really sharded.

Runs in a subprocess because the device count must be set (XLA_FLAGS) before JAX is imported.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
import transformers as tf

from jaxcontam.models.llama2c import convert_llama2c

MESHES = [(1, 1), (8, 1), (4, 2), (2, 4)]

SCRIPT = r"""
import json, sys
import jax
import jaxcontam
from jaxcontam.models import make_mesh

MESHES = json.loads(sys.argv[1])
out = {}
for path in sys.argv[2:]:
    seqs = [[1, 5, 9, 33, 7, 2, 60], [1, 2], [1] + list(range(3, 40)), [4, 8, 15, 16, 23, 42]]
    for data, model in MESHES:
        devices = jax.devices()[: data * model]
        loaded = jaxcontam.load_model(path, mesh=make_mesh(data, model, devices=devices))
        wq, gate = loaded.params["layers"]["wq"], loaded.params["layers"]["w_gate"]
        out[f"{path}|{data}x{model}"] = {
            "logprobs": [lp.tolist() for lp in loaded.logprobs(seqs)],
            "wq_spec": list(wq.sharding.spec),
            "wq_shard": list(wq.addressable_shards[0].data.shape),
            "gate_spec": list(gate.sharding.spec),
            "gate_shard": list(gate.addressable_shards[0].data.shape),
        }
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def checkpoints(shared_data, tmp_path_factory):
    """The converted stories260K (8 heads, 4 kv heads) and a tiny gemma2 (2 kv heads: replicated on model=4)."""
    folder = shared_data / "tiny_lm_stories260K"
    stories = convert_llama2c(folder / "stories260K.bin", folder / "tok512.bin", tmp_path_factory.mktemp("stories"))
    torch.manual_seed(0)
    gemma2 = tf.Gemma2ForCausalLM(
        tf.Gemma2Config(
            vocab_size=64,
            hidden_size=32,
            intermediate_size=48,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=8,
            max_position_embeddings=64,
            sliding_window=4,
        )
    )
    gemma2_dir = tmp_path_factory.mktemp("gemma2")
    gemma2.save_pretrained(gemma2_dir)
    return str(stories), str(gemma2_dir)


def logprobs_on_meshes(meshes, paths) -> dict:
    """Run SCRIPT on 8 forced CPU devices: per "path|DxM", the log-probs and the wq / w_gate shardings."""
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8", "JAX_PLATFORMS": "cpu"}
    command = [sys.executable, "-c", SCRIPT, json.dumps(meshes), *paths]
    proc = subprocess.run(command, check=False, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_logprobs_identical_across_meshes(checkpoints):
    results = logprobs_on_meshes(MESHES, checkpoints)
    for path in checkpoints:
        base = results[f"{path}|1x1"]
        for data, model in MESHES[1:]:
            run = results[f"{path}|{data}x{model}"]
            for a, b in zip(base["logprobs"], run["logprobs"], strict=True):
                np.testing.assert_allclose(a, b, atol=1e-5, rtol=0, err_msg=f"{path} on mesh ({data}, {model})")
            assert run["wq_spec"] == [None, None, "model" if model > 1 else None, None]  # [layers, D, heads, Dh]
            heads = 8 if path == checkpoints[0] else 4
            assert run["wq_shard"][2] == heads // model


NEW_FAMILIES = {
    "mixtral": lambda small: tf.MixtralConfig(**small, num_local_experts=4, num_experts_per_tok=2),
    "qwen3_moe": lambda small: tf.Qwen3MoeConfig(
        **small, head_dim=8, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=24, norm_topk_prob=True
    ),
    "gemma3_text": lambda small: tf.Gemma3TextConfig(
        **small, head_dim=8, sliding_window=4, layer_types=["sliding_attention", "full_attention"]
    ),
    "olmo2": lambda small: tf.Olmo2Config(**small),
    "phi3": lambda small: tf.Phi3Config(**small),
}


@pytest.fixture(scope="module")
def new_family_checkpoints(tmp_path_factory):
    small = {
        "vocab_size": 64,
        "hidden_size": 32,
        "intermediate_size": 48,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 64,
        "pad_token_id": None,
        "bos_token_id": None,
        "eos_token_id": None,
    }
    paths = {}
    for name, config in NEW_FAMILIES.items():
        torch.manual_seed(0)
        model = tf.AutoModelForCausalLM.from_config(config(small))
        with torch.no_grad():
            for p in model.parameters():
                p.normal_(0.0, 0.3)
        paths[name] = tmp_path_factory.mktemp(name)
        model.save_pretrained(paths[name])
    return {name: str(path) for name, path in paths.items()}


def test_new_families_identical_across_meshes_with_experts_split_over_model(new_family_checkpoints):
    meshes = [(1, 1), (4, 2), (2, 4)]
    results = logprobs_on_meshes(meshes, list(new_family_checkpoints.values()))
    for name, path in new_family_checkpoints.items():
        base = results[f"{path}|1x1"]
        for data, model in meshes[1:]:
            run = results[f"{path}|{data}x{model}"]
            for a, b in zip(base["logprobs"], run["logprobs"], strict=True):
                np.testing.assert_allclose(a, b, atol=1e-5, rtol=0, err_msg=f"{name} on mesh ({data}, {model})")
            if name in ("mixtral", "qwen3_moe"):  # [layers, experts, D, F]: the 4 experts split over "model"
                assert run["gate_spec"] == [None, "model", None, None], (name, run["gate_spec"])
                assert run["gate_shard"][1] == 4 // model
            else:  # [layers, D, F]: the MLP width split
                assert run["gate_spec"] == [None, None, "model"], (name, run["gate_spec"])
