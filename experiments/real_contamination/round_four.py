"""Issue 48's tables: calibrated PaCoST per reference design and confidence, level and power with item-cluster
bootstrap CIs, the two rules of `decision_rule.py` (committed in 15a1623, before any round-four run) applied, and
every detector's verdict on the format control beside the control arm.

Halves and roles (decision_rule.py's terms): a control arm's two halves (seed 0 and its data-order replicates) are
`control`; the format-control arm's two halves are `format_control`; in every other arm the half it trained on is
`contaminated` and the other `clean`. A design's reference model is never audited against itself: under
`control_reference` the seed-0 control arm is left out.

Designs, as far as their inputs exist (a design with no input is listed as not run, with the reason):
- `base_model`: the base GGUF's audit (an oracle: the exact starting weights, never eligible as the default);
- `control_reference`: the seed-0 control arm's audit (its model saw the same general text, none of the items);
- `diverged_sibling`: the `diverged_sibling` arm's audit (the base fine-tuned on other text only);
- `fresh_items` (design b): each half's gaps against the same model's gaps on fresh items of the same benchmark (the
  items after the audited ones, which no arm saw: `run.py --fresh`, `audit_fresh/part*/items.parquet`), on the arms
  that have that audit. Its halves are fewer than the other designs', so its candidates are also shown beside the
  other designs on the same arms (`same_arms`).

Each half is tested as `reference_test` does (the sign-flip permutation test of gap(audited) - gap(reference),
one-sided), or under design (b) as `fresh_items_test` does (the permutation test of the difference of mean gaps,
half against fresh items, one-sided). The level's and the power's 95% CIs resample items with replacement within
each benchmark, the same draw for every half that holds the item (the same items are audited in every arm), and
re-run every half's test on its resampled items (`decision_rule.cluster_bootstrap_levels`; the permutation test with
999 flips inside the bootstrap; design (b): the fresh items resampled in strata of their own, 999 random splits).
PaCoST's own uncalibrated test (original vs rephrased in the audited model alone) is shown beside it.

    python -m experiments.real_contamination.round_four [--results DIR ...] [--replicates 200] [--out DIR]

Writes round_four.json and round_four.md to --out (default: results/).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import pathlib
import sys

import numpy as np

from experiments import summary_verdicts as verdicts  # tested, not detected, not tested
from experiments.real_contamination import crossover
from experiments.real_contamination import decision_rule as rule
from experiments.real_contamination.crossover import find_arm, load_arm
from experiments.real_contamination.design import BENCHMARKS, FORMAT_ARM, FRESH

HERE = pathlib.Path(__file__).resolve().parent

CONTROL_ARMS = ("control", "control_seed1", "control_seed2")
CONTAMINATED_ARMS = (
    "verbatim_x1",
    "verbatim_x4",
    "verbatim_x1_swapped",
    "verbatim_x4_swapped",
    "fields_x4",
    "rephrased_x4",
    "verbatim_x1_seed1",
    "verbatim_x1_seed2",
    "verbatim_x1_swapped_seed1",
    "verbatim_x1_swapped_seed2",
)
AUDITED = (*CONTROL_ARMS, FORMAT_ARM, *CONTAMINATED_ARMS)
REFERENCES = {"base_model": "base", "control_reference": "control", "diverged_sibling": "diverged_sibling"}
FRESH_DESIGN = "fresh_items"
BOOTSTRAP_FLIPS = 999


def role_of(arm: str, seen: bool) -> str:
    if arm in CONTROL_ARMS:
        return "control"
    if arm == FORMAT_ARM:
        return "format_control"
    return "contaminated" if seen else "clean"


def halves(items) -> list[tuple[str, str, bool, object]]:
    """(benchmark, half label, seen, rows) of one arm: the half it trained on and the other, per benchmark (the
    `drawn` half and the other in arms that trained on neither)."""
    out = []
    for benchmark in BENCHMARKS:
        rows = items[items["benchmark"] == benchmark]
        split = "seen" if rows["seen"].any() else "drawn"
        for flag in (True, False):
            group = rows[rows[split] == flag]
            label = ("contaminated" if flag else "clean") if split == "seen" else ("drawn" if flag else "other")
            out.append((benchmark, label, split == "seen" and flag, group))
    return out


def gaps(rows, confidence: str) -> np.ndarray:
    return (rows[f"{confidence}_original"] - rows[f"{confidence}_rephrased"]).to_numpy(float)


@functools.cache
def _signs(n: int, flips: int) -> np.ndarray:
    """flips x n random signs (seeded by n: the same flips for every half of n items, in every replicate)."""
    return np.random.default_rng(n).choice(np.array([-1.0, 1.0]), size=(flips, n))


def flip_pvalue(differences: np.ndarray, flips: int = BOOTSTRAP_FLIPS) -> float | None:
    """One-sided Monte Carlo sign-flip p-value of the mean of `differences` (the permutation test `reference_test`
    runs, with `flips` random flips and its tie rule, `jaxcontam.stats.signflip`; None: too few finite values, where
    it has no test either)."""
    from jaxcontam.stats.paired import minimum_pairs
    from jaxcontam.stats.signflip import RELATIVE_TOLERANCE, tail_counts

    finite = differences[np.isfinite(differences)]
    if finite.size < minimum_pairs("permutation"):
        return None
    observed = finite.sum()
    exceed, _ = tail_counts(_signs(finite.size, flips) @ finite, observed, RELATIVE_TOLERANCE * np.abs(finite).sum())
    return (1 + exceed) / (1 + flips)


def _pvalue(test, *confidences) -> float | None:
    """`test(*confidences).pvalue`, None where the test cannot be made (too few items with both confidences)."""
    from jaxcontam.stats.validation import StatsInputError

    try:
        return test(*confidences).pvalue
    except StatsInputError:
        return None


def design_halves(arms: dict, reference, design: str, confidence: str):
    """Per half of every audited arm (the reference's own arm left out): HalfResult with the calibrated p, the
    uncalibrated p, and the HalfSamples (d = gap(audited) - gap(reference) by item) the bootstrap re-tests."""
    from jaxcontam.stats.calibrated import reference_test, uncalibrated_test

    results, uncalibrated, samples = [], [], []
    for arm in (a for a in AUDITED if a in arms and a != REFERENCES.get(design)):
        for benchmark, label, seen, rows in halves(arms[arm]):
            role = role_of(arm, seen)
            ref = reference.reindex(rows.index)
            original, rephrased = f"{confidence}_original", f"{confidence}_rephrased"
            p = _pvalue(reference_test, rows[original], rows[rephrased], ref[original], ref[rephrased])
            raw = _pvalue(uncalibrated_test, rows[original], rows[rephrased])
            results.append(rule.HalfResult(arm, benchmark, label, role, confidence, p))
            uncalibrated.append(rule.HalfResult(arm, benchmark, label, role, confidence, raw))
            d = gaps(rows, confidence) - gaps(ref, confidence)
            keep = np.isfinite(d)
            ids = tuple(rows.index[keep].astype(str))
            samples.append(
                rule.HalfSamples(arm, benchmark, label, role, (rule.ItemSample(benchmark, ids, tuple(d[keep])),))
            )
    return results, uncalibrated, samples


def _share(values: np.ndarray) -> list[float] | None:
    finite = values[np.isfinite(values)]
    return [float(np.percentile(finite, 2.5)), float(np.percentile(finite, 97.5))] if finite.size else None


def load_fresh(folder: pathlib.Path):
    """The arm's audit of design (b)'s fresh items (every part of `audit_fresh/` finished: its summary.json written,
    as an audit does last), indexed by id, or None."""
    import pandas as pd

    parts = sorted((folder / FRESH).glob("part*.toml"))
    done = [part.with_suffix("") for part in parts if (part.with_suffix("") / "summary.json").exists()]
    if not parts or len(done) < len(parts):
        return None
    return pd.concat([pd.read_parquet(part / "items.parquet") for part in done]).set_index("id", drop=False)


def fresh_halves(arms: dict, fresh: dict, confidence: str):
    """Design (b) per half of every arm with fresh items: HalfResult with the p of `fresh_items_test` (the half's
    gaps against the same model's fresh items of the same benchmark), the uncalibrated p, and the HalfSamples (the
    half's gaps in the benchmark's stratum, the fresh gaps in their own) the bootstrap re-tests."""
    from jaxcontam.stats.calibrated import fresh_items_test, uncalibrated_test

    results, uncalibrated, samples = [], [], []
    original, rephrased = f"{confidence}_original", f"{confidence}_rephrased"
    for arm in (a for a in AUDITED if a in fresh):
        for benchmark, label, seen, rows in halves(arms[arm]):
            role = role_of(arm, seen)
            new = fresh[arm][fresh[arm]["benchmark"] == benchmark]
            p = _pvalue(fresh_items_test, rows[original], rows[rephrased], new[original], new[rephrased])
            raw = _pvalue(uncalibrated_test, rows[original], rows[rephrased])
            results.append(rule.HalfResult(arm, benchmark, label, role, confidence, p))
            uncalibrated.append(rule.HalfResult(arm, benchmark, label, role, confidence, raw))
            parts = []
            for stratum, group in ((benchmark, rows), (f"fresh/{benchmark}", new)):
                g = gaps(group, confidence)
                keep = np.isfinite(g)
                parts.append(rule.ItemSample(stratum, tuple(group.index[keep].astype(str)), tuple(g[keep])))
            samples.append(rule.HalfSamples(arm, benchmark, label, role, tuple(parts)))
    return results, uncalibrated, samples


def split_pvalue(drawn) -> float | None:
    """design (b)'s test on resampled gaps: one-sided permutation p of mean(half) - mean(fresh), BOOTSTRAP_FLIPS
    random splits (None where a side has no value, where `fresh_items_test` has no test either)."""
    from jaxcontam.stats.calibrated import mean_difference_pvalue

    half, new = drawn
    if half.size < 1 or new.size < 1:
        return None
    return mean_difference_pvalue(half, new, "greater", resamples=BOOTSTRAP_FLIPS, seed=0)[0]


def candidate(arms: dict, reference, design: str, confidence: str, replicates: int, seed: int, fresh=None):
    if design == FRESH_DESIGN:
        halves_, uncalibrated, samples = fresh_halves(arms, fresh, confidence)
        test = split_pvalue
    else:
        halves_, uncalibrated, samples = design_halves(arms, reference, design, confidence)
        test = lambda drawn: flip_pvalue(drawn[0])  # noqa: E731
    shares = rule.cluster_bootstrap_levels(samples, test, replicates=replicates, seed=seed)
    cand = rule.Candidate(confidence, design, tuple(halves_), rule.bootstrap_upper95(shares))
    return cand, uncalibrated, {role: _share(values) for role, values in sorted(shares.items())}  # a stable order


def _count(c: rule.Count) -> dict:
    return {"flagged": c.flagged, "tested": c.tested, "total": c.total}


def format_control_verdicts(folders: dict) -> list[dict]:
    """Every headline verdict of the format-control arm's audit beside the control arm's: the false positives of
    each detector at the audit's own alpha (summary.json `verdicts`, counted flagged / tested / total)."""
    rows = []
    for arm in ("control", FORMAT_ARM):
        if arm not in folders:
            continue
        summary = json.loads((folders[arm] / "audit_jaxcontam" / "summary.json").read_text())
        per_detector: dict[str, list[str]] = {}
        for run in summary["runs"]:
            if "verdicts" in run:  # schema 2: the run's headline verdicts
                found = [(f"{v['detector']} ({v['test']})", verdicts.outcome(v)) for v in run["verdicts"]]
            else:  # schema 1 (the arms audited before round four): PaCoST's and ConTAM's entries
                found = [
                    ("pacost", verdicts.outcome(run.get("pacost"))),
                    ("contam", verdicts.outcome(run.get("contam"), "significant")),
                ]
            for detector, outcome in found:
                per_detector.setdefault(detector, []).append(outcome)
        for detector, outcomes in per_detector.items():
            tally = verdicts.tally(outcomes)
            rows.append({"arm": arm, "detector": detector, **tally})
    return rows


def design_report(arms: dict, reference, design: str, replicates: int, seed: int, fresh=None) -> tuple[dict, list]:
    """One design's entry of the report (per confidence: power, levels, bands, bootstrap CIs, eligibility, the
    uncalibrated counts and every half's p; rule 1's counts) and its rule-2 candidates."""
    per_confidence, candidates, halves_by_confidence = {}, [], []
    for confidence in rule.CONFIDENCES:
        cand, uncalibrated, ci = candidate(arms, reference, design, confidence, replicates, seed, fresh)
        candidates.append(cand)
        halves_by_confidence += cand.halves
        a = rule.assess(cand)
        raw = {
            role: rule.count([h for h in uncalibrated if h.role == role], lambda h: h.p < rule.ALPHA)
            for role in rule.ROLES
        }
        per_confidence[confidence] = {
            "power": _count(a.power),
            "levels": {r: _count(c) for r, c in a.levels.items()},
            "bands99": {r: list(b) for r, b in a.bands.items()},
            "bootstrap_ci95": ci,
            "eligible": a.eligible,
            "reasons": list(a.reasons),
            "uncalibrated": {role: _count(c) for role, c in raw.items()},
            "halves": [
                {"arm": h.arm, "benchmark": h.benchmark, "half": h.half, "role": h.role, "p": h.pvalue}
                for h in cand.halves
            ],
        }
    counts = rule.counts_per_confidence(halves_by_confidence)
    rule1 = {c: {r: {k: _count(v) for k, v in by.items()} for r, by in roles.items()} for c, roles in counts.items()}
    return {"confidences": per_confidence, "rule1_counts": rule1}, candidates


def analyse(results: list[pathlib.Path], replicates: int, seed: int = 0) -> dict:
    folders = {arm: folder for arm in {*AUDITED, *REFERENCES.values()} if (folder := find_arm(results, arm))}
    arms = {arm: load_arm(folder) for arm, folder in folders.items() if arm in AUDITED}
    report: dict = {
        "arms": {a: crossover._shown(f) for a, f in sorted(folders.items())},
        "replicates": replicates,
        "not_run": {},
        "designs": {},
        "format_control_verdicts": format_control_verdicts(folders),
    }
    missing = [a for a in AUDITED if a not in arms]
    if missing:
        report["arms_missing"] = missing
    candidates = []
    designs = {design: (arm, None) for design, arm in REFERENCES.items()}
    fresh = {arm: items for arm in arms if (items := load_fresh(folders[arm])) is not None}
    designs[FRESH_DESIGN] = (None, fresh)
    for design, (arm, fresh_items) in designs.items():
        if design == FRESH_DESIGN and not fresh:
            report["not_run"][design] = "no arm has a finished audit of fresh items (run.py --fresh: audit_fresh/)"
            continue
        if arm is not None and arm not in folders:
            report["not_run"][design] = f"no audit of the {arm} arm"
            continue
        reference = load_arm(folders[arm]) if arm is not None else None
        entry, found = design_report(arms, reference, design, replicates, seed, fresh_items)
        candidates += found
        report["designs"][design] = {
            "reference": crossover._shown(folders[arm]) if arm is not None else "fresh items, in each audited model",
            **entry,
        }
        if fresh_items:
            report["designs"][design]["arms"] = sorted(fresh_items)
    if fresh:  # the other designs on design (b)'s arms alone: its candidates' like-for-like comparison
        subset = {a: arms[a] for a in fresh}
        report["same_arms"] = {"arms": sorted(fresh), "designs": {}}
        for design, arm in REFERENCES.items():
            if arm in folders:
                entry, _ = design_report(subset, load_arm(folders[arm]), design, replicates, seed, None)
                report["same_arms"]["designs"][design] = entry
    decision = rule.decide(candidates)
    report["decision"] = {"choice": list(decision.choice) if decision.choice else None, "reason": decision.reason}
    report["bootstrap_null_level"] = bootstrap_null_level()
    band_only = rule.decide(
        [dataclasses.replace(c, level_upper95={r: 0.0 for r in rule.LEVEL_ROLES}) for c in candidates]
    )
    report["post_hoc_band_only"] = {
        "choice": list(band_only.choice) if band_only.choice else None,
        "reason": band_only.reason,
        "note": POST_HOC_NOTE,
    }
    return report


POST_HOC_NOTE = (
    "not the committed rule: rule 2 with its condition 3 (bootstrap upper end below 2 alpha) dropped, read after "
    "seeing that a test at its exact level fails condition 3 (bootstrap_null_level); it sets no default"
)


def bootstrap_null_level(items: int = 34, data_sets: int = 200, replicates: int = 20, seed: int = 0) -> dict:
    """What condition 3 of rule 2 asks of a test at its exact level: per-item differences drawn from N(0, 1) (the
    calibrated test's null, symmetric about 0) for `data_sets` halves of `items` items, each half re-tested by
    `flip_pvalue` on `replicates` item-bootstrap resamples, as `cluster_bootstrap_levels` re-tests. Resampling with
    replacement duplicates items, which narrows the sign-flip null, so the re-tests flag more than alpha."""
    rng = np.random.default_rng(seed)
    original, retested = [], []
    for _ in range(data_sets):
        d = rng.normal(0.0, 1.0, items)
        original.append(flip_pvalue(d) < rule.ALPHA)
        retested += [flip_pvalue(d[rng.integers(0, items, items)]) < rule.ALPHA for _ in range(replicates)]
    return {
        "items": items,
        "data_sets": data_sets,
        "replicates": replicates,
        "level": float(np.mean(original)),
        "bootstrap_level": float(np.mean(retested)),
    }


def _cell(c: dict, ci: list[float] | None = None) -> str:
    text = f"{c['flagged']}/{c['tested']}"
    if c["tested"] < c["total"]:
        text += f" ({c['total'] - c['tested']} no test)"
    if ci:
        text += f" [{ci[0]:.2f}, {ci[1]:.2f}]"
    return text


def markdown(report: dict) -> str:
    lines = ["# Round four: calibrated PaCoST per reference and confidence", ""]
    lines += [f"Arms: {', '.join(sorted(report['arms']))}."]
    if report.get("arms_missing"):
        lines += [f"Not yet trained or audited (absent from every count): {', '.join(report['arms_missing'])}."]
    for design, reason in report["not_run"].items():
        lines += [f"Design `{design}` not run: {reason}."]
    lines += [
        "",
        "Cells: flagged / tested halves at p < 0.05, with the item-cluster bootstrap 95% CI of the share "
        f"({report['replicates']} replicates); power counts an untested contaminated half as a miss.",
        "",
    ]
    roles = (*rule.LEVEL_ROLES, "contaminated")
    for design, entry in report["designs"].items():
        lines += [f"## {design} (reference: {entry['reference']})", ""]
        if entry.get("arms"):
            lines += [f"On the arms with an audit of fresh items only: {', '.join(entry['arms'])}.", ""]
        lines += [
            "| confidence | test | "
            + " | ".join(f"level: {r}" for r in rule.LEVEL_ROLES)
            + " | power: contaminated | eligible |",
            "|---|---|" + "---|" * (len(roles) + 1),
        ]
        for confidence, row in entry["confidences"].items():
            ci = row["bootstrap_ci95"]
            cells = [_cell(row["levels"][r], ci.get(r)) if r in row["levels"] else "-" for r in rule.LEVEL_ROLES]
            power = row["power"]
            cells.append(
                f"{power['flagged']}/{power['total']}"
                + (f" [{ci['contaminated'][0]:.2f}, {ci['contaminated'][1]:.2f}]" if ci.get("contaminated") else "")
            )
            lines.append(
                f"| {confidence} | calibrated | " + " | ".join(cells) + f" | {'yes' if row['eligible'] else 'no'} |"
            )
            raw = row["uncalibrated"]
            lines.append(
                f"| {confidence} | PaCoST's own (uncalibrated) | " + " | ".join(_cell(raw[r]) for r in roles) + " | - |"
            )
        lines += [
            "",
            "Rule 1 (Holm over the 4 confidences of each half), flagged / tested:",
            "",
            "| confidence | " + " | ".join(f"{r} raw | {r} Holm" for r in roles) + " |",
            "|---|" + "---|---|" * len(roles),
        ]
        for confidence, by_role in entry["rule1_counts"].items():
            lines.append(
                f"| {confidence} | "
                + " | ".join(f"{_cell(by_role[r]['raw'])} | {_cell(by_role[r]['holm'])}" for r in roles)
                + " |"
            )
        lines.append("")
    if report.get("same_arms"):
        lines += [
            "## Every design on design (b)'s arms alone (like for like)",
            "",
            f"Arms: {', '.join(report['same_arms']['arms'])}; calibrated, flagged / tested halves.",
            "",
            "| design | confidence | " + " | ".join(f"level: {r}" for r in rule.LEVEL_ROLES) + " | power |",
            "|---|---|" + "---|" * (len(rule.LEVEL_ROLES) + 1),
        ]
        same = {**report["same_arms"]["designs"], FRESH_DESIGN: report["designs"].get(FRESH_DESIGN)}
        for design, entry in same.items():
            for confidence, row in (entry or {"confidences": {}})["confidences"].items():
                cells = [_cell(row["levels"][r]) if r in row["levels"] else "-" for r in rule.LEVEL_ROLES]
                power = row["power"]
                lines.append(
                    f"| {design} | {confidence} | " + " | ".join(cells) + f" | {power['flagged']}/{power['total']} |"
                )
        lines.append("")
    lines += ["## The default (rule 2)", "", f"- {report['decision']['reason']}", ""]
    if "bootstrap_null_level" in report:
        lines += [
            _bootstrap_sentence(report),
            "",
            f"- Post hoc, band only ({report['post_hoc_band_only']['note']}): {_choice(report['post_hoc_band_only'])}",
            "",
        ]
    if report["format_control_verdicts"]:
        lines += [
            "## Headline verdicts of the audit on the format control beside the control arm",
            "",
            "| arm | detector | contaminated | tested | not tested |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {r['arm']} | {r['detector']} | {r['flagged']} | {r['tested']} | {r['untested']} |"
            for r in report["format_control_verdicts"]
        ]
    return "\n".join(lines) + "\n"


def _fraction(c: dict) -> str:
    return f"{c['flagged']}/{c['tested']}" + (
        f" ({c['total'] - c['tested']} no test)" if c["tested"] < c["total"] else ""
    )


def docs_table(report: dict) -> str:
    """docs/methods.md's table: each candidate of rule 2 (confidence x design) with its calibrated level on every
    level role and its power (flagged / tested halves, the bootstrap 95% upper end of each level), and whether it
    passed; then the rule's outcome."""
    roles = rule.LEVEL_ROLES
    lines = [
        "| design | confidence | " + " | ".join(f"level: {r} (95% upper)" for r in roles) + " | power | eligible |",
        "|---|---|" + "---|" * (len(roles) + 2),
    ]
    for design, entry in report["designs"].items():
        for confidence, row in entry["confidences"].items():
            ci = row["bootstrap_ci95"]
            cells = []
            for r in roles:
                level = row["levels"].get(r)
                if level is None or not level["tested"]:
                    cells.append("no half tested")
                    continue
                upper = f" ({ci[r][1]:.2f})" if ci.get(r) else ""
                cells.append(_fraction(level) + upper)
            power = row["power"]
            eligible = "yes" if row["eligible"] else ("no (oracle)" if design in rule.ORACLE_DESIGNS else "no")
            shown = f"{design} ({len(entry['arms'])} arms)" if entry.get("arms") else design
            lines.append(
                f"| {shown} | {confidence} | " + " | ".join(cells) + f" | {power['flagged']}/{power['total']} | "
                f"{eligible} |"
            )
    for design, reason in report["not_run"].items():
        lines.append(f"| {design} | - | not run: {reason} |" + " |" * (len(roles) + 1))
    choice = report["decision"]["choice"]
    outcome = f"default: {choice[0]} / {choice[1]}" if choice else "no candidate passes: the default is unchanged"
    text = "\n".join(lines) + f"\n\nRule 2's outcome: {outcome}.\n"
    if "bootstrap_null_level" in report:
        post_hoc = report["post_hoc_band_only"]
        text += f"\n{_bootstrap_sentence(report)} Post hoc, with condition 3 dropped: {_choice(post_hoc)}"
        text += " (sets no default).\n"
    return text


def _bootstrap_sentence(report: dict) -> str:
    null = report["bootstrap_null_level"]
    return (
        f"Condition 3 under an exact null: {null['data_sets']} halves of {null['items']} items with symmetric "
        f"differences are flagged at {null['level']:.3f} by the test itself and at {null['bootstrap_level']:.3f} by "
        f"its item-bootstrap re-tests ({null['replicates']} each), above 2 alpha = {2 * rule.ALPHA:.2f}: the rule's "
        "bootstrap upper end cannot fall below 2 alpha even for a test that holds its level, so rule 2 as committed "
        "picks no default whatever the data."
    )


def _choice(decision: dict) -> str:
    return f"{decision['choice'][0]} / {decision['choice'][1]}" if decision["choice"] else "none"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=pathlib.Path, action="append")
    parser.add_argument("--replicates", type=int, default=200)
    parser.add_argument("--out", type=pathlib.Path, default=HERE / "results")
    args = parser.parse_args(argv)
    report = analyse(args.results or [HERE / "results"], args.replicates)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "round_four.json").write_text(json.dumps(report, indent=2, default=float) + "\n")
    text = markdown(report)
    (args.out / "round_four.md").write_text(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
