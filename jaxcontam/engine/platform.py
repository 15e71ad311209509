"""What the engine chooses by the platform a model's weights are on: float32 arithmetic on GPUs, decode row budgets.

- Float32 on a GPU. XLA's default for a float32 matrix product on an NVIDIA GPU since Ampere is TF32 (10-bit
  mantissas): log-probs then move by about 1e-3 from the CPU's. A float32 model there runs its products at
  "float32" precision (`jax.default_matmul_precision`, part of every jitted step's cache key), so float32 means
  the same numbers on every platform, as torch's default does; bfloat16 weights are left to XLA's default. On TPU
  nothing changes (float32 products run XLA's default there, as before).
- Decode rows. On CPU at most `generation.MAX_ROWS` rows decode together within a 2 GiB KV cache; a GPU or TPU
  reads the same weights once per step for all its rows, so it takes up to `ACCELERATOR_ROWS` rows within a
  quarter of its memory (`accelerator_budget`).
"""

from __future__ import annotations

import contextlib

import jax

ACCELERATOR_ROWS = 256
ACCELERATOR_CACHE_SHARE = 0.25  # of one device's memory, for the KV cache of its rows


def weights_platform(params) -> str:
    """ "cpu", "gpu" or "tpu": the platform of the weights' first device ("cpu" for host arrays)."""
    device = _first_device(params)
    return "cpu" if device is None else device.platform


def _first_device(params):
    """The first device of the first `jax.Array` among the weights (None: host arrays only)."""
    arrays = [leaf for leaf in jax.tree.leaves(params) if isinstance(leaf, jax.Array)]
    return next(iter(arrays[0].devices())) if arrays else None


def weights_dtype(params):
    """The dtype of the largest floating-point weight (norms may be kept wider than the matrices)."""
    floating = [leaf for leaf in jax.tree.leaves(params) if jax.numpy.issubdtype(leaf.dtype, jax.numpy.floating)]
    return max(floating, key=lambda leaf: leaf.size).dtype if floating else None


def matmul_precision(params) -> contextlib.AbstractContextManager:
    """`jax.default_matmul_precision("float32")` for float32 weights on a GPU (not TF32), else no change."""
    if weights_platform(params) == "gpu" and weights_dtype(params) == jax.numpy.float32:
        return jax.default_matmul_precision("float32")
    return contextlib.nullcontext()


def accelerator_budget(params, fallback_bytes: int) -> tuple[int, int]:
    """(most rows, KV-cache bytes) per data shard of a decode batch on a GPU or TPU: `ACCELERATOR_ROWS` and
    `ACCELERATOR_CACHE_SHARE` of the device's memory (`fallback_bytes` where the device does not say)."""
    device = _first_device(params)
    limit = None if device is None else (device.memory_stats() or {}).get("bytes_limit")
    return ACCELERATOR_ROWS, int(limit * ACCELERATOR_CACHE_SHARE) if limit else fallback_bytes
