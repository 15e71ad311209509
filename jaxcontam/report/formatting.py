# pyright: standard
"""How numbers read in the report: one place, so the tables and the plots agree.

Values come from summary.json, so any of them may be None, NaN or +-Infinity;
every helper returns text for those instead of raising.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jaxcontam.detect.blind import BlindBaselineSummary
    from jaxcontam.detect.verdict import Verdict

MISSING = "n/a"


def _finite_or_text(x) -> float | str:
    """`x` as a float, or the text that stands for it when it is None, NaN or infinite."""
    if x is None:
        return MISSING
    x = float(x)
    if math.isnan(x):
        return MISSING
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    return x


def number(x, digits: int = 3) -> str:
    """`x` to `digits` significant digits ("0.0312", "1.2e-05", "∞", "n/a")."""
    x = _finite_or_text(x)
    return x if isinstance(x, str) else f"{x:.{digits}g}"


def percent(fraction, digits: int = 3) -> str:
    """A fraction in [0, 1] as a percentage ("50%", "33.3%")."""
    x = _finite_or_text(fraction)
    return x if isinstance(x, str) else f"{x * 100:.{digits}g}%"


def interval(bounds) -> str:
    """A confidence interval "[a, b]"; an infinite end is open, as in "[0.02, ∞)"."""
    if bounds is None:
        return MISSING
    low, high = bounds
    left = "(" if _is_infinite(low) else "["
    right = ")" if _is_infinite(high) else "]"
    return f"{left}{number(low)}, {number(high)}{right}"


def _is_infinite(x) -> bool:
    return x is not None and math.isinf(float(x))


def value(x) -> str:
    """Any summary value: yes/no for booleans, integers as they are, floats via `number`, text as it is."""
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return str(x)
    if isinstance(x, str):
        return x
    return number(x)


def verdict_phrase(verdict: Verdict) -> str:
    """The console's word on a headline verdict: CONTAMINATED or not detected, after the sweep's adjusted p and
    correction where it decided; "no test: <reason>" when the test did not run."""
    if verdict.contaminated is None:
        return verdict.label
    word = "CONTAMINATED" if verdict.contaminated else "not detected"
    if verdict.pvalue_adjusted is None:
        return word
    return f"adj={number(verdict.pvalue_adjusted)} {word} (correction {verdict.correction})"


def blind_baseline_phrase(blind: BlindBaselineSummary | None) -> str:
    """The blind baseline beside the detectors' AUCs: its AUC, 95% interval and permutation p, why it could not
    run, or that it was not turned on."""
    if blind is None:
        return "not run (a [blind_baseline] table turns it on)"
    if not blind.status.ran:
        return blind.status.label
    return f"AUC {number(blind.auc)} {interval(blind.ci95)}, permutation p = {number(blind.pvalue)}"
