# pyright: standard
"""The sweep's multiple-testing correction over the swept headline verdicts of every (model, benchmark) of an audit.

`sweep_decisions` takes each run's swept headline verdict (`detect.verdict.Verdict` with `swept`: PaCoST's, the
calibrated test where a reference was given) and returns the sweep (`detect.sweep.Sweep`: Holm and BH over every
verdict that was tested; the untested ones are left out of the family and listed with their reasons) and one
`detect.pacost.results.SweepDecision` per verdict; the audit gives each decision to its stage
(`DetectorStage.decide`), so no result is changed after it is made.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from jaxcontam.detect.pacost.results import SweepDecision
from jaxcontam.detect.sweep import Adjusted, Sweep
from jaxcontam.detect.verdict import Verdict
from jaxcontam.stats import adjust


def sweep_decisions(
    tests: Sequence[tuple[str, Verdict]], alpha: float, correction: str
) -> tuple[Sweep, list[SweepDecision]]:
    """The sweep over `tests` ((run label, headline verdict) pairs) and each verdict's decision.

    `correction` ("holm", "bh" or "none") decides the verdicts whose stage leaves them to the sweep (`correction`
    "sweep"); a verdict whose settings say "none" (PaCoST's `paper` preset) keeps its raw p < alpha verdict, with
    the adjusted p-value beside it. A verdict that was not tested stays not tested (adjusted p NaN), outside the
    family.
    """
    tested = [i for i, (_, v) in enumerate(tests) if v.contaminated is not None and math.isfinite(v.pvalue)]
    pvalues = [tests[i][1].pvalue for i in tested]
    adjusted = {}
    for method in ("holm", "bh"):
        result = adjust(pvalues, method=method, alpha=alpha) if pvalues else None
        adjusted[method] = Adjusted(
            () if result is None else tuple(float(v) for v in result.pvalues),
            () if result is None else tuple(bool(v) for v in result.reject),
        )
    untested = {label: verdict.reason or "no p-value" for label, verdict in tests if verdict.contaminated is None}
    sweep = Sweep(
        tuple(tests[i][0] for i in tested),
        tuple(pvalues),
        adjusted["holm"],
        adjusted["bh"],
        tests=tuple(tests[i][1].test for i in tested),
        untested=untested,
    )
    position = {run: k for k, run in enumerate(tested)}
    decisions: list[SweepDecision] = []
    for i, (_, verdict) in enumerate(tests):
        if i not in position:
            decisions.append(SweepDecision("none", math.nan, None))
        elif correction == "none":
            decisions.append(SweepDecision("none", verdict.pvalue, verdict.contaminated))
        else:
            k = position[i]
            method = adjusted[correction]
            if verdict.correction == "sweep":
                decisions.append(SweepDecision(correction, method.adjusted[k], method.reject[k]))  # type: ignore[arg-type]
            else:
                decisions.append(SweepDecision("none", method.adjusted[k], verdict.contaminated))
    return sweep, decisions
