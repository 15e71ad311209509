"""Gemma 2: gemma with norms after attention and MLP too, soft-capped attention and output logits, the attention
scale from query_pre_attn_scalar, and sliding windows on every other layer."""

from __future__ import annotations

from jaxcontam.models.config import Activation, DecoderConfig
from jaxcontam.models.families.base import Family, GGUFFormat
from jaxcontam.models.families.gemma import GELU_TANH, gemma_fields, gguf_norms
from jaxcontam.models.hf_config import (
    FULL,
    SLIDING,
    ConfigReader,
    activation,
    attention_sizes,
    layer_windows,
    llama_style,
)
from jaxcontam.models.weight_entries import llama_style_entries


def gemma2_fields(reader: ConfigReader, **norms) -> dict:
    """The fields gemma2 and gemma3 share, as `llama_style` overrides; `norms`: gemma3's own `NormConfig`
    fields."""
    _, _, head_dim = attention_sizes(reader)
    return {
        **gemma_fields(reader, attn_post=True, mlp_post=True, **norms),
        "attn_scale": reader.number("query_pre_attn_scalar", default=float(head_dim)) ** -0.5,
        "attn_logit_softcap": reader.optional_number("attn_logit_softcapping"),
        "final_logit_softcap": reader.optional_number("final_logit_softcapping"),
    }


def gemma2_activation(reader: ConfigReader) -> Activation:
    return activation(reader, "hidden_activation", reader.get("hidden_activation", GELU_TANH))


def from_hf_config(reader: ConfigReader) -> DecoderConfig:
    def windows(layers):
        return layer_windows(reader, layers, [SLIDING if i % 2 == 0 else FULL for i in range(layers)])

    return llama_style(reader, "gemma2", gemma2_activation(reader), windows, **gemma2_fields(reader))


def gguf_gemma2_fields(meta, arch: str, config: dict, names: dict) -> dict:
    """gemma2/3: soft-caps, sliding window and the attention scale, which llama.cpp derives as the HF config does."""
    if meta.get(f"{arch}.attention.scale") is not None:
        scalar = meta.number(f"{arch}.attention.scale") ** -2
    elif config["num_hidden_layers"] == {"gemma2": 46, "gemma3": 62}[arch]:  # 27b: by hidden/heads, else head_dim
        scalar = config["hidden_size"] / config["num_attention_heads"]
    else:
        scalar = config["head_dim"]
    return {
        "attn_logit_softcapping": meta.get(f"{arch}.attn_logit_softcapping"),
        "final_logit_softcapping": meta.get(f"{arch}.final_logit_softcapping"),
        "sliding_window": meta.get(f"{arch}.attention.sliding_window"),
        "query_pre_attn_scalar": scalar,
    }


HIDDEN_ACT = {"hidden_act": "transformers' Gemma 2 and 3 read hidden_activation"}

FAMILY = Family(
    "gemma2",
    from_hf_config,
    llama_style_entries,
    ignored=HIDDEN_ACT,
    gguf=GGUFFormat("gemma2", activation=GELU_TANH, config=gguf_gemma2_fields, values=gguf_norms),
)
