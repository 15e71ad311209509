"""Crossover analysis of the real-contamination experiment: every item contaminated in one model, clean in its twin.

The twins `verbatim_x1_swapped` / `verbatim_x4_swapped` trained on the complementary half of each benchmark, so
an item's score in the model that saw it can be compared with its score in the model that did not: the split
imbalance of one random split (the control arm's halves already differ) cancels, item by item.

- **Paired** (per dose x1 / x4, benchmark, detector): the paired AUC = P(an item's score is higher in the model that
  saw it than in its twin), ties half (the mean over items of 1[s_seen > s_unseen] + 0.5 * 1[s_seen = s_unseen]);
  its 95% percentile bootstrap CI over items; its permutation null: which twin counts as "seen" swapped per item
  independently, which is the exact sign test on the untied items (`jaxcontam.stats.batched.sign_pvalues`); Holm
  over the family fixed here before any swapped arm existed: PAIRED_DETECTORS x BENCHMARKS x DOSES (42 tests; a
  missing cell counts as p = 1, so the family never shrinks). The accuracy gain (correct where seen minus where not,
  the paired form of EPG) is reported beside it with a sign-flip p, outside the family.
- **Unpaired** (per arm, benchmark, detector, control arm always shown): AUC of the arm's contaminated half against
  its clean half (the `drawn` half in the control arm, which saw neither), a 95% bootstrap CI (items resampled
  within each half), and a random-split permutation null (the half flag reshuffled over the benchmark's items,
  p = (1 + #AUC >= observed) / (1 + resamples)); the same for EPG = acc(all) - acc(clean half).
  `--relative` scores each item as `score - score_in_reference` (the reference's items.parquet, or for mean
  log-prob the base GGUF's scores in dose.json), which removes what the halves differed by before training.
- **Dose** of every arm from its dose.json (run.py's DiD of mean log-prob over the base GGUF with its 95% CI).
- **Calibrated PaCoST** (`calibrated_pacost`): per arm, benchmark and half, `stats.calibrated.reference_test`
  against a reference model's audit of the same items, beside the uncalibrated original-vs-rephrased test.

A test that could not run (no p-value: too few pairs, a cell with no items) is not tested, never "not detected":
its row says "no test", its `significant` is None, and every count is over the tested halves with the untested
ones beside it (`experiments/summary_verdicts.py`).

    python -m experiments.real_contamination.crossover --results experiments/real_contamination/results \
        [--results OTHER/experiments/real_contamination/results] [--relative] [--reference base] [--out DIR]

Each arm is looked up in the --results folders in order (the first that has it wins).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import sys

import numpy as np

from experiments import summary_verdicts as verdicts  # tested, not detected, not tested
from experiments.real_contamination.design import (
    ALPHA,
    BENCHMARKS,
    CONFIDENCES,
    DOSES,
    FORMAT_ARM,
    GAPS,
    PAIRED_DETECTORS,
)
from experiments.real_contamination.design import ARM_ORDER as ARMS
from jaxcontam.stats.intervals import binomial_band

HERE = pathlib.Path(__file__).resolve().parent

RESAMPLES = 9999
BOOTSTRAPS = 4000


@dataclasses.dataclass(frozen=True)
class Estimate:
    """A statistic with its 95% CI and a permutation-null p-value (one-sided: higher = contamination)."""

    value: float
    ci95: tuple[float, float]
    pvalue: float
    n: int | tuple[int, int]
    pvalue_two_sided: float = float("nan")


# ---------------------------------------------------------------- loading


def find_arm(results: list[pathlib.Path], arm: str) -> pathlib.Path | None:
    """The arm's folder in the first results folder that has its audit, else None."""
    for folder in results:
        path = folder / "arms" / arm
        if (path / "audit_jaxcontam" / "items.parquet").exists():
            return path
    return None


def add_scores(items):
    """PaCoST gaps (original minus rephrased confidence) as per-item scores."""
    for name, confidence in GAPS.items():
        if f"{confidence}_original" in items:
            items[name] = items[f"{confidence}_original"] - items[f"{confidence}_rephrased"]
    return items


def load_arm(folder: pathlib.Path, audit: str = "audit_jaxcontam"):
    """An arm's items of one of its audits, indexed by id, with `drawn` (the half labelled contaminated; in the
    control arm the same half, untrained) and `seen` (contaminated in this model) from its ground truth."""
    import pandas as pd

    items = pd.read_parquet(folder / audit / "items.parquet")
    truth = [json.loads(line) for line in (folder / "ground_truth.jsonl").read_text().splitlines() if line]
    drawn = {row["id"]: bool(row["drawn"]) for row in truth}
    seen = {row["id"]: bool(row["contaminated"]) for row in truth}
    items["drawn"] = items["id"].map(drawn).astype(bool)
    items["seen"] = items["id"].map(seen).astype(bool)
    return add_scores(items).set_index("id", drop=False)


def base_mean_logprob(folder: pathlib.Path) -> dict[str, float]:
    """The base GGUF's mean log-prob of each item's audited text, from the arm's dose.json."""
    path = folder / "dose.json"
    if not path.exists():
        return {}
    return {row["id"]: row["audited_text"] for row in json.loads(path.read_text())["base"]}


def relative(items, reference, base_logprob: dict[str, float]):
    """Scores minus the same item's score in the reference (items.parquet rows by id; mean log-prob falls back
    to the base GGUF's from dose.json); a score with no reference value becomes NaN."""
    items = items.copy()
    for detector in PAIRED_DETECTORS:
        if detector not in items:
            continue
        if reference is not None and detector in reference:
            items[detector] = items[detector] - items["id"].map(reference[detector])
        elif detector == "mean_logprob" and base_logprob:
            items[detector] = items[detector] - items["id"].map(base_logprob)
        else:
            items[detector] = np.nan
    return items


# ---------------------------------------------------------------- statistics


def oriented(values, higher_means_seen: bool) -> np.ndarray:
    return np.asarray(values, np.float64) * (1.0 if higher_means_seen else -1.0)


def paired_auc(seen_scores, unseen_scores, seed: int = 0, bootstraps: int = BOOTSTRAPS) -> Estimate:
    """P(score higher where seen), ties half, over items with both scores finite; percentile bootstrap CI over
    items; p: the sign-flip permutation null of that statistic, i.e. the exact one-sided sign test."""
    from jaxcontam.stats.batched import sign_pvalues
    from jaxcontam.stats.bootstrap import bootstrap_mean_interval

    seen, unseen = np.asarray(seen_scores, np.float64), np.asarray(unseen_scores, np.float64)
    keep = np.isfinite(seen) & np.isfinite(unseen)
    d = seen[keep] - unseen[keep]
    if d.size == 0:
        return Estimate(float("nan"), (float("nan"), float("nan")), float("nan"), 0)
    wins = (d > 0) + 0.5 * (d == 0)
    _, pvalue = sign_pvalues(d[None], "greater")
    ci = bootstrap_mean_interval(wins, 0.95, "two-sided", bootstraps, seed)
    return Estimate(float(wins.mean()), ci, float(pvalue[0]), int(d.size))


def paired_mean(seen_values, unseen_values, seed: int = 0, bootstraps: int = BOOTSTRAPS) -> Estimate:
    """Mean of seen - unseen (e.g. accuracy), percentile bootstrap CI, one-sided sign-flip permutation p."""
    from jaxcontam.stats.bootstrap import bootstrap_mean_interval
    from jaxcontam.stats.paired import paired_test

    seen, unseen = np.asarray(seen_values, np.float64), np.asarray(unseen_values, np.float64)
    keep = np.isfinite(seen) & np.isfinite(unseen)
    if not keep.any():
        return Estimate(float("nan"), (float("nan"), float("nan")), float("nan"), 0)
    d = seen[keep] - unseen[keep]
    test = paired_test(seen[keep], unseen[keep], method="permutation", seed=seed)
    return Estimate(float(d.mean()), bootstrap_mean_interval(d, 0.95, "two-sided", bootstraps, seed),
                    test.pvalue, int(d.size))


def _wins_matrix(positive: np.ndarray, negative: np.ndarray) -> np.ndarray:
    return (positive[:, None] > negative[None, :]) + 0.5 * (positive[:, None] == negative[None, :])


def _bootstrap_weights(n: int, bootstraps: int, rng: np.random.Generator) -> np.ndarray:
    return np.stack([np.bincount(row, minlength=n) for row in rng.integers(0, n, (bootstraps, n))])


def _random_split_tail(values: np.ndarray, n_first: int, observed: float, statistic, resamples: int,
                       rng: np.random.Generator) -> tuple[float, float]:
    """One-sided p = (1 + #random splits with statistic >= observed) / (1 + resamples), and the two-sided
    p = min(1, 2 * the smaller tail) (a split imbalance either way, as in the control arm)."""
    order = np.argsort(rng.random((resamples, len(values))), axis=1)
    flags = np.zeros((resamples, len(values)), bool)
    np.put_along_axis(flags, order[:, :n_first], True, axis=1)
    null = statistic(flags)
    greater = (1 + np.count_nonzero(null >= observed - 1e-12)) / (1 + resamples)
    less = (1 + np.count_nonzero(null <= observed + 1e-12)) / (1 + resamples)
    return float(greater), float(min(1.0, 2 * min(greater, less)))


def unpaired_auc(scores, flags, seed: int = 0, resamples: int = RESAMPLES, bootstraps: int = BOOTSTRAPS) -> Estimate:
    """AUC of flagged against unflagged items (ties half), bootstrap CI (resampled within each group) and the
    random-split permutation p (flags reshuffled over the items)."""
    from scipy.stats import rankdata

    values, flags = np.asarray(scores, np.float64), np.asarray(flags, bool)
    keep = np.isfinite(values)
    values, flags = values[keep], flags[keep]
    n1, n0 = int(flags.sum()), int((~flags).sum())
    if n1 == 0 or n0 == 0:
        return Estimate(float("nan"), (float("nan"), float("nan")), float("nan"), (n1, n0))
    rng = np.random.default_rng(seed)
    wins = _wins_matrix(values[flags], values[~flags])
    auc = float(wins.mean())
    w1, w0 = _bootstrap_weights(n1, bootstraps, rng), _bootstrap_weights(n0, bootstraps, rng)
    boots = np.einsum("bi,ij,bj->b", w1, wins, w0) / (n1 * n0)
    ranks = rankdata(values)
    offset = n1 * (n1 + 1) / 2

    def statistic(split):
        return (split @ ranks - offset) / (n1 * n0)

    pvalue, two_sided = _random_split_tail(values, n1, auc, statistic, resamples, rng)
    low, high = np.quantile(boots, [0.025, 0.975])
    return Estimate(auc, (float(low), float(high)), pvalue, (n1, n0), two_sided)


def unpaired_epg(correct, flags, seed: int = 0, resamples: int = RESAMPLES, bootstraps: int = BOOTSTRAPS) -> Estimate:
    """EPG = accuracy on all items - accuracy on the unflagged ones, bootstrap CI (within each group) and the
    random-split permutation p."""
    values, flags = np.asarray(correct, np.float64), np.asarray(flags, bool)
    keep = np.isfinite(values)
    values, flags = values[keep], flags[keep]
    n1, n0, n = int(flags.sum()), int((~flags).sum()), int(flags.size)
    if n1 == 0 or n0 == 0:
        return Estimate(float("nan"), (float("nan"), float("nan")), float("nan"), (n1, n0))
    rng = np.random.default_rng(seed)
    epg = float(values.mean() - values[~flags].mean())
    first, rest = values[flags], values[~flags]
    w1, w0 = _bootstrap_weights(n1, bootstraps, rng), _bootstrap_weights(n0, bootstraps, rng)
    clean = w0 @ rest / n0
    boots = (w1 @ first + w0 @ rest) / n - clean
    total = values.sum()

    def statistic(split):
        clean_mean = (total - split @ values) / n0
        return total / n - clean_mean

    pvalue, two_sided = _random_split_tail(values, n1, epg, statistic, resamples, rng)
    low, high = np.quantile(boots, [0.025, 0.975])
    return Estimate(epg, (float(low), float(high)), pvalue, (n1, n0), two_sided)


def holm_family(pvalues: dict) -> dict:
    """Holm-adjusted p-values over the fixed family (every key of `pvalues`; NaN counts as 1)."""
    from jaxcontam.stats.multiple import adjust

    keys = list(pvalues)
    raw = np.array([1.0 if not np.isfinite(pvalues[k]) else pvalues[k] for k in keys])
    adjusted = adjust(raw, "holm", ALPHA).pvalues
    return dict(zip(keys, map(float, adjusted)))


# ---------------------------------------------------------------- analyses


def paired_table(arms: dict, seed: int = 0) -> dict | None:
    """Per dose, benchmark and detector: paired AUC (CI, sign-flip p, Holm over the fixed family); the accuracy
    gain beside it. None when no dose has both twins."""
    rows, family = [], {}
    for dose, benchmark, detector in ((d, b, s) for d in DOSES for b in BENCHMARKS for s in PAIRED_DETECTORS):
        family[dose, benchmark, detector] = float("nan")
    for dose, (arm, twin) in DOSES.items():
        if arm not in arms or twin not in arms:
            continue
        for benchmark in BENCHMARKS:
            a, b = (arms[name][arms[name]["benchmark"] == benchmark] for name in (arm, twin))
            ids = a.index.intersection(b.index)
            a, b = a.loc[ids], b.loc[ids]
            seen_in_a = a["seen"].to_numpy(bool)

            def pick(column, higher=True, a=a, b=b, seen_in_a=seen_in_a):
                x, y = oriented(a[column], higher), oriented(b[column], higher)
                return np.where(seen_in_a, x, y), np.where(seen_in_a, y, x)

            for detector, higher in PAIRED_DETECTORS.items():
                if detector not in a or detector not in b:
                    continue
                estimate = paired_auc(*pick(detector, higher), seed=seed)
                family[dose, benchmark, detector] = estimate.pvalue
                rows.append({"dose": dose, "benchmark": benchmark, "detector": detector, **_asdict(estimate)})
            gain = paired_mean(*pick("correct"), seed=seed)
            rows.append({"dose": dose, "benchmark": benchmark, "detector": "accuracy_gain (outside the family)",
                         **_asdict(gain)})
    if not rows:
        return None
    adjusted = holm_family(family)
    for row in rows:
        key = (row["dose"], row["benchmark"], row["detector"])
        if key in adjusted:  # no p-value: p = 1 in the family, but not tested (None), not "not significant"
            row["pvalue_holm"] = adjusted[key]
            row["significant"] = adjusted[key] <= ALPHA if verdicts.finite(row["pvalue"]) else None
    return {"rows": rows, "family_size": len(family)}


def unpaired_table(arms: dict, seed: int = 0, resamples: int = RESAMPLES) -> list[dict]:
    """Per arm (control first), benchmark and detector: AUC and EPG with CI and random-split permutation p."""
    rows = []
    for arm in (a for a in ARMS if a in arms):
        items = arms[arm]
        for benchmark in BENCHMARKS:
            group = items[items["benchmark"] == benchmark]
            flags = group["drawn"].to_numpy(bool)
            for detector, higher in PAIRED_DETECTORS.items():
                if detector in group and group[detector].notna().any():
                    estimate = unpaired_auc(oriented(group[detector], higher), flags, seed, resamples)
                    rows.append({"arm": arm, "benchmark": benchmark, "statistic": f"AUC {detector}",
                                 **_asdict(estimate)})
            estimate = unpaired_epg(group["correct"], flags, seed, resamples)
            rows.append({"arm": arm, "benchmark": benchmark, "statistic": "EPG (accuracy)", **_asdict(estimate)})
    return rows


def balanced_auc(arm, twin, detector: str, higher: bool, seed: int = 0, bootstraps: int = BOOTSTRAPS) -> Estimate:
    """One benchmark's AUC of seen against unseen items, averaged over the two draws: the arm and its twin, trained on
    the complementary halves, so the split imbalance of one draw cancels. Needs no twin *pairing*: each model's AUC
    is its own (an auditor with one model has one of them). 95% CI: items resampled with replacement, the same draw
    in both models (an item is a cluster; `jaxcontam.stats.auc.mean_auc`); no p-value (the paired table tests)."""
    from jaxcontam.stats.auc import mean_auc
    from jaxcontam.stats.validation import StatsInputError

    ids = arm.index.intersection(twin.index)
    models = (arm.loc[ids], twin.loc[ids])
    try:
        result = mean_auc([oriented(items[detector], higher) for items in models],
                          [items["seen"].to_numpy(bool) for items in models], resamples=bootstraps, seed=seed)
    except StatsInputError:  # a model without a scored item of one group
        return Estimate(float("nan"), (float("nan"), float("nan")), float("nan"), 0)
    interval = result.confidence_interval(0.95)
    return Estimate(result.statistic, (interval.low, interval.high), float("nan"), len(ids))


def _seen_auc(items, detector: str, higher: bool) -> float:
    """One model's AUC of its seen against its unseen items (ties half; items with a score)."""
    scores, seen = oriented(items[detector], higher), items["seen"].to_numpy(bool)
    keep = np.isfinite(scores)
    if not (seen & keep).any() or not (~seen & keep).any():
        return float("nan")
    return float(_wins_matrix(scores[seen & keep], scores[~seen & keep]).mean())


def balanced_table(arms: dict, seed: int = 0) -> list[dict]:
    """Per dose, benchmark and detector: the AUC averaged over the two draws (`balanced_auc`), the arm's and its
    twin's own AUCs beside it."""
    rows = []
    for dose, (name, twin) in DOSES.items():
        if name not in arms or twin not in arms:
            continue
        for benchmark in BENCHMARKS:
            a, b = (arms[n][arms[n]["benchmark"] == benchmark] for n in (name, twin))
            for detector, higher in PAIRED_DETECTORS.items():
                if detector not in a or detector not in b:
                    continue
                estimate = balanced_auc(a, b, detector, higher, seed)
                single = [_seen_auc(m, detector, higher) for m in (a, b)]
                rows.append({"dose": dose, "benchmark": benchmark, "detector": detector, **_asdict(estimate),
                             "draws": single})
    return rows


def dose_table(folders: dict[str, pathlib.Path]) -> list[dict]:
    """Each arm's DiD of mean log-prob over the base GGUF (run.py's dose.json), audited and trained text."""
    rows = []
    for arm, folder in folders.items():
        path = folder / "dose.json"
        if not path.exists():
            continue
        dose = json.loads(path.read_text())
        for key, value in dose["did"].items():
            rows.append({"arm": arm, "text": key, "did": value["did"], "ci95": value["ci95"],
                         "pvalue": value.get("pvalue"), "took": dose["took"]})
    return rows


def _asdict(estimate: Estimate) -> dict:
    return {"value": estimate.value, "ci95": list(estimate.ci95), "pvalue": estimate.pvalue, "n": estimate.n,
            "pvalue_two_sided": estimate.pvalue_two_sided}


# ---------------------------------------------------------------- calibrated PaCoST


def calibrated_halves(items, reference, confidence: str, seed: int = 0) -> list[dict]:
    """Per benchmark and half (contaminated = the arm's `drawn` half, clean): the calibrated p-value
    (`reference_test`: gap(arm) - gap(reference), same items by id) beside the uncalibrated original-vs-rephrased
    test, both the one-sided sign-flip permutation test."""
    from jaxcontam.stats.calibrated import reference_test, uncalibrated_test
    from jaxcontam.stats.validation import StatsInputError

    rows = []
    original, rephrased = f"{confidence}_original", f"{confidence}_rephrased"
    for benchmark in BENCHMARKS:
        for half, flag in (("contaminated", True), ("clean", False)):
            group = items[(items["benchmark"] == benchmark) & (items["drawn"] == flag)]
            ref = reference.reindex(group.index)
            row = {"benchmark": benchmark, "half": half, "confidence": confidence}
            try:
                calibrated = reference_test(group[original], group[rephrased], ref[original], ref[rephrased], seed=seed)
                uncalibrated = uncalibrated_test(group[original], group[rephrased], seed=seed)
            except StatsInputError as error:
                rows.append({**row, "error": str(error)})
                continue
            rows.append({**row, "n": calibrated.n, "calibrated_p": calibrated.pvalue,
                         "calibrated_mean_difference": calibrated.mean_difference,
                         "uncalibrated_p": uncalibrated.pvalue})
    return rows


def calibrated_pacost(arms: dict, reference, confidences=CONFIDENCES, seed: int = 0) -> dict:
    """Every arm's halves tested against the reference; the control arm's share of flagged halves (every
    confidence, benchmark and half) against the 99% binomial band at alpha; power on the contaminated arms'
    contaminated halves and false-positive rate on their clean halves, each with a Clopper-Pearson 95% CI."""
    from jaxcontam.stats.intervals import clopper_pearson

    rows = []
    for arm in (a for a in ARMS if a in arms):
        for confidence in (c for c in confidences if f"{c}_original" in arms[arm] and f"{c}_original" in reference):
            rows += [{"arm": arm, **row} for row in calibrated_halves(arms[arm], reference, confidence, seed)]

    def share(selected: list[dict], key: str) -> dict:
        """Flagged among the halves with a p-value (`n`); `untested`: the halves without one (an error row, NaN)."""
        counts = verdicts.tally(verdicts.pvalue_outcome(r.get(key), ALPHA) for r in selected)
        k, n = counts["flagged"], counts["tested"]
        ci = clopper_pearson(k, n, 0.95) if n else None
        return {"flagged": k, "n": n, "untested": counts["untested"], "rate": k / n if n else None,
                "ci95": [float(ci.low), float(ci.high)] if ci else None,
                "band99": list(binomial_band(n, ALPHA, 0.99)) if n else None}

    untrained = ("control", FORMAT_ARM)  # arms that trained on no audited item: both halves clean
    control = [r for r in rows if r["arm"] == "control"]
    format_control = [r for r in rows if r["arm"] == FORMAT_ARM]
    contaminated = [r for r in rows if r["arm"] not in untrained and r["half"] == "contaminated"]
    clean = [r for r in rows if r["arm"] not in untrained and r["half"] == "clean"]
    summary = {key: {"control_all_halves": share(control, key), "power_contaminated_halves": share(contaminated, key),
                     "fpr_clean_halves_of_contaminated_arms": share(clean, key)}
               | ({"format_control_all_halves": share(format_control, key)} if format_control else {})
               for key in ("calibrated_p", "uncalibrated_p")}
    return {"rows": rows, "summary": summary}


# ---------------------------------------------------------------- output


def _ci(values) -> str:
    return f"({values[0]:.2f}, {values[1]:.2f})"


def _p(value) -> str:
    return f"{value:.3g}" if verdicts.finite(value) else "no test"


def _untested(cell: dict) -> str:
    return f"; {cell['untested']} not tested" if cell.get("untested") else ""


def markdown(report: dict) -> str:
    lines = ["# Crossover analysis", ""]
    if report["dose"]:
        lines += ["## Dose (run.py's DiD of mean log-prob over the base GGUF, 95% CI)", "",
                  "| arm | text | DiD | 95% CI | took |", "|---|---|---|---|---|"]
        lines += [f"| {r['arm']} | {r['text']} | {r['did']:+.3f} | ({r['ci95'][0]:+.3f}, {r['ci95'][1]:+.3f}) | "
                  f"{r['took']} |" for r in report["dose"] if r["text"].endswith("/all") or "swapped" in r["arm"]]
    paired = report["paired"]
    lines += ["", "## Paired: each item in the model that saw it vs its twin", ""]
    if paired is None:
        lines.append(f"Waiting on the swapped arms ({', '.join(t for _, t in DOSES.values())}): no dose has both "
                     "twins in the --results folders.")
    else:
        lines += [f"Paired AUC = P(score higher where seen), ties half; p: sign-flip null (exact sign test); Holm over "
                  f"the fixed family of {paired['family_size']} (detectors x benchmarks x doses).", "",
                  "| dose | benchmark | detector | paired AUC | 95% CI | p | Holm p | n |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in paired["rows"]:
            holm = "-" if "pvalue_holm" not in r else (
                "no test" if r["significant"] is None else f"{r['pvalue_holm']:.3g}{' *' if r['significant'] else ''}")
            value = "-" if not verdicts.finite(r["value"]) else f"{r['value']:.2f}"
            lines.append(f"| {r['dose']} | {r['benchmark']} | {r['detector']} | {value} | {_ci(r['ci95'])} | "
                         f"{_p(r['pvalue'])} | {holm} | {r['n']} |")
    if report.get("balanced"):
        lines += ["", "## Single model, both draws: AUC of seen vs unseen averaged over the arm and its twin", "",
                  "Each model's own AUC (no pairing); the 95% CI resamples items, the same draw in both models.", "",
                  "| dose | benchmark | detector | AUC, two draws | 95% CI | arm | twin |",
                  "|---|---|---|---|---|---|---|"]
        lines += [f"| {r['dose']} | {r['benchmark']} | {r['detector']} | {r['value']:.2f} | {_ci(r['ci95'])} | "
                  f"{r['draws'][0]:.2f} | {r['draws'][1]:.2f} |" for r in report["balanced"]]
    relative = " (scores relative to the reference)" if report["relative"] else ""
    lines += ["", f"## Unpaired, per arm{relative}: contaminated half vs clean half", "",
              "AUC / EPG with a 95% bootstrap CI and the random-split permutation p (half flag reshuffled).", "",
              "| arm | benchmark | statistic | value | 95% CI | permutation p (one-sided) | two-sided |",
              "|---|---|---|---|---|---|---|"]
    for r in report["unpaired"]:
        value = "-" if not np.isfinite(r["value"]) else f"{r['value']:.2f}"
        lines.append(f"| {r['arm']} | {r['benchmark']} | {r['statistic']} | {value} | {_ci(r['ci95'])} | "
                     f"{_p(r['pvalue'])} | {_p(r['pvalue_two_sided'])} |")
    lines += calibrated_markdown(report.get("calibrated_pacost"), report.get("reference"))
    return "\n".join(lines) + "\n"


BALANCED_SHOWN = {"min_k_plus_plus": "Min-K%++", "mean_logprob": "mean log-prob",
                  "longest_match": "ConTAM LONGEST_MATCH"}


def balanced_docs_table(report: dict) -> str:
    """README's and docs/results.md's table: per detector and dose, each benchmark's AUC averaged over the two draws
    with its item-cluster 95% CI (from crossover.json's `balanced`)."""
    rows = {(r["detector"], r["dose"], r["benchmark"]): r for r in report.get("balanced", [])}
    shown_benchmarks = {"gsm8k": "GSM8K", "copa": "COPA", "mmlu": "MMLU"}
    lines = ["| detector | dose | " + " | ".join(shown_benchmarks[b] for b in BENCHMARKS) + " |",
             "|---|---|" + "---|" * len(BENCHMARKS)]
    for detector, shown in BALANCED_SHOWN.items():
        for dose in DOSES:
            cells = []
            for benchmark in BENCHMARKS:
                r = rows.get((detector, dose, benchmark))
                cells.append("-" if r is None else f"{r['value']:.2f} ({r['ci95'][0]:.2f}, {r['ci95'][1]:.2f})")
            lines.append(f"| {shown} | verbatim {dose} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def calibrated_markdown(calibrated: dict | None, reference: str | None) -> list[str]:
    """The calibrated PaCoST section: summary shares with CIs and bands, then every half."""
    lines = ["", "## Calibrated PaCoST (design a: gap(arm) - gap(reference), sign-flip permutation, p < 0.05)", ""]
    if calibrated is None:
        return lines + ["Waiting on the reference audit (`results/arms/base/audit_jaxcontam/items.parquet`)."]
    lines += [f"Reference: {reference}.", "",
              "| test | control: flagged halves (99% band) | power on contaminated halves (95% CI) | "
              "flagged clean halves of contaminated arms (95% CI) | format control: flagged halves (99% band) |",
              "|---|---|---|---|---|"]
    for key, label in (("calibrated_p", "calibrated"), ("uncalibrated_p", "uncalibrated (original vs rephrased)")):
        s = calibrated["summary"][key]
        control, power, clean = (s[k] for k in ("control_all_halves", "power_contaminated_halves",
                                                "fpr_clean_halves_of_contaminated_arms"))
        cells = [(f"{c['flagged']}/{c['n']} ({_ci(c['ci95'])}{_untested(c)})" if c["n"] else
                  f"no test ({c['untested']})" if c.get("untested") else "-") for c in (power, clean)]
        bands = [(f"{c['flagged']}/{c['n']} (band {c['band99']}{_untested(c)})" if c["n"]
                  else f"no test ({c['untested']})" if c.get("untested") else "-")
                 for c in (control, s.get("format_control_all_halves", {"n": 0}))]
        lines.append(f"| {label} | {bands[0]} | {cells[0]} | {cells[1]} | {bands[1]} |")
    lines += ["", "| arm | benchmark | half | confidence | n | calibrated p | uncalibrated p |",
              "|---|---|---|---|---|---|---|"]
    for r in calibrated["rows"]:
        if "error" in r:
            lines.append(f"| {r['arm']} | {r['benchmark']} | {r['half']} | {r['confidence']} | - | {r['error']} | - |")
        else:
            lines.append(f"| {r['arm']} | {r['benchmark']} | {r['half']} | {r['confidence']} | {r['n']} | "
                         f"{_p(r['calibrated_p'])} | {_p(r['uncalibrated_p'])} |")
    return lines


def _shown(folder: pathlib.Path) -> str:
    """A folder as written in the outputs: relative to the checkout when inside it."""
    try:
        return str(folder.resolve().relative_to(HERE.parents[1]))
    except ValueError:
        return str(folder)


def analyse(results: list[pathlib.Path], use_relative: bool = False, reference_arm: str = "base",
            seed: int = 0, resamples: int = RESAMPLES) -> dict:
    folders = {arm: folder for arm in ARMS if (folder := find_arm(results, arm)) is not None}
    arms = {arm: load_arm(folder) for arm, folder in folders.items()}
    reference_folder = find_arm(results, reference_arm)
    reference = load_arm(reference_folder) if reference_folder else None
    unpaired_arms = arms
    if use_relative:
        unpaired_arms = {arm: relative(items, reference, base_mean_logprob(folders[arm]))
                         for arm, items in arms.items()}
    report = {"arms": {arm: _shown(folder) for arm, folder in folders.items()}, "relative": use_relative,
              "reference": _shown(reference_folder) if reference_folder else None, "dose": dose_table(folders),
              "paired": paired_table(arms, seed), "unpaired": unpaired_table(unpaired_arms, seed, resamples),
              "balanced": balanced_table(arms, seed)}
    if reference is not None:
        report["calibrated_pacost"] = calibrated_pacost(arms, reference, seed=seed)
    return report


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=pathlib.Path, action="append",
                        help="results folder (repeatable; default: this experiment's results/)")
    parser.add_argument("--relative", action="store_true", help="unpaired scores as score - score_in_reference")
    parser.add_argument("--reference", default="base", help="the reference arm (default: base)")
    parser.add_argument("--resamples", type=int, default=RESAMPLES)
    parser.add_argument("--out", type=pathlib.Path, help="write crossover.json and crossover.md here")
    args = parser.parse_args(argv)
    results = args.results or [HERE / "results"]
    report = analyse(results, args.relative, args.reference, resamples=args.resamples)
    text = markdown(report)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        suffix = "_relative" if args.relative else ""
        (args.out / f"crossover{suffix}.json").write_text(json.dumps(report, indent=2, default=float) + "\n")
        (args.out / f"crossover{suffix}.md").write_text(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
