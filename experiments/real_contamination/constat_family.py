"""ConStat's test (`jaxcontam.stats.constat`) on the family of arm models, per half, and issue 62's decision rule on
it (the `model_family` situation). No model runs: the committed audits' per-item correctness.

Per arm, benchmark and half: the original benchmark is the half's items (`correct_original`), the reference
benchmark the same items' rephrasings (`correct_rephrased`, the items with a rephrasing in every model); the
reference models are the five models that saw no item: the base GGUF, the control arm and its two data-order seeds,
and the diverged sibling (exactly 5, so the models are not resampled, as the authors do at 5). Audited: every
contaminated arm (its trained half `contaminated`, the other `clean`) and the format control (`format_control`);
the controls are the references and cannot be audited against themselves (4 would be left, below ConStat's 5).
A half whose reference models score too alike is untested: the three control models have the same accuracies on
COPA and MMLU (a data-order seed barely moves a greedy answer), so no bootstrap replicate keeps 5 distinct reference
accuracies and this family cannot give ConStat its relation (the result file says so, with the accuracies).
Flagged: p <= 0.05. 1,000 bootstrap replicates, chance (0, 0) as the authors' default.

    python -m experiments.real_contamination.constat_family [--results DIR] [--out DIR]

Writes constat_family.json and constat_family.md to --out (default: results/).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

import numpy as np

from experiments.real_contamination import round_four
from experiments.real_contamination.crossover import load_arm
from jaxcontam.stats import decision_rule as rule
from jaxcontam.stats.constat import constat_test
from jaxcontam.stats.validation import StatsInputError

HERE = pathlib.Path(__file__).resolve().parent

REFERENCE_MODELS = ("base", "control", "control_seed1", "control_seed2", "diverged_sibling")
AUDITED = (round_four.FORMAT_ARM, *round_four.CONTAMINATED_ARMS)


def _scores(items, ids, column: str) -> np.ndarray:
    return items.loc[ids, column].to_numpy(float)


def analyse(results: pathlib.Path, resamples: int = 1000) -> dict:
    arms = {arm: load_arm(results / "arms" / arm) for arm in (*REFERENCE_MODELS, *AUDITED)}
    side = arms["control"]["drawn"].to_dict()
    rows = []
    for arm in AUDITED:
        for benchmark, label, seen, group in round_four.halves(arms[arm]):
            ids = list(group.index)
            rephrased = [i for i in ids if all(np.isfinite(arms[m].loc[i, "correct_rephrased"]) for m in arms)]
            refs_original = np.stack([_scores(arms[m], ids, "correct_original") for m in REFERENCE_MODELS])
            refs_reference = np.stack([_scores(arms[m], rephrased, "correct_rephrased") for m in REFERENCE_MODELS])
            row = {
                "arm": arm,
                "benchmark": benchmark,
                "half": label,
                "role": round_four.role_of(arm, seen),
                "cluster": f"{benchmark}/{'drawn' if side[ids[0]] else 'other'}",
                "n": len(ids),
                "n_reference": len(rephrased),
            }
            try:
                result = constat_test(
                    _scores(arms[arm], ids, "correct_original"),
                    _scores(arms[arm], rephrased, "correct_rephrased"),
                    refs_original,
                    refs_reference,
                    resamples=resamples,
                )
            except StatsInputError as error:
                rows.append({**row, "pvalue": None, "untested": str(error)})
                continue
            interval = result.confidence_interval(0.95)
            rows.append(
                {
                    **row,
                    "delta": result.statistic,
                    "ci95": [interval.low, interval.high],
                    "pvalue": result.pvalue,
                    "actual": result.actual,
                    "predicted": result.predicted,
                }
            )
    halves = tuple(
        rule.HalfOutcome(r["role"], None if r["pvalue"] is None else r["pvalue"] <= rule.ALPHA, r["cluster"])
        for r in rows
    )
    # the controls are the reference models: no control half can be tested, so the level is read on the others
    required = ("clean", "format_control")
    decision = rule.decide([rule.Candidate("ConStat", "model_family", halves)], required=required)["model_family"]
    (assessment,) = decision.assessments
    accuracy = {
        benchmark: {
            m: [
                float(arms[m].loc[arms[m]["benchmark"] == benchmark, "correct_original"].mean()),
                float(arms[m].loc[arms[m]["benchmark"] == benchmark, "correct_rephrased"].mean()),
            ]
            for m in REFERENCE_MODELS
        }
        for benchmark in sorted(set(arms["control"]["benchmark"]))
    }
    return {
        "reference_models": list(REFERENCE_MODELS),
        "reference_accuracy": accuracy,
        "resamples": resamples,
        "rows": rows,
        "rule": {
            "required_roles": list(required),
            "choice": decision.choice.detector if decision.choice else None,
            "reason": decision.reason,
            "levels": {c.role: [c.share.flagged, c.share.tested, c.pvalue] for c in assessment.levels},
            "power": [assessment.power.flagged, assessment.power.tested],
            "power_lower95": assessment.power_lower,
        },
    }


def docs_table(report: dict) -> str:
    lines = [
        "| reference model | " + " | ".join(f"{b} original / rephrased" for b in report["reference_accuracy"]) + " |"
    ]
    lines.append("|---|" + "---|" * len(report["reference_accuracy"]))
    for m in report["reference_models"]:
        cells = [f"{acc[m][0]:.3f} / {acc[m][1]:.3f}" for acc in report["reference_accuracy"].values()]
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    lines.append("")
    untested = [r for r in report["rows"] if r["pvalue"] is None]
    if len(untested) == len(report["rows"]):
        reasons = sorted({r["untested"] for r in untested})
        lines.append(f"No half could be tested ({len(untested)} halves): {'; '.join(reasons)}.")
        report_rows = []
    else:
        lines += [
            "| arm | benchmark | half | role | delta [95% CI] | p | original acc. (predicted) |",
            "|---|---|---|---|---|---|---|",
        ]
        report_rows = report["rows"]
    for r in report_rows:
        if r["pvalue"] is None:
            lines.append(f"| {r['arm']} | {r['benchmark']} | {r['half']} | {r['role']} | no test | - | - |")
            continue
        low, high = r["ci95"]
        lines.append(
            f"| {r['arm']} | {r['benchmark']} | {r['half']} | {r['role']} | {r['delta']:+.2f} [{low:+.2f}, "
            f"{high:+.2f}] | {r['pvalue']:.3g} | {r['actual']:.2f} ({r['predicted']:.2f}) |"
        )
    verdict = report["rule"]
    levels = "; ".join(f"{role} {k}/{n} (p {p:.2g})" for role, (k, n, p) in verdict["levels"].items())
    power = verdict["power"]
    return (
        "\n".join(lines)
        + f"\n\nReference models: {', '.join(report['reference_models'])}. Decision rule (model_family, levels on "
        f"{' and '.join(verdict['required_roles'])}): {levels}; power {power[0]}/{power[1]} (95% lower bound "
        f"{verdict['power_lower95']:.2f}); picked: {verdict['choice'] or 'nothing'}.\n"
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=pathlib.Path, default=HERE / "results")
    parser.add_argument("--out", type=pathlib.Path, default=HERE / "results")
    args = parser.parse_args(argv)
    report = analyse(args.results)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "constat_family.json").write_text(json.dumps(report, indent=2) + "\n")
    text = "# ConStat on the family of arm models\n\n" + docs_table(report)
    (args.out / "constat_family.md").write_text(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
