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
        embed_scale=float(reader.get("embedding_multiplier", 1.0)),
        residual_scale=float(reader.get("residual_multiplier", 1.0)),
        attn_scale=float(reader.get("attention_multiplier", 1.0)),
        logits_divisor=float(reader.get("logits_scaling", 1.0)),
    )


FAMILY = Family("granite", from_hf_config, llama_style_entries)
