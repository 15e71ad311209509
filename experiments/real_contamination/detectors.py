"""Issue 62's detectors on the models contaminated on purpose: every per-item detector of the audit on each arm's
model, the blind baseline beside every AUC, and the per-half tests fed to the decision rule committed before these
runs (`jaxcontam.stats.decision_rule`, e5db0f0).

`run` audits each arm whose model exists (run.py retrains a missing one: `run.py --arms A --skip-audit`) into
`<arm>/audit_detectors/`, with PaCoST left out (its audits are the arm's `audit_jaxcontam` and `audit_paper`) and
these choices, fixed here before any arm ran:
- the likelihood family (mean log-prob, zlib, Min-K%, Min-K%++, Gap-K%, DC-PDD) from one pass; DC-PDD's token
  frequencies from `FREQUENCIES`, built with `jaxcontam freq` over the MIMIR Pile non-members of
  `../shared/data/mimir_pile_nonmembers` (4.77M SmolLM2 tokens; none of the audited items or the arms' training text);
- the reference model of the reference log-ratio and of calibrated CoDeC: the base GGUF the arms were fine-tuned
  from (an oracle in the rule's terms, as round four's `base_model` design: assessed, never picked);
- ReCaLL with the bundled non-member prefix, CoDeC with 3 in-context items, TS-Guessing on the multiple-choice
  benchmarks (COPA, MMLU), the blind baseline: the library's defaults;
- CDD and GradNorm (L-infinity norm in float32, the library's default) in an audit of their own (`run --costly`,
  into `<arm>/audit_costly/`), only on `COSTLY_ARMS`: CDD's samples (50 of up to 128 tokens per item: 45 min for
  GSM8K's 68 items, 8 for COPA's, 16 for MMLU's on verbatim_x1, 2026-12-03) and GradNorm's backward pass per item
  (873 s for GSM8K's 68 items on the loaded 2 cores, four times the likelihood pass) are the costliest work, so they
  run after every other detector has run on every arm.

`report` reads every arm's audit_detectors/items.parquet and writes detectors.json / detectors.md:
- per dose (x1, x4) and benchmark, each score's AUC of seen against unseen items averaged over the two draws (the arm
  and its twin; `crossover.balanced_auc`, 95% CI resampling items, the same draw in both models), or the one draw an
  arm without its twin has; the control and format-control arms' AUC of the drawn half against the other beside
  them; the blind baseline's AUC on the same halves (`blind_baseline.py`, model-free) in the same rows;
- the per-half tests (reference log-ratio's calibrated sign-flip test, CoDeC's sign test and its calibrated test):
  flagged halves per role with the rule's item-cluster intervals, and the rule's assessment of each. The calibrated
  tests run against two references (`REFERENCES`): the base GGUF, each audit's own reference model (an oracle), and
  the control arm's model, an auditor's reference (round four's `control_reference`), derived from the control
  arm's own audited columns of the same items (`with_reference`: exact, no model runs); under it the control
  arm is the reference and its data-order seeds (`CONTROL_ARMS`) give the control halves.

    python -m experiments.real_contamination.detectors run [--arms control,verbatim_x1] [--results DIR]
    python -m experiments.real_contamination.detectors report [--results DIR] [--out DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pathlib
import sys
import typing

import numpy as np

from experiments.real_contamination import blind_baseline
from experiments.real_contamination.crossover import balanced_auc, load_arm
from experiments.real_contamination.design import ARM_ORDER, BENCHMARKS, DATA_SEEDS, DOSES, FORMAT_ARM, REPLICATE_SEEDS
from jaxcontam.stats import decision_rule as rule

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SHARED = ROOT.parent / "shared" / "data"
GGUF = SHARED / "smollm2_135m_instruct" / "SmolLM2-135M-Instruct.Q4_1.gguf"
PARAPHRASES = {"gsm8k": "gsm8k_rephrase", "copa": "xcopa_backtranslation", "mmlu": "mmlu_rephrase"}
AUDIT, COSTLY_AUDIT = "audit_detectors", "audit_costly"
FREQUENCIES = HERE / "results" / "smollm2_pile_frequencies.npz"
COSTLY_ARMS = ("control", FORMAT_ARM, "verbatim_x1", "verbatim_x4")
COSTLY_SCORES = ("cdd_", "gradnorm")  # the costly audit's columns (prefixes)
CDD_SETTINGS = {"samples": 50, "max_new_tokens": 128}
CONTROL_ARMS = ("control", *(f"control_seed{seed}" for seed in REPLICATE_SEEDS))  # the control and its data orders
ANALYSED = (*ARM_ORDER, *DATA_SEEDS)  # the report's arms, in its order: the data-order seeds of the control and x1 last
NULL_ARMS = (*CONTROL_ARMS, FORMAT_ARM)  # nothing audited was trained on: the AUC of the drawn half against the other
REFERENCE = "base GGUF (the arms' starting weights)"
# reference design -> (the arm whose model is the reference, None: the audit's own, the base GGUF; its name in a
# candidate's label); the base model is an oracle (no auditor has the exact starting weights)
REFERENCES = {"base_model": (None, "the base model"), "control_reference": ("control", "the control arm's model")}
ORACLE_DESIGNS = {"base_model"}

# per-item score -> does a higher score mean seen? (the audit's columns; CoDeC's calibrated score derived below)
SCORES = {
    "mean_logprob": True,
    "zlib_ratio": False,
    "min_k": True,
    "min_k_plus_plus": True,
    "gap_k": True,
    "dc_pdd": True,
    "reference_log_ratio": True,
    "reference_log_ratio_control": True,  # against the control arm's model (`with_control_reference`)
    "recall": True,
    "codec_delta": False,
    "codec_calibrated": True,
    "codec_calibrated_control": True,
    "gradnorm": False,
    "cdd_peakedness": True,
    "ts_exact_match": True,
}


def audit_toml(arm_folder: pathlib.Path, mmlu: pathlib.Path, items: int, costly: bool) -> str:
    """The arm's detector audit as a config file, its paths relative to the file's folder (the arm's), so the
    committed file names no machine path; `run_arm` gives the audit its output folder."""

    def at(path: pathlib.Path) -> str:
        return os.path.relpath(path.resolve(), arm_folder.resolve())

    lines = []
    lines += [] if costly else [f'reference_model = "{at(GGUF)}"']  # CDD and GradNorm read no reference model
    lines += ["[[model]]", f'path = "{at(arm_folder / "model")}"', f'name = "{arm_folder.name}"']
    for name in BENCHMARKS:
        lines += [
            "[[benchmark]]",
            f'name = "{name}"',
            'split = "test"',
            f'path = "{at(mmlu if name == "mmlu" else SHARED)}"',
            f"limit = {items}",
            f'paraphrases = "{PARAPHRASES[name]}"',
            f'ground_truth = "{at(arm_folder / "ground_truth.jsonl")}"',
        ]
    if costly:
        lines += ["[cdd]", *(f"{key} = {value}" for key, value in CDD_SETTINGS.items()), "[gradnorm]"]
    else:
        lines += ["[likelihood]", f'frequency_table = "{at(arm_folder.parent.parent / FREQUENCIES.name)}"']
        lines += ["[reference_log_ratio]", "[recall]", "[codec]", "[ts_guessing]", "[blind_baseline]"]
    return "\n".join(lines) + "\n"


def run_arm(results: pathlib.Path, arm: str, items: int, costly: bool = False) -> bool:
    """Audit one arm's model with every per-item detector but CDD and GradNorm (`costly`: with those two alone); False
    when its model is not there (retrain it first)."""
    from jaxcontam.audit.config import load_config
    from jaxcontam.audit.run import run_audit

    folder = results / "arms" / arm
    if not (folder / "model").is_dir():
        print(f"{arm}: no model/ (retrain: python -m experiments.real_contamination.run --arms {arm} --skip-audit)")
        return False
    name = COSTLY_AUDIT if costly else AUDIT
    if (folder / name / "items.parquet").exists():  # written once the audit is complete (committed; state/ is not)
        return True
    config_file = folder / f"{name}.toml"
    config_file.write_text(audit_toml(folder, results / "mmlu_subjects", items, costly))
    config = load_config(config_file)
    config = dataclasses.replace(
        config,
        out=str(folder / name),
        stages=tuple(s for s in config.stages if s not in ("pacost", "likelihood"))
        if costly
        else tuple(s for s in config.stages if s != "pacost"),
    )
    run_audit(config)
    return True


# ---------------------------------------------------------------- analysis


def load(folder: pathlib.Path):
    """The arm's detector audit items (by id, with `drawn` and `seen`), its costly audit's columns and CoDeC's
    calibrated score added."""
    items = load_arm(folder, AUDIT)
    if (folder / COSTLY_AUDIT / "items.parquet").exists():
        costly = load_arm(folder, COSTLY_AUDIT)
        items = items.join(costly[[c for c in costly.columns if c.startswith(COSTLY_SCORES)]])
    if "codec_reference_delta" in items:
        items["codec_calibrated"] = items["codec_reference_delta"] - items["codec_delta"]
    if "ts_exact_match" in items:
        items["ts_exact_match"] = items["ts_exact_match"].astype(float)
    return items


def _estimate(estimate) -> dict:
    return {"auc": estimate.value, "ci95": list(estimate.ci95), "n": estimate.n}


def _scored(items, score: str) -> bool:
    return items is not None and score in items and bool(np.isfinite(items[score].to_numpy(float)).any())


def auc_rows(arms: dict) -> list[dict]:
    """Per arm group (a dose's two draws, or one arm), benchmark and score: the AUC with its CI."""
    rows = []
    groups = [(dose, pair) for dose, pair in DOSES.items()]
    groups += [(arm, (arm, None)) for arm in ANALYSED if arm not in {a for pair in DOSES.values() for a in pair}]
    for label, (name, twin) in groups:
        if name not in arms:
            continue
        paired = twin is not None and twin in arms
        for benchmark in BENCHMARKS:
            a = arms[name][arms[name]["benchmark"] == benchmark]
            if name in NULL_ARMS:  # nothing seen: the drawn half plays the contaminated one
                a = a.assign(seen=a["drawn"])
            b = arms[twin][arms[twin]["benchmark"] == benchmark] if paired else None
            for score, higher in SCORES.items():
                if not _scored(a, score):
                    continue
                both = paired and _scored(b, score)  # a costly audit runs on one arm of a dose, not its twin
                estimate = balanced_auc(a, b if both else a, score, higher)
                draws = "both draws" if both else "drawn half" if name in NULL_ARMS else "one draw"
                rows.append(
                    {
                        "group": label,
                        "arms": [name, twin] if both else [name],
                        "draws": draws,
                        "benchmark": benchmark,
                        "score": score,
                        **_estimate(estimate),
                    }
                )
    return rows


def blind_rows(results: pathlib.Path, permutations: int = 999) -> dict[str, dict]:
    """Benchmark -> the blind baseline's AUC per draw and their mean (the halves every arm audits)."""
    found: dict[str, dict] = {}
    for row in blind_baseline.analyse(results, permutations)["rows"]:
        entry = found.setdefault(row["benchmark"], {})
        entry[row["draw"]] = {"auc": row["auc"], "ci95": row["ci95"], "pvalue": row["pvalue"]}
    for entry in found.values():
        entry["mean"] = float(np.mean([entry[d]["auc"] for d in blind_baseline.DRAWS]))
    return found


def _role(arm: str, seen: bool) -> str:
    if arm in CONTROL_ARMS:
        return "control"
    if arm == FORMAT_ARM:
        return "format_control"
    return "contaminated" if seen else "clean"


def with_reference(items, reference):
    """The arm's items as its audit would have scored them with the `reference` arm's model as its reference model:
    the reference log-ratio's reference columns and CoDeC's reference delta are the reference arm's own audited
    columns of the same items. Every arm audits the same items with the same texts and the same CoDeC contexts (its
    seed and the item's id draw them), which is checked, so the substitution is exact."""
    ref = reference.reindex(items.index)
    if "codec_context_tokens" in items and not np.array_equal(
        items["codec_context_tokens"].to_numpy(), ref["codec_context_tokens"].to_numpy()
    ):
        raise SystemExit("CoDeC's contexts differ between the arm and its reference arm: they audited other items")
    items = items.copy()
    for side in ("original", "rephrased"):
        items[f"reference_log_ratio_reference_{side}"] = ref[f"reference_log_ratio_audited_{side}"]
    items["reference_log_ratio"] = (
        items["reference_log_ratio_audited_original"] - items["reference_log_ratio_reference_original"]
    )
    if "codec_delta" in items:
        items["codec_reference_delta"] = ref["codec_delta"]
        items["codec_calibrated"] = items["codec_reference_delta"] - items["codec_delta"]
    return items


def by_design(arms: dict) -> dict[str, dict]:
    """Each reference design's audited arms as scored against its reference (`with_reference`, once per arm); the
    reference arm is left out of its own design, and a design whose reference arm was not audited is absent."""
    found = {}
    for design, (reference_arm, _) in REFERENCES.items():
        if reference_arm is None:
            found[design] = arms
        elif reference_arm in arms:
            found[design] = {
                arm: with_reference(items, arms[reference_arm]) if "reference_log_ratio" in items else items
                for arm, items in arms.items()
                if arm != reference_arm
            }
    return found


def with_control_reference(arms: dict, control_scored: dict | None) -> dict:
    """Every arm but the control with the reference scores against the control arm's model (`control_scored`: the
    control-reference design's arms) beside the base's (`reference_log_ratio_control`, `codec_calibrated_control`),
    for the AUC tables; unchanged without the control."""
    if control_scored is None:
        return arms
    found = {}
    for arm, items in arms.items():
        scored = control_scored.get(arm)
        if scored is None or "reference_log_ratio" not in items:
            found[arm] = items
            continue
        extra = {"reference_log_ratio_control": scored["reference_log_ratio"]}
        if "codec_calibrated" in scored:
            extra["codec_calibrated_control"] = scored["codec_calibrated"]
        found[arm] = items.assign(**extra)
    return found


def half_tests(arm: str, items, design: str = "base_model", resamples: int = 9999) -> list[dict]:
    """Each half's p-values under the tests the detectors give against the design's reference (the model-alone
    sign test with the base design only: it reads no reference), with its role and item set."""
    from jaxcontam.detect.codec import codec_result
    from jaxcontam.detect.reference_log_ratio import reference_log_ratio_result

    label = REFERENCES[design][1]
    found = []
    for benchmark in BENCHMARKS:
        group = items[items["benchmark"] == benchmark]
        for drawn_half in (True, False):
            half = group[group["drawn"] == drawn_half]
            if half.empty:
                continue
            seen = bool(half["seen"].all())
            rows = half.to_dict("records")
            tests = {}
            if "reference_log_ratio" in half:
                ratio = reference_log_ratio_result(rows, label, seed=0, resamples=resamples)
                tests["reference_log_ratio"] = ratio.pvalue if ratio.status.tested else None
            if "codec_delta" in half:
                codec = codec_result(rows, label if "codec_reference_delta" in half else None, 0, resamples)
                if design == "base_model":
                    tests["codec_sign"] = codec.pvalue if codec.status.tested else None
                if codec.calibrated is not None:
                    tests["codec_calibrated"] = codec.calibrated.pvalue if codec.calibrated.status.tested else None
            found.append(
                {
                    "arm": arm,
                    "design": design,
                    "benchmark": benchmark,
                    "half": "drawn" if drawn_half else "other",
                    "role": _role(arm, seen),
                    "cluster": f"{benchmark}/{'drawn' if drawn_half else 'other'}",
                    "pvalues": tests,
                }
            )
    return found


def design_halves(scored: dict[str, dict], resamples: int = 9999) -> list[dict]:
    """Every audited arm's halves under each reference design (`by_design`'s arms)."""
    return [
        half
        for design, arms in scored.items()
        for arm, items in arms.items()
        for half in half_tests(arm, items, design, resamples)
    ]


class HalfTest(typing.NamedTuple):
    """A per-half test: the registered detector that gives it, its situation, its name (the reference's to fill in)."""

    detector: str
    situation: str
    name: str


TESTS = {
    "reference_log_ratio": HalfTest(
        "reference_log_ratio", "reference_model", "reference log-ratio, sign-flip test against {}"
    ),
    "codec_calibrated": HalfTest("codec", "reference_model", "CoDeC, calibrated against {}"),
    "codec_sign": HalfTest("codec", "model_alone", "CoDeC, the sign test (model alone)"),
}


def test_name(test: str, design: str = "base_model") -> str:
    return TESTS[test].name.format(REFERENCES[design][1])


def rule_candidates(halves: list[dict]) -> list[rule.Candidate]:
    """One candidate per test and reference design that some half ran (None: it ran and could not test the half)."""
    candidates = []
    for design in REFERENCES:
        for test, half_test in TESTS.items():
            outcomes = tuple(
                rule.HalfOutcome(
                    h["role"], None if (p := h["pvalues"][test]) is None else p < rule.ALPHA, h["cluster"], h["arm"]
                )
                for h in halves
                if h["design"] == design and test in h["pvalues"]
            )
            if outcomes:
                oracle = design in ORACLE_DESIGNS and half_test.situation == "reference_model"
                candidates.append(rule.Candidate(test_name(test, design), half_test.situation, outcomes, oracle=oracle))
    return candidates


def _share(s: rule.Share) -> dict:
    interval = s.confidence_interval(0.95)
    return {"flagged": s.flagged, "tested": s.tested, "total": s.total, "ci95": [interval.low, interval.high]}


def analyse(results: pathlib.Path, permutations: int = 999, resamples: int = 9999) -> dict:
    """Every audited arm's AUCs, the blind baseline's (`permutations` for its p-value and interval), the per-half
    tests (`resamples` for their permutation p-values) and the rule's assessment of each."""
    folders = {arm: results / "arms" / arm for arm in ANALYSED}
    audited = {arm: load(f) for arm, f in folders.items() if (f / AUDIT / "items.parquet").exists()}
    scored = by_design(audited)
    arms = with_control_reference(audited, scored.get("control_reference"))
    halves = design_halves(scored, resamples)
    assessments = []
    for candidate in rule_candidates(halves):
        a = rule.assess(candidate)
        assessments.append(
            {
                "detector": a.detector,
                "situation": candidate.situation,
                "oracle": a.oracle,
                "levels": {c.role: {**_share(c.share), "exceeds": c.exceeds} for c in a.levels},
                "power": _share(a.power),
                "power_lower95": a.power_lower,
                "eligible": a.eligible,
                "shows_power": a.shows_power,
                "reasons": list(a.reasons),
            }
        )
    return {
        "arms": sorted(arms),
        "missing": [a for a in ANALYSED if a not in arms],
        "reference": REFERENCE,
        "references": {design: label for design, (_, label) in REFERENCES.items()},
        "aucs": auc_rows(arms),
        "blind": blind_rows(results, permutations),
        "halves": halves,
        "tests": assessments,
    }


def _ci(row: dict) -> str:
    low, high = row["ci95"]
    return f"{row['auc']:.2f} [{low:.2f}, {high:.2f}]"


def _reason(reason: str) -> str:
    """A rule's reason without the "detector (situation): " its table row already names."""
    return reason.split("): ", 1)[-1]


def _verdict(test: dict) -> str:
    """The rule's word on a candidate: it qualifies (level held, power shown, no oracle), or why not."""
    if test["eligible"] and test["shows_power"] and not test["oracle"]:
        return "qualifies"
    return "; ".join(map(_reason, test["reasons"]))


def markdown(report: dict) -> str:
    lines = [
        "# Every detector on the arms (issue 62, item 5)",
        "",
        f"Arms audited: {', '.join(report['arms'])}. Not yet audited (model not retrained in time): "
        f"{', '.join(report['missing']) or 'none'}. Reference models of the per-half tests: the "
        f"{report['reference']}, an oracle, and the control arm's model (an auditor's reference: the base "
        "fine-tuned on the same general text without the items; the control's data-order seeds are then its control "
        "halves).",
        "",
        "## AUC of seen against unseen items, blind baseline beside",
        "",
        "Doses: averaged over the two draws where both twins ran, else the one draw; control and format "
        "control: the drawn half against the other (nothing audited was trained on). 95% CIs resample items.",
        "",
    ]
    groups = list(dict.fromkeys(r["group"] for r in report["aucs"]))
    for group in groups:
        rows = [r for r in report["aucs"] if r["group"] == group]
        lines += [
            f"**{group}** ({rows[0]['draws']}: {', '.join(rows[0]['arms'])})",
            "",
            "| score | " + " | ".join(BENCHMARKS) + " |",
            "|---|" + "---|" * len(BENCHMARKS),
        ]
        for score in SCORES:
            scored = [r for r in rows if r["score"] == score]
            cells = {r["benchmark"]: _ci(r) for r in scored}
            if cells:
                label = score
                if scored[0]["arms"] != rows[0]["arms"]:  # fewer draws than the group's (the costly audit's scores)
                    label += f" ({scored[0]['draws']}: {', '.join(scored[0]['arms'])})"
                lines.append(f"| {label} | " + " | ".join(cells.get(b, "not run") for b in BENCHMARKS) + " |")
        blind = report["blind"]
        lines.append(
            "| blind baseline (no model) | "
            + " | ".join(
                f"{blind[b]['mean']:.2f} (draws {blind[b]['drawn']['auc']:.2f} / {blind[b]['other']['auc']:.2f})"
                for b in BENCHMARKS
            )
            + " |"
        )
        lines.append("")
    lines += [
        "## Per-half tests and the decision rule",
        "",
        "| test | situation | control | format control | clean | contaminated (power) | the rule |",
        "|---|---|---|---|---|---|---|",
    ]
    for t in report["tests"]:

        def cell(share):
            if not share["total"]:
                return "no arm audited"
            if not share["tested"]:
                return f"not tested (0 of {share['total']} halves)"
            return f"{share['flagged']}/{share['tested']} [{share['ci95'][0]:.2f}, {share['ci95'][1]:.2f}]"

        levels = t["levels"]
        lines.append(
            f"| {t['detector']} | {t['situation']}{' (oracle)' if t['oracle'] else ''} | "
            + " | ".join(
                cell(levels[r]) if r in levels else "not tested" for r in ("control", "format_control", "clean")
            )
            + f" | {cell(t['power'])} | {_verdict(t)} |"
        )
    return "\n".join(lines) + "\n"


def docs_table(report: dict) -> str:
    """docs/results.md's block: the report's Markdown without its title."""
    return markdown(report).split("\n", 2)[2]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("run", "report"))
    parser.add_argument("--results", type=pathlib.Path, default=HERE / "results")
    parser.add_argument("--arms", default=",".join(ANALYSED))
    parser.add_argument("--items", type=int, default=68, help="items per benchmark (run.py's)")
    parser.add_argument(
        "--costly", action="store_true", help=f"run: the CDD and GradNorm audits of {', '.join(COSTLY_ARMS)}"
    )
    parser.add_argument("--out", type=pathlib.Path, default=HERE / "results")
    args = parser.parse_args(argv)
    if args.command == "run":
        for arm in args.arms.split(","):
            if not args.costly or arm in COSTLY_ARMS:
                run_arm(args.results, arm, args.items, args.costly)
        return
    report = analyse(args.results)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "detectors.json").write_text(json.dumps(report, indent=2) + "\n")
    text = markdown(report)
    (args.out / "detectors.md").write_text(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
