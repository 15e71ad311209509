"""Typed, in-range values from a model's config (config.json, or GGUF metadata turned into one), and the checks
of a parsed `DecoderConfig` as a whole.

A config is as untrusted as the weights beside it: a string where a size belongs, `rms_norm_eps = 0` or NaN,
`rope_theta = 0`, zero heads or `num_hidden_layers = 10**9` would otherwise end in a TypeError, a division by
zero, NaN log-probs that still give a verdict, or an allocation that exhausts memory. Every value is checked where
it is read (named by its field), and the parsed config once more for the relations between fields.
"""

from __future__ import annotations

import json
import math
import reprlib
from typing import NoReturn

from jaxcontam.errors import ModelError
from jaxcontam.models.config import DecoderConfig

# More layers than any released model has (Llama 3.1 405B has 126): a config above it is refused before per-layer
# lists are built; on load the layers must also be the ones the weight files hold.
MAX_LAYERS = 4096
_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 60


def shown(value) -> str:
    """A config value for a message, cut to a readable length and depth."""
    return _SHORT.repr(value)


FIX_CONFIG = "fix the config"


def _refuse(source: str, field: str, value, expected: str, fix: str = FIX_CONFIG) -> NoReturn:
    raise ModelError(f"{source}: field {field!r} = {shown(value)} is invalid: expected {expected}; {fix}")


def checked_int(
    source: str, field: str, value, minimum: int | None = 1, maximum: int | None = None, fix: str = FIX_CONFIG
) -> int:
    """`value` as an int (an integral float such as 4096.0 counts; a bool does not) within [minimum, maximum];
    `fix` ends the message of a refusal."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        _refuse(source, field, value, _int_range(minimum, maximum), fix)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        _refuse(source, field, value, _int_range(minimum, maximum), fix)
    return value


def _int_range(minimum: int | None, maximum: int | None) -> str:
    if minimum is not None and maximum is not None:
        return f"an integer from {minimum} to {maximum:,}"
    if minimum is not None:
        return "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
    return "an integer"


def checked_number(source: str, field: str, value, positive: bool = True, fix: str = FIX_CONFIG) -> float:
    """`value` as a finite float (an int counts; a bool does not), > 0 when `positive`."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not _finite(value):
        _refuse(source, field, value, "a finite number" + (" > 0" if positive else ""), fix)
    if positive and value <= 0:
        _refuse(source, field, value, "a finite number > 0", fix)
    return float(value)


def _finite(value: int | float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an int beyond any float
        return False


def checked_flag(source: str, field: str, value) -> bool:
    """`value` as a bool: JSON true/false only (the string "false" would otherwise read as True)."""
    if not isinstance(value, bool):
        _refuse(source, field, value, "true or false")
    return value


def checked_token_ids(source: str, field: str, value) -> tuple[int, ...]:
    """A token-id field (an int, a list of ints or null) as a tuple of ints."""
    values = value if isinstance(value, list) else [] if value is None else [value]
    return tuple(checked_int(source, field, v, minimum=None) for v in values)


def check_decoder(config: DecoderConfig, source: str) -> None:
    """The relations between a parsed config's fields that the forward relies on, and (a second net behind the
    per-field reads) the ranges of every size and scale, so no family can pass on a value that divides by zero,
    breaks a reshape or turns the log-probs into NaN."""
    sizes = {
        "vocab_size": config.vocab_size,
        "hidden_size": config.hidden_size,
        "num_hidden_layers": config.num_layers,
        "num_attention_heads": config.num_heads,
        "num_key_value_heads": config.num_kv_heads,
        "head_dim": config.head_dim,
        "intermediate_size": config.intermediate_size,
        "max_position_embeddings": config.max_position,
    }
    for field, value in sizes.items():
        checked_int(source, field, value, maximum=MAX_LAYERS if field == "num_hidden_layers" else None)
    if config.num_heads % config.num_kv_heads:
        _refuse(
            source,
            "num_key_value_heads",
            config.num_kv_heads,
            f"a divisor of num_attention_heads ({config.num_heads}) for grouped-query attention",
        )
    rope = config.rope
    scales = [
        ("norm eps", config.norms.eps),
        ("attention scale", config.attn_scale),
        ("logits divisor", config.logits_divisor),
        ("residual scale", config.residual_scale),
        ("embedding scale", config.embed_scale),
        ("attention logit softcap", config.attn_logit_softcap),
        ("final logit softcap", config.final_logit_softcap),
        ("local rope_theta", rope.local_theta),
        ("attention_factor", rope.attention_factor),
        ("factor", rope.factor),
        ("high_freq_factor", rope.high_freq_factor),
        ("low_freq_factor", rope.low_freq_factor),
        ("original_max_position_embeddings", rope.original_max_position),
        *(("rope_parameters.short_factor", f) for f in rope.short_factor),
        *(("rope_parameters.long_factor", f) for f in rope.long_factor),
    ]
    if not config.learned_positions:
        scales.append(("rope_theta", rope.theta))
        if not (0 < rope.rotary_dim <= config.head_dim and rope.rotary_dim % 2 == 0):
            _refuse(
                source,
                "partial_rotary_factor",
                rope.rotary_dim / config.head_dim,
                f"a fraction of head_dim ({config.head_dim}) giving an even number of rotary dimensions",
            )
    for name, value in scales:
        if value is not None:
            checked_number(source, name, value)
    if len(config.layer_windows) != config.num_layers or any(w < 0 for w in config.layer_windows):
        _refuse(source, "layer_types", len(config.layer_windows), f"one window >= 0 per layer ({config.num_layers})")
    experts = config.experts
    if experts.count and not 1 <= experts.per_token <= experts.count:
        _refuse(source, "num_experts_per_tok", experts.per_token, f"1 to the {experts.count} experts")


# config.json, generation_config.json and the shard index are kilobytes (a 1,000-shard index is under 1 MB)
MAX_JSON_BYTES = 64 << 20


def read_json_object(path, fix: str) -> dict:
    """A model folder's JSON file as a dict, refusing a file too large to be a config, invalid JSON, nesting too
    deep for the parser and anything but an object, each with `fix`."""
    size = path.stat().st_size
    if size > MAX_JSON_BYTES:
        raise ModelError(
            f"{path}: {size:,} bytes is too large for a model's JSON file (limit {MAX_JSON_BYTES:,}); {fix}"
        )
    try:
        value = json.loads(path.read_bytes())
    except RecursionError:
        raise ModelError(f"{path}: JSON nested too deeply to be a model's config; {fix}") from None
    except ValueError as exc:
        raise ModelError(f"{path}: not valid JSON ({exc}); {fix}") from exc
    if not isinstance(value, dict):
        raise ModelError(f"{path}: expected a JSON object, got {type(value).__name__}; {fix}")
    return value
