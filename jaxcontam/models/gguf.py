"""Read a GGUF checkpoint (llama.cpp's format) as a Hugging Face-style config and tensor index.

Metadata and the tensor table are read in one pass by `jaxcontam.models.gguf_file` (tensor data stays
memory-mapped); tensors are dequantised by the `gguf` package (llama.cpp's reference code: numpy, no torch), and
the tokenizer is built from the metadata by `jaxcontam.models.gguf_tokenizer`. The metadata becomes the
config.json dict `from_hf_config` already understands, and every tensor the HF name table needs is found under its
GGUF name (gguf's own name map), so the existing layout and sharding code places the weights.
Each device's part of a tensor is dequantised to float32 from just the rows and blocks it covers
(`jaxcontam.models.gguf_parts`), and llama.cpp's storage changes are undone by the family
(`families.base.GGUFFormat`): the row permutation of llama q/k projections (its rotary layout) and the +1 it adds
to gemma norm weights. The family also names its llama.cpp architecture and the metadata only it reads.
"""

from __future__ import annotations

import pathlib
import re
from typing import Any

from jaxcontam.errors import ModelError
from jaxcontam.models.checkpoint_map import DEFAULT_PREFIX, checkpoint_entries
from jaxcontam.models.config_values import checked_int, checked_number, shown
from jaxcontam.models.families import FAMILIES
from jaxcontam.models.families.base import Family, GGUFFormat
from jaxcontam.models.families.llama import unpermute_rotary_rows
from jaxcontam.models.gguf_file import GGUFFile, GGUFTensor, GGUFTensorInfo, read_gguf
from jaxcontam.models.gguf_parts import GGUFTensorReader
from jaxcontam.models.gguf_tokenizer import gguf_tokenizer
from jaxcontam.models.spec import ModelSpec, from_hf_config

# llama.cpp's architectures and the families stored as each (mistral as "llama", mixtral as "llama" with experts)
ARCHITECTURES = tuple(dict.fromkeys(family.gguf.arch for family in FAMILIES.values() if family.gguf))
# expert weights: stacked [E, ...] in one GGUF tensor per layer
_EXPERT_TENSORS = {"w_gate": "ffn_gate_exps", "w_up": "ffn_up_exps", "w_down": "ffn_down_exps"}
QUANT_TYPES = ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K")
_STOP_KEYS = ("tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id")
_TOKEN_ID_KEYS = (
    *_STOP_KEYS,
    "tokenizer.ggml.bos_token_id",
    "tokenizer.ggml.padding_token_id",
    "tokenizer.ggml.unknown_token_id",
)
_BLOCK = re.compile(r"blk\.(\d+)\.")
__all__ = [
    "ARCHITECTURES",
    "QUANT_TYPES",
    "GGUFTensorInfo",
    "GGUFTensorReader",
    "hf_config",
    "load_gguf_tokenizer",
    "open_reader",
    "read_spec",
    "tensor_index",
    "unpermute_rotary_rows",
]


def open_reader(path: pathlib.Path) -> GGUFFile:
    """The file's metadata and tensor table, read once and shared by config, weights and tokenizer."""
    return read_gguf(path)


_REQUIRED = object()  # no default: the key must be set
_FIX = "re-convert the file with llama.cpp's convert_hf_to_gguf.py"


class _Metadata:
    """Scalar metadata fields of one GGUF file, naming the file and key in every error; the typed reads refuse a
    value out of range (`gguf_keys` refused a standard key of the wrong kind when the file was parsed)."""

    def __init__(self, reader: GGUFFile, path: pathlib.Path):
        self.fields = reader.metadata
        self.path = path

    def get(self, key: str, default: Any = None) -> Any:
        return self.fields.get(key, default)

    def require(self, key: str) -> Any:
        value = self.get(key)
        if value is None:
            raise ModelError(
                f"{self.path}: GGUF metadata has no {key!r}; the file is incomplete: re-convert it "
                "with llama.cpp's convert_hf_to_gguf.py"
            )
        return value

    def _value(self, key: str, default: Any) -> Any:
        return self.require(key) if default is _REQUIRED else self.get(key, default)

    def integer(self, key: str, default: Any = _REQUIRED, minimum: int | None = 1, maximum: int | None = None) -> int:
        """An integer key within [minimum, maximum] (its stored kind was checked when the file was read)."""
        value = self._value(key, default)
        return checked_int(str(self.path), key, value, minimum, maximum, _FIX)

    def number(self, key: str, default: Any = _REQUIRED) -> float:
        """A finite number > 0 (its stored kind was checked when the file was read)."""
        value = self._value(key, default)
        return checked_number(str(self.path), key, value, fix=_FIX)

    def per_layer(self, key: str, default: Any = _REQUIRED) -> int:
        """A positive integer that some files store once per layer (a list), which must then be the same for
        every layer here."""
        value = self._value(key, default)
        if isinstance(value, list):
            if not value:
                raise ModelError(f"{self.path}: {key} is an empty list; {_FIX}")
            if len(set(value)) != 1:
                raise ModelError(
                    f"{self.path}: {key} differs between layers ({shown(sorted(set(value)))}); jaxcontam's "
                    "decoders need one value for all layers"
                )
            value = value[0]
        return checked_int(str(self.path), key, value, fix=_FIX)

    def token_id(self, key: str) -> int | None:
        value = self.get(key)
        return None if value is None else checked_int(str(self.path), key, value, minimum=0, fix=_FIX)


def _family(meta: _Metadata, arch: str, path: pathlib.Path) -> Family:
    """The family whose files `arch` with (or without) expert tensors are."""
    experts = meta.get(f"{arch}.expert_count")
    found = [f for f in FAMILIES.values() if f.gguf and f.gguf.arch == arch and f.gguf.experts == bool(experts)]
    if not found:
        if arch not in ARCHITECTURES:
            raise ModelError(
                f"{path}: GGUF architecture {arch!r} is not supported; supported architectures: "
                f"{', '.join(ARCHITECTURES)} (mistral and mixtral models are stored as 'llama')"
            )
        if not experts:
            raise ModelError(
                f"{path}: a {arch} GGUF file without {arch}.expert_count; the file is incomplete: "
                "re-convert it with llama.cpp's convert_hf_to_gguf.py"
            )
        with_experts = [f"{f.gguf.arch} ({f.model_type})" for f in FAMILIES.values() if f.gguf and f.gguf.experts]
        raise ModelError(
            f"{path}: a {arch} GGUF file with {experts} experts; mixture-of-experts files load "
            f"for {', '.join(with_experts)} only"
        )
    return found[0]


def _gguf_format(model_type: str) -> GGUFFormat:
    """How llama.cpp stores the family of `model_type` (a spec read from a GGUF file always has one)."""
    gguf_format = FAMILIES[model_type].gguf
    if gguf_format is None:
        raise ModelError(f"the {model_type} family has no GGUF format: its models load from safetensors only")
    return gguf_format


def hf_config(reader, path: pathlib.Path) -> dict:
    """The GGUF metadata as the config.json dict of the same Hugging Face model."""
    meta = _Metadata(reader, path)
    arch = meta.require("general.architecture")
    family = _family(meta, arch, path)
    gguf_format = family.gguf
    assert gguf_format is not None  # _family picks among the families with a GGUF format
    names = {tensor.name: tensor for tensor in reader.tensors}
    if "rope_freqs.weight" in names:
        raise ModelError(
            f"{path}: the file stores per-frequency rope factors (rope_freqs.weight, Llama 3.1-style "
            "rope scaling), which the GGUF loader does not read; load the Hugging Face safetensors "
            "checkpoint instead"
        )
    if "token_embd.weight" not in names:
        raise ModelError(f"{path}: no token_embd.weight tensor; the file is incomplete: re-convert it")
    hidden = meta.integer(f"{arch}.embedding_length")
    heads = meta.per_layer(f"{arch}.attention.head_count")
    if meta.get(f"{arch}.attention.key_length") is None and heads > hidden:
        raise ModelError(f"{path}: {arch}.attention.head_count = {heads} leaves no head size in {hidden} dims; {_FIX}")
    head_dim = meta.integer(f"{arch}.attention.key_length", hidden // heads)
    vocab_size = int(names["token_embd.weight"].shape[0])
    if meta.get(f"{arch}.vocab_size") is not None and meta.integer(f"{arch}.vocab_size") != vocab_size:
        raise ModelError(
            f"{path}: {arch}.vocab_size = {meta.get(f'{arch}.vocab_size'):,} but token_embd.weight has "
            f"{vocab_size:,} rows; the metadata and the weights disagree: {_FIX}"
        )
    layers = meta.integer(f"{arch}.block_count")
    _check_blocks(layers, names, f"{arch}.block_count", path)
    _check_vocabulary(meta, vocab_size, path)
    config = {
        "model_type": family.model_type,
        "vocab_size": vocab_size,
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": meta.per_layer(f"{arch}.attention.head_count_kv", heads),
        "head_dim": head_dim,
        "intermediate_size": meta.per_layer(f"{arch}.feed_forward_length"),
        "max_position_embeddings": meta.integer(f"{arch}.context_length"),
        "rms_norm_eps": meta.number(f"{arch}.attention.layer_norm_rms_epsilon"),
        "rope_theta": meta.number(f"{arch}.rope.freq_base", 10000.0),
        "partial_rotary_factor": meta.integer(f"{arch}.rope.dimension_count", head_dim) / head_dim,
        "hidden_act": gguf_format.activation,
        "tie_word_embeddings": "output.weight" not in names,
        "attention_bias": arch == "llama" and "blk.0.attn_q.bias" in names,
        "bos_token_id": meta.token_id("tokenizer.ggml.bos_token_id"),
        "eos_token_id": [meta.token_id(key) for key in _STOP_KEYS if meta.get(key) is not None],
        "pad_token_id": meta.token_id("tokenizer.ggml.padding_token_id"),
    }
    scaling = meta.get(f"{arch}.rope.scaling.type", "none")
    if scaling != "none":  # from_hf_config refuses every type but the ones the decoder implements
        config["rope_scaling"] = {"rope_type": scaling, "factor": meta.number(f"{arch}.rope.scaling.factor", 1.0)}
    config.update(gguf_format.config(meta, arch, config, names))
    return config


def _check_blocks(count: int, names: dict, key: str, path: pathlib.Path) -> None:
    """The metadata's layer count is the number of blocks the file holds tensors for (a larger count would make
    every layer list that long before failing; a smaller one would silently drop layers)."""
    blocks = {int(match.group(1)) for name in names if (match := _BLOCK.match(name))}
    held = max(blocks) + 1 if blocks else 0
    if count != held:
        raise ModelError(
            f"{path}: {key} = {count:,}, but the file holds tensors for {held} blocks (blk.0 to blk.{held - 1}); "
            f"the metadata and the weights disagree: {_FIX}"
        )


def _check_vocabulary(meta: _Metadata, vocab_size: int, path: pathlib.Path) -> None:
    """The tokenizer's tokens are the embedding's rows, as llama.cpp requires, and every special token id names one
    of them (a wrong id would silently pick another token, and an id beyond the rows reads a clamped embedding)."""
    tokens = meta.get("tokenizer.ggml.tokens")
    if tokens is None:
        return
    if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
        raise ModelError(f"{path}: tokenizer.ggml.tokens must be a list of strings; {_FIX}")
    if len(tokens) != vocab_size:
        raise ModelError(
            f"{path}: tokenizer.ggml.tokens has {len(tokens):,} tokens but token_embd.weight has {vocab_size:,} rows; "
            f"llama.cpp requires one row per token: {_FIX}"
        )
    for key in ("tokenizer.ggml.scores", "tokenizer.ggml.token_type"):
        values = meta.get(key)
        if values is not None and (not isinstance(values, list) or len(values) != len(tokens)):
            raise ModelError(f"{path}: {key} must be a list of one value per token ({len(tokens):,}); {_FIX}")
    merges = meta.get("tokenizer.ggml.merges")
    if merges is not None and (not isinstance(merges, list) or not all(isinstance(m, str) for m in merges)):
        raise ModelError(f"{path}: tokenizer.ggml.merges must be a list of strings; {_FIX}")
    for key in _TOKEN_ID_KEYS:
        token = meta.token_id(key)
        if token is not None and token >= len(tokens):
            raise ModelError(f"{path}: {key} = {token:,} is not one of the {len(tokens):,} tokens; {_FIX}")


def read_spec(reader, path: pathlib.Path, attention: str = "auto") -> ModelSpec:
    return from_hf_config(hf_config(reader, path), source=f"{path} (GGUF metadata)", attention=attention)


def tensor_index(reader, spec: ModelSpec, path: pathlib.Path) -> dict[str, tuple[str, GGUFTensorInfo]]:
    """HF tensor name (without the "model." prefix) -> (GGUF name, info), for every tensor `spec` needs.

    Missing tensors and unsupported quantisation types are reported here, before anything is dequantised.
    """
    import gguf

    arch = {name: arch for arch, name in gguf.MODEL_ARCH_NAMES.items()}[_gguf_format(spec.model_type).arch]
    name_map = gguf.get_tensor_name_map(arch, spec.num_layers)
    stored = {tensor.name: tensor for tensor in reader.tensors}
    index = {}
    for entry in checkpoint_entries(spec):
        for layer in range(spec.num_layers) if entry.per_layer else [None]:
            if entry.experts:
                name = f"blk.{layer}.{_EXPERT_TENSORS[entry.path[-1]]}.weight"
                tensor = _stored_tensor(stored, name, name, spec, path)
                for expert, source in enumerate(entry.sources(layer)):
                    index[source] = (name, GGUFTensorInfo(path, tensor.shape[1:], tensor, expert))
                continue
            (source,) = entry.sources(layer)
            hf_name = source if source.startswith("lm_head.") else DEFAULT_PREFIX + source
            name = name_map.get_name(hf_name, try_suffixes=(".weight", ".bias"))
            tensor = _stored_tensor(stored, name, hf_name, spec, path)
            index[source] = (name, GGUFTensorInfo(path, tensor.shape, tensor))
    return index


def _stored_tensor(stored: dict, name: str | None, hf_name: str, spec: ModelSpec, path: pathlib.Path) -> GGUFTensor:
    """The file's tensor `name`, refusing a missing one or a quantisation type the loader cannot read."""
    tensor = stored.get(name)
    if tensor is None:
        raise ModelError(
            f"{path}: missing tensor {name or hf_name!r} (the {spec.model_type} model needs it "
            f"for {hf_name}); the file is incomplete or was converted for another architecture"
        )
    if tensor.tensor_type.name not in QUANT_TYPES:
        raise ModelError(
            f"{path}: tensor {name!r} is stored as {tensor.tensor_type.name}, which the GGUF "
            f"loader does not dequantise; supported types: {', '.join(QUANT_TYPES)}. "
            "Use a file quantised to one of them"
        )
    return tensor


def load_gguf_tokenizer(reader: GGUFFile, path: pathlib.Path):
    """The fast tokenizer of the GGUF metadata (chat template kept), built without torch; None without one."""
    return gguf_tokenizer(reader.metadata, path)
