"""Write a torch transformers model as a GGUF file the way llama.cpp's convert_hf_to_gguf.py does: its tensor
names, its q/k row permutation for llama, its +1 on gemma norm weights, 1-D tensors in F32 and the matrices in
the chosen quantisation type."""

import math
import re

import gguf
import numpy as np
import torch

from helpers import gguf_name, llama_cpp_permute


def random_k_blocks(qtype: gguf.GGMLQuantizationType, rows: int, cols: int, rng) -> np.ndarray:
    """Raw K-quant rows (random codes and sub-block scales) with small finite fp16 super-block scales.

    Byte offsets of the fp16 fields follow llama.cpp's block_qN_K structs (ggml-common.h).
    """
    block_size, type_size = gguf.GGML_QUANT_SIZES[qtype]
    blocks = rng.integers(0, 256, size=(rows * cols // block_size, type_size), dtype=np.uint8)
    fp16_fields = {"Q2_K": (80, 82), "Q3_K": (108,), "Q4_K": (0, 2), "Q5_K": (0, 2), "Q6_K": (208,)}[qtype.name]
    for offset in fp16_fields:
        blocks[:, offset : offset + 2] = np.full(len(blocks), 2e-4, np.float16).view(np.uint8).reshape(-1, 2)
    return blocks.reshape(rows, -1)


def store(weight: np.ndarray, qtype: gguf.GGMLQuantizationType, rng) -> np.ndarray:
    """The tensor as the file holds it: floats for F32/F16, raw block bytes [rows, bytes] otherwise."""
    if qtype.name in ("Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"):  # gguf-py cannot quantise these: random blocks
        return random_k_blocks(qtype, *weight.shape, rng)
    return gguf.quants.quantize(weight, qtype)


def write_gguf(path, model, arch: str, qtype=gguf.GGMLQuantizationType.F32, seed=0) -> None:
    """Write `model` as llama.cpp would; quantised weights are written back into `model` dequantised (gguf's
    reference), so the torch model is exactly the model the file holds."""
    config, rng = model.config, np.random.default_rng(seed)
    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_block_count(config.num_hidden_layers)
    writer.add_context_length(config.max_position_embeddings)
    writer.add_embedding_length(config.hidden_size)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_head_count(config.num_attention_heads)
    writer.add_head_count_kv(config.num_key_value_heads)
    writer.add_key_length(config.head_dim)
    writer.add_value_length(config.head_dim)
    rope = config.rope_parameters
    if arch == "gemma3":  # global layers' base as the rope base, the sliding layers' as the SWA base
        writer.add_rope_freq_base(rope["full_attention"]["rope_theta"])
        writer.add_rope_freq_base_swa(rope["sliding_attention"]["rope_theta"])
        writer.add_sliding_window_pattern([kind == "sliding_attention" for kind in config.layer_types])
    else:
        writer.add_rope_freq_base(rope["rope_theta"])
    if rope.get("rope_type") == "longrope":  # convert_hf_to_gguf.py's Phi3MiniModel: factors as tensors
        writer.add_tensor("rope_factors_long.weight", np.asarray(rope["long_factor"], np.float32))
        writer.add_tensor("rope_factors_short.weight", np.asarray(rope["short_factor"], np.float32))
        writer.add_rope_scaling_orig_ctx_len(rope["original_max_position_embeddings"])
        scale = config.max_position_embeddings / rope["original_max_position_embeddings"]
        writer.add_rope_scaling_attn_factors(
            math.sqrt(1 + math.log(scale) / math.log(rope["original_max_position_embeddings"]))
        )
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    writer.add_bos_token_id(config.bos_token_id)
    writer.add_eos_token_id(config.eos_token_id)
    writer.add_eot_token_id(5)
    if arch == "gemma2":
        writer.add_attn_logit_softcapping(config.attn_logit_softcapping)
        writer.add_final_logit_softcapping(config.final_logit_softcapping)
    if arch in ("gemma2", "gemma3") or (arch == "phi3" and config.sliding_window):
        writer.add_sliding_window(config.sliding_window)
    if getattr(config, "num_experts_per_tok", None):  # llama.cpp stacks each layer's experts in one tensor
        writer.add_expert_count(config.num_local_experts)
        writer.add_expert_used_count(config.num_experts_per_tok)
        if arch == "qwen3moe":
            writer.add_expert_feed_forward_length(config.moe_intermediate_size)
    tied = config.tie_word_embeddings
    with torch.no_grad():
        for name, param in model.state_dict().items():
            if name == "lm_head.weight" and tied:
                continue
            weight = param.numpy().astype(np.float32)
            if weight.ndim == 3:  # transformers' fused experts: [E, 2F, D] gate and up, [E, D, F] down
                write_experts(writer, name, weight)
                continue
            if weight.ndim == 2:  # llama.cpp keeps 1-D tensors in F32 and quantises the matrices
                stored = store(weight, qtype, rng)
                param.copy_(torch.from_numpy(gguf.quants.dequantize(stored, qtype).reshape(weight.shape)))
            else:
                stored = weight + 1.0 if arch.startswith("gemma") and name.endswith("norm.weight") else weight
            if arch == "llama" and ".q_proj." in name:
                stored = llama_cpp_permute(stored, config.num_attention_heads, config.num_attention_heads)
            if arch == "llama" and ".k_proj." in name:
                stored = llama_cpp_permute(stored, config.num_attention_heads, config.num_key_value_heads)
            raw = qtype if weight.ndim == 2 and qtype.name not in ("F32", "F16") else None
            writer.add_tensor(gguf_name(name, arch), stored, raw_dtype=raw)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def write_experts(writer, name: str, weight: np.ndarray) -> None:
    layer = re.search(r"layers\.(\d+)\.", name).group(1)
    if name.endswith("gate_up_proj"):
        width = weight.shape[1] // 2
        writer.add_tensor(f"blk.{layer}.ffn_gate_exps.weight", np.ascontiguousarray(weight[:, :width]))
        writer.add_tensor(f"blk.{layer}.ffn_up_exps.weight", np.ascontiguousarray(weight[:, width:]))
    else:
        writer.add_tensor(f"blk.{layer}.ffn_down_exps.weight", weight)
