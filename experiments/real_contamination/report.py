"""Tables of the real-contamination experiment: per detector and arm, power on the contaminated half and the
false-positive rate on the clean half with 95% CIs, and the smallest dose each detector flags.

Reads `run.py`'s results folder (each arm's dose.json, its audits' items.parquet and summary.json) and writes
report.json and report.md beside them. The contaminated half is the items drawn for contamination (`drawn` in
ground_truth.jsonl), the same items in every arm: in the control arm its "power" is a false-positive rate too.
Per-item flags:

- likelihood detectors (mean log-prob, zlib ratio, Min-K%, Min-K%++): above the 95th percentile of the same
  detector on the control arm's items of the same benchmark (the control saw no item: a 5% false-positive
  rate there by construction), in the detector's direction; AUC from the audit;
- ConTAM metrics: the item's metric over the arm's corpus/ at least 0.5 (half its tokens in corpus n-grams);
- PaCoST (a test of a set of items, not of one): run on the contaminated half and on the clean half of each
  benchmark, for every confidence under each preset; "power" is the share of the tested contaminated halves it
  flags (p < 0.05), the false-positive rate the share of the tested clean halves. A half PaCoST could not test
  (too few pairs: no p-value) is neither: it leaves the denominator, and the cell says how many ("no test on
  a / b", with flagged / tested halves in place of the percentages).

Intervals: Wilson for per-item rates, Clopper-Pearson for per-benchmark ones (`jaxcontam.stats.intervals`).
A detector flags a dose when its rate on the contaminated half exceeds the clean half's (one-sided Fisher exact
p < 0.05, per-item detectors) or when it flags a contaminated half and none of the clean halves it tested (PaCoST;
at least one).

AUCs and the ground-truth EPG (accuracy on all items minus on the clean half) are computed here from the items,
for every arm, the control arm included (its "contaminated" half is the drawn half it never saw, so its row is
the split's own imbalance): each with a 95% bootstrap CI over items and a random-split permutation-null p (the
half flag reshuffled over the benchmark's items; `crossover.py`'s `unpaired_auc` / `unpaired_epg`). The paired
crossover analysis and the calibrated PaCoST verdict are in `crossover.py`.

    python -m experiments.real_contamination.report experiments/real_contamination/results [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import tomllib

import numpy as np

from experiments import summary_verdicts as verdicts  # tested, not detected, not tested
from experiments.real_contamination import crossover
from experiments.real_contamination.design import (
    ALPHA,
    ARM_ORDER,
    AUC_DETECTORS,
    LIKELIHOOD,
    METRICS,
    PAPER_CONFIDENCES,
    PRESETS,
)
from experiments.real_contamination.design import CONFIDENCES as MEASURED
from jaxcontam.stats import intervals

HERE = pathlib.Path(__file__).resolve().parent
CONFIDENCES = (*MEASURED, *PAPER_CONFIDENCES)  # the paper preset's P(yes) too
HALVES = ("contaminated", "clean")


def wilson(k: int, n: int) -> list[float]:
    """A per-item rate's 95% Wilson interval ([NaN, NaN] with no item)."""
    if n == 0:
        return [float("nan"), float("nan")]
    interval = intervals.wilson(k, n, 0.95)
    return [interval.low, interval.high]


def clopper_pearson(k: int, n: int) -> list[float]:
    """A per-benchmark rate's 95% exact interval ([NaN, NaN] with no half tested)."""
    if n == 0:
        return [float("nan"), float("nan")]
    interval = intervals.clopper_pearson(k, n, 0.95)
    return [interval.low, interval.high]


def fisher_greater(flagged_contaminated: int, n_contaminated: int, flagged_clean: int, n_clean: int) -> float:
    from scipy.stats import fisher_exact

    table = [[flagged_contaminated, n_contaminated - flagged_contaminated], [flagged_clean, n_clean - flagged_clean]]
    return float(fisher_exact(table, alternative="greater").pvalue)


def rates(flags: np.ndarray, truth: np.ndarray) -> dict:
    k1, n1, k0, n0 = int(flags[truth].sum()), int(truth.sum()), int(flags[~truth].sum()), int((~truth).sum())
    return {"power": k1 / n1 if n1 else None, "power_ci95": wilson(k1, n1), "fpr": k0 / n0 if n0 else None,
            "fpr_ci95": wilson(k0, n0), "n": [n1, n0], "fisher_p": fisher_greater(k1, n1, k0, n0) if n1 and n0
            else None}


def load_items(folder: pathlib.Path, preset: str):
    """The audit's items with `drawn` from the arm's ground truth: the contaminated half of every arm (in the
    control arm the same items, not trained on)."""
    import pandas as pd

    path = folder / f"audit_{preset}" / "items.parquet"
    if not path.exists():
        return None
    items = pd.read_parquet(path)
    rows = (folder / "ground_truth.jsonl").read_text().splitlines()
    truth = {row["id"]: row["drawn"] for row in map(json.loads, rows)}
    items["drawn"] = items["id"].map(truth).astype(bool)
    return items


def likelihood_thresholds(control) -> dict:
    """(benchmark, detector) -> the control arm's 95th percentile in the direction 'seen'."""
    thresholds = {}
    for benchmark, group in control.groupby("benchmark"):
        for detector, higher in LIKELIHOOD.items():
            values = group[detector].to_numpy(float) * (1 if higher else -1)
            thresholds[benchmark, detector] = float(np.nanquantile(values, 0.95))
    return thresholds


def item_detectors(items, thresholds: dict | None) -> dict:
    truth = items["drawn"].to_numpy(bool)
    results = {}
    if thresholds is not None:
        for detector, higher in LIKELIHOOD.items():
            values = items[detector].to_numpy(float) * (1 if higher else -1)
            limits = np.array([thresholds[b, detector] for b in items["benchmark"]])
            results[detector] = rates(values > limits, truth)
    for metric in METRICS:
        if metric in items:
            results[f"contam_{metric}"] = rates(items[metric].to_numpy(float) >= 0.5, truth)
    return results


def half_counts(pvalues: dict) -> dict:
    """Per half: PaCoST's flagged (p < ALPHA), tested and untested (no p-value) benchmark halves of a row's
    `pvalues` ({benchmark: {half: p}}, NaN where no test ran)."""
    return {half: verdicts.tally(verdicts.pvalue_outcome(p[half], ALPHA) for p in pvalues.values())
            for half in HALVES}


def pacost_halves(items, preset: str) -> dict:
    """Each confidence's paired test on each benchmark's contaminated and clean halves: the rates over the halves
    it tested (`n`: tested halves per side), a half it could not test stored as NaN and left out."""
    from jaxcontam.detect.pacost.settings import PacostSettings
    from jaxcontam.detect.pacost.significance import paired_verdict

    settings = PacostSettings(preset=preset)
    results = {}
    for confidence in (c for c in CONFIDENCES if f"{c}_original" in items):
        per_benchmark = {}
        for benchmark, group in items.groupby("benchmark"):
            records = group.to_dict("records")
            per_benchmark[benchmark] = {}
            for half, flag in (("contaminated", True), ("clean", False)):
                verdict = paired_verdict([r for r in records if r["drawn"] == flag], confidence, settings)
                per_benchmark[benchmark][half] = verdict.pvalue if verdict.status.ran else float("nan")
        counts = half_counts(per_benchmark)
        (k1, n1), (k0, n0) = ((counts[h]["flagged"], counts[h]["tested"]) for h in HALVES)
        results[f"pacost_{preset}_{confidence}"] = {
            "power": k1 / n1 if n1 else None, "power_ci95": clopper_pearson(k1, n1),
            "fpr": k0 / n0 if n0 else None, "fpr_ci95": clopper_pearson(k0, n0),
            "n": [n1, n0], "flags": bool(k1 and not k0 and n0), "pvalues": per_benchmark}
    return results


def accuracy(items) -> dict:
    out = {}
    for benchmark, group in list(items.groupby("benchmark")) + [("all", items)]:
        truth = group["drawn"].to_numpy(bool)
        correct = group["correct"].to_numpy(float)
        out[benchmark] = {half: {"accuracy": float(correct[mask].mean()) if mask.any() else None,
                                 "ci95": wilson(int(correct[mask].sum()), int(mask.sum()))}
                          for half, mask in (("contaminated", truth), ("clean", ~truth))}
    return out


def aucs_with_nulls(items, resamples: int = 9999) -> dict:
    """Per benchmark: each detector's AUC (drawn half vs the other) and the ground-truth EPG, each with a 95%
    bootstrap CI, the one-sided random-split permutation p and its two-sided form."""
    out = {}
    for benchmark, group in items.groupby("benchmark"):
        flags = group["drawn"].to_numpy(bool)
        cells = {}
        for detector, higher in AUC_DETECTORS.items():
            if detector in group and group[detector].notna().any():
                values = group[detector].to_numpy(float) * (1 if higher else -1)
                cells[detector] = crossover._asdict(crossover.unpaired_auc(values, flags, resamples=resamples))
        cells["epg_truth"] = crossover._asdict(crossover.unpaired_epg(group["correct"], flags, resamples=resamples))
        out[benchmark] = cells
    return out


def paper_preset(items) -> dict:
    """The authors' method per benchmark: on how many items (per half) the judge's reply said yes or no at all
    (P(yes) > 0: `detect.pacost.confidences`), how many pairs the paired t-test keeps, its p per half, and
    the AUC of P(yes) on the original text, contaminated half against the clean half, over the items it judged;
    also the share of judge replies (original text) that open with the benchmarks' "Answer:" line, the format the
    contaminated arms were trained on, instead of a yes or a no."""
    from jaxcontam.detect.pacost.settings import PacostSettings
    from jaxcontam.detect.pacost.significance import paired_verdict

    settings = PacostSettings(preset="paper")
    out = {}
    for benchmark, group in items.groupby("benchmark"):
        rephrased = group["rephrase"].notna().to_numpy()
        said = {side: group[f"p_yes_{side}"].to_numpy(float) > 0 for side in ("original", "rephrased")}
        cell = {}
        for half, flag in (("contaminated", True), ("clean", False)):
            mine = group["drawn"].to_numpy(bool) == flag
            verdict = paired_verdict(group[mine].to_dict("records"), "p_yes", settings)
            cell[half] = {"items": int(mine.sum()), "judged_original": int((said["original"] & mine).sum()),
                          "rephrased": int((rephrased & mine).sum()),
                          "judged_rephrased": int((said["rephrased"] & rephrased & mine).sum()),
                          "pairs": verdict.n_pairs, "pvalue": verdict.pvalue, "status": verdict.status.label}
        judged = said["original"]
        auc = crossover.unpaired_auc(group["p_yes_original"].to_numpy(float)[judged],
                                     group["drawn"].to_numpy(bool)[judged])
        replies = group["judge_reply_original"].dropna().astype(str)
        answer_format = float(replies.str.match(r"\s*Answer:").mean()) if len(replies) else float("nan")
        out[benchmark] = cell | {"p_yes_auc": crossover._asdict(auc), "replies_in_answer_format": answer_format}
    return out


def paper_caps(folder: pathlib.Path) -> dict:
    """The new-token caps the arm's paper audit ran with (its audit_paper.toml; the preset's own where unset)."""
    from jaxcontam.detect.pacost.settings import PacostSettings

    pacost = tomllib.loads((folder / "audit_paper.toml").read_text()).get("pacost", {})
    defaults = PacostSettings(preset="paper")
    return {key: pacost.get(key, getattr(defaults, key)) for key in ("max_new_tokens", "judge_max_new_tokens")}


def summary_entries(folder: pathlib.Path, preset: str) -> dict:
    """Per benchmark: the audit's AUCs and ConTAM/EPG result (summary.json, as `jaxcontam audit` wrote it)."""
    path = folder / f"audit_{preset}" / "summary.json"
    if not path.exists():
        return {}
    found = {}

    def walk(node):
        if isinstance(node, dict):
            if "benchmark" in node and "contam" in node and "ground_truth" in node:
                found[node["benchmark"]] = {"auc": (node["ground_truth"] or {}).get("auc"), "contam": node["contam"]}
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(path.read_text()))
    return found


def _hit(result: dict | None) -> bool:
    if result is None:
        return False
    return bool(result.get("flags")) if "flags" in result else (result["fisher_p"] is not None
                                                                 and result["fisher_p"] < ALPHA)


def _not_tested(result: dict | None) -> bool:
    """A row that cannot say whether the halves differ: no contaminated or no clean half (item) was tested."""
    return result is not None and not (result["n"][0] and result["n"][1])


def smallest_doses(report: dict) -> dict:
    """Per detector: the arms it flags, in dose order, and the smallest verbatim dose it flags, which counts
    only when it does not flag the control arm too (there the 'contaminated' half was never trained on); the
    arms where it could not be tested (no tested contaminated or clean half) apart, not as arms it missed."""
    detectors = sorted({d for arm in report["arms"].values() for d in arm.get("detectors", {})})
    doses = {}
    for detector in detectors:
        results = {arm: report["arms"].get(arm, {}).get("detectors", {}).get(detector) for arm in ARM_ORDER}
        flagged = [arm for arm in ARM_ORDER if _hit(results[arm])]
        smallest = next((arm for arm in ("verbatim_x1", "verbatim_x4") if arm in flagged), None)
        doses[detector] = {"flags": flagged, "smallest_verbatim": None if "control" in flagged else smallest,
                           "not_tested": [arm for arm in ARM_ORDER if _not_tested(results[arm])]}
    return doses


def build(results: pathlib.Path) -> dict:
    arms_dir = results / "arms"
    control = load_items(arms_dir / "control", "jaxcontam") if (arms_dir / "control").exists() else None
    thresholds = likelihood_thresholds(control) if control is not None else None
    report = {"arms": {}}
    for arm in ARM_ORDER:
        folder = arms_dir / arm
        if not folder.exists():
            continue
        entry = {}
        if (folder / "dose.json").exists():
            dose = json.loads((folder / "dose.json").read_text())
            entry["dose"] = {"took": dose["took"], "did": dose["did"]}
        items = load_items(folder, "jaxcontam")
        if items is not None:
            detectors = item_detectors(items, thresholds)
            for preset in PRESETS:
                preset_items = load_items(folder, preset)
                if preset_items is not None:
                    detectors |= pacost_halves(preset_items, preset)
            entry["detectors"] = detectors
            entry["accuracy"] = accuracy(items)
            entry["aucs"] = aucs_with_nulls(items)
            entry["audit"] = summary_entries(folder, "jaxcontam")
        paper_items = load_items(folder, "paper")
        if paper_items is not None and "p_yes_original" in paper_items:
            entry["paper"] = paper_preset(paper_items)
            entry["paper_caps"] = paper_caps(folder)
        if (folder / "audit_curve.jsonl").exists():
            curve = (folder / "audit_curve.jsonl").read_text().splitlines()
            entry["audit_curve"] = [json.loads(line) for line in curve]
        if (folder / "run.json").exists():
            entry["run"] = json.loads((folder / "run.json").read_text())
        report["arms"][arm] = entry
    report["smallest_dose"] = smallest_doses(report)
    return report


def _estimate_cell(cell: dict | None) -> str:
    if cell is None or not np.isfinite(cell["value"]):
        return "-"
    low, high = cell["ci95"]
    return f"{cell['value']:.2f} ({low:.2f}, {high:.2f}) p {cell['pvalue']:.3g} / {cell['pvalue_two_sided']:.3g}"


def _untested(result: dict) -> tuple[int, int]:
    """How many contaminated / clean halves a PaCoST row could not test (derived from its stored p-values)."""
    counts = half_counts(result.get("pvalues", {}))
    return counts["contaminated"]["untested"], counts["clean"]["untested"]


def rate_cell(result: dict, intervals: bool = True, mark: str = "") -> str:
    """Power / false-positive rate (with 95% CIs when `intervals`), then `mark`. A PaCoST row with halves it could
    not test shows flagged / tested halves per side ("no test" for a side with none tested) and "(no test on
    a / b)": the untested halves are out of the rates, never counted as not flagged."""
    untested = _untested(result)

    def interval(ci: str) -> str:
        return f" [{percent(result[ci][0])}-{percent(result[ci][1])}]" if intervals else ""

    if not any(untested):
        power, fpr = percent(result["power"]), percent(result["fpr"])
        return f"{power}{interval('power_ci95')} / {fpr}{interval('fpr_ci95')}{mark}"
    counts = half_counts(result["pvalues"])
    sides = ["no test" if not counts[half]["tested"] else
             f"{counts[half]['flagged']}/{counts[half]['tested']}{interval(ci)}"
             for half, ci in zip(HALVES, ("power_ci95", "fpr_ci95"))]
    note = f"no test on {untested[0]} / {untested[1]}"
    return note if sides == ["no test", "no test"] else f"{' / '.join(sides)}{mark} ({note})"


def _share(value: float) -> str:
    return "-" if not verdicts.finite(value) else f"{value:.0%}"


def _pvalue(value) -> str:
    return "no test" if not verdicts.finite(value) else f"{value:.2g}"


def percent(value) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def markdown(report: dict) -> str:
    lines = ["# Real contamination of SmolLM2-135M-Instruct: results", "", "## Did the dose take?", "",
             "| arm | DiD mean log-prob, trained text (95% CI) | DiD, audited text (95% CI) | took |",
             "|---|---|---|---|"]
    for arm, entry in report["arms"].items():
        if "dose" in entry:
            a, b = entry["dose"]["did"]["trained_text/all"], entry["dose"]["did"]["audited_text/all"]
            took = ("n/a (nothing mixed in)" if arm == "control" else "n/a (no audited item mixed in)"
                    if arm == "format_x4" else ("yes" if entry["dose"]["took"] else "NO"))
            lines.append(f"| {arm} | {a['did']:+.3f} ({a['ci95'][0]:+.3f}, {a['ci95'][1]:+.3f}) | {b['did']:+.3f} "
                         f"({b['ci95'][0]:+.3f}, {b['ci95'][1]:+.3f}) | {took} |")
    lines += ["", "## Power on the contaminated half / false-positive rate on the clean half (95% CI)", "",
              "PaCoST rows: rates over the benchmark halves tested (3 a side); where it could not test some, flagged "
              "/ tested halves and 'no test on a / b', the contaminated / clean halves left out of the rates "
              "(never counted as not flagged).", "",
              "| detector | " + " | ".join(a for a in report["arms"]) + " |",
              "|---|" + "---|" * len(report["arms"])]
    detectors = sorted({d for e in report["arms"].values() for d in e.get("detectors", {})})
    for detector in detectors:
        cells = []
        for entry in report["arms"].values():
            r = entry.get("detectors", {}).get(detector)
            cells.append("-" if r is None else rate_cell(r))
        lines.append(f"| {detector} | " + " | ".join(cells) + " |")
    lines += ["", "## Smallest dose flagged", "", "| detector | arms flagged | smallest verbatim dose |",
              "|---|---|---|"]
    for detector, dose in report["smallest_dose"].items():
        control_too = "control" in dose["flags"]
        untested = dose.get("not_tested", [])
        verbatim_untested = [arm for arm in ("verbatim_x1", "verbatim_x4") if arm in untested]
        smallest = dose["smallest_verbatim"] or ("none (flags the control too)" if control_too else "none" + (
            f" (not tested on {', '.join(verbatim_untested)})" if verbatim_untested else ""))
        arms = (', '.join(dose['flags']) or 'none') + (f"; not tested on {', '.join(untested)}" if untested else "")
        lines.append(f"| {detector} | {arms} | {smallest} |")
    lines += ["", "## Accuracy, contaminated vs clean items", "", "| arm | benchmark | contaminated | clean |",
              "|---|---|---|---|"]
    for arm, entry in report["arms"].items():
        for benchmark, halves in entry.get("accuracy", {}).items():
            lines.append(f"| {arm} | {benchmark} | {percent(halves['contaminated']['accuracy'])} | "
                         f"{percent(halves['clean']['accuracy'])} |")
    lines += ["", "## AUC per detector and ground-truth EPG, drawn half vs the other (every arm, control included)", "",
              "95% bootstrap CI over items; p: random-split permutation null, one-sided (higher = contaminated) / "
              "two-sided. The control arm saw no item: its row is the split's own imbalance.", "",
              "| arm | benchmark | " + " | ".join(list(AUC_DETECTORS) + ["EPG (truth)"]) + " |",
              "|---|---|" + "---|" * (len(AUC_DETECTORS) + 1)]
    for arm, entry in report["arms"].items():
        for benchmark, cells in entry.get("aucs", {}).items():
            row = [_estimate_cell(cells.get(d)) for d in list(AUC_DETECTORS) + ["epg_truth"]]
            lines.append(f"| {arm} | {benchmark} | " + " | ".join(row) + " |")
    caps = sorted({(e["paper_caps"]["judge_max_new_tokens"], e["paper_caps"]["max_new_tokens"])
                   for e in report["arms"].values() if "paper_caps" in e})
    caps_text = "; ".join(f"the judge's reply capped at {judge} new tokens and the sampled answers at {answers}"
                          for judge, answers in caps)
    lines += ["", "## The authors' method (`paper` preset): does the judge answer, does P(yes) separate the halves?",
              "",
              "Judged: items whose judge reply said yes or no (P(yes) > 0; the authors drop a pair otherwise), "
              "contaminated half / clean half. t-test p: the paired test on each half's kept pairs. AUC: P(yes) on "
              "the original text, contaminated against clean items, over the judged originals (95% bootstrap CI, "
              "random-split permutation p, one-sided / two-sided). 'Answer:' replies: the share of judge replies "
              "that open with the benchmarks' answer line, the format the contaminated arms were trained on. Caps "
              f"(each arm's `audit_paper.toml`): {caps_text}.", "",
              "| arm | benchmark | judged originals | judged rephrasings | pairs kept | t-test p | AUC of P(yes) "
              "| 'Answer:' replies |",
              "|---|---|---|---|---|---|---|---|"]
    for arm, entry in report["arms"].items():
        for benchmark, cell in entry.get("paper", {}).items():
            seen, clean = cell["contaminated"], cell["clean"]
            lines.append(
                f"| {arm} | {benchmark} | {seen['judged_original']}/{seen['items']} / "
                f"{clean['judged_original']}/{clean['items']} | {seen['judged_rephrased']}/{seen['rephrased']} / "
                f"{clean['judged_rephrased']}/{clean['rephrased']} | {seen['pairs']} / {clean['pairs']} | "
                f"{_pvalue(seen['pvalue'])} / {_pvalue(clean['pvalue'])} | {_estimate_cell(cell['p_yes_auc'])} | "
                f"{_share(cell['replies_in_answer_format'])} |")
    lines += ["", "## ConTAM / EPG against the arm's corpus (the audit's threshold selection)", "",
              "| arm | benchmark | EPG (LONGEST-MATCH) | max-z p |", "|---|---|---|---|"]
    for arm, entry in report["arms"].items():
        for benchmark, audit in entry.get("audit", {}).items():
            contam = audit["contam"] or {}
            epg = contam.get("status") if contam.get("epg") is None else f"{contam['epg']:+.3f} (z {contam['z']:.2f})"
            pvalue = contam.get("pvalue") if verdicts.tested(contam) else "no test"
            lines.append(f"| {arm} | {benchmark} | {epg} | {pvalue} |")
    for arm, entry in report["arms"].items():
        if entry.get("audit_curve"):
            lines += ["", f"## Detection during training ({arm}, AuditCallback on the live weights): AUC by step", "",
                      "| step | benchmark | " + " | ".join(LIKELIHOOD) + " |", "|---|---|" + "---|" * len(LIKELIHOOD)]
            cells = {}
            for row in entry["audit_curve"]:
                cells.setdefault((row["step"], row["benchmark"]), {})[row["detector"]] = row["auc"]
            for (step, benchmark), aucs in sorted(cells.items()):
                lines.append(f"| {step} | {benchmark} | " + " | ".join(
                    "-" if aucs.get(d) is None else f"{aucs[d]:.2f}" for d in LIKELIHOOD) + " |")
    return "\n".join(lines) + "\n"


DOC_DETECTORS = {
    "mean_logprob": "mean log-prob",
    "zlib_ratio": "zlib ratio",
    "min_k": "Min-K% (k = 0.2)",
    "min_k_plus_plus": "Min-K%++ (k = 0.2)",
    "contam_longest_match": "ConTAM LONGEST-MATCH >= 0.5 (the arm's corpus/)",
    "pacost_jaxcontam_p_true": "PaCoST, jaxcontam preset, P(True) (benchmark halves)",
    "pacost_jaxcontam_answer_logprob": "PaCoST, jaxcontam preset, answer log-prob (benchmark halves)",
    "pacost_paper_p_yes": "PaCoST, paper preset, P(yes) (benchmark halves)",
}


def docs_table(report: dict) -> str:
    """The compact table docs/results.md shows: per arm, whether the dose took, then each main detector's power
    on the contaminated half / false-positive rate on the clean half (* where the halves differ, one-sided
    Fisher p < 0.05; PaCoST: flagged benchmark halves of the 3 tested, or flagged / tested halves beside the
    count it could not test); report.md has every detector, AUC and EPG."""
    arms = [arm for arm in ARM_ORDER if arm in report["arms"]]
    lines = ["| | " + " | ".join(arms) + " |", "|---|" + "---|" * len(arms)]
    cells = []
    for arm in arms:
        dose = report["arms"][arm].get("dose")
        if dose is None:
            cells.append("-")
            continue
        did = dose["did"]["audited_text/all"]
        took = "" if arm in ("control", "format_x4") else (", took" if dose["took"] else ", DID NOT TAKE")
        cells.append(f"{did['did']:+.2f} ({did['ci95'][0]:+.2f}, {did['ci95'][1]:+.2f}){took}")
    lines.append("| log-prob gain, contaminated minus clean items (95% CI) | " + " | ".join(cells) + " |")
    for key, label in DOC_DETECTORS.items():
        row = []
        for arm in arms:
            result = report["arms"][arm].get("detectors", {}).get(key)
            if result is None:
                row.append("-")
                continue
            differs = result["flags"] if "flags" in result else (result["fisher_p"] or 1) < ALPHA
            row.append(rate_cell(result, intervals=False, mark=" *" if differs else ""))
        if any(cell != "-" for cell in row):
            lines.append(f"| {label} | " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description="the real-contamination experiment's tables")
    parser.add_argument("results", nargs="?", type=pathlib.Path, default=HERE / "results")
    parser.add_argument("--out", type=pathlib.Path, help="where report.json and report.md go (default: results)")
    args = parser.parse_args()
    report = build(args.results)
    out = args.out or args.results
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=2, default=float) + "\n")
    (out / "report.md").write_text(markdown(report))
    print(markdown(report))


if __name__ == "__main__":
    main()
