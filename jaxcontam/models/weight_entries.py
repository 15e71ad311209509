"""Name-table entries from Hugging Face tensor names to jaxcontam parameter paths, and the builders families share.

Each `Entry` says which HF tensor (name template, `{i}` = layer index, family prefix such as "model."
stripped) feeds which parameter, the HF shape the config implies, how to re-lay it (transpose, split heads,
un-fuse qkv), and the logical axes of the result for sharding. Per-layer entries are stacked on a leading
layer axis; mixture-of-experts weights (`{e}` = expert index) are stacked on an expert axis inside the layer.
Each family module assembles its table from these builders (`checkpoint_map.checkpoint_entries` dispatches).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from jaxcontam.models.config import DecoderConfig

DEFAULT_PREFIX = "model."


@dataclass(frozen=True)
class Entry:
    path: tuple[str, ...]  # where the tensor lives in the params pytree
    source: str  # HF tensor name without the family prefix; "{i}" = layer index
    source_shape: tuple[int, ...]  # shape the config implies for the HF tensor
    shape: tuple[int, ...]  # per-layer shape after `extract`
    axes: tuple[str | None, ...]  # logical axis of each dim of `shape`
    extract: Callable[[np.ndarray], np.ndarray]
    experts: int = 0  # > 0: one HF tensor per expert ("{e}" in source), stacked on the first axis of `shape`

    @property
    def per_layer(self) -> bool:
        return "{i}" in self.source

    def sources(self, layer: int | None) -> list[str]:
        """The HF tensor names (family prefix stripped) that make this parameter of `layer`: one, or one per
        expert in expert order."""
        name = self.source.replace("{i}", str(layer)) if layer is not None else self.source
        return [name.replace("{e}", str(e)) for e in range(self.experts)] if self.experts else [name]

    def part(self, tensors: list, slices: tuple, materialize) -> np.ndarray:
        """The part `slices` of this parameter from the HF tensors `sources` names, with `materialize` reading
        only that part of each (re-laying is numpy views, so the part maps back to the stored bytes)."""
        if not self.experts:
            return materialize(self.extract(tensors[0])[slices])
        chosen = range(self.experts)[slices[0]]
        return np.stack([materialize(self.extract(tensors[e])[slices[1:]]) for e in chosen])

    def assemble(self, tensors: list, stack=np.stack):
        """The parameter from the HF tensors `sources` names (stacked over experts by `stack`)."""
        return stack([self.extract(t) for t in tensors]) if self.experts else self.extract(tensors[0])


def same(t):
    return t


def transpose(t):
    return t.T


def heads_in(heads: int, head_dim: int):
    """Linear [H*Dh, D] -> [D, H, Dh]."""
    return lambda t: t.reshape(heads, head_dim, -1).transpose(2, 0, 1)


def heads_bias(heads: int, head_dim: int):
    return lambda t: t.reshape(heads, head_dim)


def heads_out(heads: int, head_dim: int):
    """Linear [D, H*Dh] -> [H, Dh, D]."""
    return lambda t: t.reshape(-1, heads, head_dim).transpose(1, 2, 0)


def split_rows(start: int, stop: int, then=same):
    """Rows start:stop of a fused [out, in] Linear weight, then re-laid by `then`."""
    return lambda t: then(t[start:stop])


def norm_entries(path: str, source: str, spec: DecoderConfig, layered: bool) -> list[Entry]:
    d = spec.hidden_size
    entries = [
        Entry(("layers", path, "scale") if layered else (path, "scale"), source + ".weight", (d,), (d,), (None,), same)
    ]
    if spec.norms.kind == "layer":
        entries.append(
            Entry(("layers", path, "bias") if layered else (path, "bias"), source + ".bias", (d,), (d,), (None,), same)
        )
    return entries


def head_entries(
    spec: DecoderConfig, embed: str = "embed_tokens", final: str = "norm", head: str = "lm_head"
) -> list[Entry]:
    """Embedding, final norm and (untied) output matrix; the output keeps [V, D]."""
    v, d = spec.vocab_size, spec.hidden_size
    entries = [Entry(("embed",), embed + ".weight", (v, d), (v, d), ("vocab", None), same)]
    entries += norm_entries("final_norm", final, spec, layered=False)
    if not spec.tie_word_embeddings:
        entries.append(Entry(("lm_head",), head + ".weight", (v, d), (v, d), ("vocab", None), same))
    return entries


ATTENTION = "layers.{i}.self_attn."
QKV = ("q", "k", "v")


def qkv_heads(spec: DecoderConfig) -> dict[str, tuple[int, str]]:
    """Heads and logical axis of the q, k and v projections."""
    return {"q": (spec.num_heads, "heads"), "k": (spec.num_kv_heads, "kv_heads"), "v": (spec.num_kv_heads, "kv_heads")}


def attention_entries(spec: DecoderConfig, qkv: list[Entry] | None = None) -> list[Entry]:
    """q/k/v/o projections as separate Linear layers (or the family's own `qkv` entries), their biases and the
    q/k norms."""
    d, dh, h, kv = spec.hidden_size, spec.head_dim, spec.num_heads, spec.num_kv_heads
    a = ATTENTION
    shapes = qkv_heads(spec)
    e = (
        qkv
        if qkv is not None
        else [
            Entry(
                ("layers", "w" + n),
                a + f"{n}_proj.weight",
                (heads * dh, d),
                (d, heads, dh),
                (None, axis, None),
                heads_in(heads, dh),
            )
            for n, (heads, axis) in shapes.items()
        ]
    )
    e.append(
        Entry(("layers", "wo"), a + "o_proj.weight", (d, h * dh), (h, dh, d), ("heads", None, None), heads_out(h, dh))
    )
    if spec.qkv_bias:
        e += [
            Entry(
                ("layers", "b" + n),
                a + f"{n}_proj.bias",
                (heads * dh,),
                (heads, dh),
                (axis, None),
                heads_bias(heads, dh),
            )
            for n, (heads, axis) in shapes.items()
        ]
    if spec.out_bias:
        e.append(Entry(("layers", "bo"), a + "o_proj.bias", (d,), (d,), (None,), same))
    if spec.norms.qk:  # over head_dim, or (olmo2) over the whole q / k projection
        q_size, k_size = (h * dh, kv * dh) if spec.norms.qk == "full" else (dh, dh)
        e += [
            Entry(("layers", "q_norm", "scale"), a + "q_norm.weight", (q_size,), (q_size,), (None,), same),
            Entry(("layers", "k_norm", "scale"), a + "k_norm.weight", (k_size,), (k_size,), (None,), same),
        ]
    return e


def gated_mlp_entries(spec: DecoderConfig) -> list[Entry]:
    """The gated MLP as gate/up/down Linear layers."""
    d, f = spec.hidden_size, spec.intermediate_size
    m = "layers.{i}.mlp."
    return [
        Entry(("layers", "w_gate"), m + "gate_proj.weight", (f, d), (d, f), (None, "mlp"), transpose),
        Entry(("layers", "w_up"), m + "up_proj.weight", (f, d), (d, f), (None, "mlp"), transpose),
        Entry(("layers", "w_down"), m + "down_proj.weight", (d, f), (f, d), ("mlp", None), transpose),
    ]


def expert_entries(spec: DecoderConfig, block: str, gate: str, up: str, down: str) -> list[Entry]:
    """Router [D, E] (`block` + "gate") and expert weights (`block` + "experts.{e}." + gate / up / down) stacked
    as [E, D, F] / [E, F, D], the expert axis split over the mesh."""
    d, f, count = spec.hidden_size, spec.intermediate_size, spec.experts.count
    expert = block + "experts.{e}."
    return [
        Entry(("layers", "router"), block + "gate.weight", (count, d), (d, count), (None, None), transpose),
        Entry(
            ("layers", "w_gate"),
            expert + gate + ".weight",
            (f, d),
            (count, d, f),
            ("experts", None, "mlp"),
            transpose,
            experts=count,
        ),
        Entry(
            ("layers", "w_up"),
            expert + up + ".weight",
            (f, d),
            (count, d, f),
            ("experts", None, "mlp"),
            transpose,
            experts=count,
        ),
        Entry(
            ("layers", "w_down"),
            expert + down + ".weight",
            (d, f),
            (count, f, d),
            ("experts", "mlp", None),
            transpose,
            experts=count,
        ),
    ]


def llama_style_entries(
    spec: DecoderConfig, attention: list[Entry] | None = None, mlp: list[Entry] | None = None
) -> list[Entry]:
    """Head, attention, a gated MLP (or the family's `mlp` entries) and the norms of the llama-style families."""
    e = head_entries(spec) + (attention if attention is not None else attention_entries(spec))
    e += mlp if mlp is not None else gated_mlp_entries(spec)
    norm = "layers.{i}."
    if spec.norms.pre:
        e += norm_entries("attn_norm", norm + "input_layernorm", spec, layered=True)
    if spec.norms.attn_post:  # gemma2/3: pre- and post-norms around both blocks; olmo2: post-norms only
        e += norm_entries("attn_post_norm", norm + "post_attention_layernorm", spec, layered=True)
        e += norm_entries("mlp_post_norm", norm + "post_feedforward_layernorm", spec, layered=True)
        if spec.norms.pre:
            e += norm_entries("mlp_norm", norm + "pre_feedforward_layernorm", spec, layered=True)
    else:
        e += norm_entries("mlp_norm", norm + "post_attention_layernorm", spec, layered=True)
    return e
