"""Trainable weights kept under their Hugging Face names, so a trained model saves as a plain checkpoint.

Training updates the HF-named tensors; each forward re-lays them into the decoder's pytree with the same
name table the checkpoint loader uses (`models.checkpoint_map`), so what is trained is exactly what loads.
"""

from __future__ import annotations

import json
import pathlib

import jax.numpy as jnp
import numpy as np

from jaxcontam.models.checkpoint_map import checkpoint_entries, full_name
from jaxcontam.models.spec import ModelSpec, from_hf_config


def _layer_indices(entry, spec: ModelSpec):
    return range(spec.num_layers) if entry.per_layer else (None,)


def init_hf_tensors(config: dict, seed: int = 0, std: float = 0.02) -> dict[str, np.ndarray]:
    """Fresh float32 weights for an HF config: normal(0, std) matrices, unit norm scales, zero biases."""
    spec = from_hf_config(config)
    rng = np.random.default_rng(seed)
    tensors = {}
    for entry in checkpoint_entries(spec):
        for layer in _layer_indices(entry, spec):
            for name in (full_name(source, spec) for source in entry.sources(layer)):
                if name.endswith("norm.weight") or "layernorm" in name or "ln_" in name:
                    tensors[name] = np.ones(entry.source_shape, np.float32)
                elif name.endswith(".bias"):
                    tensors[name] = np.zeros(entry.source_shape, np.float32)
                else:
                    tensors[name] = rng.normal(0.0, std, entry.source_shape).astype(np.float32)
    return tensors


def params_from_hf(tensors: dict, spec: ModelSpec) -> dict:
    """The decoder's params pytree from HF-named tensors (jit-traceable: reshapes, transposes, stacks)."""
    params: dict = {}
    for entry in checkpoint_entries(spec):
        pieces = [
            entry.assemble([tensors[full_name(source, spec)] for source in entry.sources(layer)], jnp.stack)
            for layer in _layer_indices(entry, spec)
        ]
        value = jnp.stack(pieces) if entry.per_layer else pieces[0]
        node = params
        for key in entry.path[:-1]:
            node = node.setdefault(key, {})
        node[entry.path[-1]] = value
    return params


def save_hf_model(out_dir, config: dict, tensors: dict, tokenizer=None) -> pathlib.Path:
    """Write config.json, model.safetensors (float32) and, when given, the tokenizer files into out_dir."""
    from safetensors.numpy import save_file

    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    arrays = {name: np.ascontiguousarray(np.asarray(t, np.float32)) for name, t in sorted(tensors.items())}
    save_file(arrays, str(out / "model.safetensors"), metadata={"format": "pt"})
    if tokenizer is not None:
        tokenizer.save_pretrained(str(out))
    return out
