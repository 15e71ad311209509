"""The rule table that places each weight on the ("data", "model") mesh (`jaxcontam.mesh`).

Weights carry logical axis names; `heads`, `kv_heads`, `experts`, `mlp` and `vocab` map to the mesh's "model"
axis when it has more than one device and the dimension divides evenly, every other axis is replicated. A
weight is split along its first such dimension (experts before their MLP width).

With `fsdp=True` each weight is further split over "data" along its largest dimension that is not already
split and that "data" divides (never the stacked `layers` axis, which the forward scans), so each device holds
1/(data x model) of it; XLA gathers each layer's weights inside the jitted step. A weight with no such
dimension stays whole over "data".
"""

from __future__ import annotations

import warnings

import jax
from jax.sharding import Mesh, NamedSharding

from jaxcontam.errors import JaxcontamWarning

# logical axis name -> mesh axis it is split over
SHARDING_RULES = {"heads": "model", "kv_heads": "model", "experts": "model", "mlp": "model", "vocab": "model"}
# the leading axis per-layer weights are stacked on: never split (the forward scans over it)
LAYERS = "layers"


def weight_sharding(
    mesh: Mesh, shape: tuple[int, ...], axes: tuple[str | None, ...], fsdp: bool = False
) -> NamedSharding:
    """NamedSharding for a weight of `shape` whose dimensions carry logical `axes` (fsdp: see the module doc)."""
    size = mesh.shape["model"]
    spec = []
    for dim, name in zip(shape, axes, strict=True):
        target = SHARDING_RULES.get(name) if size > 1 and name is not None else None
        spec.append(target if target is not None and target not in spec and dim % size == 0 else None)
    data = mesh.shape["data"]
    if fsdp and data > 1:
        free = [
            i
            for i, (dim, name) in enumerate(zip(shape, axes))
            if spec[i] is None and name != LAYERS and dim % data == 0
        ]
        if free:
            spec[max(free, key=lambda i: shape[i])] = "data"
    return NamedSharding(mesh, jax.P(*spec))


def warn_unsplit(entries, mesh: Mesh, source) -> list[str]:
    """Warn (and return the weight names) when the "model" axis divides none of a weight's splittable dims.

    `entries`: the checkpoint table (`models.checkpoint_map.Entry`: path, shape, axes). Such weights are
    replicated over "model" (whole on each of its devices) rather than refused.
    """
    size = mesh.shape["model"]
    if size == 1:
        return []
    missed: dict[tuple[str, int], list[str]] = {}
    for entry in entries:
        dims = [(name, dim) for name, dim in zip(entry.axes, entry.shape) if name in SHARDING_RULES]
        if dims and all(dim % size for _, dim in dims):
            for name, dim in dims:
                missed.setdefault((name, dim), []).append("/".join(entry.path))
    if not missed:
        return []
    what = "; ".join(f"its {dim} {name} ({', '.join(paths)})" for (name, dim), paths in missed.items())
    devices = mesh.size
    fit = max(m for m in range(1, devices + 1) if devices % m == 0 and all(dim % m == 0 for _, dim in missed))
    warnings.warn(
        f"{source}: the mesh's model axis ({size}) does not divide {what}: those weights are replicated over "
        f"'model' (whole on each of its devices) instead of split; to split them choose a model axis dividing "
        f"{', '.join(str(dim) for _, dim in missed)}, e.g. --mesh data={devices // fit},model={fit}",
        JaxcontamWarning,
        stacklevel=3,
    )
    return sorted({p for paths in missed.values() for p in paths})
