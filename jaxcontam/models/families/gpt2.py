"""GPT-2: learned positions, LayerNorm with bias, fused Conv1D projections ([in, out]), tied output."""

from __future__ import annotations

from jaxcontam.models.config import DecoderConfig, NormConfig, RopeConfig
from jaxcontam.models.families.base import Family
from jaxcontam.models.hf_config import ConfigReader, activation, layer_count
from jaxcontam.models.weight_entries import Entry, head_entries, norm_entries, same


def from_hf_config(reader: ConfigReader) -> DecoderConfig:
    if reader.flag("scale_attn_by_inverse_layer_idx", False):
        reader.refuse(
            "scale_attn_by_inverse_layer_idx", True, "only the standard 1/sqrt(head_dim) scale is implemented"
        )
    act = activation(reader, "activation_function", reader.get("activation_function", "gelu_new"))
    hidden = reader.integer("n_embd", "hidden_size")
    heads = reader.integer("n_head", "num_attention_heads")
    if hidden % heads:  # c_attn splits into heads of hidden // heads
        reader.refuse("n_head", heads, f"GPT-2 needs the heads to divide n_embd ({hidden})")
    layers = layer_count(reader, "n_layer", "num_hidden_layers")
    head_dim = hidden // heads
    return DecoderConfig(
        model_type="gpt2",
        vocab_size=reader.integer("vocab_size"),
        hidden_size=hidden,
        num_layers=layers,
        num_heads=heads,
        num_kv_heads=heads,
        head_dim=head_dim,
        intermediate_size=reader.integer("n_inner", default=4 * hidden),
        max_position=reader.integer("n_positions", "max_position_embeddings"),
        norms=NormConfig("layer", reader.number("layer_norm_epsilon", default=1e-5)),
        activation=act,
        gated_mlp=False,
        mlp_bias=True,
        qkv_bias=True,
        out_bias=True,
        parallel_residual=False,
        learned_positions=True,
        rope=RopeConfig(rotary_dim=0, theta=0.0),
        embed_scale=None,
        attn_scale=float(head_dim) ** -0.5 if reader.flag("scale_attn_weights", True) else 1.0,
        attn_logit_softcap=None,
        final_logit_softcap=None,
        layer_windows=(0,) * layers,
        tie_word_embeddings=reader.flag("tie_word_embeddings", True),
        bos_token_id=reader.token_id("bos_token_id"),
        eos_token_id=reader.token_ids("eos_token_id"),
        pad_token_id=reader.token_id("pad_token_id"),
        hf_config=dict(reader.config),
    )


def checkpoint_entries(spec: DecoderConfig) -> list[Entry]:
    """c_attn fuses q, k, v along its output axis."""
    d, f, h, dh = spec.hidden_size, spec.intermediate_size, spec.num_heads, spec.head_dim
    a = "h.{i}.attn."

    def part(j):
        return lambda t: t[:, j * d : (j + 1) * d].reshape(d, h, dh)

    def part_bias(j):
        return lambda t: t[j * d : (j + 1) * d].reshape(h, dh)

    e = []
    for j, name in enumerate("qkv"):
        e.append(
            Entry(("layers", "w" + name), a + "c_attn.weight", (d, 3 * d), (d, h, dh), (None, "heads", None), part(j))
        )
        e.append(Entry(("layers", "b" + name), a + "c_attn.bias", (3 * d,), (h, dh), ("heads", None), part_bias(j)))
    e += [
        Entry(
            ("layers", "wo"),
            a + "c_proj.weight",
            (d, d),
            (h, dh, d),
            ("heads", None, None),
            lambda t: t.reshape(h, dh, d),
        ),
        Entry(("layers", "bo"), a + "c_proj.bias", (d,), (d,), (None,), same),
        Entry(("layers", "w_in"), "h.{i}.mlp.c_fc.weight", (d, f), (d, f), (None, "mlp"), same),
        Entry(("layers", "b_in"), "h.{i}.mlp.c_fc.bias", (f,), (f,), ("mlp",), same),
        Entry(("layers", "w_out"), "h.{i}.mlp.c_proj.weight", (f, d), (f, d), ("mlp", None), same),
        Entry(("layers", "b_out"), "h.{i}.mlp.c_proj.bias", (d,), (d,), (None,), same),
        Entry(("pos_embed",), "wpe.weight", (spec.max_position, d), (spec.max_position, d), (None, None), same),
    ]
    e += norm_entries("attn_norm", "h.{i}.ln_1", spec, layered=True)
    e += norm_entries("mlp_norm", "h.{i}.ln_2", spec, layered=True)
    return head_entries(spec, "wte", "ln_f", "lm_head") + e


FAMILY = Family(
    "gpt2",
    from_hf_config,
    checkpoint_entries,
    prefix="transformer.",
    ignored={
        "n_ctx": "transformers' GPT-2 sizes positions by n_positions",
        "reorder_and_upcast_attn": "only upcasts the attention scores to float32, which jaxcontam always does",
    },
)
