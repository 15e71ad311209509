"""`--mesh data=D,model=M`, `--fsdp` and `--dtype`: the options of every command that loads a model.

Parsed by `jaxcontam.mesh` (the parser `jaxcontam plan --mesh` and the audit config's `[mesh]` table share);
JAX is imported only when a command runs, so `--help` stays fast.
"""

from __future__ import annotations

import os

import click

from jaxcontam.dtypes import DTYPES

ATTENTION_VARIABLE = "JAXCONTAM_ATTENTION"  # forces the attention path of every model a command loads
MESH_HELP = (
    "Device mesh data=D,model=M: batch rows split over D devices, weights (heads, MLP, vocabulary) over "
    "M; D x M must be the device count, a data axis left out takes the devices M leaves. "
    "Default: every device on data."
)
FSDP_HELP = (
    "Also split every weight over the data axis (each device holds 1/(D x M) of the weights, gathered "
    "layer by layer): for models that do not fit with --mesh model=M alone. Same results."
)


def mesh_options(command):
    """Add --mesh and --fsdp/--no-fsdp (None when not given) to a click command."""
    command = click.option("--fsdp/--no-fsdp", "fsdp", default=None, help=FSDP_HELP)(command)
    return click.option("--mesh", "mesh", default=None, metavar="data=D,model=M", help=MESH_HELP)(command)


def attention_from_environment() -> str:
    """$JAXCONTAM_ATTENTION ("jnp", "splash" or "cudnn"; checked), else "auto": the one place the attention path
    is read from the environment; below the commands it is a parameter (`MeshSettings.attention`,
    `load_model(..., attention=)`)."""
    from jaxcontam.models.attention import checked

    return checked(os.environ.get(ATTENTION_VARIABLE) or "auto", ATTENTION_VARIABLE)


def mesh_layout(mesh: str | None, fsdp: bool | None):
    """(MeshSettings, the device mesh) of the options and the environment's attention path, the mesh built now:
    a mesh that does not match the devices is refused before any data is read or any model loaded."""
    from jaxcontam.mesh import MeshSettings

    layout = MeshSettings.from_option(mesh, bool(fsdp), attention=attention_from_environment())
    return layout, layout.build()


def dtype_option(default: str | None = "float32", help: str = "Weights' dtype."):
    """`--dtype` over `DTYPES` (None: the command decides, e.g. from its config file)."""
    return click.option(
        "--dtype", type=click.Choice(DTYPES), default=default, show_default=default is not None, help=help
    )
