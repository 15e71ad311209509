"""Issue 62's decision rule (`jaxcontam.stats.decision_rule`, committed in e5db0f0 before any of that issue's runs)
applied to the committed round-four audits: no model runs, every half re-tested from its items.parquet as
round_four.py tests it.

Candidates per situation:
- `reference_model`: calibrated PaCoST (`reference_test`) per confidence against the control arm's model and the
  diverged sibling; against the base model as an oracle (assessed, never picked);
- `model_alone`: per confidence, PaCoST's own uncalibrated test (original vs rephrased in the audited model), and
  design (b) (`fresh_items_test`: the same model's gaps on fresh items of the benchmark, on the arms that have them);
- issue 62's detectors with a per-half test (`detectors.py`, its halves in results/detectors.json): the reference
  log-ratio's and CoDeC's calibrated tests (`reference_model`: against the control arm's model, and against the base
  model as an oracle) and CoDeC's sign test (`model_alone`), each on the arms audited with them (fewer than round
  four's: each candidate's level and power are counted on its own halves, as the rule assesses any candidate);
- `corpus` and `model_family`: round four has no per-half test with a corpus (ConTAM's and EPG's tests are per
  benchmark, the likelihood detectors have scores, not tests), and ConStat could test no half of the arm family
  (`constat_family.py`): listed as not measured.

Halves and roles as in round_four.py; each half's cluster is the item set it tests (benchmark and side of the draw),
shared by every arm that audits those items. A design's reference arm is left out of its own candidates.

    python -m experiments.real_contamination.apply_rule [--results DIR ...] [--out DIR]

Writes decision_rule.json and decision_rule.md to --out (default: results/).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

from experiments.real_contamination import detectors, round_four
from experiments.real_contamination.crossover import find_arm, load_arm
from jaxcontam.stats import decision_rule as rule

HERE = pathlib.Path(__file__).resolve().parent

NOT_MEASURED = {
    "corpus": "round four has no per-half test with a corpus (ConTAM's and EPG's tests are per benchmark)",
    "model_family": "ConStat could test no half of the arm family (constat_family.py: the reference models score too "
    "alike)",
}
COMMIT = "e5db0f0"


def clusters(arms: dict) -> dict[tuple[str, str, str], str]:
    """(arm, benchmark, half label) -> the item set the half tests: benchmark and side of the seed-0 draw (the
    control arm's `drawn`; an arm's own `drawn` is the half it labels contaminated, the other side in a twin)."""
    if "control" not in arms:
        raise SystemExit("the control arm's audit is needed: its ground truth fixes the sides of the draw")
    side = arms["control"]["drawn"].to_dict()
    found = {}
    for arm, items in arms.items():
        for benchmark, label, _, rows in round_four.halves(items):
            sides = {side[i] for i in rows.index}
            if len(sides) != 1:
                raise SystemExit(f"{arm}/{benchmark}/{label}: a half holds both sides of the draw")
            found[(arm, benchmark, label)] = f"{benchmark}/{'drawn' if sides.pop() else 'other'}"
    return found


def outcomes(results: list[round_four.rule.HalfResult], cluster_of: dict) -> tuple[rule.HalfOutcome, ...]:
    """Each half's verdict at rule.ALPHA (None: untested) with its item set."""
    return tuple(
        rule.HalfOutcome(
            h.role, None if not h.tested else h.p < rule.ALPHA, cluster_of[(h.arm, h.benchmark, h.half)], h.arm
        )
        for h in results
    )


def candidates(folders: dict, arms: dict) -> list[rule.Candidate]:
    cluster_of = clusters(arms)
    found = []
    for design, reference_arm in round_four.REFERENCES.items():
        if reference_arm not in folders:
            continue
        reference = load_arm(folders[reference_arm])
        for confidence in round_four.rule.CONFIDENCES:
            calibrated, uncalibrated, _ = round_four.design_halves(arms, reference, design, confidence)
            found.append(
                rule.Candidate(
                    f"PaCoST {confidence}, calibrated against {design}",
                    "reference_model",
                    outcomes(calibrated, cluster_of),
                    oracle=design in round_four.rule.ORACLE_DESIGNS,
                )
            )
            if design == "base_model":  # the reference arm "base" is not audited: every arm's uncalibrated test
                name = f"PaCoST {confidence}, the authors' uncalibrated test"
                found.append(rule.Candidate(name, "model_alone", outcomes(uncalibrated, cluster_of)))
    fresh = {arm: items for arm in arms if (items := round_four.load_fresh(folders[arm])) is not None}
    if fresh:
        for confidence in round_four.rule.CONFIDENCES:
            calibrated, _, _ = round_four.fresh_halves(arms, fresh, confidence)
            name = f"PaCoST {confidence}, against fresh items ({len(fresh)} arms)"
            found.append(rule.Candidate(name, "model_alone", outcomes(calibrated, cluster_of)))
    return found


def _share(s: rule.Share) -> dict:
    interval = s.confidence_interval(0.95)
    return {
        "flagged": s.flagged,
        "tested": s.tested,
        "total": s.total,
        "clusters": s.clusters,
        "design_effect": s.design_effect,
        "ci95": [interval.low, interval.high],
    }


def power_by_arm(candidate: rule.Candidate) -> dict[str, list[int]]:
    """Arm -> [flagged, contaminated halves] (an untested half a miss, as the power counts it): the power's split."""
    counts: dict[str, list[int]] = {}
    for half in candidate.halves:
        if half.role == "contaminated":
            tally = counts.setdefault(str(half.model), [0, 0])
            tally[0] += half.flagged is True
            tally[1] += 1
    return dict(sorted(counts.items()))


def _assessment(a: rule.Assessment, candidate: rule.Candidate) -> dict:
    return {
        "detector": a.detector,
        "oracle": a.oracle,
        "levels": {c.role: {**_share(c.share), "pvalue": c.pvalue, "exceeds": c.exceeds} for c in a.levels},
        "power": _share(a.power),
        "power_lower95": a.power_lower,
        "power_by_arm": power_by_arm(candidate),
        "eligible": a.eligible,
        "shows_power": a.shows_power,
        "reasons": list(a.reasons),
    }


def analyse(results: list[pathlib.Path]) -> dict:
    wanted = {*round_four.AUDITED, *round_four.REFERENCES.values()}
    folders = {arm: folder for arm in wanted if (folder := find_arm(results, arm))}
    arms = {arm: load_arm(folder) for arm, folder in folders.items() if arm in round_four.AUDITED}
    found = candidates(folders, arms)
    measured = results[0] / "detectors.json"  # detectors.py report's halves (none until it has run)
    detector_arms = []
    if measured.exists():
        halves = json.loads(measured.read_text())
        found += detectors.rule_candidates(halves["halves"])
        detector_arms = halves["arms"]
    decisions = rule.decide(found)
    by_name = {c.detector: c for c in found}
    report = {
        "rule_commit": COMMIT,
        "arms": sorted(arms),
        "detector_arms": detector_arms,
        "alpha": rule.ALPHA,
        "situations": {},
    }
    for situation in rule.SITUATIONS:
        if situation not in decisions:
            report["situations"][situation] = {"not_measured": NOT_MEASURED.get(situation, "no candidate")}
            continue
        d = decisions[situation]
        report["situations"][situation] = {
            "choice": d.choice.detector if d.choice else None,
            "reason": d.reason,
            "candidates": [_assessment(a, by_name[a.detector]) for a in d.assessments],
        }
    return report


def _level(cell: dict) -> str:
    if not cell["total"]:
        return "no half (no such arm audited)"
    text = f"{cell['flagged']}/{cell['tested']}"
    if cell["tested"] < cell["total"]:
        text += f" ({cell['total'] - cell['tested']} no test)"
    if cell["tested"]:
        text += f", p {cell['pvalue']:.2g}"
    if cell["design_effect"] > 1:
        text += f", deff {cell['design_effect']:.2f}"
    return text


def docs_table(report: dict) -> str:
    """docs/methods.md's table: per situation and candidate, each level with its exact binomial p-value, the power
    with its 95% CI and one-sided lower bound, and what the rule decided."""
    roles = rule.LEVEL_ROLES
    lines = [
        "| situation | candidate | " + " | ".join(f"level: {r}" for r in roles) + " | power [95% CI] | lower 95% | "
        "decision |",
        "|---|---|" + "---|" * (len(roles) + 3),
    ]
    for situation, entry in report["situations"].items():
        if "not_measured" in entry:
            lines.append(f"| {situation} | not measured: {entry['not_measured']} |" + " |" * (len(roles) + 3))
            continue
        for c in entry["candidates"]:
            power = c["power"]
            low, high = power["ci95"]
            decision = (
                "**picked**"
                if c["detector"] == entry["choice"]
                else "oracle"
                if c["oracle"]
                else "eligible, no power"
                if c["eligible"] and not c["shows_power"]
                else "eligible"
                if c["eligible"]
                else "exceeds its level"
                if any(level["exceeds"] for level in c["levels"].values())
                else "level unknown (a role with no tested half)"
            )
            lines.append(
                f"| {situation} | {c['detector']} | "
                + " | ".join(_level(c["levels"][r]) for r in roles)
                + f" | {power['flagged']}/{power['tested']} [{low:.2f}, {high:.2f}] | {c['power_lower95']:.2f} | "
                f"{decision} |"
            )
    picks = [f"{s}: {e.get('choice') or 'nothing'}" for s, e in report["situations"].items() if "not_measured" not in e]
    return (
        "\n".join(lines)
        + f"\n\nThe rule (commit {report['rule_commit']}) picks, per situation: "
        + "; ".join(picks)
        + ".\n"
    )


def markdown(report: dict) -> str:
    lines = [
        "# Issue 62's decision rule on the round-four halves",
        "",
        f"Arms: {', '.join(report['arms'])} (PaCoST); {', '.join(report['detector_arms']) or 'none'} (issue 62's "
        f"detectors, detectors.py). Rule: `jaxcontam.stats.decision_rule` (commit {report['rule_commit']}).",
        "Levels: flagged / tested halves at p < 0.05, the exact binomial p-value of 'rate <= 0.05' at the item-set",
        "clusters' effective sample size (deff: design effect); ruled out at p <= 0.10 / 3. Power: flagged / all",
        "contaminated halves (untested a miss), Clopper-Pearson 95% CI and one-sided lower bound at the effective",
        "size.",
        "",
        docs_table(report),
    ]
    for situation, entry in report["situations"].items():
        if "reason" in entry:
            lines += [f"- {situation}: {entry['reason']}"]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=pathlib.Path, action="append")
    parser.add_argument("--out", type=pathlib.Path, default=HERE / "results")
    args = parser.parse_args(argv)
    report = analyse(args.results or [HERE / "results"])
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "decision_rule.json").write_text(json.dumps(report, indent=2, default=float) + "\n")
    text = markdown(report)
    (args.out / "decision_rule.md").write_text(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
