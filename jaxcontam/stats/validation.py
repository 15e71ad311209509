# pyright: standard
"""Input checks shared by the statistics functions, raising `StatsInputError` with a fix.

NaN never becomes a p-value: the tests' kernels (`finite_differences`) and every number setting refuse NaN and
inf. The one place a NaN is read is a per-item confidence or score, where the documented meaning is "missing"
(`stats.pairs.filter_pairs`, `stats.separation`): it is dropped and counted in the result. The engine refuses a
model whose log-probs are NaN or inf (`engine.finite`), so a missing value there is a missing answer, never a
broken model.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from jaxcontam.errors import JaxcontamError

ALTERNATIVES = ("greater", "less", "two-sided")


class StatsInputError(JaxcontamError):
    """Arrays or settings that a statistical function cannot use as given."""


def float_vector(name: str, values) -> np.ndarray:
    """`values` as a 1-D float64 array; None entries become NaN (a missing value)."""
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise StatsInputError(
            f"{name}: expected a sequence of numbers (None or NaN for missing), could not convert: {exc}"
        ) from None
    if array.ndim != 1:
        raise StatsInputError(f"{name}: expected a 1-D sequence, got shape {array.shape}; pass one value per item")
    return array


def bool_vector(name: str, values, length: int) -> np.ndarray:
    """`values` as a 1-D bool array of `length` entries."""
    array = np.asarray(values)
    if array.ndim != 1 or len(array) != length:
        raise StatsInputError(f"{name}: expected {length} true/false values (one per pair), got shape {array.shape}")
    if array.dtype != np.bool_:
        if not np.isin(array, (0, 1)).all():
            raise StatsInputError(f"{name}: expected true/false values, got {array[~np.isin(array, (0, 1))][:3]}")
        array = array.astype(bool)
    return array


def same_length(names: Sequence[str], arrays: Sequence[np.ndarray]) -> None:
    lengths = {name: len(array) for name, array in zip(names, arrays)}
    if len(set(lengths.values())) > 1:
        raise StatsInputError(f"arrays must have one entry per item, got lengths {lengths}; align them by item id")


def finite_differences(differences) -> np.ndarray:
    """Paired differences [rows, n] as float64, refused when any is NaN or inf (no p-value is computed from them)."""
    array = np.atleast_2d(np.asarray(differences, dtype=np.float64))
    bad = np.argwhere(~np.isfinite(array))
    if bad.size:
        raise StatsInputError(
            f"differences[{', '.join(map(str, bad[0]))}] is {array[tuple(bad[0])]} ({len(bad)} not finite): a paired "
            "test needs finite differences; drop the missing pairs first (`filter_pairs`) and check the scores' source"
        )
    return array


def check_finite_number(name: str, value):
    """`value` (a number or an array of them) when every entry is finite, not NaN or inf."""
    try:
        finite = not isinstance(value, bool) and bool(np.isfinite(np.asarray(value, dtype=np.float64)).all())
    except (TypeError, ValueError):
        finite = False
    if not finite:
        raise StatsInputError(f"{name}={value!r}: expected a finite number")
    return value


def check_alternative(alternative: str) -> str:
    if alternative not in ALTERNATIVES:
        raise StatsInputError(f"alternative={alternative!r}: expected one of {ALTERNATIVES}")
    return alternative


def check_probability(name: str, value: float, *, closed: bool = False) -> float:
    """A number strictly inside (0, 1) (or in [0, 1] when `closed`)."""
    value = float(value)  # NaN is inside no interval: refused below
    inside = 0.0 <= value <= 1.0 if closed else 0.0 < value < 1.0
    if not inside:
        interval = "[0, 1]" if closed else "(0, 1)"
        raise StatsInputError(f"{name}={value}: expected a number in {interval}")
    return value


def check_count(name: str, value: int, minimum: int) -> int:
    if isinstance(value, bool) or int(value) != value or value < minimum:
        raise StatsInputError(f"{name}={value!r}: expected an integer >= {minimum}")
    return int(value)
