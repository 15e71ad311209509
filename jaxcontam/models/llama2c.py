"""Convert a llama2.c checkpoint and tokenizer into a Hugging Face llama directory.

Model file (llama2.c legacy export): 7 int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size,
seq_len; a negative vocab_size means a separate classifier), then float32 tensors in order: token embedding,
attention norms, wq, wk, wv, wo, ffn norms, w1, w2, w3 (each stacked over layers, torch [out, in] layout),
final norm, the rope tables (skipped) and, when unshared, the classifier. llama2.c rotates adjacent pairs of
each head while Hugging Face rotates halves, so wq and wk rows are permuted within each head.

Tokenizer file: int32 max_token_length, then per token float32 score, int32 byte length, bytes. It is a
sentencepiece BPE: the text gets a leading space, spaces are pieces' "▁", characters outside the vocabulary
fall back to <0xXX> byte tokens, and the adjacent pair whose merged piece scores highest merges first. A
`tokenizers` BPE with merges ranked by merged-piece score and byte fallback encodes the same way.
"""

from __future__ import annotations

import json
import math
import pathlib
import struct

import numpy as np

from jaxcontam.errors import ModelError

SPACE = "\u2581"  # sentencepiece's visible space
SPECIALS = {0: "<unk>", 1: "<s>", 2: "</s>"}
_HEADER_FIELDS: tuple[str, ...] = ("dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len")


def _read_header(data: bytes, path: pathlib.Path) -> dict[str, int]:
    if len(data) < 28:
        raise ModelError(f"{path}: {len(data)} bytes is too short for a llama2.c checkpoint (28-byte header)")
    header = dict(zip(_HEADER_FIELDS, struct.unpack("<7i", data[:28]), strict=True))
    sizes_ok = all(v > 0 for k, v in header.items() if k != "vocab_size") and header["vocab_size"] != 0
    if (
        not sizes_ok
        or header["dim"] % header["n_heads"]
        or header["n_heads"] % header["n_kv_heads"]
        or header["dim"] // header["n_heads"] % 2
    ):
        raise ModelError(
            f"{path}: header {header} is not a llama2.c config (positive sizes, dim divisible by "
            "n_heads into heads of an even size, n_heads by n_kv_heads); is this a llama2.c legacy-format model file?"
        )
    return header


def _permute_for_hf(w: np.ndarray, heads: int) -> np.ndarray:
    """Rows of each head from interleaved pairs (x0, y0, x1, y1, ...) to halves (x0, x1, ..., y0, y1, ...)."""
    rows, cols = w.shape
    return w.reshape(heads, rows // heads // 2, 2, cols).transpose(0, 2, 1, 3).reshape(rows, cols)


def read_llama2c_model(path: pathlib.Path) -> tuple[dict, dict[str, np.ndarray]]:
    """(HF llama config dict, HF-named float32 tensors) from a llama2.c model file."""
    data = path.read_bytes()
    h = _read_header(data, path)
    shared = h["vocab_size"] > 0
    vocab, dim, hidden, layers = abs(h["vocab_size"]), h["dim"], h["hidden_dim"], h["n_layers"]
    head = dim // h["n_heads"]
    kv_dim = head * h["n_kv_heads"]
    shapes = [
        ("embed", (vocab, dim)),
        ("attn_norm", (layers, dim)),
        ("wq", (layers, dim, dim)),
        ("wk", (layers, kv_dim, dim)),
        ("wv", (layers, kv_dim, dim)),
        ("wo", (layers, dim, dim)),
        ("ffn_norm", (layers, dim)),
        ("w1", (layers, hidden, dim)),
        ("w2", (layers, dim, hidden)),
        ("w3", (layers, hidden, dim)),
        ("final_norm", (dim,)),
        ("rope", (2, h["seq_len"], head // 2)),
    ]
    if not shared:
        shapes.append(("classifier", (vocab, dim)))
    expected = 28 + 4 * sum(math.prod(s) for _, s in shapes)  # Python ints: no overflow for any header
    if len(data) != expected:
        raise ModelError(
            f"{path}: {len(data)} bytes, but header {h} implies {expected} for a llama2.c legacy "
            "float32 export; re-export it with llama2.c export.py --version 0"
        )
    flat = np.frombuffer(data, "<f4", offset=28)
    arrays, offset = {}, 0
    for name, shape in shapes:
        size = int(np.prod(shape))
        arrays[name] = flat[offset : offset + size].reshape(shape)
        offset += size
    tensors = {"model.embed_tokens.weight": arrays["embed"], "model.norm.weight": arrays["final_norm"]}
    for i in range(layers):
        p = f"model.layers.{i}."
        tensors.update(
            {
                p + "input_layernorm.weight": arrays["attn_norm"][i],
                p + "self_attn.q_proj.weight": _permute_for_hf(arrays["wq"][i], h["n_heads"]),
                p + "self_attn.k_proj.weight": _permute_for_hf(arrays["wk"][i], h["n_kv_heads"]),
                p + "self_attn.v_proj.weight": arrays["wv"][i],
                p + "self_attn.o_proj.weight": arrays["wo"][i],
                p + "post_attention_layernorm.weight": arrays["ffn_norm"][i],
                p + "mlp.gate_proj.weight": arrays["w1"][i],
                p + "mlp.down_proj.weight": arrays["w2"][i],
                p + "mlp.up_proj.weight": arrays["w3"][i],
            }
        )
    if not shared:
        tensors["lm_head.weight"] = arrays["classifier"]
    config = {
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "vocab_size": vocab,
        "hidden_size": dim,
        "intermediate_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": h["n_heads"],
        "num_key_value_heads": h["n_kv_heads"],
        "head_dim": head,
        "max_position_embeddings": h["seq_len"],
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "hidden_act": "silu",
        "tie_word_embeddings": shared,
        "attention_bias": False,
        "mlp_bias": False,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "dtype": "float32",
    }
    return config, {k: np.ascontiguousarray(v, np.float32) for k, v in tensors.items()}


def read_llama2c_tokenizer(path: pathlib.Path, vocab_size: int) -> list[tuple[str, float]]:
    """(piece with "▁" for spaces, score) per token id from a llama2.c tokenizer file."""
    data = path.read_bytes()
    pieces, offset = [], 4
    for i in range(vocab_size):
        if offset + 8 > len(data):
            raise ModelError(
                f"{path}: ends after {i} tokens but the model has vocab_size {vocab_size}: "
                "use the tokenizer the model was trained with"
            )
        score, length = struct.unpack_from("<fi", data, offset)
        if not 0 <= length <= len(data) - offset - 8:
            raise ModelError(
                f"{path}: token {i} says it is {length} bytes long, but {len(data) - offset - 8} bytes are left: "
                "the file is damaged or not a llama2.c tokenizer"
            )
        raw = data[offset + 8 : offset + 8 + length]
        offset += 8 + length
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ModelError(f"{path}: token {i} is not valid UTF-8 ({raw!r})") from exc
        pieces.append((SPECIALS.get(i, text.replace(" ", SPACE)), score))
    if offset != len(data):
        raise ModelError(
            f"{path}: {len(data) - offset} bytes left after {vocab_size} tokens: the tokenizer "
            "does not match the model's vocab_size"
        )
    return pieces


def build_tokenizer(pieces: list[tuple[str, float]]):
    """A `tokenizers.Tokenizer` (BPE, byte fallback, sentencepiece spaces, BOS added) for these pieces."""
    from tokenizers import (
        AddedToken,
        Tokenizer,
        decoders,
        models,
        normalizers,
        processors,
    )

    vocab = {piece: i for i, (piece, _) in enumerate(pieces)}
    mergeable = [i for i, (p, _) in enumerate(pieces) if i not in SPECIALS and not p.startswith("<0x") and len(p) > 1]
    # Pairs that form each merged piece, strongest (highest score) piece first.
    merges = []
    for i in sorted(mergeable, key=lambda i: (-pieces[i][1], i)):
        piece = pieces[i][0]
        merges += [(piece[:k], piece[k:]) for k in range(1, len(piece)) if piece[:k] in vocab and piece[k:] in vocab]
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tokenizer.normalizer = normalizers.Sequence([normalizers.Prepend(SPACE), normalizers.Replace(" ", SPACE)])
    tokenizer.decoder = decoders.Sequence(
        [decoders.Replace(SPACE, " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
    )
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIALS.values()])
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 1)]
    )
    return tokenizer


def convert_llama2c(model_path, tokenizer_path, out_dir) -> pathlib.Path:
    """Write config.json, model.safetensors and a fast tokenizer for a llama2.c model into out_dir."""
    from safetensors.numpy import save_file
    from transformers import PreTrainedTokenizerFast

    model_path, tokenizer_path, out = pathlib.Path(model_path), pathlib.Path(tokenizer_path), pathlib.Path(out_dir)
    config, tensors = read_llama2c_model(model_path)
    pieces = read_llama2c_tokenizer(tokenizer_path, config["vocab_size"])
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    fast = PreTrainedTokenizerFast(
        tokenizer_object=build_tokenizer(pieces),
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        model_max_length=config["max_position_embeddings"],
    )
    fast.save_pretrained(str(out))
    return out
