"""Name table from Hugging Face tensor names to jaxcontam parameter paths, per family.

Each `Entry` says which HF tensor (name template, `{i}` = layer index, family prefix such as "model."
stripped) feeds which parameter, the HF shape the config implies, how to re-lay it (transpose, split heads,
un-fuse qkv), and the logical axes of the result for sharding. Per-layer entries are stacked on a leading
layer axis.
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

    @property
    def per_layer(self) -> bool:
        return "{i}" in self.source


def canonical_name(name: str, spec: ModelSpec) -> str:
    """Strip the family prefix so names match the table whether or not the checkpoint has a head."""
    prefix = PREFIXES.get(spec.model_type, DEFAULT_PREFIX)
    return name.removeprefix(prefix)


def full_name(entry: Entry, layer: int | None, spec: ModelSpec) -> str:
    """The HF tensor name as a *ForCausalLM checkpoint spells it (for error messages)."""
    name = entry.source.replace("{i}", str(layer)) if layer is not None else entry.source
    return name if re.match(r"(lm_head|embed_out)\.", name) else PREFIXES.get(spec.model_type, DEFAULT_PREFIX) + name


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


def _llama_entries(spec: ModelSpec) -> list[Entry]:
    """llama, mistral, qwen2, qwen3, gemma, gemma2: separate q/k/v/o Linear and a gated MLP."""
    d, f, dh = spec.hidden_size, spec.intermediate_size, spec.head_dim
    h, kv = spec.num_heads, spec.num_kv_heads
    a = "layers.{i}.self_attn."
    m = "layers.{i}.mlp."
    e = [
        Entry(("layers", "wq"), a + "q_proj.weight", (h * dh, d), (d, h, dh), (None, "heads", None), _heads_in(h, dh)),
        Entry(("layers", "wk"), a + "k_proj.weight", (kv * dh, d), (d, kv, dh), (None, "kv_heads", None),
              _heads_in(kv, dh)),
        Entry(("layers", "wv"), a + "v_proj.weight", (kv * dh, d), (d, kv, dh), (None, "kv_heads", None),
              _heads_in(kv, dh)),
        Entry(("layers", "wo"), a + "o_proj.weight", (d, h * dh), (h, dh, d), ("heads", None, None),
              _heads_out(h, dh)),
        Entry(("layers", "w_gate"), m + "gate_proj.weight", (f, d), (d, f), (None, "mlp"), _transpose),
        Entry(("layers", "w_up"), m + "up_proj.weight", (f, d), (d, f), (None, "mlp"), _transpose),
        Entry(("layers", "w_down"), m + "down_proj.weight", (d, f), (f, d), ("mlp", None), _transpose),
    ]
    if spec.qkv_bias:
        e += [Entry(("layers", "bq"), a + "q_proj.bias", (h * dh,), (h, dh), ("heads", None), _heads_bias(h, dh)),
              Entry(("layers", "bk"), a + "k_proj.bias", (kv * dh,), (kv, dh), ("kv_heads", None),
                    _heads_bias(kv, dh)),
              Entry(("layers", "bv"), a + "v_proj.bias", (kv * dh,), (kv, dh), ("kv_heads", None),
                    _heads_bias(kv, dh))]
    if spec.out_bias:
        e.append(Entry(("layers", "bo"), a + "o_proj.bias", (d,), (d,), (None,), _same))
    if spec.qk_norm:
        e += [Entry(("layers", "q_norm", "scale"), a + "q_norm.weight", (dh,), (dh,), (None,), _same),
              Entry(("layers", "k_norm", "scale"), a + "k_norm.weight", (dh,), (dh,), (None,), _same)]
    e += _norm_entries("attn_norm", "layers.{i}.input_layernorm", spec, layered=True)
    if spec.model_type == "gemma2":
        e += _norm_entries("attn_post_norm", "layers.{i}.post_attention_layernorm", spec, layered=True)
        e += _norm_entries("mlp_norm", "layers.{i}.pre_feedforward_layernorm", spec, layered=True)
        e += _norm_entries("mlp_post_norm", "layers.{i}.post_feedforward_layernorm", spec, layered=True)
    else:
        e += _norm_entries("mlp_norm", "layers.{i}.post_attention_layernorm", spec, layered=True)
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
