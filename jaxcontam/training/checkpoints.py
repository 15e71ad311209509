"""Orbax checkpoints of a training run (weights, optimizer state, step), so an interrupted run resumes.

checkpoints = TrainCheckpoints(run_dir / "checkpoints", every=100)
train(config, tensors, batches, steps=1000, checkpoints=checkpoints)   # resumes from the latest step
weights = checkpoints.restore_weights()                                 # e.g. to fine-tune from a base
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import jax
import numpy as np

from jaxcontam.errors import JaxcontamError


class TrainCheckpoints:
    """An orbax CheckpointManager over {"weights", "opt_state"} pytrees, keeping the last `keep` steps."""

    def __init__(self, directory: str | Path, *, every: int, keep: int = 2, on_saved: Callable[[], None] | None = None):
        try:
            import orbax.checkpoint as ocp
        except ImportError:
            raise JaxcontamError('training checkpoints need orbax: pip install "jaxcontam[train]"') from None

        if every < 1:
            raise ValueError(f"checkpoint interval must be >= 1 step, got {every}")
        self.every = every
        self.on_saved = on_saved  # e.g. uploading the run folder to its bucket
        self._ocp = ocp
        self._manager = ocp.CheckpointManager(
            Path(directory).resolve(),
            options=ocp.CheckpointManagerOptions(max_to_keep=keep, enable_async_checkpointing=False),
        )

    def latest_step(self) -> int | None:
        return self._manager.latest_step()

    def save(self, step: int, weights: dict, opt_state) -> None:
        self._manager.save(
            step, args=self._ocp.args.StandardSave({"weights": weights, "opt_state": opt_state}), force=True
        )
        self._manager.wait_until_finished()
        if self.on_saved is not None:
            self.on_saved()

    def restore(self, step: int, weights_like: dict, opt_state_like) -> tuple[dict, object]:
        """The state saved at `step`, restored into the structure, dtypes and (for device arrays) shardings of
        the given examples, so a resumed run continues with the same programs on the same layout."""
        like = {"weights": weights_like, "opt_state": opt_state_like}
        abstract = jax.tree.map(
            lambda x: (
                jax.ShapeDtypeStruct(np.shape(x), x.dtype, sharding=x.sharding)
                if isinstance(x, jax.Array)
                else jax.ShapeDtypeStruct(np.shape(x), np.asarray(x).dtype)
            ),
            like,
        )
        state = self._manager.restore(step, args=self._ocp.args.StandardRestore(abstract))
        return state["weights"], state["opt_state"]

    def restore_weights(self, step: int | None = None) -> dict[str, np.ndarray]:
        """The weights alone (HF-named float32 arrays) of `step` (default: the latest)."""
        step = self.latest_step() if step is None else step
        if step is None:
            raise FileNotFoundError("no checkpoint has been saved in this directory yet")
        state = self._manager.restore(step, args=self._ocp.args.StandardRestore())
        return {name: np.asarray(value) for name, value in state["weights"].items()}
