"""The model families, by Hugging Face model_type: each module holds its config reader, checkpoint name table and
GGUF specifics (`base.Family`); the shared decoder core runs them all. Adding a family: one module and one entry
below (see docs/adding_a_family.md)."""

from __future__ import annotations

from jaxcontam.models.families import (
    gemma,
    gemma2,
    gemma3_text,
    gpt2,
    gpt_neox,
    granite,
    llama,
    mistral,
    mixtral,
    olmo2,
    phi3,
    qwen2,
    qwen3,
    qwen3_moe,
)
from jaxcontam.models.families.base import Family

FAMILIES: dict[str, Family] = {
    module.FAMILY.model_type: module.FAMILY
    for module in (
        llama,
        mistral,
        qwen2,
        qwen3,
        gemma,
        gemma2,
        gemma3_text,
        olmo2,
        phi3,
        mixtral,
        qwen3_moe,
        gpt2,
        gpt_neox,
        granite,
    )
}
