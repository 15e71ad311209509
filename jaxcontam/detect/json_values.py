# pyright: standard
"""summary.json's numbers: `json_ready` writes NaN as null and +-inf as "inf"/"-inf" (strict JSON), and
`json_float` / `json_optional_float` read them back, so a result's `from_dict` undoes what its `to_dict` wrote."""

from __future__ import annotations

import math


def json_ready(value):
    """NaN -> null and +-inf -> "inf"/"-inf", so summary.json is strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    return value


def json_float(value) -> float:
    """A float as summary.json holds it: null is NaN, "inf"/"-inf" are infinite, a number stays as it is."""
    if value is None:
        return math.nan
    return float(value) if isinstance(value, str) else value


def json_optional_float(value) -> float | None:
    """A float that may be absent (None): null stays None (NaN and None are both written as null)."""
    return None if value is None else json_float(value)
