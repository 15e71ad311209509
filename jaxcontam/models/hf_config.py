"""Reading a Hugging Face config.json for the family modules: a reader that remembers which fields were read,
the fields every family may carry without them changing the forward, and the parsers families share (rope,
sliding windows, activations, experts, the llama-style layout).

A field a family neither reads nor explicitly ignores is refused (`ConfigReader.refuse_unhandled`): a config
that asks for something the decoder does not implement would otherwise load and give wrong log-probs silently.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NoReturn

from jaxcontam.errors import ModelError
from jaxcontam.models.config import Activation, DecoderConfig, ExpertsConfig, NormConfig, RopeConfig, eos_field
from jaxcontam.models.config_values import (
    MAX_LAYERS,
    checked_flag,
    checked_int,
    checked_number,
    checked_token_ids,
    shown,
)

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


_REQUIRED = object()  # no default: the field must be set


class ConfigReader:
    """Reads fields from a raw config dict, naming the file and field in every error and remembering every field
    asked for, so the fields nobody asked for can be refused. The typed reads (`integer`, `number`, `flag`,
    `mapping`, `sequence`, `token_id`, `token_ids`) refuse a value of the wrong type or out of range by name."""

    def __init__(self, config: dict, source: str):
        self.config = config
        self.source = source
        self.read: set[str] = set()

    def require(self, *names: str) -> Any:
        return self._first(names, _REQUIRED)[1]

    def get(self, name: str, default: Any = None) -> Any:
        self.read.add(name)
        value = self.config.get(name)
        return default if value is None else value

    def _first(self, names: tuple[str, ...], default: Any) -> tuple[str, Any]:
        """(name, value) of the first of `names` that is set (not null), else (the first name, `default`)."""
        self.read.update(names)
        for name in names:
            if self.config.get(name) is not None:
                return name, self.config[name]
        if default is _REQUIRED:
            raise ModelError(
                f"{self.source}: missing field {' or '.join(repr(n) for n in names)}; "
                "the config.json is incomplete: re-export it with save_pretrained"
            )
        return names[0], default

    def integer(
        self, *names: str, default: Any = _REQUIRED, minimum: int | None = 1, maximum: int | None = None
    ) -> int:
        """An integer field (the first of `names` set) within [minimum, maximum]; `default` when none is set."""
        name, value = self._first(names, default)
        return checked_int(self.source, name, value, minimum, maximum)

    def number(self, *names: str, default: Any = _REQUIRED, positive: bool = True) -> float:
        """A finite number field (the first of `names` set), > 0 when `positive`; `default` when none is set."""
        name, value = self._first(names, default)
        return checked_number(self.source, name, value, positive)

    def number_value(self, field: str, value) -> float:
        """A finite number > 0 read from inside an object field (named `field` in errors)."""
        return checked_number(self.source, field, value)

    def optional_number(self, name: str) -> float | None:
        """A finite number > 0, or None when the field is unset."""
        value = self.get(name)
        return None if value is None else checked_number(self.source, name, value)

    def flag(self, name: str, default: bool) -> bool:
        return checked_flag(self.source, name, self.get(name, default))

    def mapping(self, name: str) -> dict:
        """An object field ({} when unset)."""
        value = self.get(name, {})
        if not isinstance(value, dict):
            self.refuse(name, value, "expected an object (a JSON {...})")
        return value

    def sequence(self, name: str, default: list) -> list:
        """A list field (`default` when unset)."""
        value = self.get(name, default)
        if not isinstance(value, list):
            self.refuse(name, value, "expected a list")
        return value

    def token_id(self, name: str) -> int | None:
        """A bos/pad id: an int, a list (the first is kept) or null. Not marked read: every family accepts it."""
        ids = checked_token_ids(self.source, name, self.config.get(name))
        return ids[0] if ids else None

    def token_ids(self, name: str) -> int | tuple[int, ...] | None:
        """An eos field: every id it names (`config.eos_field`). Not marked read: every family accepts it."""
        return eos_field(checked_token_ids(self.source, name, self.config.get(name)))

    def refuse(self, field: str, value, why: str) -> NoReturn:
        raise ModelError(f"{self.source}: field {field!r} = {shown(value)} is not supported: {why}")

    def refuse_unhandled(self, model_type: str, ignored: Mapping[str, str]):
        """Refuse every set field that was not read, is not in `SHARED_ALLOWED` and not in the family's `ignored`
        (field -> why it does not change the forward). Null fields count as unset."""
        unhandled = sorted(
            name
            for name, value in self.config.items()
            if value is not None and name not in self.read and name not in SHARED_ALLOWED and name not in ignored
        )
        if unhandled:
            fields = ", ".join(f"{name!r} = {shown(self.config[name])}" for name in unhandled)
            raise ModelError(
                f"{self.source}: field(s) {fields} not implemented for model_type {model_type!r}; "
                "jaxcontam refuses fields that may change the forward pass rather than ignore them "
                "(the log-probs could be silently wrong). Check the model_type, or remove the field "
                "if it does not affect this model"
            )


def activation(reader: ConfigReader, field: str, name) -> Activation:
    """The forward's activation for the HF activation `name` (read from `field`), refusing unknown ones."""
    if not isinstance(name, str) or name not in ACTIVATIONS:
        reader.refuse(field, name, f"implemented activations: {', '.join(ACTIVATIONS)}")
    return ACTIVATIONS[name]


def attention_sizes(
    reader: ConfigReader, hidden_names=("hidden_size",), head_names=("num_attention_heads",)
) -> tuple[int, int, int]:
    """(hidden size, attention heads, head_dim): head_dim from its field, else hidden size // heads."""
    hidden = reader.integer(*hidden_names)
    heads = reader.integer(*head_names)
    if reader.get("head_dim") is None and heads > hidden:
        reader.refuse(head_names[0], heads, f"more heads than the hidden size ({hidden}) leaves no head_dim")
    return hidden, heads, reader.integer("head_dim", default=hidden // heads)


def rope(reader: ConfigReader, params: dict | None = None, default_theta: float = 10000.0) -> RopeConfig:
    """Rope settings from new-style rope_parameters (or `params`, a family's own selection of them) merged over
    the older rope_scaling / rope_theta / partial_rotary_factor fields; the rotary dims are that fraction of
    head_dim (`attention_sizes`)."""
    params = dict(reader.mapping("rope_parameters") if params is None else params)
    if reader.get("rope_scaling"):
        params = {**reader.mapping("rope_scaling"), **params}

    def number(key: str, *fields: str, default):
        if key in params:  # the rope object's value wins; a top-level field beside it is read too (not refused)
            reader.read.update(fields)
            return reader.number_value(f"rope_parameters.{key}", params[key])
        return reader.number(*fields, default=default)

    theta = number("rope_theta", "rope_theta", "rotary_emb_base", default=default_theta)
    partial = number("partial_rotary_factor", "partial_rotary_factor", "rotary_pct", default=1.0)
    if partial > 1:
        reader.refuse("partial_rotary_factor", partial, "a fraction of head_dim, at most 1")
    _, _, head_dim = attention_sizes(reader)
    rotary_dim = int(head_dim * partial)
    rope_type = params.get("rope_type", params.get("type", "default"))
    rope_type = "longrope" if rope_type == "su" else rope_type  # phi3's original name for it
    if not isinstance(rope_type, str) or rope_type not in ROPE_TYPES:
        reader.refuse(
            "rope_parameters.rope_type",
            rope_type,
            f"jaxcontam implements {', '.join(ROPE_TYPES)}; a model that needs another scaling would "
            "get silently wrong log-probs, so it is refused",
        )
    if rope_type == "longrope":
        return _longrope(reader, params, theta, rotary_dim)
    keys = {
        "linear": ("factor",),
        "llama3": ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"),
    }.get(rope_type, ())
    for key in keys:
        if key not in params:
            raise ModelError(
                f"{reader.source}: rope_type {rope_type!r} needs rope_parameters.{key}; add it to config.json"
            )
    scaling = {k: reader.number_value(f"rope_parameters.{k}", params[k]) for k in sorted(keys)}
    if rope_type == "llama3" and params["high_freq_factor"] <= params["low_freq_factor"]:
        reader.refuse(
            "rope_parameters.high_freq_factor",
            params["high_freq_factor"],
            f"llama3 rope needs it above low_freq_factor ({params['low_freq_factor']})",
        )
    return RopeConfig(
        rotary_dim,
        theta,
        rope_type,
        factor=scaling.get("factor"),
        low_freq_factor=scaling.get("low_freq_factor"),
        high_freq_factor=scaling.get("high_freq_factor"),
        original_max_position=scaling.get("original_max_position_embeddings"),
    )


def _longrope(reader: ConfigReader, params: dict, theta: float, rotary_dim: int) -> RopeConfig:
    """LongRoPE (phi3): per-frequency factors, short within the original context and long beyond it, and cos/sin
    scaled by an attention factor (default sqrt(1 + ln(factor) / ln(original context)), as transformers sets it)."""
    original = params.get("original_max_position_embeddings", reader.get("original_max_position_embeddings"))
    if original is None or "short_factor" not in params or "long_factor" not in params:
        raise ModelError(
            f"{reader.source}: rope_type 'longrope' needs short_factor, long_factor and "
            "original_max_position_embeddings; add them to config.json"
        )
    original = checked_int(reader.source, "original_max_position_embeddings", original, minimum=2)
    half = rotary_dim // 2
    factors = {}
    for key in ("short_factor", "long_factor"):
        values = params[key]
        if not isinstance(values, list) or len(values) != half:
            reader.refuse(
                f"rope_parameters.{key}",
                f"{len(values)} values" if isinstance(values, list) else values,
                f"longrope needs a list of one factor per rotary frequency ({half})",
            )
        factors[key] = tuple(reader.number_value(f"rope_parameters.{key}", f) for f in values)
    if params.get("factor") is not None:
        factor = reader.number_value("rope_parameters.factor", params["factor"])
    else:
        factor = reader.integer("max_position_embeddings") / original
    attention = params.get("attention_factor")
    if attention is None:
        attention = 1.0 if factor <= 1.0 else (1 + math.log(factor) / math.log(original)) ** 0.5
    attention = reader.number_value("rope_parameters.attention_factor", attention)
    return RopeConfig(
        rotary_dim,
        theta,
        "longrope",
        original_max_position=float(original),
        attention_factor=attention,
        short_factor=factors["short_factor"],
        long_factor=factors["long_factor"],
    )


def layer_windows(reader: ConfigReader, num_layers: int, default_types: list[str] | None) -> tuple[int, ...]:
    """Per-layer sliding window from `layer_types` (transformers 5) or the family's historical `default_types`;
    None: the family has no sliding windows (its layer_types / sliding_window fields are then refused)."""
    if default_types is None:
        return (0,) * num_layers
    window = reader.integer("sliding_window", default=0, minimum=0)
    types = reader.sequence("layer_types", default_types)
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
            windows.append(window)
        else:
            reader.refuse(f"layer_types[{i}]", kind, f"only {FULL!r} and {SLIDING!r} are implemented")
    return tuple(windows)


def experts(reader: ConfigReader, norm_topk_prob: bool) -> ExpertsConfig:
    """The experts of a mixture-of-experts family: experts per layer, experts per token, and whether the family
    renormalises the top-k router probabilities."""
    count = reader.integer("num_local_experts", "num_experts")
    top_k = reader.integer("num_experts_per_tok")
    if not 1 <= top_k <= count:
        reader.refuse("num_experts_per_tok", top_k, f"needs 1 <= k <= the {count} experts")
    return ExpertsConfig(count, top_k, norm_topk_prob)


def layer_count(reader: ConfigReader, *names: str) -> int:
    """The layer count, bounded before any per-layer list is built from it."""
    return reader.integer(*(names or ("num_hidden_layers",)), maximum=MAX_LAYERS)


def llama_style(
    reader: ConfigReader,
    model_type: str,
    act: Activation,
    windows,
    rope_settings: RopeConfig | None = None,
    attention_bias: bool | None = None,
    norms: Mapping[str, Any] | None = None,
    **overrides,
) -> DecoderConfig:
    """The llama layout (RMSNorm pre-norms, rope, gated MLP, grouped-query attention, attention_bias on all four
    projections), with a family's differences given as `overrides` of `DecoderConfig` fields.

    `windows(num_layers)` gives the per-layer sliding windows; `rope_settings` defaults to `rope(reader)`;
    `attention_bias` defaults to the config's field; `norms`: the family's `NormConfig` fields beside the RMSNorm
    with rms_norm_eps (e.g. {"qk": "head"})."""
    hidden, heads, head_dim = attention_sizes(reader)
    layers = layer_count(reader)
    rope_settings = rope_settings or rope(reader)
    if reader.flag("mlp_bias", False):
        reader.refuse("mlp_bias", True, "biases on the gated MLP projections are not implemented")
    if reader.flag("use_bidirectional_attention", False):
        reader.refuse("use_bidirectional_attention", True, "jaxcontam scores causal language models only")
    bias = reader.flag("attention_bias", False) if attention_bias is None else attention_bias
    fields = dict(
        model_type=model_type,
        vocab_size=reader.integer("vocab_size"),
        hidden_size=hidden,
        num_layers=layers,
        num_heads=heads,
        num_kv_heads=reader.integer("num_key_value_heads", default=heads),
        head_dim=head_dim,
        intermediate_size=overrides.pop("intermediate_size", None) or reader.integer("intermediate_size"),
        max_position=reader.integer("max_position_embeddings"),
        norms=NormConfig("rms", reader.number("rms_norm_eps"), **(norms or {})),
        activation=act,
        gated_mlp=True,
        mlp_bias=False,
        qkv_bias=bias,
        out_bias=bias,
        parallel_residual=False,
        learned_positions=False,
        embed_scale=None,
        attn_scale=float(head_dim) ** -0.5,
        attn_logit_softcap=None,
        final_logit_softcap=None,
        layer_windows=windows(layers),
        tie_word_embeddings=reader.flag("tie_word_embeddings", False),
        bos_token_id=reader.token_id("bos_token_id"),
        eos_token_id=reader.token_ids("eos_token_id"),
        pad_token_id=reader.token_id("pad_token_id"),
        rope=rope_settings,
        hf_config=dict(reader.config),
    )
    return DecoderConfig(**{**fields, **overrides})


def hidden_act(reader: ConfigReader) -> Activation:
    """The activation named by the required `hidden_act` field."""
    return activation(reader, "hidden_act", reader.require("hidden_act"))
