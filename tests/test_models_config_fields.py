"""Each family reads the config fields it implements and refuses the others: a field that could change the forward
is a clear error naming it, never silently ignored; fields that cannot (bookkeeping, dropout, generation
defaults) are accepted through the shared allow-list or the family's own `ignored` list."""

import dataclasses
import glob
import json
import pathlib

import pytest
import transformers as tf

from jaxcontam.errors import ModelError
from jaxcontam.models.families import FAMILIES
from jaxcontam.models.hf_config import SHARED_ALLOWED
from jaxcontam.models.spec import SUPPORTED_MODEL_TYPES, from_hf_config

ROOT = pathlib.Path(__file__).parents[1]
SMALL = {"vocab_size": 64, "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4}
LLAMA = tf.LlamaConfig(**SMALL).to_dict()


@pytest.mark.parametrize("model_type", SUPPORTED_MODEL_TYPES)
def test_every_field_of_transformers_default_config_is_handled_or_allowed(model_type):
    """transformers' own default config of each family (every field its config class writes) loads."""
    config = tf.AutoConfig.for_model(model_type).to_dict()
    spec = from_hf_config(config, f"{model_type} defaults")
    assert spec.model_type == model_type
    assert set(config) - SHARED_ALLOWED - set(FAMILIES[model_type].ignored)  # most fields are really read


@pytest.mark.parametrize(
    "path",
    sorted(
        glob.glob(str(ROOT / "experiments/plan/configs/*.json"))
        + glob.glob(str(ROOT / "jaxcontam/examples/*/model/config.json"))
    ),
)
def test_real_configs_load(path):
    assert from_hf_config(json.loads(pathlib.Path(path).read_text()), path).num_layers > 0


@pytest.mark.parametrize(
    "field, value",
    [
        ("attention_multiplier", 0.5),
        ("residual_multiplier", 0.22),
        ("sliding_window", 4096),
        ("quantization_config", {"quant_method": "gptq"}),
        ("alibi", True),
    ],
)
def test_field_the_family_does_not_implement_is_refused_by_name(field, value):
    with pytest.raises(ModelError, match=rf"'{field}' = .* not implemented for model_type 'llama'"):
        from_hf_config({**LLAMA, field: value})


def test_rope_theta_beside_a_rope_object_that_repeats_it_loads():
    """A Llama 3 config whose rope_scaling also holds rope_theta (transformers 5 writes it there when it converts
    the object) still reads its top-level rope_theta: the object's value is used and the field is not refused."""
    scaling = {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0}
    scaling |= {"original_max_position_embeddings": 8192, "rope_theta": 500000.0}
    config = {k: v for k, v in LLAMA.items() if k != "rope_parameters"}  # the older fields alone, as the file
    spec = from_hf_config({**config, "rope_theta": 500000.0, "rope_scaling": scaling}, "llama3")
    assert spec.rope.theta == 500000.0


def test_unknown_rope_scaling_type_is_refused_by_name():
    with pytest.raises(ModelError, match=r"'rope_parameters.rope_type' = 'yarn' is not supported"):
        from_hf_config({**LLAMA, "rope_parameters": {"rope_type": "yarn", "factor": 4.0, "rope_theta": 1e4}})


def test_fields_that_do_not_change_the_forward_are_accepted():
    extra = {
        "architectures": ["LlamaForCausalLM"],
        "torch_dtype": "bfloat16",
        "bos_token_id": 1,
        "eos_token_id": [2, 3],
        "transformers_version": "4.45.0",
        "use_cache": False,
        "attention_dropout": 0.1,
        "pretraining_tp": 1,
        "unknown_but_null": None,
        "_model_name_or_path": "Smollm2 135M 8k Lc100K Mix1 Ep2",  # transformers writes these two for a GGUF
        "unk_token_id": 0,
    }
    spec = from_hf_config({**LLAMA, **extra})
    assert spec == dataclasses.replace(from_hf_config(LLAMA), bos_token_id=1, eos_token_id=(2, 3))


def test_a_field_one_family_reads_is_refused_in_another():
    """granite implements attention_multiplier; the same field on a llama config is refused."""
    granite = {**tf.GraniteConfig(**SMALL).to_dict(), "attention_multiplier": 0.5}
    assert from_hf_config(granite).attn_scale == 0.5
    with pytest.raises(ModelError, match="attention_multiplier"):
        from_hf_config({**granite, "model_type": "llama"})


# Fields of published config.json files beyond transformers' defaults (the size fields shrunk).
SMOLLM2_135M = {  # HuggingFaceTB/SmolLM2-135M: a nanotron export
    **SMALL,
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 0,
    "eos_token_id": 0,
    "hidden_act": "silu",
    "initializer_range": 0.041666666666666664,
    "is_llama_config": True,
    "max_position_embeddings": 8192,
    "num_key_value_heads": 2,
    "pretraining_tp": 1,
    "rms_norm_eps": 1e-05,
    "rope_interleaved": False,
    "rope_scaling": None,
    "rope_theta": 100000,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.40.1",
    "use_cache": True,
    "transformers.js_config": {"kv_cache_dtype": {"fp16": "float16", "q4f16": "float16"}},
}
PHI4_MINI = {  # microsoft/Phi-4-mini-instruct
    **SMALL,
    "model_type": "phi3",
    "architectures": ["Phi3ForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "auto_map": {
        "AutoConfig": "configuration_phi3.Phi3Config",
        "AutoModelForCausalLM": "modeling_phi3.Phi3ForCausalLM",
    },
    "bos_token_id": 199999,
    "embd_pdrop": 0.0,
    "eos_token_id": 199999,
    "full_attn_mod": 1,
    "hidden_act": "silu",
    "initializer_range": 0.02,
    "interpolate_factor": 1,
    "lm_head_bias": False,
    "max_position_embeddings": 131072,
    "mlp_bias": False,
    "num_key_value_heads": 2,
    "original_max_position_embeddings": 4096,
    "pad_token_id": 199999,
    "partial_rotary_factor": 0.75,
    "resid_pdrop": 0.0,
    "rms_norm_eps": 1e-05,
    "rope_scaling": {"long_factor": [1.5] * 3, "short_factor": [1.0] * 3, "type": "longrope"},
    "rope_theta": 10000.0,
    "sliding_window": 262144,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
    "use_cache": True,
}


@pytest.mark.parametrize("config", [SMOLLM2_135M, PHI4_MINI], ids=["SmolLM2-135M", "Phi-4-mini"])
def test_published_configs_load(config):
    assert from_hf_config(config).vocab_size == SMALL["vocab_size"]


@pytest.mark.parametrize("config, field", [(SMOLLM2_135M, "rope_interleaved"), (PHI4_MINI, "lm_head_bias")])
def test_export_flags_that_would_change_the_forward_are_refused(config, field):
    with pytest.raises(ModelError, match=f"'{field}' = True is not supported"):
        from_hf_config({**config, field: True})
