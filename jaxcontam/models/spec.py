"""`ModelSpec`: one frozen, hashable description of a decoder, normalised from a Hugging Face config.json.

Every family (llama, mistral, qwen2, qwen3, gemma, gemma2, gemma3_text, olmo2, phi3, mixtral, qwen3_moe, gpt2,
gpt_neox) is expressed through the same fields, so a single forward implementation covers them all. The spec
is a static argument of the jitted functions, hence frozen and hashable; the raw config dict rides along but
takes no part in hashing.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

from jaxcontam.errors import ModelError

SUPPORTED_MODEL_TYPES = ("llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3_text", "olmo2", "phi3",
                         "mixtral", "qwen3_moe", "gpt2", "gpt_neox")
_GEMMA = ("gemma", "gemma2", "gemma3_text")
_MOE = ("mixtral", "qwen3_moe")

# HF activation names -> the activation the forward applies.
_ACTIVATIONS = {
    "silu": "silu",
    "swish": "silu",
    "gelu_pytorch_tanh": "gelu_tanh",
    "gelu_new": "gelu_tanh",
    "gelu": "gelu",
    "relu": "relu",
}
_ROPE_TYPES = ("default", "linear", "llama3", "longrope")


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """Architecture of a decoder-only LM; see `from_hf_config` for how each family fills it."""

    model_type: str
    vocab_size: int
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    max_position: int
    norm: str  # "rms" or "layer"
    norm_eps: float
    norm_offset: float  # gemma scales by (1 + w)
    activation: str  # "silu" | "gelu_tanh" | "gelu" | "relu"
    gated_mlp: bool  # gate/up/down (llama) vs fc_in/fc_out (gpt2, gpt_neox)
    mlp_bias: bool
    qkv_bias: bool
    out_bias: bool
    qk_norm: str  # RMSNorm on q and k before rope: "" none, "head" over head_dim (qwen3, gemma3), "full" over
    # the whole projection (olmo2)
    attn_post_norm: bool  # gemma2/3, olmo2: norm on the attention output before the residual add
    mlp_post_norm: bool  # gemma2/3, olmo2: norm on the MLP output before the residual add
    parallel_residual: bool  # gpt_neox: x + attn(ln1 x) + mlp(ln2 x)
    learned_positions: bool  # gpt2: wpe table instead of rope
    rotary_dim: int  # dims of each head that rope rotates (partial rotary for gpt_neox)
    rope_theta: float
    rope_type: str  # "default" | "linear" | "llama3" | "longrope"
    rope_scaling: tuple[tuple[str, float], ...]  # the scaling parameters, as sorted (name, value) pairs
    embed_scale: float | None  # gemma: sqrt(hidden_size)
    attn_scale: float
    attn_logit_softcap: float | None
    final_logit_softcap: float | None
    layer_windows: tuple[int, ...]  # per layer: sliding window (keys with q_pos - k_pos < w), 0 = global
    tie_word_embeddings: bool
    bos_token_id: int | None
    eos_token_id: int | tuple[int, ...] | None  # one id, or every one as a tuple when there are several
    pad_token_id: int | None
    pre_norms: bool = True  # norm before attention and MLP (olmo2 has only the post norms)
    local_rope_theta: float | None = None  # gemma3: sliding layers rotate with this base, unscaled
    rope_short_factor: tuple[float, ...] = ()  # longrope: per-frequency divisors for sequences within
    rope_long_factor: tuple[float, ...] = ()  # original_max_position_embeddings, and for longer ones
    num_experts: int = 0  # mixture of experts (mixtral, qwen3_moe): experts per layer; 0 = a dense MLP
    experts_per_token: int = 0  # top-k routing
    norm_topk_prob: bool = True  # renormalise the top-k router probabilities to sum to 1
    hf_config: dict[str, Any] = dataclasses.field(default_factory=dict, compare=False, hash=False, repr=False)
    packing: ClassVar[bool] = True  # the decoder masks by positions and segment ids: the engine packs rows

    @property
    def num_groups(self) -> int:
        """Query heads per key/value head (grouped-query attention)."""
        return self.num_heads // self.num_kv_heads

    @property
    def eos_token_ids(self) -> tuple[int, ...]:
        """Every id that ends a sequence (generation stops on each), as a tuple."""
        return eos_ids_tuple(self.eos_token_id)

    # The engine's model interface (see `jaxcontam.language_model`), run by jaxcontam's own decoder.
    def hidden_states(self, params, tokens, positions, segment_ids):
        from jaxcontam.models import decoder

        return decoder.hidden_states(params, self, tokens, positions, segment_ids)

    def output_projection(self, params):
        from jaxcontam.models import decoder

        return decoder.output_projection(params, self)

    def logits_from_hidden(self, params, hidden):
        from jaxcontam.models import decoder

        return decoder.logits_from_hidden(params, self, hidden)

    def split_layers(self, params):
        from jaxcontam.models import decoder

        return decoder.split_layers(params)

    def init_cache(self, batch: int, max_len: int, dtype):
        from jaxcontam.models import decoder

        return decoder.init_cache(self, batch, max_len, dtype)

    def decode(self, params, tokens, positions, cache, cache_index):
        from jaxcontam.models import decoder

        return decoder.decode(params, self, tokens, positions, cache, cache_index)


def eos_ids_tuple(value) -> tuple[int, ...]:
    """An eos field as config files write it (int, list or null) -> a tuple of ints."""
    if isinstance(value, (list, tuple)):
        return tuple(int(v) for v in value)
    return () if value is None else (int(value),)


def eos_field(ids) -> int | tuple[int, ...] | None:
    """The spec's `eos_token_id` for these ids (duplicates dropped, order kept): None, one int, or a tuple."""
    unique = tuple(dict.fromkeys(eos_ids_tuple(ids)))
    return None if not unique else unique[0] if len(unique) == 1 else unique


def _first_id(value) -> int | None:
    """A bos/pad id from a config: an int, a list (the first is kept) or null."""
    if isinstance(value, list):
        return int(value[0]) if value else None
    return None if value is None else int(value)


class _ConfigReader:
    """Reads fields from a raw config dict, naming the file and field in every error."""

    def __init__(self, config: dict, source: str):
        self.config = config
        self.source = source

    def require(self, *names: str):
        for name in names:
            if self.config.get(name) is not None:
                return self.config[name]
        raise ModelError(f"{self.source}: missing field {' or '.join(repr(n) for n in names)}; "
                         "the config.json is incomplete: re-export it with save_pretrained")

    def get(self, name: str, default=None):
        value = self.config.get(name)
        return default if value is None else value

    def refuse(self, field: str, value, why: str):
        raise ModelError(f"{self.source}: field {field!r} = {value!r} is not supported: {why}")


@dataclasses.dataclass(frozen=True)
class _Rope:
    theta: float
    rope_type: str
    scaling: tuple[tuple[str, float], ...]
    partial: float
    short_factor: tuple[float, ...] = ()
    long_factor: tuple[float, ...] = ()
    local_theta: float | None = None


def _rope(reader: _ConfigReader, model_type: str) -> _Rope:
    """Rope settings from new-style rope_parameters (per layer type for gemma3) or the older fields."""
    params = dict(reader.get("rope_parameters", {}))
    local_theta = None
    if model_type == "gemma3_text":  # global layers: theta and scaling; sliding layers: their own base, unscaled
        by_type = params if "full_attention" in params or "sliding_attention" in params else {"full_attention": params}
        params = dict(by_type.get("full_attention", {}))
        local = by_type.get("sliding_attention", {})
        if local.get("rope_type", "default") != "default":
            reader.refuse("rope_parameters.sliding_attention.rope_type", local["rope_type"],
                          "gemma3's sliding layers are implemented with unscaled rope only")
        local_theta = float(local.get("rope_theta", reader.get("rope_local_base_freq", 10000.0)))
    if reader.get("rope_scaling"):
        params = {**reader.get("rope_scaling"), **params}
    default_theta = 1_000_000.0 if model_type == "gemma3_text" else 10000.0
    theta = params.get("rope_theta", reader.get("rope_theta", reader.get("rotary_emb_base", default_theta)))
    partial = params.get("partial_rotary_factor", reader.get("partial_rotary_factor", reader.get("rotary_pct", 1.0)))
    rope_type = params.get("rope_type", params.get("type", "default"))
    rope_type = "longrope" if rope_type == "su" else rope_type  # phi3's original name for it
    if rope_type not in _ROPE_TYPES:
        reader.refuse("rope_parameters.rope_type", rope_type,
                      f"jaxcontam implements {', '.join(_ROPE_TYPES)}; a model that needs another scaling would "
                      "get silently wrong log-probs, so it is refused")
    if rope_type == "longrope":
        return _longrope(reader, params, float(theta), float(partial))
    keys = {"linear": ("factor",), "llama3": ("factor", "low_freq_factor", "high_freq_factor",
                                              "original_max_position_embeddings")}.get(rope_type, ())
    for key in keys:
        if key not in params:
            raise ModelError(f"{reader.source}: rope_type {rope_type!r} needs rope_parameters.{key}; add it to "
                             "config.json")
    scaling = tuple(sorted((k, float(params[k])) for k in keys))
    return _Rope(float(theta), rope_type, scaling, float(partial), local_theta=local_theta)


def _longrope(reader: _ConfigReader, params: dict, theta: float, partial: float) -> _Rope:
    """LongRoPE (phi3): per-frequency factors, short within the original context and long beyond it, and cos/sin
    scaled by an attention factor (default sqrt(1 + ln(factor) / ln(original context)), as transformers sets it)."""
    original = params.get("original_max_position_embeddings", reader.get("original_max_position_embeddings"))
    if original is None or "short_factor" not in params or "long_factor" not in params:
        raise ModelError(f"{reader.source}: rope_type 'longrope' needs short_factor, long_factor and "
                         "original_max_position_embeddings; add them to config.json")
    head_dim = int(reader.get("head_dim", int(reader.require("hidden_size")) // int(reader.require(
        "num_attention_heads"))))
    half = int(head_dim * partial) // 2
    for key in ("short_factor", "long_factor"):
        if len(params[key]) != half:
            reader.refuse(f"rope_parameters.{key}", f"{len(params[key])} values",
                          f"longrope needs one factor per rotary frequency ({half})")
    factor = params.get("factor") or int(reader.require("max_position_embeddings")) / float(original)
    attention = params.get("attention_factor")
    if attention is None:
        attention = 1.0 if factor <= 1.0 else (1 + math.log(factor) / math.log(original)) ** 0.5
    scaling = (("attention_factor", float(attention)), ("original_max_position_embeddings", float(original)))
    return _Rope(theta, "longrope", scaling, partial, tuple(float(f) for f in params["short_factor"]),
                 tuple(float(f) for f in params["long_factor"]))


def _layer_windows(reader: _ConfigReader, model_type: str, num_layers: int) -> tuple[int, ...]:
    """Per-layer sliding window from `layer_types` (transformers 5) or the family's historical default."""
    window = reader.get("sliding_window")
    types = reader.get("layer_types")
    if types is None:
        if model_type in ("mistral", "mixtral", "phi3"):
            types = ["sliding_attention"] * num_layers
        elif model_type == "gemma2":
            types = ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(num_layers)]
        elif model_type == "gemma3_text":
            pattern = int(reader.get("sliding_window_pattern", 6))
            types = ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(num_layers)]
        elif model_type in ("qwen2", "qwen3", "qwen3_moe") and reader.get("use_sliding_window", False):
            start = reader.get("max_window_layers", num_layers)
            types = ["sliding_attention" if i >= start else "full_attention" for i in range(num_layers)]
        else:
            types = ["full_attention"] * num_layers
    if len(types) != num_layers:
        raise ModelError(f"{reader.source}: layer_types has {len(types)} entries but num_hidden_layers is "
                         f"{num_layers}; make them agree")
    windows = []
    for i, kind in enumerate(types):
        if kind == "full_attention" or (kind == "sliding_attention" and window is None):
            windows.append(0)
        elif kind == "sliding_attention":
            windows.append(int(window))
        else:
            reader.refuse(f"layer_types[{i}]", kind, "only 'full_attention' and 'sliding_attention' are implemented")
    return tuple(windows)


def from_hf_config(config: dict, source: str = "config.json") -> ModelSpec:
    """Normalise a Hugging Face config dict into a `ModelSpec`, refusing anything the forward does not implement."""
    reader = _ConfigReader(config, source)
    model_type = reader.require("model_type")
    if model_type == "gemma3":
        raise ModelError(f"{source}: model_type 'gemma3' is the multimodal Gemma 3 checkpoint; jaxcontam runs "
                         "Gemma 3's text decoder ('gemma3_text', e.g. google/gemma-3-1b-it): use a text-only "
                         "checkpoint")
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise ModelError(f"{source}: model_type {model_type!r} is not supported; supported model types: "
                         f"{', '.join(SUPPORTED_MODEL_TYPES)}")
    if model_type == "gpt2":
        return _gpt2_spec(reader)
    hidden = int(reader.require("hidden_size"))
    heads = int(reader.require("num_attention_heads"))
    layers = int(reader.require("num_hidden_layers"))
    head_dim = int(reader.get("head_dim", hidden // heads))
    rope = _rope(reader, model_type)
    if model_type in ("gemma2", "gemma3_text"):
        act_name = reader.get("hidden_activation", "gelu_pytorch_tanh")
    elif model_type == "gemma":  # transformers maps gemma's legacy "gelu" to the tanh approximation it was trained with
        act_name = reader.get("hidden_act", "gelu_pytorch_tanh")
        act_name = "gelu_pytorch_tanh" if act_name == "gelu" else act_name
    else:
        act_name = reader.require("hidden_act")
    if act_name not in _ACTIVATIONS:
        reader.refuse("hidden_act", act_name, f"implemented activations: {', '.join(_ACTIVATIONS)}")
    gemma = model_type in _GEMMA
    post_norms = model_type in ("gemma2", "gemma3_text", "olmo2")
    softcaps = model_type in ("gemma2", "gemma3_text")
    neox = model_type == "gpt_neox"
    if not neox and reader.get("mlp_bias", False):
        reader.refuse("mlp_bias", True, "biases on the gated MLP projections are not implemented")
    if reader.get("use_bidirectional_attention", False):
        reader.refuse("use_bidirectional_attention", True, "jaxcontam scores causal language models only")
    qk_scalar = reader.get("query_pre_attn_scalar") if softcaps else None
    experts, top_k, expert_size = _experts(reader, model_type)
    return ModelSpec(
        model_type=model_type,
        vocab_size=int(reader.require("vocab_size")),
        hidden_size=hidden,
        num_layers=layers,
        num_heads=heads,
        num_kv_heads=heads if neox else int(reader.get("num_key_value_heads", heads)),
        head_dim=head_dim,
        intermediate_size=expert_size or int(reader.require("intermediate_size")),
        max_position=int(reader.require("max_position_embeddings")),
        norm="layer" if neox else "rms",
        norm_eps=float(reader.require("layer_norm_eps") if neox else reader.require("rms_norm_eps")),
        norm_offset=1.0 if gemma else 0.0,
        activation=_ACTIVATIONS[act_name],
        gated_mlp=not neox,
        mlp_bias=neox,
        qkv_bias=model_type == "qwen2" or bool(reader.get("attention_bias", neox)),
        out_bias=model_type != "qwen2" and bool(reader.get("attention_bias", neox)),
        qk_norm={"qwen3": "head", "qwen3_moe": "head", "gemma3_text": "head", "olmo2": "full"}.get(model_type, ""),
        attn_post_norm=post_norms,
        mlp_post_norm=post_norms,
        parallel_residual=neox and bool(reader.get("use_parallel_residual", True)),
        learned_positions=False,
        rotary_dim=int(head_dim * rope.partial),
        rope_theta=rope.theta,
        rope_type=rope.rope_type,
        rope_scaling=rope.scaling,
        embed_scale=float(hidden) ** 0.5 if gemma else None,
        attn_scale=float(qk_scalar if qk_scalar is not None else head_dim) ** -0.5,
        attn_logit_softcap=_optional_float(reader.get("attn_logit_softcapping")) if softcaps else None,
        final_logit_softcap=_optional_float(reader.get("final_logit_softcapping")) if softcaps else None,
        layer_windows=_layer_windows(reader, model_type, layers),
        tie_word_embeddings=bool(reader.get("tie_word_embeddings", gemma)),
        bos_token_id=_first_id(config.get("bos_token_id")),
        eos_token_id=eos_field(config.get("eos_token_id")),
        pad_token_id=_first_id(config.get("pad_token_id")),
        pre_norms=model_type != "olmo2",
        local_rope_theta=rope.local_theta,
        rope_short_factor=rope.short_factor,
        rope_long_factor=rope.long_factor,
        num_experts=experts,
        experts_per_token=top_k,
        norm_topk_prob=model_type == "mixtral" or bool(reader.get("norm_topk_prob", False)),
        hf_config=dict(config),
    )


def _experts(reader: _ConfigReader, model_type: str) -> tuple[int, int, int]:
    """(experts per layer, experts per token, expert MLP width) of a mixture-of-experts family; zeros otherwise."""
    if model_type not in _MOE:
        return 0, 0, 0
    experts = int(reader.require("num_local_experts", "num_experts"))
    top_k = int(reader.require("num_experts_per_tok"))
    if not 1 <= top_k <= experts:
        reader.refuse("num_experts_per_tok", top_k, f"needs 1 <= k <= the {experts} experts")
    if model_type == "mixtral":
        return experts, top_k, int(reader.require("intermediate_size"))
    if reader.get("mlp_only_layers", []) or int(reader.get("decoder_sparse_step", 1)) != 1:
        reader.refuse("mlp_only_layers / decoder_sparse_step",
                      (reader.get("mlp_only_layers"), reader.get("decoder_sparse_step")),
                      "jaxcontam implements qwen3_moe with an expert block in every layer")
    return experts, top_k, int(reader.require("moe_intermediate_size"))


def _optional_float(value) -> float | None:
    return None if value is None else float(value)


def _gpt2_spec(reader: _ConfigReader) -> ModelSpec:
    """GPT-2: learned positions, LayerNorm with bias, fused Conv1D projections, tied output."""
    if reader.get("scale_attn_by_inverse_layer_idx", False):
        reader.refuse("scale_attn_by_inverse_layer_idx", True,
                      "only the standard 1/sqrt(head_dim) scale is implemented")
    act_name = reader.get("activation_function", "gelu_new")
    if act_name not in _ACTIVATIONS:
        reader.refuse("activation_function", act_name, f"implemented activations: {', '.join(_ACTIVATIONS)}")
    hidden = int(reader.require("n_embd", "hidden_size"))
    heads = int(reader.require("n_head", "num_attention_heads"))
    layers = int(reader.require("n_layer", "num_hidden_layers"))
    head_dim = hidden // heads
    return ModelSpec(
        model_type="gpt2",
        vocab_size=int(reader.require("vocab_size")),
        hidden_size=hidden,
        num_layers=layers,
        num_heads=heads,
        num_kv_heads=heads,
        head_dim=head_dim,
        intermediate_size=int(reader.get("n_inner") or 4 * hidden),
        max_position=int(reader.require("n_positions", "max_position_embeddings")),
        norm="layer",
        norm_eps=float(reader.get("layer_norm_epsilon", 1e-5)),
        norm_offset=0.0,
        activation=_ACTIVATIONS[act_name],
        gated_mlp=False,
        mlp_bias=True,
        qkv_bias=True,
        out_bias=True,
        qk_norm="",
        attn_post_norm=False,
        mlp_post_norm=False,
        parallel_residual=False,
        learned_positions=True,
        rotary_dim=0,
        rope_theta=0.0,
        rope_type="default",
        rope_scaling=(),
        embed_scale=None,
        attn_scale=float(head_dim) ** -0.5 if reader.get("scale_attn_weights", True) else 1.0,
        attn_logit_softcap=None,
        final_logit_softcap=None,
        layer_windows=(0,) * layers,
        tie_word_embeddings=bool(reader.get("tie_word_embeddings", True)),
        bos_token_id=_first_id(reader.config.get("bos_token_id")),
        eos_token_id=eos_field(reader.config.get("eos_token_id")),
        pad_token_id=_first_id(reader.config.get("pad_token_id")),
        hf_config=dict(reader.config),
    )
