"""The one device mesh jaxcontam runs on: axes ("data", "model"), batches split over "data".

Models place their weights over "model" (`models.sharding`), and with fsdp also over "data"; the engine splits
every batch's rows over "data" (`engine.distributed`). Both build and check meshes here, and every command
and config reads its mesh with the one parser here (`--mesh data=2,model=4`, `[mesh] data = 2, model = 4`).
"""

from __future__ import annotations

import dataclasses

import jax
from jax.sharding import Mesh, NamedSharding

from jaxcontam.errors import JaxcontamError, ModelError

MESH_AXES = ("data", "model")


def _device_hint(devices: int, model: int) -> str:
    """A mesh of `devices` devices keeping `model` when it divides them, for error messages."""
    model = model if devices % model == 0 else 1
    return f"data={devices // model},model={model}"


def make_mesh(data: int | None = None, model: int = 1, devices=None) -> Mesh:
    """A ("data", "model") mesh over `devices` (default: all); data defaults to the devices left after model."""
    devices = list(devices) if devices is not None else jax.devices()
    if data is None:
        data = max(1, len(devices) // model)
    if data * model != len(devices) or data < 1 or model < 1:
        raise ModelError(
            f"mesh data={data},model={model} needs {data * model} devices but {len(devices)} are "
            f"available: choose data x model = {len(devices)}, e.g. "
            f"{_device_hint(len(devices), max(model, 1))}"
        )
    return jax.make_mesh((data, model), MESH_AXES, (jax.sharding.AxisType.Auto,) * 2, devices=devices)


def check_mesh(mesh: Mesh) -> Mesh:
    if tuple(mesh.axis_names) != MESH_AXES:
        raise ModelError(
            f"mesh axes are {tuple(mesh.axis_names)}, expected {MESH_AXES}: build it with "
            "jaxcontam.mesh.make_mesh(data, model)"
        )
    return mesh


def batch_sharding(mesh: Mesh, ndim: int = 2) -> NamedSharding:
    """A batch's leading (row) axis over "data", the rest replicated."""
    return NamedSharding(mesh, jax.P("data", *([None] * (ndim - 1))))


def mesh_sizes(text: str, option: str = "--mesh") -> dict[str, int]:
    """The axes "data=2,model=4" names -> {"data": 2, "model": 4}; axes left out are left out."""
    sizes: dict[str, int] = {}
    for part in text.split(","):
        name, _, value = (s.strip() for s in part.partition("="))
        if name not in MESH_AXES or name in sizes or not value.isdigit() or int(value) < 1:
            raise JaxcontamError(
                f"{option} {text!r}: expected AXIS=SIZE pairs with AXIS in data, model (each once) "
                "and SIZE >= 1, e.g. --mesh data=2,model=4"
            )
        sizes[name] = int(value)
    return sizes


def parse_mesh(text: str) -> tuple[int, int]:
    """ "data=2,model=4" -> (2, 4); an axis left out is 1."""
    sizes = mesh_sizes(text)
    return sizes.get("data", 1), sizes.get("model", 1)


@dataclasses.dataclass(frozen=True)
class MeshSettings:
    """Where and how a model runs: a data x model mesh, whether weights are also split over "data" (fsdp), and
    the attention path its config gets (`attention`: "auto" by platform, or "jnp", "splash", "cudnn"; see
    `jaxcontam.models.attention`; the commands set it from JAXCONTAM_ATTENTION).

    `data` None: every device the model axis leaves. The default is every device on "data", weights whole on
    each (replicated), as `jaxcontam.load_model` places them without a mesh.
    """

    data: int | None = None
    model: int = 1
    fsdp: bool = False
    attention: str = "auto"

    @classmethod
    def from_option(
        cls, text: str | None, fsdp: bool = False, option: str = "--mesh", attention: str = "auto"
    ) -> MeshSettings:
        """From a command's `--mesh data=D,model=M` (None: the default) and `--fsdp`; a data axis left out
        takes the devices the model axis leaves, a model axis left out is 1."""
        sizes = mesh_sizes(text, option) if text is not None else {}
        return cls(data=sizes.get("data"), model=sizes.get("model", 1), fsdp=fsdp, attention=attention)

    def option_text(self) -> str | None:
        """These sizes as `--mesh` text (None for the default mesh): "data=2", "model=2", "data=1,model=2"."""
        parts = ([f"data={self.data}"] if self.data is not None else []) + (
            [f"model={self.model}"] if self.model != 1 else []
        )
        return ",".join(parts) or None

    def build(self, devices=None) -> Mesh:
        """The mesh over `devices` (default: all); refuses sizes whose product is not the device count."""
        return make_mesh(self.data, self.model, devices=devices)
