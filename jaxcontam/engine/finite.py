"""Non-finite model outputs stop the work that would read them: `check_finite`, `NonFiniteScoresError`.

Every log-prob, mean/std over the vocabulary and judge log-prob the engine returns passes `check_finite`. A NaN
or infinite value comes from the model, not from the item (a NaN or inf weight, a config such as rms_norm_eps = 0
or rope_theta = 0, float16 overflow), so the command stops rather than marking the item and going on: a model
that gives NaN on one input is broken in a way that can distort the finite scores of the others too, so no
score, accuracy or verdict computed from the rest could be trusted. Nothing is lost by stopping: an audit's
finished chunks are stored and resumed once the model is fixed. The engine knows sequences, not items; a caller
that knows which items they were names them (`NonFiniteScoresError.naming`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from jaxcontam.errors import JaxcontamError

LIKELY_CAUSE = (
    "the model computes NaN or inf: look for a weight that is NaN or inf, a config value such as rms_norm_eps = 0 "
    "or rope_theta = 0, or float16/bfloat16 overflow; check the checkpoint (score one text with it in "
    "transformers) or load it in float32 (--dtype float32). No score or verdict is computed from such values"
)
_SHOWN = 5  # names listed in a message


class NonFiniteScoresError(JaxcontamError):
    """Some of a call's sequences scored NaN or inf: `bad` their positions in the call, `total` the sequences."""

    def __init__(self, what: str, bad: Sequence[int], total: int, names: Sequence[str] = (), where: str = ""):
        self.what, self.bad, self.total, self.names, self.where = what, tuple(bad), total, tuple(names), where
        shown = list(self.names or (f"sequence {i}" for i in self.bad))
        listed = ", ".join(shown[:_SHOWN]) + (f" and {len(shown) - _SHOWN} more" if len(shown) > _SHOWN else "")
        prefix = f"{where}: " if where else ""
        super().__init__(
            f"{prefix}{what} of {len(self.bad)} of {total} sequences are NaN or infinite ({listed}): {LIKELY_CAUSE}"
        )

    def naming(self, names: Sequence[str], where: str) -> NonFiniteScoresError:
        """This error with the bad sequences named (`names`: the items or texts they belong to) and `where` said."""
        return NonFiniteScoresError(self.what, self.bad, self.total, names, where)


def check_finite(what: str, values: Sequence[np.ndarray]) -> None:
    """Refuse `values` (one array per sequence) when any entry is NaN or infinite."""
    bad = [i for i, array in enumerate(values) if not np.isfinite(np.asarray(array, np.float64)).all()]
    if bad:
        raise NonFiniteScoresError(what, bad, len(values))
