"""Mistral: llama with a sliding window on every layer (llama.cpp writes it as a llama file)."""

from __future__ import annotations

from jaxcontam.models.config import DecoderConfig
from jaxcontam.models.families.base import Family
from jaxcontam.models.hf_config import SLIDING, ConfigReader, hidden_act, layer_windows, llama_style
from jaxcontam.models.weight_entries import llama_style_entries


def from_hf_config(reader: ConfigReader) -> DecoderConfig:
    return llama_style(
        reader, "mistral", hidden_act(reader), lambda layers: layer_windows(reader, layers, [SLIDING] * layers)
    )


FAMILY = Family("mistral", from_hf_config, llama_style_entries)
