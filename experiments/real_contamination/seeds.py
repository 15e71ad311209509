"""Seed spread of the real-contamination experiment (issue 48, item 3): how much the dose and each detector's AUC move
when only the training data order changes.

The replicated arms (`run.py`'s REPLICATED: control, verbatim_x1 and its twin verbatim_x1_swapped) were trained
again with `--data-seed 1` (and 2): the same items drawn, the same text, another order of the training documents.
Per arm family, benchmark and detector this prints each seed's single-model AUC (the arm's seen half against its
unseen half; in the control arm the `drawn` half against the other, which it saw neither of) and the dose
(run.py's difference-in-differences of mean log-prob over the base model, within benchmarks, on the audited text,
with its 95% CI), then the spread over the seeds present: mean, sample SD and range. Where an x1 arm and its twin
share a seed, the two-draw AUC of that seed (`crossover.balanced_auc`) is given too. A seed not yet trained is
listed as missing, never counted. Issue 62's detectors (Gap-K%, DC-PDD, the reference log-ratio against the base and
against the control arm's model, ReCaLL, CoDeC's delta) come from each seed's detector audit (detectors.py's
`audit_detectors`), where it has one.

    python -m experiments.real_contamination.seeds [--results DIR ...] [--out DIR]

Writes seeds.json and seeds.md to --out (default: results/).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

import numpy as np

from experiments.real_contamination import detectors
from experiments.real_contamination.crossover import _seen_auc, balanced_auc, find_arm, load_arm
from experiments.real_contamination.design import BENCHMARKS, PAIRED_DETECTORS, REPLICATE_SEEDS, REPLICATED

HERE = pathlib.Path(__file__).resolve().parent

FAMILIES = REPLICATED
SEEDS = (0, *REPLICATE_SEEDS)  # seed 0: the arm itself
SHOWN = {
    "min_k_plus_plus": "Min-K%++",
    "mean_logprob": "mean log-prob",
    "zlib_ratio": "zlib ratio",
    "min_k": "Min-K%",
    "longest_match": "ConTAM LONGEST_MATCH",
    "pacost_gap_p_true": "PaCoST gap P(True)",
    "pacost_gap_answer_logprob": "PaCoST gap answer log-prob",
    "gap_k": "Gap-K%",
    "dc_pdd": "DC-PDD",
    "reference_log_ratio": "log-ratio vs the base",
    "reference_log_ratio_control": "log-ratio vs the control's model",
    "recall": "ReCaLL",
    "codec_delta": "CoDeC delta",
}
# issue 62's scores, from the detector audits (higher = seen as detectors.py orients them)
DETECTOR_SCORES = {
    score: detectors.SCORES[score]
    for score in ("gap_k", "dc_pdd", "reference_log_ratio", "reference_log_ratio_control", "recall", "codec_delta")
}


def arm_name(family: str, seed: int) -> str:
    return family if seed == 0 else f"{family}_seed{seed}"


def single_auc(items, detector: str, higher: bool) -> float:
    """The model's AUC of its seen against its unseen half; in an arm that saw neither, of `drawn` against the rest."""
    if not items["seen"].any():
        items = items.assign(seen=items["drawn"])
    return _seen_auc(items, detector, higher)


def dose(folder: pathlib.Path) -> dict | None:
    path = folder / "dose.json"
    if not path.exists():
        return None
    entry = json.loads(path.read_text())["did"]["audited_text/all"]
    return {"did": entry["did"], "ci95": entry["ci95"]}


def with_detector_scores(arms: dict, folders: dict) -> dict:
    """Each (family, seed)'s items with issue 62's scores joined from its detector audit where it has one
    (detectors.py's `load`), the log-ratio against the control arm's model beside the base's (detectors.py's
    control-reference design; not in the control itself, its own reference)."""
    audited = {
        arm_name(*key): detectors.load(folder)
        for key, folder in folders.items()
        if (folder / detectors.AUDIT / "items.parquet").exists()
    }
    scored = detectors.with_control_reference(audited, detectors.by_design(audited).get("control_reference"))
    joined = {}
    for key, items in arms.items():
        extra = scored.get(arm_name(*key))
        joined[key] = items if extra is None else items.join(extra[[s for s in DETECTOR_SCORES if s in extra]])
    return joined


def spread(values: list[float]) -> dict:
    """mean, sample SD (None under two values) and range of the finite values."""
    finite = [v for v in values if np.isfinite(v)]
    if not finite:
        return {"n": 0, "mean": None, "sd": None, "range": None}
    return {
        "n": len(finite),
        "mean": float(np.mean(finite)),
        "sd": float(np.std(finite, ddof=1)) if len(finite) > 1 else None,
        "range": [float(min(finite)), float(max(finite))],
    }


def analyse(results: list[pathlib.Path]) -> dict:
    folders = {(f, s): folder for f in FAMILIES for s in SEEDS if (folder := find_arm(results, arm_name(f, s)))}
    arms = with_detector_scores({key: load_arm(folder) for key, folder in folders.items()}, folders)
    scores = {**PAIRED_DETECTORS, **DETECTOR_SCORES}
    report: dict = {
        "seeds_present": {f: [s for s in SEEDS if (f, s) in arms] for f in FAMILIES},
        "missing": [arm_name(f, s) for f in FAMILIES for s in SEEDS if (f, s) not in arms],
        "dose": [],
        "auc": [],
        "two_draws": [],
    }
    for family in FAMILIES:
        seeds = report["seeds_present"][family]
        per_seed = {s: dose(folders[family, s]) for s in seeds}
        report["dose"].append(
            {
                "family": family,
                "seeds": {str(s): d for s, d in per_seed.items()},
                "spread": spread([d["did"] for d in per_seed.values() if d]),
            }
        )
        for benchmark in BENCHMARKS:
            for detector, higher in scores.items():
                values = {}
                for s in seeds:
                    items = arms[family, s]
                    group = items[items["benchmark"] == benchmark]
                    if detector in group and group[detector].notna().any():
                        values[s] = single_auc(group, detector, higher)
                if values:
                    report["auc"].append(
                        {
                            "family": family,
                            "benchmark": benchmark,
                            "detector": detector,
                            "seeds": {str(s): v for s, v in values.items()},
                            "spread": spread(list(values.values())),
                        }
                    )
    for seed in SEEDS:
        pair = ("verbatim_x1", seed), ("verbatim_x1_swapped", seed)
        if not all(key in arms for key in pair):
            continue
        for benchmark in BENCHMARKS:
            a, b = (arms[key][arms[key]["benchmark"] == benchmark] for key in pair)
            for detector, higher in scores.items():
                if detector in a and detector in b:
                    estimate = balanced_auc(a, b, detector, higher)
                    report["two_draws"].append(
                        {
                            "seed": seed,
                            "benchmark": benchmark,
                            "detector": detector,
                            "value": estimate.value,
                            "ci95": list(estimate.ci95),
                        }
                    )
    return report


def _number(value, digits: int = 2, signed: bool = False) -> str:
    if value is None or not np.isfinite(value):
        return "-"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def _spread_cells(entry: dict, digits: int = 2, signed: bool = False) -> list[str]:
    s = entry["spread"]
    span = (
        "-"
        if s["range"] is None
        else f"{_number(s['range'][0], digits, signed)} to {_number(s['range'][1], digits, signed)}"
    )
    return [_number(s["mean"], digits, signed), _number(s["sd"], digits), span]


HEADLINE = ("min_k_plus_plus", "mean_logprob", "reference_log_ratio_control")


def docs_table(report: dict, shown: tuple[str, ...] = HEADLINE) -> str:
    """docs/results.md's seed table: per family, the dose and the headline detectors' AUC per seed with the spread
    (Min-K%++, mean log-prob, and the strongest ranking of issue 62's, the log-ratio against the control's model)."""
    lines = [
        "| arm | measure | " + " | ".join(f"seed {s}" for s in SEEDS) + " | mean | SD | range |",
        "|---|---|" + "---|" * (len(SEEDS) + 3),
    ]
    for entry in report["dose"]:
        cells = [_number(entry["seeds"][str(s)]["did"], 3, True) if entry["seeds"].get(str(s)) else "-" for s in SEEDS]
        lines.append(
            f"| {entry['family']} | dose (DiD) | "
            + " | ".join(cells)
            + " | "
            + " | ".join(_spread_cells(entry, 3, True))
            + " |"
        )
        for row in report["auc"]:
            if row["family"] == entry["family"] and row["detector"] in shown:
                lines.append(_auc_line([entry["family"], f"{SHOWN[row['detector']]} AUC, {row['benchmark']}"], row))
    return "\n".join(lines) + "\n"


def _auc_line(head: list[str], row: dict) -> str:
    """A table line: the `head` cells, then the row's AUC per seed and its spread."""
    cells = head + [_number(row["seeds"].get(str(s))) for s in SEEDS] + _spread_cells(row)
    return "| " + " | ".join(cells) + " |"


def markdown(report: dict) -> str:
    lines = ["# Seed spread: the same draw, another data order", ""]
    present = "; ".join(f"{f}: seeds {', '.join(map(str, s)) or 'none'}" for f, s in report["seeds_present"].items())
    lines += [f"Seeds audited: {present}."]
    if report["missing"]:
        lines += [f"Not yet trained or audited (left out of every spread): {', '.join(report['missing'])}."]
    lines += [
        "",
        "Dose: DiD of mean log-prob over the base model on the audited text (95% CI per seed). AUC: each "
        "model's own, seen half against unseen (control: drawn half against the other). SD: sample SD over "
        "the seeds present.",
        "",
        "## Dose and headline AUCs",
        "",
        docs_table(report),
        "## Every detector",
        "",
        "| arm | benchmark | detector | " + " | ".join(f"seed {s}" for s in SEEDS) + " | mean | SD | range |",
        "|---|---|---|" + "---|" * (len(SEEDS) + 3),
    ]
    lines += [_auc_line([row["family"], row["benchmark"], SHOWN[row["detector"]]], row) for row in report["auc"]]
    if report["two_draws"]:
        lines += [
            "",
            "## Two draws per seed (x1 and its twin of the same seed, averaged; item-cluster 95% CI)",
            "",
            "| seed | benchmark | detector | AUC | 95% CI |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {r['seed']} | {r['benchmark']} | {SHOWN[r['detector']]} | {_number(r['value'])} | "
            f"({_number(r['ci95'][0])}, {_number(r['ci95'][1])}) |"
            for r in report["two_draws"]
        ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=pathlib.Path, action="append")
    parser.add_argument("--out", type=pathlib.Path, default=HERE / "results")
    args = parser.parse_args(argv)
    report = analyse(args.results or [HERE / "results"])
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "seeds.json").write_text(json.dumps(report, indent=2, default=float) + "\n")
    text = markdown(report)
    (args.out / "seeds.md").write_text(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
