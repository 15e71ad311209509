"""Name table from Hugging Face tensor names to jaxcontam parameter paths: each family's own
(`jaxcontam.models.families`), built from the shared entries of `weight_entries`."""

from __future__ import annotations

import re

from jaxcontam.models.config import DecoderConfig
from jaxcontam.models.families import FAMILIES
from jaxcontam.models.weight_entries import DEFAULT_PREFIX, Entry

__all__ = ["DEFAULT_PREFIX", "Entry", "canonical_name", "checkpoint_entries", "full_name"]


def canonical_name(name: str, spec: DecoderConfig) -> str:
    """Strip the family prefix so names match the table whether or not the checkpoint has a head."""
    return name.removeprefix(FAMILIES[spec.model_type].prefix)


def full_name(source: str, spec: DecoderConfig) -> str:
    """An HF tensor name (one of `Entry.sources`) as a *ForCausalLM checkpoint spells it."""
    if re.match(r"(lm_head|embed_out)\.", source):
        return source
    return FAMILIES[spec.model_type].prefix + source


def checkpoint_entries(spec: DecoderConfig) -> list[Entry]:
    """Every parameter of `spec`'s model and the HF tensor it comes from."""
    return FAMILIES[spec.model_type].checkpoint_entries(spec)
