"""Reading a Hugging Face config.json for the family modules: a reader that remembers which fields were read,
the fields every family may carry without them changing the forward, and the parsers families share (rope,
sliding windows, activations, experts, the llama-style layout).

A field a family neither reads nor explicitly ignores is refused (`ConfigReader.refuse_unhandled`): a config
that asks for something the decoder does not implement would otherwise load and give wrong log-probs silently.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any, NoReturn

from jaxcontam.errors import ModelError
from jaxcontam.models.config import Activation, DecoderConfig, RopeType, eos_field

# Fields that never change the forward pass: bookkeeping, training-only settings (dropout, router losses,
# initialisation), generation defaults and output switches that transformers' config.json files carry.
SHARED_ALLOWED = frozenset(
    {
        "model_type",
        "architectures",
        "_name_or_path",
        "name_or_path",
        "_model_name_or_path",  # transformers writes it into a config loaded from a GGUF file
        "unk_token_id",
        "transformers_version",
        "torch_dtype",
        "dtype",
        "use_cache",
        "bos_token_id",
        "eos_token_id",
        "pad_token_id",
        "sep_token_id",
        "decoder_start_token_id",
        "initializer_range",
        "initializer_factor",
        "id2label",
        "label2id",
        "num_labels",
        "problem_type",
        "return_dict",
        "output_attentions",
        "output_hidden_states",
        "output_scores",
        "return_dict_in_generate",
        "torchscript",
        "use_bfloat16",
        "tf_legacy_loss",
        "pruned_heads",
        "chunk_size_feed_forward",
        "is_encoder_decoder",
        "is_decoder",
        "add_cross_attention",
        "cross_attention_hidden_size",
        "tie_encoder_decoder",
        "finetuning_task",
        "tokenizer_class",
        "prefix",
        "task_specific_params",
        "_attn_implementation",
        "attn_implementation",
        "_attn_implementation_autoset",
        "auto_map",
        "attention_dropout",
        "hidden_dropout",
        "embd_pdrop",
        "resid_pdrop",
        "attn_pdrop",
        "classifier_dropout",
        "summary_first_dropout",
        "summary_type",
        "summary_use_proj",
        "summary_activation",
        "summary_proj_to_labels",
        "router_aux_loss_coef",
        "router_jitter_noise",
        "output_router_logits",
        "max_length",
        "min_length",
        "do_sample",
        "early_stopping",
        "num_beams",
        "num_beam_groups",
        "diversity_penalty",
        "temperature",
        "top_k",
        "top_p",
        "typical_p",
        "repetition_penalty",
        "length_penalty",
        "no_repeat_ngram_size",
        "encoder_no_repeat_ngram_size",
        "bad_words_ids",
        "num_return_sequences",
        "forced_bos_token_id",
        "forced_eos_token_id",
        "remove_invalid_values",
        "exponential_decay_length_penalty",
        "suppress_tokens",
        "begin_suppress_tokens",
        "cache_implementation",
        "transformers.js_config",
        "_num_labels",
        "gradient_checkpointing",
        "attention_probs_dropout_prob",
        "hidden_dropout_prob",
    }
)

# HF activation names -> the activation the forward applies.
ACTIVATIONS: dict[str, Activation] = {
    "silu": "silu",
    "swish": "silu",
    "gelu_pytorch_tanh": "gelu_tanh",
    "gelu_new": "gelu_tanh",
    "gelu": "gelu",
    "relu": "relu",
}
ROPE_TYPES = ("default", "linear", "llama3", "longrope")
FULL, SLIDING = "full_attention", "sliding_attention"


class ConfigReader:
    """Reads fields from a raw config dict, naming the file and field in every error and remembering every field
    asked for, so the fields nobody asked for can be refused."""

    def __init__(self, config: dict, source: str):
        self.config = config
        self.source = source
        self.read: set[str] = set()

    def require(self, *names: str) -> Any:
        self.read.update(names)
        for name in names:
            if self.config.get(name) is not None:
                return self.config[name]
        raise ModelError(
            f"{self.source}: missing field {' or '.join(repr(n) for n in names)}; "
            "the config.json is incomplete: re-export it with save_pretrained"
        )

    def get(self, name: str, default: Any = None) -> Any:
        self.read.add(name)
        value = self.config.get(name)
        return default if value is None else value

    def refuse(self, field: str, value, why: str) -> NoReturn:
        raise ModelError(f"{self.source}: field {field!r} = {value!r} is not supported: {why}")

    def refuse_unhandled(self, model_type: str, ignored: Mapping[str, str]):
        """Refuse every set field that was not read, is not in `SHARED_ALLOWED` and not in the family's `ignored`
        (field -> why it does not change the forward). Null fields count as unset."""
        unhandled = sorted(
            name
            for name, value in self.config.items()
            if value is not None and name not in self.read and name not in SHARED_ALLOWED and name not in ignored
        )
        if unhandled:
            fields = ", ".join(f"{name!r} = {self.config[name]!r}" for name in unhandled)
            raise ModelError(
                f"{self.source}: field(s) {fields} not implemented for model_type {model_type!r}; "
                "jaxcontam refuses fields that may change the forward pass rather than ignore them "
                "(the log-probs could be silently wrong). Check the model_type, or remove the field "
                "if it does not affect this model"
            )


def first_id(value) -> int | None:
    """A bos/pad id from a config: an int, a list (the first is kept) or null."""
    if isinstance(value, list):
        return int(value[0]) if value else None
    return None if value is None else int(value)


def optional_float(value) -> float | None:
    return None if value is None else float(value)


def activation(reader: ConfigReader, field: str, name: str) -> Activation:
    """The forward's activation for the HF activation `name` (read from `field`), refusing unknown ones."""
    if name not in ACTIVATIONS:
        reader.refuse(field, name, f"implemented activations: {', '.join(ACTIVATIONS)}")
    return ACTIVATIONS[name]


@dataclasses.dataclass(frozen=True)
class Rope:
    theta: float
    rope_type: RopeType
    scaling: tuple[tuple[str, float], ...]
    partial: float
    short_factor: tuple[float, ...] = ()
    long_factor: tuple[float, ...] = ()


def rope(reader: ConfigReader, params: dict | None = None, default_theta: float = 10000.0) -> Rope:
    """Rope settings from new-style rope_parameters (or `params`, a family's own selection of them) merged over
    the older rope_scaling / rope_theta / partial_rotary_factor fields."""
    params = dict(reader.get("rope_parameters", {}) if params is None else params)
    if reader.get("rope_scaling"):
        params = {**reader.get("rope_scaling"), **params}
    theta = params.get("rope_theta", reader.get("rope_theta", reader.get("rotary_emb_base", default_theta)))
    partial = params.get("partial_rotary_factor", reader.get("partial_rotary_factor", reader.get("rotary_pct", 1.0)))
    rope_type = params.get("rope_type", params.get("type", "default"))
    rope_type = "longrope" if rope_type == "su" else rope_type  # phi3's original name for it
    if rope_type not in ROPE_TYPES:
        reader.refuse(
            "rope_parameters.rope_type",
            rope_type,
            f"jaxcontam implements {', '.join(ROPE_TYPES)}; a model that needs another scaling would "
            "get silently wrong log-probs, so it is refused",
        )
    if rope_type == "longrope":
        return _longrope(reader, params, float(theta), float(partial))
    keys = {
        "linear": ("factor",),
        "llama3": ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"),
    }.get(rope_type, ())
    for key in keys:
        if key not in params:
            raise ModelError(
                f"{reader.source}: rope_type {rope_type!r} needs rope_parameters.{key}; add it to config.json"
            )
    scaling = tuple(sorted((k, float(params[k])) for k in keys))
    return Rope(float(theta), rope_type, scaling, float(partial))


def _longrope(reader: ConfigReader, params: dict, theta: float, partial: float) -> Rope:
    """LongRoPE (phi3): per-frequency factors, short within the original context and long beyond it, and cos/sin
    scaled by an attention factor (default sqrt(1 + ln(factor) / ln(original context)), as transformers sets it)."""
    original = params.get("original_max_position_embeddings", reader.get("original_max_position_embeddings"))
    if original is None or "short_factor" not in params or "long_factor" not in params:
        raise ModelError(
            f"{reader.source}: rope_type 'longrope' needs short_factor, long_factor and "
            "original_max_position_embeddings; add them to config.json"
        )
    head_dim = int(
        reader.get("head_dim", int(reader.require("hidden_size")) // int(reader.require("num_attention_heads")))
    )
    half = int(head_dim * partial) // 2
    for key in ("short_factor", "long_factor"):
        if len(params[key]) != half:
            reader.refuse(
                f"rope_parameters.{key}",
                f"{len(params[key])} values",
                f"longrope needs one factor per rotary frequency ({half})",
            )
    factor = params.get("factor") or int(reader.require("max_position_embeddings")) / float(original)
    attention = params.get("attention_factor")
    if attention is None:
        attention = 1.0 if factor <= 1.0 else (1 + math.log(factor) / math.log(original)) ** 0.5
    scaling = (("attention_factor", float(attention)), ("original_max_position_embeddings", float(original)))
    return Rope(
        theta,
        "longrope",
        scaling,
        partial,
        tuple(float(f) for f in params["short_factor"]),
        tuple(float(f) for f in params["long_factor"]),
    )


def layer_windows(reader: ConfigReader, num_layers: int, default_types: list[str] | None) -> tuple[int, ...]:
    """Per-layer sliding window from `layer_types` (transformers 5) or the family's historical `default_types`;
    None: the family has no sliding windows (its layer_types / sliding_window fields are then refused)."""
    if default_types is None:
        return (0,) * num_layers
    window = reader.get("sliding_window")
    types = reader.get("layer_types", default_types)
    if len(types) != num_layers:
        raise ModelError(
            f"{reader.source}: layer_types has {len(types)} entries but num_hidden_layers is "
            f"{num_layers}; make them agree"
        )
    windows = []
    for i, kind in enumerate(types):
        if kind == FULL:
            windows.append(0)
        elif kind == SLIDING:
            windows.append(0 if window is None else int(window))
        else:
            reader.refuse(f"layer_types[{i}]", kind, f"only {FULL!r} and {SLIDING!r} are implemented")
    return tuple(windows)


def experts(reader: ConfigReader) -> tuple[int, int]:
    """(experts per layer, experts per token) of a mixture-of-experts family."""
    count = int(reader.require("num_local_experts", "num_experts"))
    top_k = int(reader.require("num_experts_per_tok"))
    if not 1 <= top_k <= count:
        reader.refuse("num_experts_per_tok", top_k, f"needs 1 <= k <= the {count} experts")
    return count, top_k


def llama_style(
    reader: ConfigReader,
    model_type: str,
    act: Activation,
    windows,
    rope_settings: Rope | None = None,
    attention_bias: bool | None = None,
    **overrides,
) -> DecoderConfig:
    """The llama layout (RMSNorm pre-norms, rope, gated MLP, grouped-query attention, attention_bias on all four
    projections), with a family's differences given as `overrides` of `DecoderConfig` fields.

    `windows(num_layers)` gives the per-layer sliding windows; `rope_settings` defaults to `rope(reader)`;
    `attention_bias` defaults to the config's field."""
    hidden = int(reader.require("hidden_size"))
    heads = int(reader.require("num_attention_heads"))
    layers = int(reader.require("num_hidden_layers"))
    head_dim = int(reader.get("head_dim", hidden // heads))
    rope_settings = rope_settings or rope(reader)
    if reader.get("mlp_bias", False):
        reader.refuse("mlp_bias", True, "biases on the gated MLP projections are not implemented")
    if reader.get("use_bidirectional_attention", False):
        reader.refuse("use_bidirectional_attention", True, "jaxcontam scores causal language models only")
    bias = bool(reader.get("attention_bias", False)) if attention_bias is None else attention_bias
    fields = dict(
        model_type=model_type,
        vocab_size=int(reader.require("vocab_size")),
        hidden_size=hidden,
        num_layers=layers,
        num_heads=heads,
        num_kv_heads=int(reader.get("num_key_value_heads", heads)),
        head_dim=head_dim,
        intermediate_size=overrides.pop("intermediate_size", None) or int(reader.require("intermediate_size")),
        max_position=int(reader.require("max_position_embeddings")),
        norm="rms",
        norm_eps=float(reader.require("rms_norm_eps")),
        norm_offset=0.0,
        activation=act,
        gated_mlp=True,
        mlp_bias=False,
        qkv_bias=bias,
        out_bias=bias,
        qk_norm="",
        attn_post_norm=False,
        mlp_post_norm=False,
        parallel_residual=False,
        learned_positions=False,
        rotary_dim=int(head_dim * rope_settings.partial),
        rope_theta=rope_settings.theta,
        rope_type=rope_settings.rope_type,
        rope_scaling=rope_settings.scaling,
        embed_scale=None,
        attn_scale=float(head_dim) ** -0.5,
        attn_logit_softcap=None,
        final_logit_softcap=None,
        layer_windows=windows(layers),
        tie_word_embeddings=bool(reader.get("tie_word_embeddings", False)),
        bos_token_id=first_id(reader.config.get("bos_token_id")),
        eos_token_id=eos_field(reader.config.get("eos_token_id")),
        pad_token_id=first_id(reader.config.get("pad_token_id")),
        rope_short_factor=rope_settings.short_factor,
        rope_long_factor=rope_settings.long_factor,
        norm_topk_prob=False,
        hf_config=dict(reader.config),
    )
    return DecoderConfig(**{**fields, **overrides})


def hidden_act(reader: ConfigReader) -> Activation:
    """The activation named by the required `hidden_act` field."""
    return activation(reader, "hidden_act", reader.require("hidden_act"))
