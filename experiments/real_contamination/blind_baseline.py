"""The blind baseline (`jaxcontam.stats.blind`) on the arms' halves: can a bag-of-words classifier that never sees a
model tell the contaminated half of a benchmark from the clean one?

Per benchmark and draw, the items' text as the audit holds it (question and gold answer, from the control arm's
items.parquet: the same 68 items per benchmark in every arm), the contaminated half as the first set: draw `drawn`
(the seed-0 draw, the half the verbatim, fields, rephrased arms trained on) and draw `other` (the half their twins,
the `_swapped` arms, trained on). Sides from the control arm's ground_truth.jsonl. Naive Bayes on word 1-2-grams,
5-fold cross-validation, 999 label permutations.

    python -m experiments.real_contamination.blind_baseline [--results DIR] [--out DIR]

Writes blind_baseline.json and blind_baseline.md to --out (default: results/).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

from experiments.real_contamination.crossover import load_arm
from experiments.real_contamination.design import BENCHMARKS
from jaxcontam.stats.blind import blind_baseline

HERE = pathlib.Path(__file__).resolve().parent

DRAWS = {"drawn": True, "other": False}  # draw name -> the contaminated side's `drawn` flag in the control arm


def analyse(results: pathlib.Path, permutations: int = 999) -> dict:
    items = load_arm(results / "arms" / "control")
    rows = []
    for benchmark in BENCHMARKS:
        group = items[items["benchmark"] == benchmark]
        texts = (group["question"].astype(str) + " " + group["gold"].astype(str)).to_numpy()
        drawn = group["drawn"].to_numpy(bool)
        for draw, side in DRAWS.items():
            contaminated, clean = texts[drawn == side], texts[drawn != side]
            result = blind_baseline(list(contaminated), list(clean), permutations=permutations)
            interval = result.confidence_interval(0.95)
            rows.append(
                {
                    "benchmark": benchmark,
                    "draw": draw,
                    "n_contaminated": result.n_first,
                    "n_clean": result.n_second,
                    "auc": result.statistic,
                    "ci95": [interval.low, interval.high],
                    "pvalue": result.pvalue,
                }
            )
    return {
        "classifier": "multinomial naive Bayes, word 1-2-grams, 5-fold CV",
        "permutations": permutations,
        "rows": rows,
    }


def docs_table(report: dict) -> str:
    lines = [
        "| benchmark | contaminated half | items (contaminated / clean) | blind AUC [95% CI] | permutation p |",
        "|---|---|---|---|---|",
    ]
    for r in report["rows"]:
        low, high = r["ci95"]
        lines.append(
            f"| {r['benchmark']} | {r['draw']} | {r['n_contaminated']} / {r['n_clean']} | {r['auc']:.2f} "
            f"[{low:.2f}, {high:.2f}] | {r['pvalue']:.3g} |"
        )
    return "\n".join(lines) + f"\n\n{report['classifier']}, {report['permutations']} label permutations.\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=pathlib.Path, default=HERE / "results")
    parser.add_argument("--out", type=pathlib.Path, default=HERE / "results")
    args = parser.parse_args(argv)
    report = analyse(args.results)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "blind_baseline.json").write_text(json.dumps(report, indent=2) + "\n")
    text = "# Blind baseline on the arms' halves\n\n" + docs_table(report)
    (args.out / "blind_baseline.md").write_text(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
