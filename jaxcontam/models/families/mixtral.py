"""Mixtral: mistral with a top-k mixture of experts (block_sparse_moe) in every layer; llama.cpp writes it as a
llama file with expert tensors."""

from __future__ import annotations

from jaxcontam.models.config import DecoderConfig
from jaxcontam.models.families.base import Family, GGUFFormat
from jaxcontam.models.families.llama import gguf_rotary_rows
from jaxcontam.models.hf_config import SLIDING, ConfigReader, experts, hidden_act, layer_windows, llama_style
from jaxcontam.models.weight_entries import expert_entries, llama_style_entries


def from_hf_config(reader: ConfigReader) -> DecoderConfig:
    routing = experts(reader, norm_topk_prob=True)
    return llama_style(
        reader,
        "mixtral",
        hidden_act(reader),
        lambda layers: layer_windows(reader, layers, [SLIDING] * layers),
        experts=routing,
    )


def checkpoint_entries(spec: DecoderConfig):
    return llama_style_entries(spec, mlp=expert_entries(spec, "layers.{i}.block_sparse_moe.", "w1", "w3", "w2"))


def gguf_fields(meta, arch: str, config: dict, names: dict) -> dict:
    return {
        "num_local_experts": meta.integer(f"{arch}.expert_count"),
        "num_experts_per_tok": meta.integer(f"{arch}.expert_used_count"),
    }


FAMILY = Family(
    "mixtral",
    from_hf_config,
    checkpoint_entries,
    gguf=GGUFFormat("llama", experts=True, config=gguf_fields, rows=gguf_rotary_rows),
)
