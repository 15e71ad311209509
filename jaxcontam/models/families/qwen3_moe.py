"""Qwen3-MoE: qwen3 with a top-k mixture of experts in every layer, experts of their own width."""

from __future__ import annotations

from jaxcontam.models.config import DecoderConfig
from jaxcontam.models.families.base import Family, GGUFFormat
from jaxcontam.models.families.qwen2 import qwen_windows
from jaxcontam.models.hf_config import ConfigReader, experts, hidden_act, llama_style
from jaxcontam.models.weight_entries import expert_entries, llama_style_entries


def from_hf_config(reader: ConfigReader) -> DecoderConfig:
    routing = experts(reader, norm_topk_prob=reader.flag("norm_topk_prob", False))
    if reader.sequence("mlp_only_layers", []) or reader.integer("decoder_sparse_step", default=1) != 1:
        reader.refuse(
            "mlp_only_layers / decoder_sparse_step",
            (reader.get("mlp_only_layers"), reader.get("decoder_sparse_step")),
            "jaxcontam implements qwen3_moe with an expert block in every layer",
        )
    return llama_style(
        reader,
        "qwen3_moe",
        hidden_act(reader),
        lambda layers: qwen_windows(reader, layers),
        norms={"qk": "head"},
        intermediate_size=reader.integer("moe_intermediate_size"),
        experts=routing,
    )


def checkpoint_entries(spec: DecoderConfig):
    return llama_style_entries(spec, mlp=expert_entries(spec, "layers.{i}.mlp.", "gate_proj", "up_proj", "down_proj"))


def gguf_fields(meta, arch: str, config: dict, names: dict) -> dict:
    return {
        "num_local_experts": meta.integer(f"{arch}.expert_count"),
        "num_experts_per_tok": meta.integer(f"{arch}.expert_used_count"),
        "moe_intermediate_size": meta.integer(f"{arch}.expert_feed_forward_length"),
        "norm_topk_prob": meta.get(f"{arch}.expert_weights_norm", True),
    }


FAMILY = Family(
    "qwen3_moe",
    from_hf_config,
    checkpoint_entries,
    ignored={"intermediate_size": "the width of dense mlp_only_layers, which are refused"},
    gguf=GGUFFormat("qwen3moe", experts=True, config=gguf_fields),
)
