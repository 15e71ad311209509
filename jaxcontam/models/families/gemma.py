"""Gemma: llama with RMSNorm scaling by (1 + w), embeddings scaled by sqrt(hidden_size), tied output by default
and the tanh GELU; llama.cpp stores the norm weights with the 1 added."""

from __future__ import annotations

import numpy as np

from jaxcontam.models.config import DecoderConfig
from jaxcontam.models.families.base import Family, GGUFFormat
from jaxcontam.models.hf_config import ConfigReader, activation, layer_windows, llama_style
from jaxcontam.models.weight_entries import llama_style_entries

GELU_TANH = "gelu_pytorch_tanh"


def gemma_fields(reader: ConfigReader, **norms) -> dict:
    """The fields every gemma generation shares, as `llama_style` overrides; `norms`: a generation's own
    `NormConfig` fields."""
    return {
        "norms": {"offset": 1.0, **norms},
        "embed_scale": float(reader.integer("hidden_size")) ** 0.5,
        "tie_word_embeddings": reader.flag("tie_word_embeddings", True),
    }


def from_hf_config(reader: ConfigReader) -> DecoderConfig:
    name = reader.get("hidden_act", GELU_TANH)
    name = GELU_TANH if name == "gelu" else name  # transformers maps gemma's legacy "gelu" to the tanh it trained with
    return llama_style(
        reader,
        "gemma",
        activation(reader, "hidden_act", name),
        lambda layers: layer_windows(reader, layers, None),
        **gemma_fields(reader),
    )


def gguf_norms(name: str, weight: np.ndarray, spec: DecoderConfig) -> np.ndarray:
    """llama.cpp stores gemma's (1 + w) norm scale; the decoder adds the 1 itself."""
    return weight - 1.0 if name.endswith("norm.weight") else weight


FAMILY = Family(
    "gemma",
    from_hf_config,
    llama_style_entries,
    ignored={"hidden_activation": "transformers' Gemma reads hidden_act"},
    gguf=GGUFFormat("gemma", activation=GELU_TANH, values=gguf_norms),
)
