"""The table of measured evidence that `jaxcontam audit` states (`jaxcontam.report.evidence`), generated from the
committed results: issue 62's decision rule per situation (results/decision_rule.json, apply_rule.py) and the halves
behind each candidate for its power per benchmark (results/round_four.json for PaCoST's calibrated and fresh-items
designs, results/detectors.json for the reference log-ratio's and CoDeC's tests).

Per situation: the rule's pick (or none, with the reason; a situation round four did not measure says why), and every
candidate the rule assessed, ranked as the rule ranks them (the 95% lower bound of the power first): the detector
and its settings (PaCoST's confidence; the design: the detector's own test in the model alone, calibrated against
a reference model, or against fresh items), its level on each role of halves known clean and its power on the
contaminated halves, each flagged / tested with the 95% Clopper-Pearson interval at the item clusters' effective size
(decision_rule.json's), and whether the rule found it eligible, with power, picked. No model runs.

    python -m experiments.real_contamination.evidence_table [--results DIR] [--out FILE]

Writes --out (default: jaxcontam/report/measured_evidence.json, the package's copy; tests/test_audit_evidence.py
checks that it equals what this script generates from the committed results) and prints the ranking table
(docs/results.md, `<!-- generated:evidence-ranking -->`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import re
import sys

from experiments.real_contamination import detectors
from experiments.real_contamination.design import ARMS
from jaxcontam.detect.registry import DETECTORS

HERE = pathlib.Path(__file__).resolve().parent
PACKAGED = HERE.parents[1] / "jaxcontam" / "report" / "measured_evidence.json"
MODEL = "SmolLM2-135M-Instruct"  # the model every arm fine-tunes (README.md)
ROLES = ("control", "clean", "format_control")
REFERENCES = {  # round four's reference designs as a reader of the audit's statement knows them
    "base_model": "the base model (an oracle: no auditor has the exact starting weights)",
    "control_reference": "the control arm's model (the base fine-tuned on the same text without the items)",
    "diverged_sibling": "a diverged sibling (the base fine-tuned on other text only)",
}
DESIGNS = (  # apply_rule.py's candidate names -> (design, its reference design in round_four.json)
    (re.compile(r"PaCoST (\w+), the authors' uncalibrated test$"), "authors_test"),
    (re.compile(r"PaCoST (\w+), calibrated against (\w+)$"), "calibrated"),
    (re.compile(r"PaCoST (\w+), against fresh items \(\d+ arms\)$"), "fresh_items"),
)


@dataclasses.dataclass(frozen=True)
class Parsed:
    """What a candidate's name in decision_rule.json says: the registered detector, PaCoST's confidence (None for
    another detector), the design, the reference design it was calibrated against, and a detectors.py test's key."""

    detector: str
    confidence: str | None
    design: str
    reference: str | None
    test: str | None = None


def parse_candidate(label: str) -> Parsed:
    """An apply_rule.py candidate name: round four's PaCoST designs, or a test of detectors.py."""
    for pattern, design in DESIGNS:
        found = pattern.match(label)
        if found:
            reference = found[2] if design == "calibrated" else ("fresh_items" if design == "fresh_items" else None)
            return Parsed("pacost", found[1], design, reference)
    for test in detectors.TESTS:
        for reference in detectors.REFERENCES:
            if label == detectors.test_name(test, reference):
                own = detectors.TESTS[test].situation == "model_alone"  # it names no reference
                return Parsed(
                    detectors.TESTS[test].detector,
                    None,
                    "authors_test" if own else "calibrated",
                    None if own else reference,
                    test,
                )
    raise SystemExit(f"candidate {label!r}: not a name apply_rule.py writes; teach evidence_table.py its design")


def _rate(cell: dict) -> dict:
    low, high = cell["ci95"]
    return {"flagged": cell["flagged"], "tested": cell["tested"], "low": low, "high": high}


def _checked(counts: dict[str, list[int]], label: str, power: dict, rerun: str) -> dict:
    flagged, total = sum(k for k, _ in counts.values()), sum(n for _, n in counts.values())
    if (flagged, total) != (power["flagged"], power["tested"]):
        raise SystemExit(
            f"{label}: the halves give {flagged}/{total} contaminated flagged, the rule {power['flagged']}/"
            f"{power['tested']}; rerun {rerun} and apply_rule.py on the same results"
        )
    return dict(sorted(counts.items()))


def _tally(halves: list[tuple[str, float | None]]) -> dict[str, list[int]]:
    """Benchmark -> [flagged at p < 0.05 (an untested half a miss), halves] of (benchmark, p) pairs."""
    counts: dict[str, list[int]] = {}
    for benchmark, p in halves:
        tally = counts.setdefault(benchmark, [0, 0])
        tally[0] += p is not None and p < 0.05
        tally[1] += 1
    return counts


def power_by_benchmark(round_four: dict, measured: dict, parsed: Parsed, power: dict) -> dict | None:
    """Benchmark -> [flagged, contaminated halves] of a candidate from the halves behind it (round_four.json's for a
    calibrated or fresh-items PaCoST candidate, detectors.json's for a detectors.py test), checked against the
    rule's count; None for PaCoST's authors' test, whose halves round_four.json does not keep."""
    if parsed.test is not None:
        design = parsed.reference or "base_model"
        halves = [
            (h["benchmark"], h["pvalues"][parsed.test])
            for h in measured["halves"]
            if h["role"] == "contaminated" and h["design"] == design and parsed.test in h["pvalues"]
        ]
        return _checked(_tally(halves), parsed.test, power, "detectors.py report")
    if parsed.reference is None:
        return None
    cells = round_four["designs"][parsed.reference]["confidences"][parsed.confidence]["halves"]
    halves = [(h["benchmark"], h["p"]) for h in cells if h["role"] == "contaminated"]
    return _checked(_tally(halves), f"{parsed.confidence} / {parsed.reference}", power, "round_four.py")


def power_by_form(entry: dict) -> dict[str, list[int]]:
    """Form of contamination ("verbatim x1", "rephrased x4": what the arm trained on, design.ARMS) -> [flagged,
    contaminated halves] of a candidate, from decision_rule.json's split of its power by arm, checked against it."""
    counts: dict[str, list[int]] = {}
    for arm, (flagged, halves) in entry["power_by_arm"].items():
        form, copies = ARMS[arm]
        tally = counts.setdefault(f"{form} x{copies}", [0, 0])
        tally[0] += flagged
        tally[1] += halves
    order = list(dict.fromkeys(f"{form} x{copies}" for form, copies in ARMS.values()))
    checked = _checked(counts, entry["detector"], entry["power"], "apply_rule.py")
    return dict(sorted(checked.items(), key=lambda item: order.index(item[0])))


def candidate(entry: dict, situation: dict, round_four: dict, measured: dict) -> dict:
    parsed = parse_candidate(entry["detector"])
    label = entry["detector"]
    if parsed.design == "calibrated":
        if parsed.reference not in REFERENCES:
            raise SystemExit(f"{label}: reference design {parsed.reference!r} unknown; name it in REFERENCES")
        known = REFERENCES[parsed.reference]
        pacost = f"PaCoST {parsed.confidence}, calibrated against {known}"
        label = pacost if parsed.test is None else detectors.TESTS[parsed.test].name.format(known)
    return {
        "label": label,
        "rule_label": entry["detector"],
        "detector": parsed.detector,
        "confidence": parsed.confidence,
        "design": parsed.design,
        "reference": parsed.reference if parsed.design == "calibrated" else None,
        "oracle": entry["oracle"],
        "eligible": entry["eligible"],
        "shows_power": entry["shows_power"],
        "picked": entry["detector"] == situation["choice"],  # the rule's pick, by its apply_rule.py name
        "levels": {role: _rate(entry["levels"][role]) for role in ROLES},
        "exceeds": {role: entry["levels"][role]["exceeds"] for role in ROLES},
        "power": _rate(entry["power"]),
        "power_lower": entry["power_lower95"],
        "power_by_benchmark": power_by_benchmark(round_four, measured, parsed, entry["power"]),
        "power_by_form": power_by_form(entry),
    }


# detectors.json's scores that no registered detector gives with its default settings -> the detector behind them
DERIVED = {"dc_pdd": "likelihood", "codec_calibrated": "codec"}  # with a frequency table; CoDeC's deltas calibrated


def detector_of(score: str) -> str:
    """The registered detector a score of detectors.json comes from (`_control`: the score calibrated against the
    control arm's model)."""
    column = score.removesuffix("_control")
    if column in DERIVED:
        return DERIVED[column]
    for name in DETECTORS.names():
        stage = DETECTORS[name]
        if column in stage.provides(stage.settings_type()):
            return name
    raise SystemExit(f"score {score!r}: no registered detector gives it; name its detector in DERIVED")


def scored(measured: dict) -> dict[str, list[str]]:
    """Detector -> its scores with an AUC of seen against unseen items on the arms (detectors.json), sorted."""
    found: dict[str, set[str]] = {}
    for row in measured["aucs"]:
        found.setdefault(detector_of(row["score"]), set()).add(row["score"])
    return {name: sorted(scores) for name, scores in sorted(found.items())}


def _rank(c: dict) -> tuple:
    """The rule's order (decision_rule._rank) among all candidates: the power's lower bound, then its rate."""
    power = c["power"]
    return (-c["power_lower"], -(power["flagged"] / power["tested"] if power["tested"] else 0.0))


def build(decision_rule: dict, round_four: dict, measured: dict) -> dict:
    """The packaged table from the three committed result files (`measured`: detectors.json)."""
    halves = [h for d in round_four["designs"].values() for c in d["confidences"].values() for h in c["halves"]]
    benchmarks = sorted({h["benchmark"] for h in halves})
    kinds = {h["arm"]: "contaminated" if h["role"] in ("clean", "contaminated") else h["role"] for h in halves}
    counts = ", ".join(
        f"{list(kinds.values()).count(k)} {k.replace('_', ' ')}" for k in ("control", *ROLES[2:], "contaminated")
    )
    arms = decision_rule["arms"]
    situations = []
    for name, entry in decision_rule["situations"].items():
        if "not_measured" in entry:
            situations.append(
                {"situation": name, "pick": None, "reason": entry["not_measured"], "measured": False, "candidates": []}
            )
            continue
        ranked = sorted((candidate(c, entry, round_four, measured) for c in entry["candidates"]), key=_rank)
        situations.append(
            {
                "situation": name,
                "pick": entry["choice"],
                "reason": entry["reason"],
                "measured": True,
                "candidates": ranked,
            }
        )
    return {
        "rule_commit": decision_rule["rule_commit"],
        "alpha": decision_rule["alpha"],
        "where": (
            f"round four (experiments/real_contamination): {len(arms)} {MODEL} models fine-tuned with and without the "
            f"items ({counts}), halves of {', '.join(benchmarks)}; the reference log-ratio and CoDeC on "
            f"{len(measured['arms'])} of them ({', '.join(measured['arms'])})"
        ),
        "arms": arms,
        "scored": scored(measured),
        "situations": situations,
    }


def _rate_text(rate: dict) -> str:
    if not rate["tested"]:
        return "not tested"
    return f"{rate['flagged']}/{rate['tested']} [{rate['low']:.2f}, {rate['high']:.2f}]"


def _split(counts: dict | None) -> str:
    """A power's split ("copa 4/10, gsm8k 9/10"); "-" where the halves behind it are not kept."""
    return ", ".join(f"{name} {k}/{n}" for name, (k, n) in counts.items()) if counts else "-"


def _decision(c: dict) -> str:
    if c["picked"]:
        return "**picked**"
    if c["oracle"]:
        return "oracle (never picked)"
    if not c["eligible"]:
        return "exceeds its level" if any(c["exceeds"].values()) else "level unknown (a role with no tested half)"
    return "eligible, no power" if not c["shows_power"] else "eligible"


def docs_table(table: dict) -> str:
    """The ranking per situation (docs/results.md): every candidate, strongest first by the power's lower bound,
    its level per role and its power with their 95% CIs, weak cells beside strong."""
    lines = [
        "| situation | rank | detector (design) | level: control | level: clean | level: format control | "
        "power [95% CI] | power lower 95% | power per benchmark | power per form of contamination | rule |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in table["situations"]:
        if not s["measured"]:
            lines.append(f"| {s['situation']} | - | not measured: {s['reason']} | | | | | | | | |")
            continue
        for rank, c in enumerate(s["candidates"], start=1):
            lines.append(
                f"| {s['situation']} | {rank} | {c['label']} | "
                + " | ".join(_rate_text(c["levels"][r]) for r in ROLES)
                + f" | {_rate_text(c['power'])} | {c['power_lower']:.2f} | {_split(c['power_by_benchmark'])} | "
                f"{_split(c['power_by_form'])} | {_decision(c)} |"
            )
    return "\n".join(lines) + f"\n\nMeasured on {table['where']}; rule: commit {table['rule_commit']}.\n"


def summary_table(table: dict) -> str:
    """The README's version: per situation, the rule's pick beside P(True) (the default before the rule) under the
    same design, each with its level per role and power; a situation without a measurement says why."""
    lines = [
        "| situation | evidence | level: control / clean / format control | power [95% CI] | power per benchmark | "
        "power per form of contamination |",
        "|---|---|---|---|---|---|",
    ]
    for s in table["situations"]:
        if not s["measured"]:
            lines.append(f"| {s['situation']} | not measured: {s['reason']} | | | | |")
            continue
        pick = next((c for c in s["candidates"] if c["picked"]), None)
        shown = [] if pick is None else [("rule's pick", pick)]
        same = [c for c in s["candidates"] if pick and c["confidence"] == "p_true" and c["design"] == pick["design"]]
        same = [c for c in same if c["reference"] == pick["reference"]] if pick else []
        shown += [("P(True), the former default", c) for c in same]
        for role, c in shown:
            lines.append(
                f"| {s['situation']} | {role}: {c['label']} ({_decision(c).strip('*')}) | "
                + " / ".join(_rate_text(c["levels"][r]) for r in ROLES)
                + f" | {_rate_text(c['power'])} | {_split(c['power_by_benchmark'])} | {_split(c['power_by_form'])} |"
            )
        if pick is None:
            lines.append(f"| {s['situation']} | nothing picked: {s['reason']} | | | | |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=pathlib.Path, default=HERE / "results")
    parser.add_argument("--out", type=pathlib.Path, default=PACKAGED)
    args = parser.parse_args(argv)
    loaded = [
        json.loads((args.results / name).read_text(encoding="utf-8"))
        for name in ("decision_rule.json", "round_four.json", "detectors.json")
    ]
    table = build(*loaded)
    args.out.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
    sys.stdout.write(docs_table(table))


if __name__ == "__main__":
    main()
