"""Which GGUF file a path names, and a fast Hugging Face tokenizer by folder or name: shared by model loading
(`models.loading`) and the n-gram matching units (`ngram.units`)."""

from __future__ import annotations

import pathlib

from jaxcontam.errors import ModelError


def gguf_file(path: pathlib.Path) -> pathlib.Path | None:
    """The GGUF file `path` names: the .gguf file itself, or the only one in a directory without safetensors."""
    if path.is_file():
        return path if path.suffix == ".gguf" else None
    if any(path.glob("*.safetensors")):
        return None
    found = sorted(path.glob("*.gguf"))
    if len(found) > 1:
        raise ModelError(
            f"{path}: holds several GGUF files ({', '.join(p.name for p in found)}); pass the path of the one to load"
        )
    return found[0] if found else None


def fast_tokenizer(name_or_path: str):
    """`transformers.AutoTokenizer` of a folder or hub name, fast (Rust) only, never running remote code."""
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(name_or_path, use_fast=True, trust_remote_code=False)
    except Exception as exc:  # transformers raises many types for a broken or missing tokenizer
        raise ModelError(
            f"{name_or_path}: the tokenizer cannot be loaded by transformers.AutoTokenizer ({exc}); "
            "re-save it with tokenizer.save_pretrained"
        ) from exc
    if not tokenizer.is_fast:
        raise ModelError(
            f"{name_or_path}: only a slow (Python) tokenizer is available; save a tokenizer.json "
            "with a fast tokenizer (AutoTokenizer.from_pretrained(..., use_fast=True).save_pretrained)"
        )
    return tokenizer
