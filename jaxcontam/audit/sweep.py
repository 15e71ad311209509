# pyright: standard
"""Where an audit's results meet its level: each run's headline verdicts, and the sweep's correction of the swept ones.

`audit_verdicts` gives each run's headline verdicts at the audit's `alpha` (`detect.audit_core.headline_verdicts`),
the swept ones corrected across the runs. `sweep_decisions` takes each run's swept headline verdict
(`detect.verdict.Verdict` with `swept`: PaCoST's, the calibrated test where a reference was given) and returns the
sweep (`detect.sweep.Sweep`: Holm and BH over every verdict that was tested; the untested ones are left out of the
family and listed with their reasons) and each verdict as the sweep decided it (`Verdict.decided`); no result is
changed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from jaxcontam.detect.audit_core import headline_verdicts
from jaxcontam.detect.sweep import Adjusted, Sweep
from jaxcontam.detect.verdict import Verdict
from jaxcontam.stats import adjust


def sweep_decisions(tests: Sequence[tuple[str, Verdict]], alpha: float, correction: str) -> tuple[Sweep, list[Verdict]]:
    """The sweep over `tests` ((run label, headline verdict at `alpha`) pairs) and each verdict as decided.

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
    decided: list[Verdict] = []
    for i, (_, verdict) in enumerate(tests):
        if i not in position:
            decided.append(verdict.decided(math.nan, "none", None))
        elif correction == "none":
            decided.append(verdict.decided(verdict.pvalue, "none", verdict.contaminated))
        else:
            k = position[i]
            method = adjusted[correction]
            if verdict.correction == "sweep":
                decided.append(verdict.decided(method.adjusted[k], correction, method.reject[k]))
            else:
                decided.append(verdict.decided(method.adjusted[k], "none", verdict.contaminated))
    return sweep, decided


def audit_verdicts(
    runs: Sequence[tuple[str, Mapping[str, Any]]], alpha: float, correction: str
) -> tuple[Sweep, list[tuple[Verdict, ...]]]:
    """The sweep and every run's headline verdicts ((run label, its results by stage name) pairs, in audit order) at
    the audit's level `alpha`, the swept ones as the sweep decided them with `correction`."""
    verdicts = [list(headline_verdicts(results, alpha)) for _, results in runs]
    swept = [(i, k) for i, found in enumerate(verdicts) for k, verdict in enumerate(found) if verdict.swept]
    sweep, decided = sweep_decisions([(runs[i][0], verdicts[i][k]) for i, k in swept], alpha, correction)
    for (i, k), verdict in zip(swept, decided, strict=True):
        verdicts[i][k] = verdict
    return sweep, [tuple(found) for found in verdicts]
