"""A loaded model's params written back as a Hugging Face folder that every jaxcontam command loads.

The loader re-lays each HF tensor into the decoder's params with the name table of `models.checkpoint_map`
(transposes, head splits, rows of fused tensors). Those re-layouts only move elements, so each is inverted
exactly by pushing the HF tensor's element indices through the same function: the result says, for every
param element, which HF element it came from. A model loaded from a GGUF file (dequantised to float32) or
from safetensors, fine-tuned on its mesh and exported here reloads to the same params bit for bit.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np

from jaxcontam.errors import ModelError
from jaxcontam.models.checkpoint_map import checkpoint_entries, full_name
from jaxcontam.models.spec import ModelSpec


def _param(params: dict, path: tuple[str, ...]) -> np.ndarray:
    node = params
    for key in path:
        node = node[key]
    return np.asarray(node)


def hf_tensors(params: dict, spec: ModelSpec) -> dict[str, np.ndarray]:
    """{HF tensor name (as a *ForCausalLM checkpoint spells it): float32 array} of a params pytree."""
    tensors: dict[str, np.ndarray] = {}
    filled: dict[str, np.ndarray] = {}
    for entry in checkpoint_entries(spec):
        value = _param(params, entry.path).astype(np.float32)
        origin = np.arange(int(np.prod(entry.source_shape))).reshape(entry.source_shape)
        for layer_index, layer in enumerate(range(spec.num_layers) if entry.per_layer else [None]):
            layer_value = value[layer_index] if entry.per_layer else value
            for expert, source in enumerate(entry.sources(layer)):
                name = full_name(source, spec)
                part = layer_value[expert] if entry.experts else layer_value
                target = tensors.setdefault(name, np.zeros(entry.source_shape, np.float32))
                seen = filled.setdefault(name, np.zeros(entry.source_shape, bool))
                where = np.asarray(entry.extract(origin)).reshape(-1)
                target.reshape(-1)[where] = part.reshape(-1)
                seen.reshape(-1)[where] = True
    incomplete = [name for name, seen in filled.items() if not seen.all()]
    if incomplete:
        raise ModelError(
            f"cannot write {incomplete[0]!r} back: the {spec.model_type} name table leaves some of its "
            "elements unused, so the tensor is not determined by the params"
        )
    return tensors


def save_hf_folder(out_dir, config: dict, params: dict, spec: ModelSpec, tokenizer) -> pathlib.Path:
    """config.json, model.safetensors (float32) and the tokenizer files (chat template kept) in `out_dir`."""
    from safetensors.numpy import save_file

    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    arrays = {name: np.ascontiguousarray(t) for name, t in sorted(hf_tensors(params, spec).items())}
    save_file(arrays, str(out / "model.safetensors"), metadata={"format": "pt"})
    if tokenizer is not None:
        tokenizer.save_pretrained(str(out))
    (out / "config.json").write_text(json.dumps({**config, "torch_dtype": "float32"}, indent=2, sort_keys=True) + "\n")
    return out


def source_config(path) -> dict:
    """The config.json dict of a model path: the folder's config.json, or a GGUF file's metadata as one."""
    from jaxcontam.models.gguf import hf_config, open_reader
    from jaxcontam.models.loading import gguf_file, resolve_path

    directory = resolve_path(path)
    gguf = gguf_file(directory)
    if gguf is not None:
        return hf_config(open_reader(gguf), gguf)
    return json.loads((directory / "config.json").read_text())
