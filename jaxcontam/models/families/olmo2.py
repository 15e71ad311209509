"""OLMo 2: llama with the norms moved after attention and MLP (no pre-norms) and an RMSNorm over the whole q and
k projections."""

from __future__ import annotations

from jaxcontam.models.config import DecoderConfig
from jaxcontam.models.families.base import Family, GGUFFormat
from jaxcontam.models.hf_config import ConfigReader, hidden_act, layer_windows, llama_style
from jaxcontam.models.weight_entries import llama_style_entries


def from_hf_config(reader: ConfigReader) -> DecoderConfig:
    return llama_style(
        reader,
        "olmo2",
        hidden_act(reader),
        lambda layers: layer_windows(reader, layers, None),
        norms={"qk": "full", "attn_post": True, "mlp_post": True, "pre": False},
    )


FAMILY = Family("olmo2", from_hf_config, llama_style_entries, gguf=GGUFFormat("olmo2"))
