"""Load a Hugging Face checkpoint directory (or hub id), or a GGUF file, into sharded JAX weights.

The path may be a URL (gs://, s3://): weights are then read by byte range, only the parts this process holds.
Only config.json + *.safetensors, or a .gguf file (see `jaxcontam.models.gguf`), are read: pickled
.bin/.pt/.pth checkpoints are refused because unpickling runs arbitrary code, and remote modelling code is never
executed. Each weight is read from its memory-mapped file (dequantised, for GGUF) and placed per device slice with
`jax.make_array_from_callback`, so no full host copy of the model is ever assembled: per-layer tensors go to the
devices one at a time and are stacked there.
"""

from __future__ import annotations

import pathlib
import re
import tempfile

import jax
import jax.numpy as jnp
import numpy as np

from jaxcontam.dtypes import DTYPES
from jaxcontam.errors import ModelError
from jaxcontam.mesh import check_mesh, make_mesh
from jaxcontam.models.checkpoint_map import (
    Entry,
    canonical_name,
    checkpoint_entries,
    full_name,
)
from jaxcontam.models.config_values import read_json_object, shown
from jaxcontam.models.gguf import GGUFTensorReader, load_gguf_tokenizer, open_reader, read_spec, tensor_index
from jaxcontam.models.model import Model
from jaxcontam.models.safetensors_file import TensorInfo, TensorReader, read_header
from jaxcontam.models.sharding import LAYERS, warn_unsplit, weight_sharding
from jaxcontam.models.spec import ModelSpec, from_hf_config
from jaxcontam.models.stop_ids import generation_config_ids, tokenizer_stop_ids, with_stop_ids
from jaxcontam.models.tokenizer_files import fast_tokenizer, gguf_file
from jaxcontam.storage import as_path, describe_error, is_url, storage_errors

PICKLE_PATTERNS = ("*.bin", "*.pt", "*.pth", "*.ckpt")
TOKENIZER_PATTERNS = ("*.json", "tokenizer*", "*.model", "*.tiktoken", "merges.txt", "vocab.txt", "*.jinja")
HUB_PATTERNS = ["*.json", "*.safetensors", "tokenizer*", "*.model", "*.tiktoken", "merges.txt", "vocab.txt"]


def resolve_path(path_or_id: str | pathlib.Path, patterns=tuple(HUB_PATTERNS)) -> pathlib.Path:
    """A local directory or file as is; a URL (gs://, s3://, ...) as a `UPath`, read later by byte range;
    otherwise a hub id downloaded (the files matching `patterns`: by default config, tokenizer and safetensors
    only)."""
    if is_url(str(path_or_id)):
        remote = as_path(str(path_or_id))
        try:
            found = remote.exists()
        except storage_errors() as error:
            raise ModelError(str(describe_error(path_or_id, error))) from None
        if not found:
            raise ModelError(f"{path_or_id}: no such object or folder; check the URL (bucket, prefix)")
        return remote
    path = pathlib.Path(path_or_id).expanduser()
    if path.exists():
        return path
    text = str(path_or_id)
    if text.count("/") != 1 or text.startswith((".", "/", "~")):
        raise ModelError(f"{text}: no such directory, and not a hub id of the form 'owner/name'")
    try:
        from huggingface_hub import snapshot_download

        return pathlib.Path(snapshot_download(text, allow_patterns=list(patterns)))
    except Exception as exc:  # network, auth or missing repo: all mean the same thing to the user
        raise ModelError(
            f"{text}: not a local directory and the hub download failed ({exc}); download the model "
            "to a directory (config.json + *.safetensors) and pass its path"
        ) from exc


def _refuse_pickles(directory: pathlib.Path, found: list[pathlib.Path]) -> None:
    names = ", ".join(p.name for p in found[:3])
    raise ModelError(
        f"{directory}: only pickled weights found ({names}); jaxcontam reads *.safetensors only, because "
        "unpickling a .bin/.pt/.pth file can run arbitrary code. Convert it once: in Python, "
        "`AutoModelForCausalLM.from_pretrained(DIR).save_pretrained(OUT, safe_serialization=True)` "
        "(or torch.load + safetensors.torch.save_file), then load OUT"
    )


def weight_files(directory: pathlib.Path) -> list[pathlib.Path]:
    """The weight files: the safetensors of a checkpoint directory (via its index file when there is one), or
    the one GGUF file the path names."""
    gguf = gguf_file(directory)
    if gguf is not None:
        return [gguf]
    if directory.is_file():
        if directory.suffix in (".bin", ".pt", ".pth", ".ckpt"):
            _refuse_pickles(directory.parent, [directory])
        raise ModelError(
            f"{directory}: expected a checkpoint directory with config.json and *.safetensors, or a .gguf file"
        )
    index = directory / "model.safetensors.index.json"
    if index.exists():
        weight_map = read_json_object(index, "re-save the model").get("weight_map")
        if not isinstance(weight_map, dict) or not all(_is_shard_name(name) for name in weight_map.values()):
            raise ModelError(
                f"{index}: expected a 'weight_map' object of tensor name -> file name of a .safetensors file in "
                f"the same folder (got {shown(weight_map)}); re-save the model"
            )
        files = sorted({directory / name for name in weight_map.values()})
        missing = [f.name for f in files if not f.exists()]
        if missing:
            raise ModelError(f"{index}: lists {', '.join(missing)} which are not in {directory}: download all shards")
        return files
    files = sorted(directory.glob("*.safetensors"))
    if files:
        return files
    pickles = [p for pattern in PICKLE_PATTERNS for p in sorted(directory.glob(pattern))]
    if pickles:
        _refuse_pickles(directory, pickles)
    raise ModelError(
        f"{directory}: no *.safetensors or .gguf weights found; save the model with "
        "save_pretrained(..., safe_serialization=True)"
    )


def _is_shard_name(name) -> bool:
    """A weight file named by the index: a bare .safetensors file name (no folder, so nothing outside the model
    folder is read)."""
    return isinstance(name, str) and name.endswith(".safetensors") and "/" not in name and "\\" not in name


def read_config(directory: pathlib.Path, attention: str = "auto") -> ModelSpec:
    """The spec from the directory's config.json (or that .json file itself), or from the GGUF metadata when
    the path names a GGUF file; `attention`: its attention path (`jaxcontam.models.attention`)."""
    gguf = gguf_file(directory)
    if gguf is not None:
        return read_spec(open_reader(gguf), gguf, attention)
    path = directory if directory.is_file() and directory.suffix == ".json" else directory / "config.json"
    if not path.exists():
        raise ModelError(f"{directory}: no config.json; a Hugging Face model directory needs one")
    config = read_json_object(path, "re-export it with save_pretrained")
    return from_hf_config(config, source=str(path), attention=attention)


def _tensor_index(files: list[pathlib.Path], spec: ModelSpec) -> dict[str, tuple[str, TensorInfo]]:
    """canonical name -> (name in file, info) over all weight files; a tensor stored twice (in two files, or with
    and without the family prefix) is refused, since which copy is read would be arbitrary."""
    index: dict[str, tuple[str, TensorInfo]] = {}
    for path in files:
        for name, info in read_header(path).items():
            canonical = canonical_name(name, spec)
            if canonical in index:
                first_name, first = index[canonical]
                raise ModelError(
                    f"{path}: tensor {name!r} is also stored as {first_name!r} in {first.file}; a checkpoint holds "
                    "each tensor once: remove the duplicate file or re-save the model"
                )
            index[canonical] = (name, info)
    return index


def _check_entries(
    entries: list[Entry], index: dict, spec: ModelSpec, directory: pathlib.Path, config_name: str
) -> None:
    """Every tensor present with the shape the config implies, and no layer beyond the config's count (those
    would be silently left out), before anything is read."""
    layer_name = re.compile(
        "(?:" + "|".join(re.escape(e.source.split("{i}")[0]) for e in entries if e.per_layer) + r")(\d+)\."
    )
    held = [int(match.group(1)) for name in index if (match := layer_name.match(name))]
    if held and max(held) >= spec.num_layers:
        raise ModelError(
            f"{directory}: the weights hold layer {max(held)}, but {config_name} says num_hidden_layers = "
            f"{spec.num_layers}; the config and the weights belong to different models"
        )
    for entry in entries:
        for layer in range(spec.num_layers) if entry.per_layer else [None]:
            for source in entry.sources(layer):
                if source not in index:
                    raise ModelError(
                        f"{directory}: missing weight {full_name(source, spec)!r} "
                        f"(needed for {'/'.join(entry.path)}); the checkpoint is incomplete or was saved "
                        "for a different model_type"
                    )
                name, info = index[source]
                if info.shape != entry.source_shape:
                    raise ModelError(
                        f"{info.file}: tensor {name!r} has shape {list(info.shape)} but {config_name} "
                        f"implies {list(entry.source_shape)}; the config and the weights belong to "
                        "different models"
                    )


def _place_tensor(
    entry: Entry, layer: int | None, index: dict, reader: TensorReader, dtype, mesh, fsdp: bool = False
) -> jax.Array:
    """One HF tensor, re-laid and converted, placed slice by slice on this process's devices.

    The callback runs once per local device and reads only that device's part (`Entry.part`); a part shared
    by several devices (a replicated weight) is read once.
    """
    stored = [index[source] for source in entry.sources(layer)]
    tensors: list[np.ndarray] = []  # views into the files (safetensors) or dequantised arrays (GGUF), read once
    parts: dict[tuple, np.ndarray] = {}

    def callback(slices):
        if not tensors:
            tensors.extend(reader.read(name, info) for name, info in stored)
        key = tuple((s.start, s.stop, s.step) for s in slices)
        if key not in parts:
            parts[key] = np.asarray(entry.part(tensors, slices, reader.materialize), dtype=dtype)
        return parts[key]

    return jax.make_array_from_callback(entry.shape, weight_sharding(mesh, entry.shape, entry.axes, fsdp), callback)


def _place(
    entry: Entry, index: dict, spec: ModelSpec, reader: TensorReader, dtype, mesh, fsdp: bool = False
) -> jax.Array:
    """Build one weight on the mesh; a per-layer weight is stacked on the host, each device's part from the same
    part of its layers, then placed: stacking placed layers on the devices compiled a program per weight shape."""
    if not entry.per_layer:
        return _place_tensor(entry, None, index, reader, dtype, mesh, fsdp)
    shape = (spec.num_layers, *entry.shape)
    stored = [[index[source] for source in entry.sources(layer)] for layer in range(spec.num_layers)]
    tensors: dict[int, list[np.ndarray]] = {}  # per layer: views into the files or dequantised arrays, read once
    parts: dict[tuple, np.ndarray] = {}

    def layer_part(layer: int, slices) -> np.ndarray:
        if layer not in tensors:
            tensors[layer] = [reader.read(name, info) for name, info in stored[layer]]
        return np.asarray(entry.part(tensors[layer], slices, reader.materialize), dtype=dtype)

    def callback(slices):
        key = tuple((s.start, s.stop, s.step) for s in slices)
        if key not in parts:
            layers = range(spec.num_layers)[slices[0]]
            first = layer_part(layers[0], slices[1:])
            stacked = np.empty((len(layers), *first.shape), first.dtype)
            stacked[0] = first
            for row, layer in enumerate(layers[1:], 1):
                stacked[row] = layer_part(layer, slices[1:])
            parts[key] = stacked
        return parts[key]

    return jax.make_array_from_callback(shape, weight_sharding(mesh, shape, (LAYERS, *entry.axes), fsdp), callback)


def load_params(
    directory: pathlib.Path, files: list[pathlib.Path], spec: ModelSpec, dtype, mesh, fsdp: bool = False
) -> dict:
    """The weights pytree (nested dicts, per-layer tensors stacked on axis 0) placed on `mesh`."""
    return place_params(spec, _tensor_index(files, spec), TensorReader(), dtype, mesh, directory, "config.json", fsdp)


def place_params(
    spec: ModelSpec, index: dict, reader, dtype, mesh, source: pathlib.Path, config_name: str, fsdp: bool = False
) -> dict:
    """Check and place every weight `spec` needs (fsdp: also split over "data", see `models.sharding`).

    `index` maps HF tensor names (family prefix stripped) to (stored name, info with .shape and .file);
    `reader.read(name, info)` returns the stored tensor in the HF layout; `config_name` names the config in errors.
    """
    entries = checkpoint_entries(spec)
    _check_entries(entries, index, spec, source, config_name)
    warn_unsplit(entries, mesh, source)
    params: dict = {}
    for entry in entries:
        node = params
        for key in entry.path[:-1]:
            node = node.setdefault(key, {})
        node[entry.path[-1]] = _place(entry, index, spec, reader, dtype, mesh, fsdp)
    return params


def load_tokenizer(directory):
    """The fast tokenizer saved beside the weights (a folder in a bucket: its small tokenizer files copied to a
    temporary folder first), or None when the directory has none."""
    if not any((directory / name).exists() for name in ("tokenizer.json", "tokenizer_config.json")):
        return None
    if isinstance(directory, pathlib.Path):
        return fast_tokenizer(str(directory))
    with tempfile.TemporaryDirectory(prefix="jaxcontam-tokenizer-") as local:
        for pattern in TOKENIZER_PATTERNS:
            for remote in directory.glob(pattern):
                (pathlib.Path(local) / remote.name).write_bytes(remote.read_bytes())
        return fast_tokenizer(local)


def load_model(path_or_id, dtype: str = "float32", mesh=None, fsdp: bool = False, attention: str = "auto") -> Model:
    """Load config, tokenizer and weights (float32 or bfloat16) onto `mesh` (default: all devices on "data").

    `path_or_id`: a Hugging Face checkpoint directory or hub id, a .gguf file, or a directory holding one.
    The spec's `eos_token_id` carries every stop id of config, generation_config.json and tokenizer.
    `fsdp=True` also splits each weight over the mesh's "data" axis (`models.sharding`): each device holds
    1/(data x model) of the weights, gathered layer by layer inside the jitted steps; log-probs are unchanged.
    `attention`: "auto" (by platform), or "jnp", "splash", "cudnn" to force a path (`jaxcontam.models.attention`).
    """
    if dtype not in DTYPES:
        raise ModelError(f"dtype {dtype!r} is not supported: use one of {', '.join(DTYPES)}")
    directory = resolve_path(path_or_id)
    files = weight_files(directory)  # refuses pickles and weightless directories before reading the config
    mesh = check_mesh(mesh) if mesh is not None else make_mesh()
    if files[0].suffix == ".gguf":
        return _load_gguf(files[0], jnp.dtype(dtype), mesh, fsdp, attention)
    spec = read_config(directory, attention)
    params = load_params(directory, files, spec, jnp.dtype(dtype), mesh, fsdp)
    tokenizer = load_tokenizer(directory)
    spec = with_stop_ids(spec, generation_config_ids(directory), tokenizer_stop_ids(tokenizer))
    return Model(config=spec, params=params, tokenizer=tokenizer, mesh=mesh, path=directory)


def _load_gguf(path: pathlib.Path, dtype, mesh, fsdp: bool = False, attention: str = "auto") -> Model:
    """Config, weights (dequantised) and tokenizer from one GGUF file."""
    reader = open_reader(path)
    spec = read_spec(reader, path, attention)
    params = place_params(
        spec, tensor_index(reader, spec, path), GGUFTensorReader(spec), dtype, mesh, path, "the GGUF metadata", fsdp
    )
    tokenizer = load_gguf_tokenizer(reader, path)
    spec = with_stop_ids(spec, generation_config_ids(path.parent), tokenizer_stop_ids(tokenizer))
    return Model(config=spec, params=params, tokenizer=tokenizer, mesh=mesh, path=path)
