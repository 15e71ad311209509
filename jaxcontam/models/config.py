"""`DecoderConfig`: the typed architecture the shared decoder core runs, whatever family it came from.

Every family module (`jaxcontam.models.families`) maps its Hugging Face config onto these fields, so one forward
implementation (`decoder`, `attention`, `layers`, `experts`) covers them all. The config keeps the architecture's
core at its top level and nests the settings of one part each (as levanter's `LlamaConfig` nests its rotary
embeddings config): `RopeConfig`, `NormConfig`, `ExpertsConfig`, and `ExecutionConfig` for how the forward runs
rather than what it computes. Change a nested setting with `dataclasses.replace` on both levels, e.g.
`replace(spec, execution=replace(spec.execution, attention="jnp"))`.

The config is a static argument of the jitted functions, hence frozen and hashable (the nested configs too); the
raw config dict rides along but takes no part in hashing. This module is the bottom layer of `jaxcontam.models`:
it imports nothing from the package.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

Norm = Literal["rms", "layer"]
Activation = Literal["silu", "gelu_tanh", "gelu", "relu"]
QKNorm = Literal["", "head", "full"]  # RMSNorm on q and k before rope: none, over head_dim, over the projection
RopeType = Literal["default", "linear", "llama3", "longrope"]


@dataclasses.dataclass(frozen=True)
class RopeConfig:
    """Rotary position embeddings: how many dims rotate, the base, and the scaling (each scaling's parameters are
    None or empty unless that scaling is used)."""

    rotary_dim: int  # dims of each head that rope rotates (partial rotary for gpt_neox, phi3); 0 = no rope (gpt2)
    theta: float
    scaling: RopeType = "default"
    factor: float | None = None  # linear, llama3: the context extension factor
    low_freq_factor: float | None = None  # llama3: wavelengths above original / low are scaled by 1 / factor,
    high_freq_factor: float | None = None  # below original / high kept, and smoothly blended between
    original_max_position: float | None = None  # llama3, longrope: the context the model was pre-trained on
    attention_factor: float | None = None  # longrope: the scale of cos and sin
    short_factor: tuple[float, ...] = ()  # longrope: per-frequency divisors for sequences within
    long_factor: tuple[float, ...] = ()  # original_max_position, and for longer ones
    local_theta: float | None = None  # gemma3: sliding layers rotate with this base, unscaled


@dataclasses.dataclass(frozen=True)
class NormConfig:
    """The norms: their kind and epsilon, where they sit in each block, and the q/k norm."""

    kind: Norm
    eps: float
    offset: float = 0.0  # gemma scales by (1 + w)
    qk: QKNorm = ""  # "head" (qwen3, gemma3), "full" over the whole projection (olmo2)
    pre: bool = True  # norm before attention and MLP (olmo2 has only the post norms)
    attn_post: bool = False  # gemma2/3, olmo2: norm on the attention output before the residual add
    mlp_post: bool = False  # gemma2/3, olmo2: norm on the MLP output before the residual add


@dataclasses.dataclass(frozen=True)
class ExpertsConfig:
    """Mixture of experts (mixtral, qwen3_moe) in place of the dense MLP; `count` 0 = a dense MLP."""

    count: int = 0  # experts per layer
    per_token: int = 0  # top-k routing
    norm_topk_prob: bool = False  # renormalise the top-k router probabilities to sum to 1


@dataclasses.dataclass(frozen=True)
class ExecutionConfig:
    """How the forward runs, not what it computes: fixed before tracing, so part of the jit cache key."""

    # the attention path ("auto", "jnp", "splash", "cudnn"; `attention.packed_attention`): "auto" picks by the
    # platform of the mesh the step is traced under
    attention: str = "auto"
    # the layers as one unrolled program instead of a `lax.scan`: the training step's backward runs faster on CPU
    # (no per-layer dynamic slices of the stacked weights and gradients), at the cost of a longer compile
    unroll_layers: bool = False


@dataclasses.dataclass(frozen=True)
class DecoderConfig:
    """Architecture of a decoder-only LM; each family's `from_hf_config` says how it fills these fields."""

    model_type: str
    vocab_size: int
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    max_position: int
    activation: Activation
    gated_mlp: bool  # gate/up/down (llama) vs fc_in/fc_out (gpt2, gpt_neox)
    mlp_bias: bool
    qkv_bias: bool
    out_bias: bool
    parallel_residual: bool  # gpt_neox: x + attn(ln1 x) + mlp(ln2 x)
    learned_positions: bool  # gpt2: wpe table instead of rope
    embed_scale: float | None  # gemma: sqrt(hidden_size); granite: embedding_multiplier
    attn_scale: float
    attn_logit_softcap: float | None
    final_logit_softcap: float | None
    layer_windows: tuple[int, ...]  # per layer: sliding window (keys with q_pos - k_pos < w), 0 = global
    tie_word_embeddings: bool
    bos_token_id: int | None
    eos_token_id: int | tuple[int, ...] | None  # one id, or every one as a tuple when there are several
    pad_token_id: int | None
    rope: RopeConfig
    norms: NormConfig
    experts: ExpertsConfig = ExpertsConfig()
    execution: ExecutionConfig = ExecutionConfig()
    residual_scale: float = 1.0  # granite: each block's output is multiplied by this before the residual add
    logits_divisor: float = 1.0  # granite: logits are divided by this (its logits_scaling)
    hf_config: dict[str, Any] = dataclasses.field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def num_groups(self) -> int:
        """Query heads per key/value head (grouped-query attention)."""
        return self.num_heads // self.num_kv_heads

    @property
    def eos_token_ids(self) -> tuple[int, ...]:
        """Every id that ends a sequence (generation stops on each), as a tuple."""
        return eos_ids_tuple(self.eos_token_id)


def eos_ids_tuple(value) -> tuple[int, ...]:
    """An eos field as config files write it (int, list or null) -> a tuple of ints."""
    if isinstance(value, (list, tuple)):
        return tuple(int(v) for v in value)
    return () if value is None else (int(value),)


def eos_field(ids) -> int | tuple[int, ...] | None:
    """The config's `eos_token_id` for these ids (duplicates dropped, order kept): None, one int, or a tuple."""
    unique = tuple(dict.fromkeys(eos_ids_tuple(ids)))
    return None if not unique else unique[0] if len(unique) == 1 else unique
