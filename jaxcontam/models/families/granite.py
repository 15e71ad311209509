"""Granite (IBM): llama with four scalars, embeddings times embedding_multiplier, each block's output times
residual_multiplier before the residual add, attention_multiplier as the attention scale (instead of
1/sqrt(head_dim)), and logits divided by logits_scaling."""

from __future__ import annotations

from jaxcontam.models.config import DecoderConfig
from jaxcontam.models.families.base import Family
from jaxcontam.models.hf_config import ConfigReader, hidden_act, layer_windows, llama_style
from jaxcontam.models.weight_entries import llama_style_entries


def from_hf_config(reader: ConfigReader) -> DecoderConfig:
    return llama_style(
        reader,
        "granite",
        hidden_act(reader),
        lambda layers: layer_windows(reader, layers, None),
        embed_scale=reader.number("embedding_multiplier", default=1.0),
        residual_scale=reader.number("residual_multiplier", default=1.0),
        attn_scale=reader.number("attention_multiplier", default=1.0),
        logits_divisor=reader.number("logits_scaling", default=1.0),
    )


FAMILY = Family("granite", from_hf_config, llama_style_entries)
