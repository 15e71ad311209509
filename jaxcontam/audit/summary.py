# pyright: standard
"""The sweep's multiple-testing corrections over the PaCoST verdicts of every (model, benchmark) of an audit.

`sweep_decisions` takes each run's test as a `SweptTest` and returns the sweep (`detect.sweep.Sweep`: Holm and BH
over every p-value that exists) and one `detect.pacost.SweepDecision` per run; the audit attaches each decision to a
new `PacostResult` (`PacostResult.decision`), so no result is changed after it is made.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from jaxcontam.detect.pacost import Correction, SweepDecision
from jaxcontam.detect.sweep import Adjusted, Sweep
from jaxcontam.stats import adjust


@dataclasses.dataclass(frozen=True)
class SweptTest:
    """One run's PaCoST test as the sweep sees it: its raw p-value and verdict, and whether its preset leaves the
    verdict to the sweep (`correction` "sweep") or keeps the raw one ("none", the `paper` preset)."""

    label: str
    pvalue: float
    contaminated: bool
    correction: Correction


def sweep_decisions(
    tests: Sequence[SweptTest | None], alpha: float, correction: str
) -> tuple[Sweep, list[SweepDecision | None]]:
    """The sweep over `tests` and each run's decision (None where the run has no PaCoST test).

    `correction` ("holm", "bh" or "none") decides the verdict of runs whose preset leaves it to the sweep; a run
    whose settings say "none" (the `paper` preset) keeps its raw p < alpha verdict, with the adjusted p-value beside
    it. A run without a p-value keeps its raw verdict, adjusted p NaN.
    """
    tested = [i for i, t in enumerate(tests) if t is not None and math.isfinite(t.pvalue)]
    pvalues = [tests[i].pvalue for i in tested]  # type: ignore[union-attr]
    adjusted = {}
    for method in ("holm", "bh"):
        result = adjust(pvalues, method=method, alpha=alpha) if pvalues else None
        adjusted[method] = Adjusted(
            () if result is None else tuple(float(v) for v in result.pvalues),
            () if result is None else tuple(bool(v) for v in result.reject),
        )
    sweep = Sweep(tuple(tests[i].label for i in tested), tuple(pvalues), adjusted["holm"], adjusted["bh"])  # type: ignore[union-attr]
    position = {run: k for k, run in enumerate(tested)}
    decisions: list[SweepDecision | None] = []
    for i, test in enumerate(tests):
        if test is None:
            decisions.append(None)
        elif i not in position:
            decisions.append(SweepDecision("none", math.nan, test.contaminated))
        elif correction == "none":
            decisions.append(SweepDecision("none", test.pvalue, test.contaminated))
        else:
            k = position[i]
            method = adjusted[correction]
            if test.correction == "sweep":
                decisions.append(SweepDecision(correction, method.adjusted[k], method.reject[k]))  # type: ignore[arg-type]
            else:
                decisions.append(SweepDecision("none", method.adjusted[k], test.contaminated))
    return sweep, decisions
