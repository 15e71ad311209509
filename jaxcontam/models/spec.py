"""`ModelSpec`: the decoder config (`config.DecoderConfig`) a model runs with, and `from_hf_config`, which reads a
Hugging Face config.json through the family module its model_type names (`jaxcontam.models.families`).

`ModelSpec` adds the engine's model interface (`jaxcontam.language_model`) to the config, run by jaxcontam's own
decoder. It is a static argument of the jitted functions, hence frozen and hashable.
"""

from __future__ import annotations

import dataclasses

from jaxcontam.errors import ModelError
from jaxcontam.models import attention as attention_paths
from jaxcontam.models import decoder
from jaxcontam.models.config import DecoderConfig, eos_field, eos_ids_tuple
from jaxcontam.models.config_values import check_decoder
from jaxcontam.models.families import FAMILIES
from jaxcontam.models.hf_config import ConfigReader

SUPPORTED_MODEL_TYPES = tuple(FAMILIES)
__all__ = ["SUPPORTED_MODEL_TYPES", "ModelSpec", "eos_field", "eos_ids_tuple", "from_hf_config"]


@dataclasses.dataclass(frozen=True)
class ModelSpec(DecoderConfig):
    """A `DecoderConfig` that runs itself through `jaxcontam.models.decoder` for the engine."""

    @property
    def packing(self) -> bool:
        """True: the decoder masks by positions and segment ids, so the engine packs rows."""
        return True

    def hidden_states(self, params, tokens, positions, segment_ids):
        return decoder.hidden_states(params, self, tokens, positions, segment_ids)

    def output_projection(self, params):
        return decoder.output_projection(params, self)

    def logits_from_hidden(self, params, hidden):
        return decoder.logits_from_hidden(params, self, hidden)

    def split_layers(self, params):
        return decoder.split_layers(params)

    def init_cache(self, batch: int, max_len: int, dtype):
        return decoder.init_cache(self, batch, max_len, dtype)

    def decode(self, params, tokens, positions, cache, cache_index):
        return decoder.decode(params, self, tokens, positions, cache, cache_index)


def from_hf_config(config: dict, source: str = "config.json", attention: str = "auto") -> ModelSpec:
    """Read a Hugging Face config dict through its family into a `ModelSpec`, refusing anything the forward does
    not implement: unknown model types, unsupported values, and fields the family does not handle; values of the
    wrong type or out of range are refused by name (`config_values`). `attention`: the
    spec's attention path ("auto", "jnp", "splash", "cudnn"; see `jaxcontam.models.attention`)."""
    attention = attention_paths.checked(attention, "attention=")
    if not isinstance(config, dict):
        raise ModelError(f"{source}: expected a JSON object of config fields, got {type(config).__name__}")
    reader = ConfigReader(config, source)
    model_type = reader.require("model_type")
    if not isinstance(model_type, str):
        reader.refuse("model_type", model_type, f"expected one of {', '.join(SUPPORTED_MODEL_TYPES)}")
    if model_type == "gemma3":
        raise ModelError(
            f"{source}: model_type 'gemma3' is the multimodal Gemma 3 checkpoint; jaxcontam runs "
            "Gemma 3's text decoder ('gemma3_text', e.g. google/gemma-3-1b-it): use a text-only "
            "checkpoint"
        )
    family = FAMILIES.get(model_type)
    if family is None:
        raise ModelError(
            f"{source}: model_type {model_type!r} is not supported; supported model types: "
            f"{', '.join(SUPPORTED_MODEL_TYPES)}"
        )
    parsed = family.from_hf_config(reader)
    reader.refuse_unhandled(model_type, family.ignored)
    check_decoder(parsed, source)
    fields = {field.name: getattr(parsed, field.name) for field in dataclasses.fields(parsed)}
    return ModelSpec(**{**fields, "execution": dataclasses.replace(parsed.execution, attention=attention)})
