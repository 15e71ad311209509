"""Device mesh with ("data", "model") axes and the rule table that places each weight on it.

Weights carry logical axis names; `heads`, `kv_heads`, `experts`, `mlp` and `vocab` map to the mesh's "model"
axis when it has more than one device and the dimension divides evenly, every other axis is replicated. A
weight is split along its first such dimension (experts before their MLP width).
Batches are split over "data".
"""

from __future__ import annotations

import jax
from jax.sharding import Mesh, NamedSharding

from jaxcontam.errors import ModelError

MESH_AXES = ("data", "model")
# logical axis name -> mesh axis it is split over
SHARDING_RULES = {"heads": "model", "kv_heads": "model", "experts": "model", "mlp": "model", "vocab": "model"}


def make_mesh(data: int | None = None, model: int = 1, devices=None) -> Mesh:
    """A ("data", "model") mesh over `devices` (default: all); data defaults to the devices left after model."""
    devices = list(devices) if devices is not None else jax.devices()
    if data is None:
        data = len(devices) // model
    if data * model != len(devices) or data < 1:
        raise ModelError(f"mesh ({data}, {model}) needs {data * model} devices but {len(devices)} are available: "
                         "choose data * model equal to the device count")
    return jax.make_mesh((data, model), MESH_AXES, (jax.sharding.AxisType.Auto,) * 2, devices=devices)


def check_mesh(mesh: Mesh) -> Mesh:
    if tuple(mesh.axis_names) != MESH_AXES:
        raise ModelError(f"mesh axes are {tuple(mesh.axis_names)}, expected {MESH_AXES}: build it with "
                         "jaxcontam.models.make_mesh(data, model)")
    return mesh


def weight_sharding(mesh: Mesh, shape: tuple[int, ...], axes: tuple[str | None, ...]) -> NamedSharding:
    """NamedSharding for a weight of `shape` whose dimensions carry logical `axes`."""
    size = mesh.shape["model"]
    spec = []
    for dim, name in zip(shape, axes, strict=True):
        target = SHARDING_RULES.get(name) if size > 1 else None
        spec.append(target if target is not None and target not in spec and dim % size == 0 else None)
    return NamedSharding(mesh, jax.P(*spec))


def batch_sharding(mesh: Mesh) -> NamedSharding:
    """Rows of a [B, T] batch split over "data"."""
    return NamedSharding(mesh, jax.P("data", None))
