"""Gemma 3 (text decoder): gemma2 with an RMSNorm over head_dim on q and k, five sliding layers per global one by
default, and sliding layers rotating with their own unscaled rope base."""

from __future__ import annotations

import dataclasses

from jaxcontam.models.config import DecoderConfig
from jaxcontam.models.families.base import Family, GGUFFormat
from jaxcontam.models.families.gemma import GELU_TANH, gguf_norms
from jaxcontam.models.families.gemma2 import HIDDEN_ACT, gemma2_activation, gemma2_fields, gguf_gemma2_fields
from jaxcontam.models.hf_config import FULL, SLIDING, ConfigReader, layer_windows, llama_style, rope
from jaxcontam.models.weight_entries import llama_style_entries


def from_hf_config(reader: ConfigReader) -> DecoderConfig:
    # global layers: theta and scaling; sliding layers: their own base, unscaled
    params = reader.mapping("rope_parameters")
    by_type = params if FULL in params or SLIDING in params else {FULL: params}
    for kind in (FULL, SLIDING):
        if not isinstance(by_type.get(kind, {}), dict):
            reader.refuse(f"rope_parameters.{kind}", by_type[kind], "expected an object (a JSON {...})")
    local = by_type.get(SLIDING, {})
    if local.get("rope_type", "default") != "default":
        reader.refuse(
            "rope_parameters.sliding_attention.rope_type",
            local["rope_type"],
            "gemma3's sliding layers are implemented with unscaled rope only",
        )
    if "rope_theta" in local:
        local_theta = reader.number_value("rope_parameters.sliding_attention.rope_theta", local["rope_theta"])
    else:
        local_theta = reader.number("rope_local_base_freq", default=10000.0)
    pattern = reader.integer("sliding_window_pattern", "_sliding_window_pattern", default=6)

    def windows(layers):
        return layer_windows(reader, layers, [SLIDING if (i + 1) % pattern else FULL for i in range(layers)])

    return llama_style(
        reader,
        "gemma3_text",
        gemma2_activation(reader),
        windows,
        dataclasses.replace(
            rope(reader, dict(by_type.get(FULL, {})), default_theta=1_000_000.0), local_theta=local_theta
        ),
        **gemma2_fields(reader, qk="head"),
    )


def gguf_fields(meta, arch: str, config: dict, names: dict) -> dict:
    """gemma2's fields, llama.cpp's sliding pattern (every 6th layer global unless the file says otherwise) and the
    sliding layers' rope base (10000 unless stored); rope scaling, when stored, applies to the global layers."""
    pattern = meta.get(f"{arch}.attention.sliding_window_pattern", 6)
    fields = {
        **gguf_gemma2_fields(meta, arch, config, names),
        "rope_local_base_freq": meta.number(f"{arch}.rope.freq_base_swa", 10000.0),
    }
    if isinstance(pattern, list):  # one flag per layer: True = sliding
        fields["layer_types"] = [SLIDING if flag else FULL for flag in pattern]
    else:
        fields["sliding_window_pattern"] = meta.integer(f"{arch}.attention.sliding_window_pattern", 6)
    return fields


FAMILY = Family(
    "gemma3_text",
    from_hf_config,
    llama_style_entries,
    ignored=HIDDEN_ACT,
    gguf=GGUFFormat("gemma3", activation=GELU_TANH, config=gguf_fields, values=gguf_norms),
)
