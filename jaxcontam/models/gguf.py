"""Read a GGUF checkpoint (llama.cpp's format) as a Hugging Face-style config and tensor index.

Metadata and the tensor table are read in one pass by `jaxcontam.models.gguf_file` (tensor data stays
memory-mapped); tensors are dequantised by the `gguf` package (llama.cpp's reference code: numpy, no torch), and
the tokenizer is built from the metadata by `jaxcontam.models.gguf_tokenizer`. The metadata becomes the
config.json dict `from_hf_config` already understands, and every tensor the HF name table needs is found under its
GGUF name (gguf's own name map), so the existing layout and sharding code places the weights.
Each tensor is dequantised to float32 on demand, and llama.cpp's storage changes are undone: the row
permutation of llama q/k projections (its rotary layout) and the +1 it adds to gemma norm weights.
"""

from __future__ import annotations

import dataclasses
import pathlib

import numpy as np

from jaxcontam.errors import ModelError
from jaxcontam.models.checkpoint_map import DEFAULT_PREFIX, checkpoint_entries
from jaxcontam.models.gguf_file import GGUFFile, GGUFTensor, read_gguf
from jaxcontam.models.gguf_tokenizer import gguf_tokenizer
from jaxcontam.models.spec import ModelSpec, from_hf_config

# llama.cpp writes mistral models as "llama", and mixtral as "llama" with expert tensors
ARCHITECTURES = ("llama", "qwen2", "qwen3", "qwen3moe", "gemma", "gemma2", "gemma3", "olmo2", "phi3")
MODEL_TYPES = {"gemma3": "gemma3_text", "qwen3moe": "qwen3_moe"}  # GGUF architecture -> HF model_type where they differ
GGUF_ARCHITECTURES = {"mixtral": "llama", **{model_type: arch for arch, model_type in MODEL_TYPES.items()}}
# expert weights: stacked [E, ...] in one GGUF tensor per layer
_EXPERT_TENSORS = {"w_gate": "ffn_gate_exps", "w_up": "ffn_up_exps", "w_down": "ffn_down_exps"}
_GEMMAS = ("gemma", "gemma2", "gemma3_text")
QUANT_TYPES = ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K")
_ACTIVATIONS = {"gemma": "gelu_pytorch_tanh", "gemma2": "gelu_pytorch_tanh", "gemma3": "gelu_pytorch_tanh"}
_STOP_KEYS = ("tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id")


@dataclasses.dataclass(frozen=True)
class GGUFTensorInfo:
    """One stored tensor: `shape` in Hugging Face (row-major numpy) order; `tensor` the file's entry; `expert`: the
    index of one expert's slice of a stacked expert tensor (whose `shape` is then the slice's)."""

    file: pathlib.Path
    shape: tuple[int, ...]
    tensor: GGUFTensor = dataclasses.field(compare=False, repr=False)
    expert: int | None = None


def open_reader(path: pathlib.Path) -> GGUFFile:
    """The file's metadata and tensor table, read once and shared by config, weights and tokenizer."""
    return read_gguf(path)


class _Metadata:
    """Scalar metadata fields of one GGUF file, naming the file and key in every error."""

    def __init__(self, reader: GGUFFile, path: pathlib.Path):
        self.fields = reader.metadata
        self.path = path

    def get(self, key: str, default=None):
        return self.fields.get(key, default)

    def require(self, key: str):
        value = self.get(key)
        if value is None:
            raise ModelError(f"{self.path}: GGUF metadata has no {key!r}; the file is incomplete: re-convert it "
                             "with llama.cpp's convert_hf_to_gguf.py")
        return value


def _uniform(value, key: str, path: pathlib.Path) -> int:
    """Per-layer metadata (a list in some files) that must be the same for every layer here."""
    if isinstance(value, list):
        if len(set(value)) != 1:
            raise ModelError(f"{path}: {key} differs between layers ({sorted(set(value))}); jaxcontam's decoders "
                             "need one value for all layers")
        value = value[0]
    return int(value)


def hf_config(reader, path: pathlib.Path) -> dict:
    """The GGUF metadata as the config.json dict of the same Hugging Face model."""
    meta = _Metadata(reader, path)
    arch = meta.require("general.architecture")
    if arch not in ARCHITECTURES:
        raise ModelError(f"{path}: GGUF architecture {arch!r} is not supported; supported architectures: "
                         f"{', '.join(ARCHITECTURES)} (mistral and mixtral models are stored as 'llama')")
    if meta.get(f"{arch}.expert_count") and arch not in ("llama", "qwen3moe"):
        raise ModelError(f"{path}: a {arch} GGUF file with {meta.get(f'{arch}.expert_count')} experts; "
                         "mixture-of-experts files load for llama (mixtral) and qwen3moe only")
    names = {tensor.name: tensor for tensor in reader.tensors}
    if "rope_freqs.weight" in names:
        raise ModelError(f"{path}: the file stores per-frequency rope factors (rope_freqs.weight, Llama 3.1-style "
                         "rope scaling), which the GGUF loader does not read; load the Hugging Face safetensors "
                         "checkpoint instead")
    if "token_embd.weight" not in names:
        raise ModelError(f"{path}: no token_embd.weight tensor; the file is incomplete: re-convert it")
    hidden = int(meta.require(f"{arch}.embedding_length"))
    heads = _uniform(meta.require(f"{arch}.attention.head_count"), "attention.head_count", path)
    head_dim = int(meta.get(f"{arch}.attention.key_length", hidden // heads))
    config = {
        "model_type": MODEL_TYPES.get(arch, arch),
        "vocab_size": int(names["token_embd.weight"].shape[0]),
        "hidden_size": hidden,
        "num_hidden_layers": int(meta.require(f"{arch}.block_count")),
        "num_attention_heads": heads,
        "num_key_value_heads": _uniform(meta.get(f"{arch}.attention.head_count_kv", heads),
                                        "attention.head_count_kv", path),
        "head_dim": head_dim,
        "intermediate_size": _uniform(meta.require(f"{arch}.feed_forward_length"), "feed_forward_length", path),
        "max_position_embeddings": int(meta.require(f"{arch}.context_length")),
        "rms_norm_eps": float(meta.require(f"{arch}.attention.layer_norm_rms_epsilon")),
        "rope_theta": float(meta.get(f"{arch}.rope.freq_base", 10000.0)),
        "partial_rotary_factor": int(meta.get(f"{arch}.rope.dimension_count", head_dim)) / head_dim,
        "hidden_act": _ACTIVATIONS.get(arch, "silu"),
        "tie_word_embeddings": "output.weight" not in names,
        "attention_bias": arch == "llama" and "blk.0.attn_q.bias" in names,
        "bos_token_id": meta.get("tokenizer.ggml.bos_token_id"),
        "eos_token_id": [int(meta.get(key)) for key in _STOP_KEYS if meta.get(key) is not None],
        "pad_token_id": meta.get("tokenizer.ggml.padding_token_id"),
    }
    scaling = meta.get(f"{arch}.rope.scaling.type", "none")
    if scaling != "none":  # from_hf_config refuses every type but the ones the decoder implements
        config["rope_scaling"] = {"rope_type": scaling, "factor": float(meta.get(f"{arch}.rope.scaling.factor", 1.0))}
    if arch in ("gemma2", "gemma3"):
        config.update(_gemma2_fields(meta, arch, config))
    if arch == "gemma3":
        config.update(_gemma3_fields(meta, arch))
    if arch == "phi3":
        config.update(_phi3_fields(meta, arch, names))
    if meta.get(f"{arch}.expert_count"):
        config.update(_expert_fields(meta, arch))
    return config


def _expert_fields(meta: _Metadata, arch: str) -> dict:
    """Mixture of experts: llama with experts is mixtral; qwen3moe's experts have their own width."""
    fields = {"num_local_experts": int(meta.get(f"{arch}.expert_count")),
              "num_experts_per_tok": int(meta.require(f"{arch}.expert_used_count"))}
    if arch == "llama":
        return {**fields, "model_type": "mixtral"}
    return {**fields, "moe_intermediate_size": int(meta.require(f"{arch}.expert_feed_forward_length")),
            "norm_topk_prob": bool(meta.get(f"{arch}.expert_weights_norm", True))}


def _gemma2_fields(meta: _Metadata, arch: str, config: dict) -> dict:
    """gemma2/3: soft-caps, sliding window and the attention scale, which llama.cpp derives as the HF config does."""
    scale = meta.get(f"{arch}.attention.scale")
    if scale is not None:
        scalar = float(scale) ** -2
    elif config["num_hidden_layers"] == {"gemma2": 46, "gemma3": 62}[arch]:  # 27b: by hidden/heads, else head_dim
        scalar = config["hidden_size"] / config["num_attention_heads"]
    else:
        scalar = config["head_dim"]
    return {"attn_logit_softcapping": meta.get(f"{arch}.attn_logit_softcapping"),
            "final_logit_softcapping": meta.get(f"{arch}.final_logit_softcapping"),
            "sliding_window": meta.get(f"{arch}.attention.sliding_window"),
            "query_pre_attn_scalar": scalar}


def _gemma3_fields(meta: _Metadata, arch: str) -> dict:
    """Gemma 3's sliding layers: llama.cpp's pattern (every 6th layer global unless the file says otherwise) and
    their own rope base (10000 unless stored); rope scaling, when stored, applies to the global layers."""
    pattern = meta.get(f"{arch}.attention.sliding_window_pattern", 6)
    fields = {"rope_local_base_freq": float(meta.get(f"{arch}.rope.freq_base_swa", 10000.0))}
    if isinstance(pattern, list):  # one flag per layer: True = sliding
        fields["layer_types"] = ["sliding_attention" if flag else "full_attention" for flag in pattern]
    else:
        fields["sliding_window_pattern"] = int(pattern)
    return fields


def _phi3_fields(meta: _Metadata, arch: str, names: dict) -> dict:
    """Phi-3's sliding window and, when the file stores per-frequency factors, its LongRoPE scaling."""
    fields = {"sliding_window": meta.get(f"{arch}.attention.sliding_window")}
    if "rope_factors_long.weight" in names and "rope_factors_short.weight" in names:
        import gguf

        def factors(name):
            tensor = names[name]
            return np.asarray(gguf.quants.dequantize(tensor.data, tensor.tensor_type), np.float32).ravel().tolist()

        fields["rope_scaling"] = {
            "rope_type": "longrope", "long_factor": factors("rope_factors_long.weight"),
            "short_factor": factors("rope_factors_short.weight"),
            "original_max_position_embeddings": meta.require(f"{arch}.rope.scaling.original_context_length"),
            "attention_factor": meta.get(f"{arch}.rope.scaling.attn_factor")}
    return fields


def read_spec(reader, path: pathlib.Path) -> ModelSpec:
    return from_hf_config(hf_config(reader, path), source=f"{path} (GGUF metadata)")


def tensor_index(reader, spec: ModelSpec, path: pathlib.Path) -> dict[str, tuple[str, GGUFTensorInfo]]:
    """HF tensor name (without the "model." prefix) -> (GGUF name, info), for every tensor `spec` needs.

    Missing tensors and unsupported quantisation types are reported here, before anything is dequantised.
    """
    import gguf

    arch = {name: arch for arch, name in gguf.MODEL_ARCH_NAMES.items()}[
        GGUF_ARCHITECTURES.get(spec.model_type, spec.model_type)]
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
            source, = entry.sources(layer)
            hf_name = source if source.startswith("lm_head.") else DEFAULT_PREFIX + source
            name = name_map.get_name(hf_name, try_suffixes=(".weight", ".bias"))
            tensor = _stored_tensor(stored, name, hf_name, spec, path)
            index[source] = (name, GGUFTensorInfo(path, tensor.shape, tensor))
    return index


def _stored_tensor(stored: dict, name: str | None, hf_name: str, spec: ModelSpec, path: pathlib.Path) -> GGUFTensor:
    """The file's tensor `name`, refusing a missing one or a quantisation type the loader cannot read."""
    tensor = stored.get(name)
    if tensor is None:
        raise ModelError(f"{path}: missing tensor {name or hf_name!r} (the {spec.model_type} model needs it "
                         f"for {hf_name}); the file is incomplete or was converted for another architecture")
    if tensor.tensor_type.name not in QUANT_TYPES:
        raise ModelError(f"{path}: tensor {name!r} is stored as {tensor.tensor_type.name}, which the GGUF "
                         f"loader does not dequantise; supported types: {', '.join(QUANT_TYPES)}. "
                         "Use a file quantised to one of them")
    return tensor


def unpermute_rotary_rows(weight: np.ndarray, heads: int) -> np.ndarray:
    """Undo llama.cpp's q/k row order: per head it stores row pairs (i, i + D/2) interleaved.

    llama.cpp's converter views each head's D rows as [2, D/2] and transposes that to [D/2, 2], so the stored
    row 2i + j is the original row j * D/2 + i; this reads the rows back in the original order.
    """
    rows = weight.shape[0]
    half = rows // heads // 2
    return weight.reshape(heads, half, 2, *weight.shape[1:]).swapaxes(1, 2).reshape(weight.shape)


class GGUFTensorReader:
    """Dequantises one GGUF tensor at a time to float32 in the Hugging Face layout; a stacked expert tensor is
    dequantised once and kept while its experts are read one after another."""

    def __init__(self, spec: ModelSpec):
        self.spec = spec
        self._experts: tuple[str, np.ndarray] | None = None

    def read(self, name: str, info: GGUFTensorInfo) -> np.ndarray:
        if info.expert is not None:
            if self._experts is None or self._experts[0] != name:
                self._experts = (name, self._dequantised(info.tensor, info.tensor.shape))
            return self._experts[1][info.expert]
        weight = self._dequantised(info.tensor, info.shape)
        permuted = self.spec.model_type in ("llama", "mixtral")  # llama.cpp's rotary row order
        if permuted and ".attn_q." in name:
            weight = unpermute_rotary_rows(weight, self.spec.num_heads)
        elif permuted and ".attn_k." in name:
            weight = unpermute_rotary_rows(weight, self.spec.num_kv_heads)
        elif self.spec.model_type in _GEMMAS and name.endswith("norm.weight"):
            weight = weight - 1.0  # llama.cpp stores gemma's (1 + w) norm scale; the decoder adds the 1 itself
        return weight

    @staticmethod
    def _dequantised(tensor: GGUFTensor, shape) -> np.ndarray:
        import gguf

        return np.asarray(gguf.quants.dequantize(tensor.data, tensor.tensor_type), np.float32).reshape(shape)


def load_gguf_tokenizer(reader: GGUFFile, path: pathlib.Path):
    """The fast tokenizer of the GGUF metadata (chat template kept), built without torch; None without one."""
    return gguf_tokenizer(reader.metadata, path)
