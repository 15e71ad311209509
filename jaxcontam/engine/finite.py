"""Non-finite model outputs stop the work that would read them: `check_finite`, `NonFiniteScoresError`.

Every log-prob, mean/std over the vocabulary and judge log-prob the engine returns passes `check_finite`. A NaN
or infinite value comes from the model, not from the item (a NaN or inf weight, a config such as rms_norm_eps = 0
or rope_theta = 0, float16 overflow), so the command stops rather than marking the item and going on: a model
that gives NaN on one input is broken in a way that can distort the finite scores of the others too, so no
score, accuracy or verdict computed from the rest could be trusted. Nothing is lost by stopping: an audit's
finished chunks are stored and resumed once the model is fixed. The engine knows sequences, not items; a caller
that knows which items they were names them (`NonFiniteScoresError.naming`), and a caller that holds the models
says which of the likely causes it is (`NonFiniteScoresError.explained` with `weights_cause`: the tensors that hold
NaN or inf, or that every weight is finite).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcontam.errors import JaxcontamError

_DONE = "No score or verdict is computed from such values"
LIKELY_CAUSE = (
    "the model computes NaN or inf: look for a weight that is NaN or inf, a config value such as rms_norm_eps = 0 "
    "or rope_theta = 0, or float16/bfloat16 overflow; check the checkpoint (score one text with it in "
    f"transformers) or load it in float32 (--dtype float32). {_DONE}"
)
_SHOWN = 5  # names listed in a message


def _listed(names: Sequence[str]) -> str:
    return ", ".join(names[:_SHOWN]) + (f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else "")


class NonFiniteScoresError(JaxcontamError):
    """Some of a call's sequences scored NaN or inf: `bad` their positions in the call, `total` the sequences;
    `cause` what the message says of why (the likely causes, until `explained`)."""

    def __init__(
        self,
        what: str,
        bad: Sequence[int],
        total: int,
        names: Sequence[str] = (),
        where: str = "",
        cause: str = LIKELY_CAUSE,
    ):
        self.what, self.bad, self.total, self.names, self.where = what, tuple(bad), total, tuple(names), where
        self.cause = cause
        listed = _listed(list(self.names or (f"sequence {i}" for i in self.bad)))
        prefix = f"{where}: " if where else ""
        super().__init__(
            f"{prefix}{what} of {len(self.bad)} of {total} sequences are NaN or infinite ({listed}): {cause}"
        )

    def naming(self, names: Sequence[str], where: str) -> NonFiniteScoresError:
        """This error with the bad sequences named (`names`: the items or texts they belong to) and `where` said."""
        return NonFiniteScoresError(self.what, self.bad, self.total, names, where, self.cause)

    def explained(self, cause: str) -> NonFiniteScoresError:
        """This error with `cause` (`weights_cause`) in place of the likely causes."""
        return NonFiniteScoresError(self.what, self.bad, self.total, self.names, self.where, cause)


@jax.jit
def _finite(array: jax.Array) -> jax.Array:
    """Whether every entry of `array` is finite: one fused reduction, no temporary of the array's size."""
    return jnp.isfinite(array).all()


@jax.jit
def _finite_rows(array: jax.Array) -> jax.Array:
    """Whether each row (leading index: a stacked layer) of `array` is finite, fused as `_finite` is."""
    return jnp.isfinite(array).all(axis=tuple(range(1, array.ndim)))  # no reshape: a sharded axis may not merge


def nonfinite_weights(params: Any) -> tuple[str, ...]:
    """The floating-point tensors of a weights pytree that hold NaN or inf, named by their paths ("layers.wq"), a
    stacked layer's index where this process holds the whole tensor ("layers.wq (layer 0)"). A tensor this process
    holds whole is checked once, however many local devices hold copies; otherwise each process checks the shards it
    holds, with no collective across processes, so it can run in an error path on one host of many."""
    found = []
    for path, leaf in jax.tree_util.tree_leaves_with_path(params):
        if not jnp.issubdtype(getattr(leaf, "dtype", np.int8), jnp.inexact):
            continue  # quantized blocks, integer tables: nothing to be NaN
        name = jax.tree_util.keystr(path, simple=True, separator=".")
        whole = not isinstance(leaf, jax.Array) or leaf.is_fully_addressable
        pieces = [leaf] if whole else [shard.data for shard in leaf.addressable_shards]  # a replicated copy once
        if all(bool(_finite(piece)) for piece in pieces):
            continue
        if name.startswith("layers.") and whole and jnp.ndim(leaf) >= 2:
            layers = [str(i) for i in np.flatnonzero(~np.asarray(_finite_rows(leaf)))]
            name += f" (layer{'s' if len(layers) > 1 else ''} {_listed(layers)})"
        found.append(name)
    return tuple(found)


def weights_cause(models: Sequence[tuple[str, Any]]) -> str:
    """Which likely cause it is, from the weights of the `models` ((label, params) pairs) that computed the values:
    the tensors holding NaN or inf, or that every weight is finite (so a config value or overflow)."""
    broken = [(label, bad) for label, params in models if (bad := nonfinite_weights(params))]
    labels = " and ".join(label for label, _ in models)
    leaves = [leaf for _, params in models for leaf in jax.tree_util.tree_leaves(params)]
    if any(isinstance(leaf, jax.Array) and not leaf.is_fully_addressable for leaf in leaves):
        labels += " that this process holds (other processes check the rest)"
    if not broken:
        return (
            f"every weight of {labels} is finite, so the model computes NaN or inf from finite weights: look for a "
            "config value such as rms_norm_eps = 0 or rope_theta = 0, or float16/bfloat16 overflow (load it in "
            f"float32: --dtype float32). {_DONE}"
        )
    held = "; ".join(f"{label}: {_listed(list(bad))}" for label, bad in broken)
    return (
        f"the weights hold NaN or inf ({held}): the checkpoint is broken; download or convert it again, or check it "
        f"in transformers. {_DONE}"
    )


def check_finite(what: str, values: Sequence[np.ndarray]) -> None:
    """Refuse `values` (one array per sequence) when any entry is NaN or infinite."""
    bad = [i for i, array in enumerate(values) if not np.isfinite(np.asarray(array, np.float64)).all()]
    if bad:
        raise NonFiniteScoresError(what, bad, len(values))
