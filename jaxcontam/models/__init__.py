"""Our own JAX decoders for Hugging Face checkpoints (safetensors or GGUF): llama, mistral, qwen2, qwen3, gemma,
gemma2, gemma3_text, olmo2, phi3, mixtral, qwen3_moe, gpt2, gpt_neox, granite.

Layers, bottom up: `config` (the typed `DecoderConfig`); the shared core `layers`, `attention`, `experts`,
`decoder`; `hf_config` and `weight_entries` (config reading and name-table pieces the families share); one module
per family in `families` (config reader, checkpoint map, GGUF specifics) and its registry; `spec` (`ModelSpec`,
`from_hf_config`), `checkpoint_map`, `gguf`, `tokenizer_files` (which GGUF file a path names, the fast tokenizer
loader; the n-gram units use them too), `loading` on top. `tests/test_layering.py` holds the order.

Interface used by `jaxcontam.engine` (all functions pure and jit-able with `spec` static):

    model = jaxcontam.load_model(path_or_hub_id, dtype="float32" | "bfloat16", mesh=None, fsdp=False) -> Model
                      path_or_hub_id: HF checkpoint directory or hub id, a .gguf file, or a directory holding one
                      (GGUF: llama/mistral/mixtral, qwen2, qwen3, qwen3moe, gemma, gemma2, gemma3, olmo2, phi3;
                      dequantised, see models.gguf)
    model.config      ModelSpec: frozen, hashable; vocab_size, hidden_size, num_layers, num_heads, num_kv_heads,
                      head_dim, max_position, final_logit_softcap (float | None), bos/eos/pad_token_id
                      (eos_token_id: one id, or a tuple of every stop id from config.json, generation_config.json,
                      the tokenizer, the chat template's end-of-turn token and GGUF metadata; eos_token_ids: always
                      a tuple), layer_windows, ..., hf_config (the raw config dict, excluded from hashing)
    model.tokenizer   transformers fast tokenizer from the same directory (or the GGUF metadata), or None
    model.params      weights pytree: nested dicts of jax.Arrays, per-layer tensors stacked on axis 0 under
                      params["layers"]; sharded over the mesh's "model" axis (heads / experts / MLP / vocab) when it has
                      more than one device, replicated otherwise; fsdp=True also splits each over "data"
    model.mesh        jax.sharding.Mesh with axes ("data", "model"); default: every device on "data"
    model.logprobs(token_ids: list[list[int]]) -> list[np.ndarray]   float32 [len-1] per sequence (reference path)

    hidden_states(params, spec, tokens, positions, segment_ids) -> [B, T, D] final-normed hidden, weight dtype
        int32 [B, T] inputs; segment 0 = padding, 1..k = sequences packed in a row (each with positions from 0);
        attention is causal by position, within a segment, and within the layer's sliding window.
    output_projection(params, spec) -> (weight [V, D], bias None)   always the [V, D] layout
    logits_from_hidden(params, spec, hidden [..., D]) -> float32 [..., V], soft-capped when spec says so
    split_layers(params) -> params with "layers" a list of per-layer weight dicts (split once, outside jit)
    init_cache(spec, batch, max_len, dtype) -> {"k", "v": L-lists of [B, Hkv, max_len, Dh], "pos": int32 [B, max_len]
                      (-1 = empty)}
    decode(params, spec, tokens [B, t], positions [B, t], cache, cache_index) -> (hidden [B, t, D], cache)
        params: model.params or split_layers(model.params) (fast: layers unrolled over per-layer weights);
        writes the t new keys/values at slots cache_index.. (a traced int is fine); a query at position p sees
        slots whose stored position q satisfies 0 <= q <= p (and p - q < window on sliding layers); tokens with
        position < 0 are padding: never attended to.
"""

from jaxcontam.mesh import make_mesh
from jaxcontam.models.decoder import (
    decode,
    hidden_states,
    init_cache,
    logits_from_hidden,
    output_projection,
    split_layers,
)
from jaxcontam.models.loading import load_model
from jaxcontam.models.model import Model
from jaxcontam.models.spec import SUPPORTED_MODEL_TYPES, ModelSpec, from_hf_config

__all__ = [
    "SUPPORTED_MODEL_TYPES",
    "Model",
    "ModelSpec",
    "decode",
    "from_hf_config",
    "hidden_states",
    "init_cache",
    "load_model",
    "logits_from_hidden",
    "make_mesh",
    "output_projection",
    "split_layers",
]
