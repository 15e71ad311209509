"""Phi-3: llama with fused qkv_proj and gate_up_proj weights, sliding windows, and LongRoPE scaling."""

from __future__ import annotations

import numpy as np

from jaxcontam.models.config import DecoderConfig
from jaxcontam.models.families.base import Family, GGUFFormat
from jaxcontam.models.hf_config import SLIDING, ConfigReader, hidden_act, layer_windows, llama_style
from jaxcontam.models.weight_entries import (
    ATTENTION,
    Entry,
    attention_entries,
    heads_in,
    llama_style_entries,
    qkv_heads,
    split_rows,
    transpose,
)


def from_hf_config(reader: ConfigReader) -> DecoderConfig:
    if reader.flag("lm_head_bias", False):  # Phi-4-mini writes false
        reader.refuse("lm_head_bias", True, "a bias on the output projection is not implemented (nor by transformers)")
    return llama_style(
        reader, "phi3", hidden_act(reader), lambda layers: layer_windows(reader, layers, [SLIDING] * layers)
    )


def checkpoint_entries(spec: DecoderConfig) -> list[Entry]:
    """qkv_proj holds [q; k; v] along its rows and gate_up_proj [gate; up]."""
    d, dh, h, kv, f = spec.hidden_size, spec.head_dim, spec.num_heads, spec.num_kv_heads, spec.intermediate_size
    starts = {"q": 0, "k": h * dh, "v": (h + kv) * dh}
    qkv = [
        Entry(
            ("layers", "w" + n),
            ATTENTION + "qkv_proj.weight",
            ((h + 2 * kv) * dh, d),
            (d, heads, dh),
            (None, axis, None),
            split_rows(starts[n], starts[n] + heads * dh, heads_in(heads, dh)),
        )
        for n, (heads, axis) in qkv_heads(spec).items()
    ]
    m = "layers.{i}.mlp."
    gate_up = (2 * f, d)
    mlp = [
        Entry(
            ("layers", "w_gate"), m + "gate_up_proj.weight", gate_up, (d, f), (None, "mlp"), split_rows(0, f, transpose)
        ),
        Entry(
            ("layers", "w_up"),
            m + "gate_up_proj.weight",
            gate_up,
            (d, f),
            (None, "mlp"),
            split_rows(f, 2 * f, transpose),
        ),
        Entry(("layers", "w_down"), m + "down_proj.weight", (d, f), (f, d), ("mlp", None), transpose),
    ]
    return llama_style_entries(spec, attention=attention_entries(spec, qkv), mlp=mlp)


def gguf_fields(meta, arch: str, config: dict, names: dict) -> dict:
    """Phi-3's sliding window and, when the file stores per-frequency factors, its LongRoPE scaling."""
    fields = {"sliding_window": meta.get(f"{arch}.attention.sliding_window")}
    if "rope_factors_long.weight" in names and "rope_factors_short.weight" in names:
        import gguf

        def factors(name):
            tensor = names[name]
            raw = tensor.stored_bytes()
            return np.asarray(gguf.quants.dequantize(raw, tensor.tensor_type), np.float32).ravel().tolist()

        fields["rope_scaling"] = {
            "rope_type": "longrope",
            "long_factor": factors("rope_factors_long.weight"),
            "short_factor": factors("rope_factors_short.weight"),
            "original_max_position_embeddings": meta.require(f"{arch}.rope.scaling.original_context_length"),
            "attention_factor": meta.get(f"{arch}.rope.scaling.attn_factor"),
        }
    return fields


FAMILY = Family(
    "phi3",
    from_hf_config,
    checkpoint_entries,
    ignored={
        "original_max_position_embeddings": "read by LongRoPE scaling only; unused without it",
        "full_attn_mod": "read by Microsoft's remote code only; transformers' Phi3 ignores it",
        "interpolate_factor": "read by Microsoft's remote code only; transformers' Phi3 ignores it",
    },
    gguf=GGUFFormat("phi3", config=gguf_fields),
)
