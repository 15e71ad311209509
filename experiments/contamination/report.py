"""Tables and plots from the cells of a controlled-contamination run (see run.py).

    python -m experiments.contamination.report experiments/contamination/results

Writes DIR/report.md (power vs rate, copies and form; false-positive rates; the minimum detectable
contamination per detector; EPG vs copies; audit cost) and DIR/*.png. A detector "detects" a cell when its
p-value is <= ALPHA: the paired test for PaCoST, the one-sided Mann-Whitney test of contaminated vs clean
items for the per-item scores (Min-K%++, mean log-prob, ConTAM LONGEST-MATCH), the t-test over chunks for
the exchangeability test (Oren et al.). A test that could not run (no p-value, a "no test" status, or a null
verdict in a schema-2 entry: `experiments/summary_verdicts.py`) is not tested: it leaves every count's
denominator and is counted beside it, never as not detected.
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
from collections import defaultdict

import numpy as np

from experiments import summary_verdicts as verdicts  # tested, not detected, not tested
from jaxcontam.stats.multiple import DEFAULT_ALPHA as ALPHA


def separation(metric: dict) -> dict:
    """A ConTAM metric's separation of the known-contaminated items (AUC, Mann-Whitney p): under `separation`
    since run.py kept the max-z verdict's own p-value and status beside it; at the metric's level in older cells."""
    if "separation" in metric:
        return metric["separation"]
    return {} if "max_z" in metric else metric  # a newer cell without ground truth has none


DETECTORS = {  # label -> the test result of a benchmark entry holding its p-value (and, per-item scores, the AUC)
    "PaCoST answer log-prob": lambda e: e["pacost"],
    "PaCoST P(True)": lambda e: e["pacost"]["variants"]["p_true"],
    "PaCoST question Min-K%++": lambda e: e["pacost"]["variants"]["question_min_k_plus_plus"],
    "Min-K%++": lambda e: e["likelihood"]["min_k_plus_plus"],
    "Mean log-prob": lambda e: e["likelihood"]["mean_logprob"],
    "Exchangeability test": lambda e: e["exchangeability"] or {},
    "ConTAM LONGEST-MATCH": lambda e: separation(e["contam"]["per_metric"]["longest_match"]),
}
PER_ITEM = {"Min-K%++", "Mean log-prob", "ConTAM LONGEST-MATCH"}  # need contaminated and clean items
BENCHMARKS = ("gsm8k", "copa")
REFERENCE_COPIES = 4  # the power-vs-share sweep and the minimum detectable share use this many copies


def finite(value) -> bool:
    return value is not None and isinstance(value, (int, float)) and math.isfinite(value)


def load_cells(results: pathlib.Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((results / "cells").glob("*.json"))]


def outcome(record: dict, benchmark: str, detector: str) -> tuple[float | None, float | None]:
    """The detector's p-value on the benchmark (None: not tested, whatever a schema-1 `contaminated: false`
    beside it says) and its AUC (per-item scores; None otherwise)."""
    result = DETECTORS[detector](record["benchmarks"][benchmark])
    pvalue, auc = result.get("pvalue"), result.get("auc")
    return (pvalue if verdicts.tested(result) else None), (auc if finite(auc) else None)


def _untested(count: int) -> str:
    return f"; {count} no test" if count else ""


def summary_cell(records: list[dict], benchmark: str, detector: str) -> str:
    """'k/n (p~median, AUC mean; u no test)' over the seeds of one grid point: detected / tested seeds, the seeds
    it could not test apart; '-' where it could test none."""
    results = [outcome(r, benchmark, detector) for r in records]
    pvalues = [p for p, _ in results if p is not None]
    if not pvalues:
        return "-"
    text = f"{sum(p <= ALPHA for p in pvalues)}/{len(pvalues)} (p {np.median(pvalues):.2g}"
    aucs = [a for _, a in results if a is not None]
    return text + (f", AUC {np.mean(aucs):.2f}" if aucs else "") + _untested(len(results) - len(pvalues)) + ")"


def group(records: list[dict], key) -> dict:
    grouped = defaultdict(list)
    for record in records:
        grouped[key(record["cell"])].append(record)
    return dict(sorted(grouped.items()))


def table(title: str, rows: dict, label: str, benchmark: str) -> list[str]:
    lines = [f"#### {title}: {benchmark}", "", f"| {label} | seeds | " + " | ".join(DETECTORS) + " |",
             "|" + "---|" * (len(DETECTORS) + 2)]
    for value, records in rows.items():
        value = f"{value:.0%}" if label == "share" else value
        lines.append(f"| {value} | {len(records)} | " +
                     " | ".join(summary_cell(records, benchmark, d) for d in DETECTORS) + " |")
    return lines + [""]


def select(records: list[dict], *, rate=None, copies=None, form=None) -> list[dict]:
    """Cells without the decontamination filter matching the given settings (a 0% cell matches any copies
    and form: nothing was injected)."""
    def keep(cell):
        if cell["decontaminate"] or (rate is not None and cell["rate"] != rate):
            return False
        return cell["rate"] == 0 or ((copies is None or cell["copies"] == copies) and
                                     (form is None or cell["form"] == form))
    return [r for r in records if keep(r["cell"])]


def rate_sweep(records):
    return select(records, copies=REFERENCE_COPIES, form="prompt_answer")


def copies_sweep(records):
    return select(records, rate=0.5, form="prompt_answer")


def form_sweep(records):
    return select(records, rate=0.5, copies=8)


def false_positive_lines(records: list[dict]) -> list[str]:
    lines = ["### False-positive rate", "",
             "Cells with nothing injected (0%) and the decontaminated control (50% x 8 copies injected, then "
             "filtered out of the stream by `DecontaminationFilter`): the share of the tested (cell, benchmark) "
             "pairs a detector flags at p <= 0.05, and beside it the pairs it could not test. Per-item detectors "
             "are scored on the control against the items that were meant to be injected.", "",
             "| arm | cells | " + " | ".join(DETECTORS) + " |", "|" + "---|" * (len(DETECTORS) + 2)]
    for label, chosen in (("0% (null)", [r for r in records if r["cell"]["rate"] == 0]),
                          ("decontaminated", [r for r in records if r["cell"]["decontaminate"]])):
        cells = []
        for detector in DETECTORS:
            results = [outcome(r, b, detector)[0] for r in chosen for b in BENCHMARKS]
            pvalues = [p for p in results if p is not None]
            untested = len(results) - len(pvalues)
            cells.append(f"{sum(p <= ALPHA for p in pvalues)}/{len(pvalues)}" + (f" ({untested} no test)" if untested
                                                                                 else "") if pvalues else "-")
        lines.append(f"| {label} | {len(chosen)} | " + " | ".join(cells) + " |")
    controls = [r for r in records if r["cell"]["decontaminate"]]
    if controls:
        lines += ["", "The filter dropped, per control cell: " + "; ".join(
            f"seed {r['cell']['seed']}: {r['filter']['dropped_injected']} of {r['n_injected_documents']} injected and "
            f"{r['filter']['dropped_replay']} of {r['n_replay_documents']} replayed documents" for r in controls) + "."]
    return lines + [""]


def minimum_detectable(records: list[dict]) -> list[str]:
    """Smallest rate from which every seed is detected at every higher rate too (copies 4, prompt + answer)."""
    rates = group([r for r in rate_sweep(records) if r["cell"]["rate"] > 0], lambda c: c["rate"])
    lines = ["### Minimum detectable contamination", "",
             "The smallest contaminated share (4 copies of prompt + answer; shares where a detector is undefined "
             "are skipped) from which the detector flags every tested "
             "seed at every larger share too (seeds it could not test are counted beside it, not as missed); a "
             "detector that also flags models trained with nothing injected "
             "(0%) is not calibrated there, whatever its power.", "", "| detector | " + " | ".join(BENCHMARKS) + " |", "|---|---|---|"]
    for detector in DETECTORS:
        cells = []
        for benchmark in BENCHMARKS:
            pvalues = {rate: [outcome(r, benchmark, detector)[0] for r in rs] for rate, rs in rates.items()}
            detected = {rate: all(p <= ALPHA for p in ps if p is not None) for rate, ps in pvalues.items()
                        if any(p is not None for p in ps)}  # per-item scores are undefined at 100% (no clean items)
            found = [rate for rate in detected if all(detected[r] for r in detected if r >= rate)]
            untested = sum(p is None for rate in detected for p in pvalues[rate])
            null = [p for r in records if r["cell"]["rate"] == 0
                    and (p := outcome(r, benchmark, detector)[0]) is not None]
            false_alarms = sum(p <= ALPHA for p in null)
            cell = f"{min(found):.0%}" if found else "not detected"
            cell += f" ({untested} seeds not tested)" if untested else ""
            cells.append(cell + (f" (but flags {false_alarms}/{len(null)} clean models)" if false_alarms else ""))
        lines.append(f"| {detector} | " + " | ".join(cells) + " |")
    return lines + [""]


def epg_lines(records: list[dict]) -> list[str]:
    lines = ["### Accuracy and EPG vs copies", "",
             "Accuracy on the contaminated and clean items (the truth), and ConTAM's LONGEST-MATCH threshold "
             "selection (mean over seeds; '-' where no threshold qualifies).", "",
             "| benchmark | copies | acc contaminated | acc clean | threshold | % marked | EPG |",
             "|---|---|---|---|---|---|---|"]
    for benchmark in BENCHMARKS:
        for copies, rs in group(copies_sweep(records), lambda c: c["copies"]).items():
            entries = [r["benchmarks"][benchmark] for r in rs]
            acc = [np.mean([e["ground_truth"]["groups"][k]["accuracy"] for e in entries])
                   for k in ("contaminated", "clean")]
            chosen = [e["contam"] for e in entries if e["contam"]["threshold"] is not None]
            stats = ["-"] * 3 if not chosen else [
                f"{np.mean([c['threshold'] for c in chosen]):.2f}",
                f"{np.mean([c['frac_contaminated'] for c in chosen]):.0%}",
                f"{np.mean([c['epg'] for c in chosen]):+.3f}"]
            lines.append(f"| {benchmark} | {copies} | {acc[0]:.0%} | {acc[1]:.0%} | " + " | ".join(stats) + " |")
    return lines + [""]


def cost_lines(records: list[dict]) -> list[str]:
    seconds = defaultdict(list)
    for record in records:
        seconds["fine-tune"].append(record["training"]["seconds"])
        seconds["n-gram counts (both benchmarks)"].append(record["ngram_seconds"])
        for benchmark in BENCHMARKS:
            for detector, value in record["benchmarks"][benchmark]["seconds"].items():
                seconds[f"{detector} ({benchmark})"].append(value)
    lines = ["### Cost per cell", "", "| stage | mean seconds |", "|---|---|"]
    lines += [f"| {stage} | {np.mean(values):.1f} |" for stage, values in seconds.items()]
    return lines + [""]


def plot_power(records: list[dict], key: str, path: pathlib.Path, xlabel: str, log_x: bool) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = group([r for r in records if r["cell"]["rate"] > 0], lambda c: c[key])
    fig, axes = plt.subplots(1, len(BENCHMARKS), figsize=(11, 4), sharey=True)
    for ax, benchmark in zip(axes, BENCHMARKS):
        for index, detector in enumerate(DETECTORS):
            xs, ys = [], []
            for value, rs in points.items():
                pvalues = [p for r in rs if (p := outcome(r, benchmark, detector)[0]) is not None]
                if pvalues:
                    xs.append(value)
                    ys.append(np.mean([p <= ALPHA for p in pvalues]))
            ax.plot(xs, ys, marker="os^vDxP"[index], linestyle=("-", "--", ":")[index % 3], alpha=0.75,
                    markersize=9 - index, label=detector)  # distinct styles: overlapping curves stay visible
        ax.set_title(benchmark)
        ax.set_xlabel(xlabel)
        if log_x:
            ax.set_xscale("log")
            ax.set_xticks(list(points), [str(v) for v in points])
            ax.minorticks_off()
    axes[0].set_ylabel(f"share of seeds detected (p <= {ALPHA})")
    axes[-1].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_training_trace(records: list[dict], path: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(BENCHMARKS), figsize=(11, 4), sharey=True)
    for ax, benchmark in zip(axes, BENCHMARKS):
        for record in sorted(copies_sweep(records), key=lambda r: r["cell"]["copies"]):
            if record["cell"]["seed"] != 0 or record["cell"]["rate"] == 0:
                continue
            trace = record["in_training"]
            steps = [h["step"] / record["training"]["steps"] for h in trace]
            ax.plot(steps, [h["min_k_plus_plus_auc"][benchmark] for h in trace], marker="o",
                    label=f"{record['cell']['copies']} copies")
        ax.axhline(0.5, color="grey", lw=0.8)
        ax.set_title(benchmark)
        ax.set_xlabel("share of the fine-tune done")
    axes[0].set_ylabel("Min-K%++ AUC (in-training audit)")
    axes[-1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=pathlib.Path)
    args = parser.parse_args()
    records = load_cells(args.results)
    if not records:
        raise SystemExit(f"no finished cells under {args.results / 'cells'}: run run.py first")
    lines = [f"## Results ({len(records)} cells)", "",
             "Each entry: seeds detected at p <= 0.05 / seeds tested, the median p-value and, for per-item scores, the "
             "mean AUC of contaminated vs clean items; 'k no test': seeds the detector could not test, left out of "
             "the count; '-': it could test no seed (a per-item score needs contaminated and clean items, the "
             "exchangeability test chunks that fit the model's context).", "",
             "### Power vs contaminated share (4 copies, prompt + answer)", ""]
    for benchmark in BENCHMARKS:
        lines += table("share contaminated", group(rate_sweep(records), lambda c: c["rate"]), "share", benchmark)
    lines += ["### Power vs copies (50% contaminated, prompt + answer)", ""]
    for benchmark in BENCHMARKS:
        lines += table("copies", group(copies_sweep(records), lambda c: c["copies"]), "copies", benchmark)
    lines += ["### Power vs form (50% contaminated, 8 copies)", ""]
    for benchmark in BENCHMARKS:
        lines += table("form", group([r for r in form_sweep(records) if r["cell"]["rate"] > 0],
                                     lambda c: c["form"]), "form", benchmark)
    lines += false_positive_lines(records) + minimum_detectable(records) + epg_lines(records) + cost_lines(records)
    (args.results / "report.md").write_text("\n".join(lines) + "\n")
    plot_power(rate_sweep(records), "rate", args.results / "power_vs_rate.png", "share of the benchmark contaminated",
               False)
    plot_power(copies_sweep(records), "copies", args.results / "power_vs_copies.png", "copies per item", True)
    plot_training_trace(records, args.results / "auc_during_training.png")
    print(args.results / "report.md")


if __name__ == "__main__":
    main()
