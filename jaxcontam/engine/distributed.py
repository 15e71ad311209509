"""Mesh and host<->device helpers shared by scoring, generation and P(True).

Every process holds the same host-side batch plan; `global_array` lets each
process materialise only the rows of its own devices (so items are split by
process without any exchange), and `fetch` returns the full result to every
process (an all-gather when there are several).
"""

from __future__ import annotations

import jax
import numpy as np
from jax.experimental import multihost_utils

from jaxcontam.mesh import batch_sharding, make_mesh


def model_mesh(model) -> jax.sharding.Mesh:
    """The model's mesh, or every device on "data"."""
    return model.mesh if model.mesh is not None else make_mesh()


def rows_for(mesh: jax.sharding.Mesh, rows_per_batch: int) -> int:
    """`rows_per_batch` rounded up to a multiple of the "data" axis."""
    data = mesh.shape["data"]
    return -(-rows_per_batch // data) * data


def global_array(host: np.ndarray, mesh: jax.sharding.Mesh) -> jax.Array:
    """A global array, rows over "data", of which each process materialises only its own devices' rows."""
    return jax.make_array_from_callback(host.shape, batch_sharding(mesh, host.ndim), lambda index: host[index])


def fetch(x: jax.Array) -> np.ndarray:
    """The whole array on the host of every process."""
    if jax.process_count() == 1:
        return np.asarray(x)
    return np.asarray(multihost_utils.process_allgather(x, tiled=True))
