"""The Ray engine: each shard one Ray task, the index put once in the object store, lost tasks retried.

A task whose worker or node dies is run again by Ray (`max_retries`); it first looks for the shard's completion
marker, so a shard that was committed before the loss is not written again, and one that was not is written by
the retry alone (its files are committed whole, the marker last). Inputs and outputs may be bucket URLs: every
task reads its shard and writes its outputs itself. `ray` is imported only here (the `ray` extra).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from jaxcontam.decontam.index import DecontIndex
from jaxcontam.decontam.shards import ShardSpec
from jaxcontam.errors import DataError

MAX_RETRIES = 3


def run_ray(
    index: DecontIndex,
    shards: Sequence[ShardSpec],
    settings,
    out: str,
    process_shard: Callable[[DecontIndex, ShardSpec, Any, str], dict[str, Any]],
    *,
    address: str | None = None,
    max_retries: int = MAX_RETRIES,
) -> list[dict[str, Any]]:
    """Every shard as a Ray task, `process_shard(index, shard, settings, out)` (`decontam.run` passes its own, so
    this module imports nothing above it), on the cluster at `address` ("auto", "HOST:PORT"; None: RAY_ADDRESS or
    a new local cluster)."""
    try:
        import ray
        from ray.exceptions import RayTaskError
    except ImportError as error:
        raise DataError(f"--engine ray needs Ray ({error}); pip install 'jaxcontam[ray]'") from None
    if not ray.is_initialized():  # no address and no RAY_ADDRESS: a new local cluster, never a stale one's files
        ray.init(address=address or os.environ.get("RAY_ADDRESS") or "local", log_to_driver=False)
    index_ref = ray.put(index)  # once: every task reads it from the object store
    task = ray.remote(max_retries=max_retries, retry_exceptions=False)(process_shard)
    refs = [task.options(name=f"decontaminate:{s.label}").remote(index_ref, s, settings, out) for s in shards]
    try:
        return ray.get(refs)
    except RayTaskError as error:
        cause = error.as_instanceof_cause()
        if isinstance(cause, DataError):
            raise DataError(str(cause).split("\n")[-1] or str(cause)) from None
        raise
