"""Qwen2: llama with biases on q, k and v (never on o), and sliding windows above max_window_layers."""

from __future__ import annotations

from jaxcontam.models.config import DecoderConfig
from jaxcontam.models.families.base import Family, GGUFFormat
from jaxcontam.models.hf_config import FULL, SLIDING, ConfigReader, hidden_act, layer_windows, llama_style
from jaxcontam.models.weight_entries import llama_style_entries


def qwen_windows(reader: ConfigReader, layers: int) -> tuple[int, ...]:
    """The qwen families' windows: layer_types, else sliding from max_window_layers on when use_sliding_window."""
    sliding = reader.flag("use_sliding_window", False)
    start = reader.integer("max_window_layers", default=layers, minimum=0)
    default = [SLIDING if sliding and i >= start else FULL for i in range(layers)]
    return layer_windows(reader, layers, default)


def from_hf_config(reader: ConfigReader) -> DecoderConfig:
    return llama_style(
        reader,
        "qwen2",
        hidden_act(reader),
        lambda layers: qwen_windows(reader, layers),
        attention_bias=False,
        qkv_bias=True,
    )


FAMILY = Family(
    "qwen2",
    from_hf_config,
    llama_style_entries,
    ignored={
        "attention_bias": "transformers' Qwen2 always has q/k/v biases and no o_proj bias",
        "use_mrope": "multimodal rope of Qwen2-VL; transformers' Qwen2 ignores it",
    },
    gguf=GGUFFormat("qwen2"),
)
