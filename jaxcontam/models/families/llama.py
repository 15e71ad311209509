"""Llama: the reference llama-style layout; llama.cpp stores its q/k rows in its own rotary order."""

from __future__ import annotations

import numpy as np

from jaxcontam.models.config import DecoderConfig
from jaxcontam.models.families.base import Family, GGUFFormat
from jaxcontam.models.hf_config import ConfigReader, hidden_act, layer_windows, llama_style
from jaxcontam.models.weight_entries import llama_style_entries


def from_hf_config(reader: ConfigReader) -> DecoderConfig:
    if reader.flag("rope_interleaved", False):  # nanotron's export flag (SmolLM2 writes false)
        reader.refuse("rope_interleaved", True, "rope over interleaved pairs is not implemented (nor by transformers)")
    return llama_style(reader, "llama", hidden_act(reader), lambda layers: layer_windows(reader, layers, None))


def unpermute_rotary_rows(weight: np.ndarray, heads: int) -> np.ndarray:
    """Undo llama.cpp's q/k row order: per head it stores row pairs (i, i + D/2) interleaved.

    llama.cpp's converter views each head's D rows as [2, D/2] and transposes that to [D/2, 2], so the stored
    row 2i + j is the original row j * D/2 + i; this reads the rows back in the original order.
    """
    rows = weight.shape[0]
    half = rows // heads // 2
    return weight.reshape(heads, half, 2, *weight.shape[1:]).swapaxes(1, 2).reshape(weight.shape)


def gguf_rotary_rows(name: str, count: int, spec: DecoderConfig) -> np.ndarray | None:
    """The stored row of each Hugging Face row of the q and k projections of a llama-architecture GGUF file."""
    if ".attn_q." in name:
        return unpermute_rotary_rows(np.arange(count), spec.num_heads)
    if ".attn_k." in name:
        return unpermute_rotary_rows(np.arange(count), spec.num_kv_heads)
    return None


FAMILY = Family(
    "llama",
    from_hf_config,
    llama_style_entries,
    ignored={
        "pretraining_tp": "a slicing of the projections during pretraining; the forward is the same",
        "is_llama_config": "nanotron's marker of a llama export",
    },
    gguf=GGUFFormat("llama", rows=gguf_rotary_rows),
)
