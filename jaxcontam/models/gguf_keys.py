"""The value kind of each standard GGUF metadata key, as llama.cpp reads it, checked when a file is parsed.

GGUF stores a type with every value, and several types share a width: a BOOL overwritten as UINT8, a UINT32 as
FLOAT32 or an INT32 token-type array as FLOAT32 still parse, and would silently change what the key says (llama.cpp's
loader refuses a key of the wrong type). Integer widths and signedness are not a kind: llama.cpp's own converter
writes some integer keys as UINT32 where the spec says UINT64, and the value is the same number either way.
Keys named `{arch}.*` are those under the file's `general.architecture`; keys outside this table are not checked.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Kind:
    """What a key may hold: one `scalar` (bool, int, float or str), an array of `elements`, or either (None: not
    that form)."""

    scalar: type | None
    elements: type | None = None

    def admits(self, value) -> bool:
        if isinstance(value, list):
            return self.elements is not None and all(_is(element, self.elements) for element in value)
        return self.scalar is not None and _is(value, self.scalar)

    def describe(self) -> str:
        forms = [_NAMES[self.scalar]] if self.scalar else []
        forms += [f"an array of {_NAMES[self.elements].split()[-1]}s"] if self.elements else []
        return " or ".join(forms)


_NAMES = {bool: "a bool", int: "an integer", float: "a float", str: "a string"}
_BOOL, _INT, _FLOAT, _STR = Kind(bool), Kind(int), Kind(float), Kind(str)
_PER_LAYER_INT = Kind(int, int)  # one value, or one per layer

_GENERAL = {
    "general.architecture": _STR,
    "general.name": _STR,
    "general.file_type": _INT,
    "general.quantization_version": _INT,
    "tokenizer.ggml.model": _STR,
    "tokenizer.ggml.pre": _STR,
    "tokenizer.ggml.tokens": Kind(None, str),
    "tokenizer.ggml.token_type": Kind(None, int),
    "tokenizer.ggml.scores": Kind(None, float),
    "tokenizer.ggml.merges": Kind(None, str),
    "tokenizer.ggml.add_bos_token": _BOOL,
    "tokenizer.ggml.add_eos_token": _BOOL,
    "tokenizer.ggml.add_space_prefix": _BOOL,
    "tokenizer.ggml.remove_extra_whitespaces": _BOOL,
    "tokenizer.chat_template": _STR,
    **{
        f"tokenizer.ggml.{name}_token_id": _INT
        for name in ("bos", "eos", "eot", "eom", "unknown", "padding", "seperator", "cls", "mask")
    },
}
_PER_ARCHITECTURE = {
    "context_length": _INT,
    "embedding_length": _INT,
    "block_count": _INT,
    "vocab_size": _INT,
    "feed_forward_length": _PER_LAYER_INT,
    "expert_count": _INT,
    "expert_used_count": _INT,
    "expert_feed_forward_length": _INT,
    "expert_weights_norm": _BOOL,
    "use_parallel_residual": _BOOL,
    "final_logit_softcapping": _FLOAT,
    "attn_logit_softcapping": _FLOAT,
    "attention.head_count": _PER_LAYER_INT,
    "attention.head_count_kv": _PER_LAYER_INT,
    "attention.key_length": _INT,
    "attention.value_length": _INT,
    "attention.layer_norm_epsilon": _FLOAT,
    "attention.layer_norm_rms_epsilon": _FLOAT,
    "attention.scale": _FLOAT,
    "attention.causal": _BOOL,
    "attention.sliding_window": _INT,
    "attention.sliding_window_pattern": Kind(int, bool),  # every n-th layer global, or a flag per layer
    "rope.dimension_count": _INT,
    "rope.freq_base": _FLOAT,
    "rope.freq_base_swa": _FLOAT,
    "rope.scaling.type": _STR,
    "rope.scaling.factor": _FLOAT,
    "rope.scaling.attn_factor": _FLOAT,
    "rope.scaling.original_context_length": _INT,
    "rope.scaling.finetuned": _BOOL,
}


def _is(value, scalar: type) -> bool:
    return isinstance(value, scalar) and (scalar is bool or not isinstance(value, bool))


def _stored(value) -> str:
    if isinstance(value, list):
        return f"an array of {len(value):,}" + (f" starting {value[0]!r}" if value else "")
    return f"{_NAMES.get(type(value), type(value).__name__)} ({value!r:.40})"


def check_kinds(metadata: dict) -> None:
    """Refuse (ValueError) a standard key stored as a kind llama.cpp would not read it as."""
    arch = metadata.get("general.architecture")
    prefix = f"{arch}." if isinstance(arch, str) else None
    for key, value in metadata.items():
        kind = _GENERAL.get(key)
        if kind is None and prefix and key.startswith(prefix):
            kind = _PER_ARCHITECTURE.get(key.removeprefix(prefix))
        if kind is not None and not kind.admits(value):
            raise ValueError(f"metadata {key!r} is stored as {_stored(value)}; llama.cpp reads it as {kind.describe()}")
