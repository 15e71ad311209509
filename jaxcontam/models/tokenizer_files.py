"""Which GGUF file a path names, and a fast Hugging Face tokenizer by folder or name: shared by model loading
(`models.loading`) and the n-gram matching units (`ngram.units`)."""

from __future__ import annotations

import json
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


GENERIC_CLASS = "TokenizersBackend"  # what transformers 5 saves for a tokenizer.json-backed fast tokenizer
# Model types for which `AutoTokenizer` overrides a saved GENERIC_CLASS with a class of its own (transformers'
# MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS with a specialised TOKENIZER_MAPPING_NAMES entry, or Mistral's format),
# among jaxcontam's families; tests/test_tokenizer_files.py recomputes it from transformers' own tables.
OVERRIDDEN_MODEL_TYPES = ("qwen2",)


def _generic_folder(name_or_path: str) -> bool:
    """Whether `AutoTokenizer` would load this folder as GENERIC_CLASS: its tokenizer_config.json names that class
    (no remote code), and its config.json's model type is not one AutoTokenizer overrides."""
    folder = pathlib.Path(name_or_path)
    try:
        declared = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
        model_type = json.loads((folder / "config.json").read_text(encoding="utf-8")).get("model_type")
    except (OSError, ValueError):
        return False
    generic = declared.get("tokenizer_class") == GENERIC_CLASS and "auto_map" not in declared
    return generic and isinstance(model_type, str) and model_type not in OVERRIDDEN_MODEL_TYPES


def fast_tokenizer(name_or_path: str):
    """`transformers.AutoTokenizer` of a folder or hub name, fast (Rust) only, never running remote code.

    A folder that `AutoTokenizer` would load as transformers' generic fast class is loaded by that class directly:
    importing `AutoTokenizer` imports transformers' model configurations and, through them, torch, which was most
    of the bundled audit's load stage (docs/performance.md)."""
    try:
        if _generic_folder(name_or_path):
            from transformers import TokenizersBackend

            tokenizer = TokenizersBackend.from_pretrained(name_or_path)
        else:
            from transformers import AutoTokenizer

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
