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
SMALL = {"vocab_size": 64, "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
         "num_attention_heads": 4}
LLAMA = tf.LlamaConfig(**SMALL).to_dict()


@pytest.mark.parametrize("model_type", SUPPORTED_MODEL_TYPES)
def test_every_field_of_transformers_default_config_is_handled_or_allowed(model_type):
    """transformers' own default config of each family (every field its config class writes) loads."""
    config = tf.AutoConfig.for_model(model_type).to_dict()
    spec = from_hf_config(config, f"{model_type} defaults")
    assert spec.model_type == model_type
    assert set(config) - SHARED_ALLOWED - set(FAMILIES[model_type].ignored)  # most fields are really read


@pytest.mark.parametrize("path", sorted(glob.glob(str(ROOT / "experiments/plan/configs/*.json"))
                                  + glob.glob(str(ROOT / "jaxcontam/examples/*/model/config.json"))))
def test_real_configs_load(path):
    assert from_hf_config(json.loads(pathlib.Path(path).read_text()), path).num_layers > 0


@pytest.mark.parametrize("field, value", [("attention_multiplier", 0.5), ("residual_multiplier", 0.22),
                                          ("sliding_window", 4096), ("quantization_config", {"quant_method": "gptq"}),
                                          ("alibi", True)])
def test_field_the_family_does_not_implement_is_refused_by_name(field, value):
    with pytest.raises(ModelError, match=rf"'{field}' = .* not implemented for model_type 'llama'"):
        from_hf_config({**LLAMA, field: value})


def test_unknown_rope_scaling_type_is_refused_by_name():
    with pytest.raises(ModelError, match=r"'rope_parameters.rope_type' = 'yarn' is not supported"):
        from_hf_config({**LLAMA, "rope_parameters": {"rope_type": "yarn", "factor": 4.0, "rope_theta": 1e4}})


def test_fields_that_do_not_change_the_forward_are_accepted():
    extra = {"architectures": ["LlamaForCausalLM"], "torch_dtype": "bfloat16", "bos_token_id": 1,
             "eos_token_id": [2, 3], "transformers_version": "4.45.0", "use_cache": False, "attention_dropout": 0.1,
             "pretraining_tp": 1, "unknown_but_null": None}
    spec = from_hf_config({**LLAMA, **extra})
    assert spec == dataclasses.replace(from_hf_config(LLAMA), bos_token_id=1, eos_token_id=(2, 3))


def test_a_field_one_family_reads_is_refused_in_another():
    """granite implements attention_multiplier; the same field on a llama config is refused."""
    granite = {**tf.GraniteConfig(**SMALL).to_dict(), "attention_multiplier": 0.5}
    assert from_hf_config(granite).attn_scale == 0.5
    with pytest.raises(ModelError, match="attention_multiplier"):
        from_hf_config({**granite, "model_type": "llama"})
