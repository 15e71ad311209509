"""`Family`: what one model family contributes to the shared decoder core, and how its GGUF files differ.

A family module builds one `Family` named `FAMILY`; `jaxcontam.models.families` lists them by model_type.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

import numpy as np

from jaxcontam.models.config import DecoderConfig
from jaxcontam.models.hf_config import ConfigReader
from jaxcontam.models.weight_entries import DEFAULT_PREFIX, Entry


def _no_fields(meta, arch: str, config: dict, names: dict) -> dict:
    return {}


def _unchanged(name: str, weight: np.ndarray, spec: DecoderConfig) -> np.ndarray:
    return weight


def _stored_order(name: str, count: int, spec: DecoderConfig) -> np.ndarray | None:
    return None


@dataclasses.dataclass(frozen=True)
class GGUFFormat:
    """How llama.cpp stores the family: its architecture name, whether its files have expert tensors (files of
    `arch` with experts load as the family that says so), the HF activation name, the config fields only this
    family reads from the metadata (`config(meta, arch, config, tensors_by_name) -> dict`), and the undoing of
    llama.cpp's storage changes, in two parts so that a process can dequantise only the rows it holds: the stored
    row of each Hugging Face row of a tensor (`rows(gguf_name, row_count, spec)`, None when unchanged) and an
    element-wise change of its values (`values(gguf_name, weight, spec) -> weight`)."""

    arch: str
    experts: bool = False
    activation: str = "silu"
    config: Callable[..., dict] = _no_fields
    rows: Callable[[str, int, DecoderConfig], np.ndarray | None] = _stored_order
    values: Callable[[str, np.ndarray, DecoderConfig], np.ndarray] = _unchanged


@dataclasses.dataclass(frozen=True)
class Family:
    """One model family: its Hugging Face model_type, its config reader (which reads every field it implements;
    `ignored` names the other fields it accepts and why they do not change the forward), its checkpoint name
    table, the prefix its *ForCausalLM puts before backbone tensors, and its GGUF format (None: no GGUF files)."""

    model_type: str
    from_hf_config: Callable[[ConfigReader], DecoderConfig]
    checkpoint_entries: Callable[[DecoderConfig], list[Entry]]
    ignored: Mapping[str, str] = dataclasses.field(default_factory=dict)
    prefix: str = DEFAULT_PREFIX
    gguf: GGUFFormat | None = None
