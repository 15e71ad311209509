"""Writing new entries into a decode cache's slots: one helper shared by jaxcontam's decoders
(`models.decoder`) and `LanguageModel`'s recompute path (`language_model`), below both so neither imports the
other for it."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def write_slots(cache: jax.Array, new: jax.Array, index, axis: int) -> jax.Array:
    """`cache` [B, ...] with `new` written in place from slot `index` along `axis`: one index for every row, or
    an int32 [B] of them (rows that entered the cache at different times: one scatter over all rows, so a decode
    step stays a handful of operations however many rows it has)."""
    if jnp.ndim(index) == 0:
        return jax.lax.dynamic_update_slice_in_dim(cache, new, index, axis=axis)
    count = new.shape[axis]
    rows = jnp.arange(cache.shape[0])[:, None]
    slots = index[:, None] + jnp.arange(count)[None, :]  # [B, t]
    where = (rows,) + (slice(None),) * (axis - 1) + (slots,)
    # numpy indexing puts the [B, t] advanced-index dimensions first: bring `new`'s t axis next to B
    return cache.at[where].set(
        jnp.moveaxis(new, axis, 1).astype(cache.dtype), mode="drop", unique_indices=True, indices_are_sorted=True
    )
