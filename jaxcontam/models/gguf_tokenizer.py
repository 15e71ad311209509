"""A GGUF file's tokenizer, built from its metadata without torch.

transformers' GGUF tokenizer (`from_pretrained(..., gguf_file=...)`) reads the file with a reader that imports
torch, but the converters that turn the metadata into a `tokenizers.Tokenizer` do not. They are fed here with
the metadata `jaxcontam.models.gguf_file` has already read, so the tokenizer is the one transformers builds
(vocabulary, merges, the split regex of `tokenizer.ggml.pre`, control tokens kept whole, special tokens, chat
template) without torch and without reading the file again.
"""

from __future__ import annotations

import pathlib

from jaxcontam.errors import ModelError

TOKENIZER_MODELS = ("gpt2", "llama")  # byte-level BPE (gpt2, llama-bpe, qwen2, smollm, ...) and SentencePiece BPE
_SPECIAL_TOKEN_IDS = {
    "bos_token": "bos_token_id",
    "eos_token": "eos_token_id",
    "unk_token": "unknown_token_id",
    "pad_token": "padding_token_id",
}


def tokenizer_fields(metadata: dict, mapping: dict) -> tuple[dict, dict]:
    """(converter input, tokenizer keyword arguments) from the `tokenizer.*` metadata, named as transformers'
    `mapping` (GGUF_TOKENIZER_MAPPING) names them; special tokens are given by their text."""
    fields, settings = (
        {name: metadata[f"tokenizer.{key}"] for key, name in mapping[group].items() if f"tokenizer.{key}" in metadata}
        for group in ("tokenizer", "tokenizer_config")
    )
    if fields.get("tokenizer_type") == "llama":  # llama.cpp adds BOS to a SentencePiece vocabulary unless told not to
        settings.setdefault("add_bos_token", True)
    for name, key in _SPECIAL_TOKEN_IDS.items():
        token_id = metadata.get(f"tokenizer.ggml.{key}")
        settings[name] = fields["tokens"][token_id] if token_id is not None else None
    return fields, settings


def gguf_tokenizer(metadata: dict, path: pathlib.Path):
    """The `PreTrainedTokenizerFast` the file's metadata describes, or None when the file has no tokenizer."""
    model = metadata.get("tokenizer.ggml.model")
    if model is None:
        return None
    if model not in TOKENIZER_MODELS or "tokenizer.ggml.tokens" not in metadata:
        raise ModelError(
            f"{path}: GGUF tokenizer model {model!r} is not supported (supported: "
            f"{', '.join(TOKENIZER_MODELS)}, with tokenizer.ggml.tokens); pass a Hugging Face tokenizer "
            "folder (tokenizer.json) of the same model instead"
        )
    from transformers import PreTrainedTokenizerFast

    try:
        from transformers.integrations.gguf.gguf_tokenizer_mapping import (
            GGUF_TOKENIZER_MAPPING,
            convert_gguf_tokenizer,
        )
    except ImportError as exc:
        raise ModelError(
            f"{path}: this transformers version has no torch-free GGUF tokenizer converter "
            "(transformers.integrations.gguf); upgrade it: pip install -U transformers"
        ) from exc
    try:
        fields, settings = tokenizer_fields(metadata, GGUF_TOKENIZER_MAPPING)
        backend, extra = convert_gguf_tokenizer(metadata.get("general.architecture", ""), fields)
    except (ValueError, KeyError, IndexError) as exc:
        raise ModelError(
            f"{path}: the GGUF tokenizer metadata cannot be converted ({exc}); re-convert the file "
            "with llama.cpp's convert_hf_to_gguf.py"
        ) from exc
    return PreTrainedTokenizerFast(tokenizer_object=backend, **settings, **extra)
