"""GPT-NeoX (Pythia): LayerNorm with bias, partial rotary, biased projections, parallel or sequential residual,
and query_key_value interleaved per head."""

from __future__ import annotations

from jaxcontam.models.config import DecoderConfig, NormConfig
from jaxcontam.models.families.base import Family
from jaxcontam.models.hf_config import ConfigReader, attention_sizes, hidden_act, layer_count, rope
from jaxcontam.models.weight_entries import Entry, head_entries, heads_out, norm_entries, same, transpose


def from_hf_config(reader: ConfigReader) -> DecoderConfig:
    hidden, heads, head_dim = attention_sizes(reader)
    layers = layer_count(reader)
    rope_settings = rope(reader)
    if reader.flag("use_bidirectional_attention", False):
        reader.refuse("use_bidirectional_attention", True, "jaxcontam scores causal language models only")
    bias = reader.flag("attention_bias", True)
    return DecoderConfig(
        model_type="gpt_neox",
        vocab_size=reader.integer("vocab_size"),
        hidden_size=hidden,
        num_layers=layers,
        num_heads=heads,
        num_kv_heads=heads,
        head_dim=head_dim,
        intermediate_size=reader.integer("intermediate_size"),
        max_position=reader.integer("max_position_embeddings"),
        norms=NormConfig("layer", reader.number("layer_norm_eps")),
        activation=hidden_act(reader),
        gated_mlp=False,
        mlp_bias=True,
        qkv_bias=bias,
        out_bias=bias,
        parallel_residual=reader.flag("use_parallel_residual", True),
        learned_positions=False,
        rope=rope_settings,
        embed_scale=None,
        attn_scale=float(head_dim) ** -0.5,
        attn_logit_softcap=None,
        final_logit_softcap=None,
        layer_windows=(0,) * layers,
        tie_word_embeddings=reader.flag("tie_word_embeddings", False),
        bos_token_id=reader.token_id("bos_token_id"),
        eos_token_id=reader.token_ids("eos_token_id"),
        pad_token_id=reader.token_id("pad_token_id"),
        hf_config=dict(reader.config),
    )


def checkpoint_entries(spec: DecoderConfig) -> list[Entry]:
    """query_key_value interleaves per head as [H, (q, k, v), Dh] along its output axis."""
    d, f, h, dh = spec.hidden_size, spec.intermediate_size, spec.num_heads, spec.head_dim
    a = "layers.{i}.attention."
    m = "layers.{i}.mlp."

    def part(j):
        return lambda t: t.reshape(h, 3, dh, d)[:, j].transpose(2, 0, 1)

    def part_bias(j):
        return lambda t: t.reshape(h, 3, dh)[:, j]

    e = [
        Entry(
            ("layers", "w" + name),
            a + "query_key_value.weight",
            (3 * h * dh, d),
            (d, h, dh),
            (None, "heads", None),
            part(j),
        )
        for j, name in enumerate("qkv")
    ]
    if spec.qkv_bias:
        e += [
            Entry(
                ("layers", "b" + name),
                a + "query_key_value.bias",
                (3 * h * dh,),
                (h, dh),
                ("heads", None),
                part_bias(j),
            )
            for j, name in enumerate("qkv")
        ]
    e.append(
        Entry(("layers", "wo"), a + "dense.weight", (d, h * dh), (h, dh, d), ("heads", None, None), heads_out(h, dh))
    )
    if spec.out_bias:
        e.append(Entry(("layers", "bo"), a + "dense.bias", (d,), (d,), (None,), same))
    e += [
        Entry(("layers", "w_in"), m + "dense_h_to_4h.weight", (f, d), (d, f), (None, "mlp"), transpose),
        Entry(("layers", "b_in"), m + "dense_h_to_4h.bias", (f,), (f,), ("mlp",), same),
        Entry(("layers", "w_out"), m + "dense_4h_to_h.weight", (d, f), (f, d), ("mlp", None), transpose),
        Entry(("layers", "b_out"), m + "dense_4h_to_h.bias", (d,), (d,), (None,), same),
    ]
    e += norm_entries("attn_norm", "layers.{i}.input_layernorm", spec, layered=True)
    e += norm_entries("mlp_norm", "layers.{i}.post_attention_layernorm", spec, layered=True)
    return head_entries(spec, "embed_in", "final_layer_norm", "embed_out") + e


FAMILY = Family("gpt_neox", from_hf_config, checkpoint_entries, prefix="gpt_neox.")
