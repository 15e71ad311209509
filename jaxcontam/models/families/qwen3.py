"""Qwen3: llama with an RMSNorm over head_dim on q and k, and qwen2's sliding-window fields."""

from __future__ import annotations

from jaxcontam.models.config import DecoderConfig
from jaxcontam.models.families.base import Family, GGUFFormat
from jaxcontam.models.families.qwen2 import qwen_windows
from jaxcontam.models.hf_config import ConfigReader, hidden_act, llama_style
from jaxcontam.models.weight_entries import llama_style_entries


def from_hf_config(reader: ConfigReader) -> DecoderConfig:
    return llama_style(
        reader, "qwen3", hidden_act(reader), lambda layers: qwen_windows(reader, layers), norms={"qk": "head"}
    )


FAMILY = Family("qwen3", from_hf_config, llama_style_entries, gguf=GGUFFormat("qwen3"))
