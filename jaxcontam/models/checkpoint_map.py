"""Name table from Hugging Face tensor names to jaxcontam parameter paths, per family.

Each `Entry` says which HF tensor (name template, `{i}` = layer index, family prefix such as "model."
stripped) feeds which parameter, the HF shape the config implies, how to re-lay it (transpose, split heads,
un-fuse qkv), and the logical axes of the result for sharding. Per-layer entries are stacked on a leading
layer axis; mixture-of-experts weights (`{e}` = expert index) are stacked on an expert axis inside the layer.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from jaxcontam.models.spec import ModelSpec

# The prefix each family's *ForCausalLM puts before its backbone tensors; lm_head / embed_out have none.
PREFIXES = {"gpt2": "transformer.", "gpt_neox": "gpt_neox."}
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

    def assemble(self, tensors: list, stack=np.stack):
        """The parameter from the HF tensors `sources` names (stacked over experts by `stack`)."""
        return stack([self.extract(t) for t in tensors]) if self.experts else self.extract(tensors[0])


def canonical_name(name: str, spec: ModelSpec) -> str:
    """Strip the family prefix so names match the table whether or not the checkpoint has a head."""
    prefix = PREFIXES.get(spec.model_type, DEFAULT_PREFIX)
    return name.removeprefix(prefix)


def full_name(source: str, spec: ModelSpec) -> str:
    """An HF tensor name (one of `Entry.sources`) as a *ForCausalLM checkpoint spells it."""
    if re.match(r"(lm_head|embed_out)\.", source):
        return source
    return PREFIXES.get(spec.model_type, DEFAULT_PREFIX) + source


def _same(t):
    return t


def _transpose(t):
    return t.T


def _heads_in(heads: int, head_dim: int):
    """Linear [H*Dh, D] -> [D, H, Dh]."""
    return lambda t: t.reshape(heads, head_dim, -1).transpose(2, 0, 1)


def _heads_bias(heads: int, head_dim: int):
    return lambda t: t.reshape(heads, head_dim)


def _heads_out(heads: int, head_dim: int):
    """Linear [D, H*Dh] -> [H, Dh, D]."""
    return lambda t: t.reshape(-1, heads, head_dim).transpose(1, 2, 0)


def _norm_entries(path: str, source: str, spec: ModelSpec, layered: bool) -> list[Entry]:
    d = spec.hidden_size
    entries = [Entry(("layers", path, "scale") if layered else (path, "scale"), source + ".weight", (d,), (d,),
                     (None,), _same)]
    if spec.norm == "layer":
        entries.append(Entry(("layers", path, "bias") if layered else (path, "bias"), source + ".bias", (d,), (d,),
                             (None,), _same))
    return entries


def _head_entries(spec: ModelSpec) -> list[Entry]:
    """Embedding, final norm and (untied) output matrix; `lm_head`/`embed_out` keep [V, D]."""
    v, d = spec.vocab_size, spec.hidden_size
    embed, final, head = {"gpt2": ("wte", "ln_f", "lm_head"),
                          "gpt_neox": ("embed_in", "final_layer_norm", "embed_out")}.get(
                              spec.model_type, ("embed_tokens", "norm", "lm_head"))
    entries = [Entry(("embed",), embed + ".weight", (v, d), (v, d), ("vocab", None), _same)]
    entries += _norm_entries("final_norm", final, spec, layered=False)
    if not spec.tie_word_embeddings:
        entries.append(Entry(("lm_head",), head + ".weight", (v, d), (v, d), ("vocab", None), _same))
    return entries


def _split_rows(start: int, stop: int, then=_same):
    """Rows start:stop of a fused [out, in] Linear weight, then re-laid by `then`."""
    return lambda t: then(t[start:stop])


def _attention_entries(spec: ModelSpec) -> list[Entry]:
    """q/k/v/o projections: separate Linear layers, or phi3's fused qkv_proj ([q; k; v] along its rows)."""
    d, dh, h, kv = spec.hidden_size, spec.head_dim, spec.num_heads, spec.num_kv_heads
    a = "layers.{i}.self_attn."
    shapes = {"q": (h, "heads"), "k": (kv, "kv_heads"), "v": (kv, "kv_heads")}
    if spec.model_type == "phi3":
        starts = {"q": 0, "k": h * dh, "v": (h + kv) * dh}
        e = [Entry(("layers", "w" + n), a + "qkv_proj.weight", ((h + 2 * kv) * dh, d), (d, heads, dh),
                   (None, axis, None), _split_rows(starts[n], starts[n] + heads * dh, _heads_in(heads, dh)))
             for n, (heads, axis) in shapes.items()]
    else:
        e = [Entry(("layers", "w" + n), a + f"{n}_proj.weight", (heads * dh, d), (d, heads, dh), (None, axis, None),
                   _heads_in(heads, dh)) for n, (heads, axis) in shapes.items()]
    e.append(Entry(("layers", "wo"), a + "o_proj.weight", (d, h * dh), (h, dh, d), ("heads", None, None),
                   _heads_out(h, dh)))
    if spec.qkv_bias:
        e += [Entry(("layers", "b" + n), a + f"{n}_proj.bias", (heads * dh,), (heads, dh), (axis, None),
                    _heads_bias(heads, dh)) for n, (heads, axis) in shapes.items()]
    if spec.out_bias:
        e.append(Entry(("layers", "bo"), a + "o_proj.bias", (d,), (d,), (None,), _same))
    if spec.qk_norm:  # over head_dim, or (olmo2) over the whole q / k projection
        q_size, k_size = (h * dh, kv * dh) if spec.qk_norm == "full" else (dh, dh)
        e += [Entry(("layers", "q_norm", "scale"), a + "q_norm.weight", (q_size,), (q_size,), (None,), _same),
              Entry(("layers", "k_norm", "scale"), a + "k_norm.weight", (k_size,), (k_size,), (None,), _same)]
    return e


def _mlp_entries(spec: ModelSpec) -> list[Entry]:
    """The gated MLP: gate/up/down Linear layers, phi3's fused gate_up_proj ([gate; up] rows), or the experts and
    router of a mixture-of-experts block."""
    d, f = spec.hidden_size, spec.intermediate_size
    m = "layers.{i}.mlp."
    if spec.num_experts:
        return _expert_entries(spec)
    if spec.model_type == "phi3":
        gate_up = (2 * f, d)
        return [Entry(("layers", "w_gate"), m + "gate_up_proj.weight", gate_up, (d, f), (None, "mlp"),
                      _split_rows(0, f, _transpose)),
                Entry(("layers", "w_up"), m + "gate_up_proj.weight", gate_up, (d, f), (None, "mlp"),
                      _split_rows(f, 2 * f, _transpose)),
                Entry(("layers", "w_down"), m + "down_proj.weight", (d, f), (f, d), ("mlp", None), _transpose)]
    return [Entry(("layers", "w_gate"), m + "gate_proj.weight", (f, d), (d, f), (None, "mlp"), _transpose),
            Entry(("layers", "w_up"), m + "up_proj.weight", (f, d), (d, f), (None, "mlp"), _transpose),
            Entry(("layers", "w_down"), m + "down_proj.weight", (d, f), (f, d), ("mlp", None), _transpose)]


def _expert_entries(spec: ModelSpec) -> list[Entry]:
    """Router [D, E] and expert weights stacked as [E, D, F] / [E, F, D], the expert axis split over the mesh."""
    d, f, count = spec.hidden_size, spec.intermediate_size, spec.num_experts
    if spec.model_type == "mixtral":
        block, gate, up, down = "layers.{i}.block_sparse_moe.", "w1", "w3", "w2"
    else:
        block, gate, up, down = "layers.{i}.mlp.", "gate_proj", "up_proj", "down_proj"
    expert = block + "experts.{e}."
    return [
        Entry(("layers", "router"), block + "gate.weight", (count, d), (d, count), (None, None), _transpose),
        Entry(("layers", "w_gate"), expert + gate + ".weight", (f, d), (count, d, f), ("experts", None, "mlp"),
              _transpose, experts=count),
        Entry(("layers", "w_up"), expert + up + ".weight", (f, d), (count, d, f), ("experts", None, "mlp"),
              _transpose, experts=count),
        Entry(("layers", "w_down"), expert + down + ".weight", (d, f), (count, f, d), ("experts", "mlp", None),
              _transpose, experts=count),
    ]


def _llama_entries(spec: ModelSpec) -> list[Entry]:
    """The llama-style families: attention, a gated MLP or experts, and the family's norms."""
    e = _attention_entries(spec) + _mlp_entries(spec)
    norm = "layers.{i}."
    if spec.pre_norms:
        e += _norm_entries("attn_norm", norm + "input_layernorm", spec, layered=True)
    if spec.attn_post_norm:  # gemma2/3: pre- and post-norms around both blocks; olmo2: post-norms only
        e += _norm_entries("attn_post_norm", norm + "post_attention_layernorm", spec, layered=True)
        e += _norm_entries("mlp_post_norm", norm + "post_feedforward_layernorm", spec, layered=True)
        if spec.pre_norms:
            e += _norm_entries("mlp_norm", norm + "pre_feedforward_layernorm", spec, layered=True)
    else:
        e += _norm_entries("mlp_norm", norm + "post_attention_layernorm", spec, layered=True)
    return e


def _gpt2_entries(spec: ModelSpec) -> list[Entry]:
    """GPT-2: Conv1D weights are already [in, out]; c_attn fuses q, k, v along the output axis."""
    d, f, h, dh = spec.hidden_size, spec.intermediate_size, spec.num_heads, spec.head_dim
    a = "h.{i}.attn."

    def part(j):
        return lambda t: t[:, j * d:(j + 1) * d].reshape(d, h, dh)

    def part_bias(j):
        return lambda t: t[j * d:(j + 1) * d].reshape(h, dh)

    e = []
    for j, name in enumerate("qkv"):
        e.append(Entry(("layers", "w" + name), a + "c_attn.weight", (d, 3 * d), (d, h, dh), (None, "heads", None),
                       part(j)))
        e.append(Entry(("layers", "b" + name), a + "c_attn.bias", (3 * d,), (h, dh), ("heads", None), part_bias(j)))
    e += [
        Entry(("layers", "wo"), a + "c_proj.weight", (d, d), (h, dh, d), ("heads", None, None),
              lambda t: t.reshape(h, dh, d)),
        Entry(("layers", "bo"), a + "c_proj.bias", (d,), (d,), (None,), _same),
        Entry(("layers", "w_in"), "h.{i}.mlp.c_fc.weight", (d, f), (d, f), (None, "mlp"), _same),
        Entry(("layers", "b_in"), "h.{i}.mlp.c_fc.bias", (f,), (f,), ("mlp",), _same),
        Entry(("layers", "w_out"), "h.{i}.mlp.c_proj.weight", (f, d), (f, d), ("mlp", None), _same),
        Entry(("layers", "b_out"), "h.{i}.mlp.c_proj.bias", (d,), (d,), (None,), _same),
        Entry(("pos_embed",), "wpe.weight", (spec.max_position, d), (spec.max_position, d), (None, None), _same),
    ]
    e += _norm_entries("attn_norm", "h.{i}.ln_1", spec, layered=True)
    e += _norm_entries("mlp_norm", "h.{i}.ln_2", spec, layered=True)
    return e


def _neox_entries(spec: ModelSpec) -> list[Entry]:
    """GPT-NeoX: query_key_value interleaves per head as [H, (q, k, v), Dh] along its output axis."""
    d, f, h, dh = spec.hidden_size, spec.intermediate_size, spec.num_heads, spec.head_dim
    a = "layers.{i}.attention."
    m = "layers.{i}.mlp."

    def part(j):
        return lambda t: t.reshape(h, 3, dh, d)[:, j].transpose(2, 0, 1)

    def part_bias(j):
        return lambda t: t.reshape(h, 3, dh)[:, j]

    e = [Entry(("layers", "w" + name), a + "query_key_value.weight", (3 * h * dh, d), (d, h, dh),
               (None, "heads", None), part(j)) for j, name in enumerate("qkv")]
    if spec.qkv_bias:
        e += [Entry(("layers", "b" + name), a + "query_key_value.bias", (3 * h * dh,), (h, dh), ("heads", None),
                    part_bias(j)) for j, name in enumerate("qkv")]
    e.append(Entry(("layers", "wo"), a + "dense.weight", (d, h * dh), (h, dh, d), ("heads", None, None),
                   _heads_out(h, dh)))
    if spec.out_bias:
        e.append(Entry(("layers", "bo"), a + "dense.bias", (d,), (d,), (None,), _same))
    e += [
        Entry(("layers", "w_in"), m + "dense_h_to_4h.weight", (f, d), (d, f), (None, "mlp"), _transpose),
        Entry(("layers", "b_in"), m + "dense_h_to_4h.bias", (f,), (f,), ("mlp",), _same),
        Entry(("layers", "w_out"), m + "dense_4h_to_h.weight", (d, f), (f, d), ("mlp", None), _transpose),
        Entry(("layers", "b_out"), m + "dense_4h_to_h.bias", (d,), (d,), (None,), _same),
    ]
    e += _norm_entries("attn_norm", "layers.{i}.input_layernorm", spec, layered=True)
    e += _norm_entries("mlp_norm", "layers.{i}.post_attention_layernorm", spec, layered=True)
    return e


def checkpoint_entries(spec: ModelSpec) -> list[Entry]:
    """Every parameter of `spec`'s model and the HF tensor it comes from."""
    body = {"gpt2": _gpt2_entries, "gpt_neox": _neox_entries}.get(spec.model_type, _llama_entries)
    return _head_entries(spec) + body(spec)
