"""The sweep's multiple-testing corrections over the per-(model, benchmark) entries of summary.json.

Each entry comes from the shared audit core (`detect.audit_core.BenchmarkAudit.to_dict`).
"""

from __future__ import annotations

import math

import numpy as np

from jaxcontam.stats import adjust


def sweep_corrections(runs: list[dict], alpha: float, correction: str) -> dict:
    """Holm and BH over the PaCoST p-values of every run with a test; fills each run's `pvalue_adjusted`.

    `correction` ("holm", "bh" or "none") decides the verdict of runs whose preset leaves it to the sweep
    (its entry's `correction` is "sweep"); a run whose settings say "none" (the `paper` preset) keeps its raw
    p < alpha verdict, with the adjusted p-value beside it. Each run then records the correction its verdict
    used: "holm", "bh" or "none".
    """
    tested = [r for r in runs if r["pacost"] is not None and np.isfinite(r["pacost"]["pvalue"])]
    labels = [f"{r['model']} | {r['benchmark']}:{r['split']}" for r in tested]
    pvalues = [r["pacost"]["pvalue"] for r in tested]
    sweep = {"labels": labels, "pvalues": pvalues}
    for method in ("holm", "bh"):
        adjusted = adjust(pvalues, method=method, alpha=alpha) if pvalues else None
        sweep[method] = {
            "adjusted": [] if adjusted is None else adjusted.pvalues.tolist(),
            "reject": [] if adjusted is None else adjusted.reject.tolist(),
        }
    for index, run in enumerate(tested):
        pacost = run["pacost"]
        if correction == "none":
            pacost["pvalue_adjusted"] = pacost["pvalue"]
        else:
            pacost["pvalue_adjusted"] = sweep[correction]["adjusted"][index]
            if pacost.get("correction", "sweep") == "sweep":
                pacost["contaminated"] = bool(sweep[correction]["reject"][index])
                pacost["correction"] = correction
    for run in runs:
        if run["pacost"] is not None:
            run["pacost"].setdefault("pvalue_adjusted", math.nan)
            if run["pacost"].get("correction", "sweep") == "sweep":
                run["pacost"]["correction"] = "none"  # no test or correction "none": the raw verdict stands
    return sweep
