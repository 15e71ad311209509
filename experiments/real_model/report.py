"""The README's "A real model" tables from the results `run.py` wrote (no model is run here).

Per benchmark: items, accuracy on the original and the rephrased questions, PaCoST's p-value for every
confidence, how well P(True) (normalised and raw) and the answer log-prob tell the model's right answers from
its wrong ones (AUC with a bootstrap 95% interval: a confidence that cannot do this cannot show a
contamination-driven confidence gap either), the likelihood detectors, ConTAM's verdict; then the membership
contrast and the time each stage took (from the audit log, if given).

  python -m experiments.real_model.report [--results experiments/real_model/results] [--log run.log]
  python -m experiments.real_model.report --audit audit-paper   (the `paper` preset's PaCoST table)
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np

from experiments import summary_verdicts as verdicts  # tested, not detected, not tested
from jaxcontam.detect.pacost.confidences import CONFIDENCES as REGISTERED

RESAMPLES = 2000  # each AUC's bootstrap: items resampled within each group (`jaxcontam.stats.auc`)
# the library's confidences in the tables' order: those measured only when chosen (the paper's P(yes)) first
CONFIDENCES = tuple(sorted(REGISTERED, key=lambda name: not REGISTERED[name].on_demand))


def auc_with_interval(scores: np.ndarray, labels: np.ndarray):
    """AUC of finite `scores` for labels True vs False, its bootstrap 95% interval, and the group sizes."""
    from jaxcontam.stats import separation
    from jaxcontam.stats.auc import auc

    keep = np.isfinite(scores)
    scores, labels = scores[keep], labels[keep]
    if labels.all() or not labels.any():
        return float("nan"), (float("nan"), float("nan")), int(labels.sum()), int((~labels).sum())
    interval = auc(scores, labels, resamples=RESAMPLES, seed=0).confidence_interval(0.95)
    return separation(scores, labels)["auc"], (interval.low, interval.high), int(labels.sum()), int((~labels).sum())


def pacost_records(state: Path, benchmark: str) -> list[dict]:
    """Every PaCoST record of one benchmark from the audit's resumable state files."""
    records = []
    for path in sorted(state.glob("pacost-*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            records += [r for r in json.loads(line)["records"] if r["id"].split("/")[0] == benchmark]
    return records


def measured(summary: dict) -> tuple[str, ...]:
    """The confidences the audit measured (the chosen one and its variants), in `CONFIDENCES` order."""
    found = set()
    for run in summary["runs"]:
        found |= {run["pacost"]["confidence"], *run["pacost"].get("variants", {})}
    return tuple(c for c in CONFIDENCES if c in found)


def benchmark_rows(results: Path, audit: str = "audit") -> list[str]:
    import pandas as pd

    summary = {"runs": verdicts.read_runs(results / audit)}
    items = pd.read_parquet(results / audit / "items.parquet")
    confidences = measured(summary)
    judged = [c for c in ("p_yes", "p_true", "p_true_raw", "answer_logprob") if c in confidences]
    exchangeability = any(run.get("exchangeability") for run in summary["runs"])  # run.py --exchangeability
    lines = ["| benchmark | items (pairs) | accuracy original / rephrased | PaCoST p: " + ", ".join(confidences)
             + " | verdict (" + ", ".join(sorted({run["pacost"].get("correction", "sweep") for run in summary["runs"]}))
             + ") | " + " | ".join(f"{c} AUC right vs wrong [95% CI]" for c in judged) + " | "
             + ("exchangeability p (benchmark order) | " if exchangeability else "")
             + "ConTAM: items with a matched 8-gram, largest LONGEST-MATCH, verdict |",
             "|---|---|---|---|---|" + "---|" * len(judged) + "---|" + ("---|" if exchangeability else "")]
    for run in summary["runs"]:
        name = run["benchmark"].split(":")[0]
        records = pacost_records(results / audit / "state", name)
        correct = np.array([r["correct_original"] for r in records], np.float64)
        rephrased = np.array([r["correct_rephrased"] for r in records if r["rephrase"] is not None], np.float64)
        pacost = run["pacost"]
        tests = {pacost["confidence"]: pacost} | dict(pacost.get("variants", {}))
        aucs = []
        for confidence in judged:
            scores = np.array([r.get(f"{confidence}_original", np.nan) for r in records], np.float64)
            auc, (low, high), n_right, n_wrong = auc_with_interval(scores, correct > 0.5)
            aucs.append(f"{auc:.2f} [{low:.2f}, {high:.2f}]" if np.isfinite(auc) else f"n/a ({n_right} right)")
        verdict = contam_cell(run.get("contam") or {}, items[items["benchmark"] == name])
        lines.append(f"| {run['benchmark']} | {len(records)} ({pacost['n_pairs']}) | {correct.mean():.2f} / "
                     f"{rephrased.mean():.2f} | " + ", ".join(pvalue_cell(tests.get(c)) for c in confidences)
                     + f" | {verdict_cell(pacost)} | " + " | ".join(aucs) + " | "
                     + (f"{exchangeability_cell(run.get('exchangeability'))} | " if exchangeability else "")
                     + f"{verdict} |")
    return lines


def pvalue_cell(test: dict | None) -> str:
    """A confidence's PaCoST p-value; "no test" where it could not run (schema 1 or 2), "-" where not measured."""
    if test is None:
        return "-"
    return f"{test['pvalue']:.2g}" if verdicts.tested(test) else "no test"


def verdict_cell(pacost: dict) -> str:
    """The audit's PaCoST verdict: contaminated / not flagged with its p-value, or why no test ran (a schema-1
    "no test" stored `contaminated: false`: still not tested, never "not flagged")."""
    found = verdicts.outcome(pacost)
    if found == verdicts.NOT_TESTED:
        return verdicts.no_test_label(pacost)
    label = "contaminated" if found == verdicts.CONTAMINATED else "not flagged"
    return f"{label} (p {pacost['pvalue']:.2g}, {pacost.get('test')})"


def exchangeability_cell(result: dict | None) -> str:
    """Oren et al.'s one-sided p (canonical order more likely than shuffles), or why no test ran."""
    if not result:
        return "not run"
    if not verdicts.tested(result):
        return verdicts.no_test_label(result)
    return f"{result['pvalue']:.2g} ({result['chunks']} chunks x {result['permutations']} shuffles)"


def contam_cell(contam: dict, items) -> str:
    """How much of the benchmark the corpus text touches at all, and the EPG verdict (or why there is none)."""
    if not contam:
        return "not run"
    touched = f"{(items['token_match'] > 0).mean():.0%}, {items['longest_match'].max():.3f}"
    if not verdicts.tested(contam):  # schema 1: "no test" beside significant: false; schema 2: significant: null
        return f"{touched}; {verdicts.no_test_label(contam)}"
    if contam.get("threshold") is None:
        return f"{touched}; {contam.get('reason', 'no threshold')}; max-z p {contam['pvalue']:.2g}"
    return (f"{touched}; {contam['frac_contaminated']:.0%} marked, EPG {contam['epg']:+.3f}, "
            f"max-z p {contam['pvalue']:.2g}")


def membership_rows(results: Path) -> list[str]:
    found = json.loads((results / "membership.json").read_text(encoding="utf-8"))
    lines = [f"GSM8K train (possibly seen) vs test, {found['n_train']} + {found['n_test']} items, "
             f"{found['seconds']:.0f} s:", "", "| detector | AUC [95% CI] | one-sided p |", "|---|---|---|"]
    for name, entry in found["detectors"].items():
        lines.append(f"| {name} | {entry['auc']:.3f} [{entry['auc_ci95'][0]:.3f}, {entry['auc_ci95'][1]:.3f}] | "
                     f"{entry['pvalue']:.2g} |")
    return lines


def stage_times(log: Path) -> list[str]:
    """Each stage's last reported cumulative time, from the audit's console lines `  <stage> ...: chunk i/n (T s)`."""
    times: dict[str, str] = {}
    for line in log.read_text(encoding="utf-8", errors="replace").replace("\r", "\n").splitlines():
        found = re.match(r"\s+(\w+) (\S+) \| (\S+): chunk \d+/\d+ \((\d+) s\)", line)
        if found:
            times[f"{found[1]} {found[3]}"] = found[4]
    return [f"| {stage} | {seconds} s |" for stage, seconds in times.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, default=Path(__file__).resolve().parent / "results")
    parser.add_argument("--log", type=Path, default=None)
    parser.add_argument("--audit", default="audit", help="the audit folder under --results (audit-paper: that preset)")
    args = parser.parse_args()
    print("\n".join(benchmark_rows(args.results, args.audit)), end="\n\n")
    if args.audit == "audit":
        print("\n".join(membership_rows(args.results)), end="\n\n")
    if args.log:
        print("| stage | time |\n|---|---|\n" + "\n".join(stage_times(args.log)))


if __name__ == "__main__":
    main()
