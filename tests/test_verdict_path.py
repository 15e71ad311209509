"""The verdict a user reads is the one that holds, from the audit core through the sweep to summary.json, the console
and report.html: one level (the audit's alpha), three outcomes (contaminated / not detected / not tested, never a
silent pass), the calibrated PaCoST test as the headline when a reference exists, and `--fail-on` for pipelines.

PaCoST's records are made here (no model runs): the paired test, the sweep, the summary and the report are the real
ones, so the p-values are known before the verdicts are read."""

import json
import math
from pathlib import Path

import pytest
import scipy.stats
from click.testing import CliRunner

from jaxcontam.audit.config import AuditConfig, BenchmarkEntry, ModelEntry
from jaxcontam.audit.run import ItemRow, ModelRun, write_outputs
from jaxcontam.commands.verdicts import (
    EXIT_CONTAMINATED,
    EXIT_UNTESTED,
    echo_verdicts,
    gate_exit_code,
)
from jaxcontam.data.item import Benchmark, Item
from jaxcontam.detect.audit_core import AuditSettings, audit_benchmark
from jaxcontam.detect.pacost.settings import PacostSettings
from jaxcontam.detect.registry import DETECTORS
from jaxcontam.detect.stage import AuditTarget
from jaxcontam.report.summary_schema import SCHEMA_VERSION, read_summary
from jaxcontam.stage_clock import StageClock

N = 30


def gaps_with_pvalue(low: float, high: float) -> list[float]:
    """Per-item original-minus-rephrased gaps whose one-sided paired t-test p lies in (low, high)."""
    for positives in range(N // 2, N):
        gaps = [0.1] * positives + [-0.1] * (N - positives)
        p = scipy.stats.ttest_1samp(gaps, 0.0, alternative="greater").pvalue
        if low < p < high:
            return gaps
    raise AssertionError("no split of +-0.1 gaps gives a p-value in range")


def records(gaps: list[float] | None, settings: PacostSettings) -> list[dict]:
    """PaCoST records of N items: the chosen confidence 0.5 + gap on the original, 0.5 on the rephrasing (None: the
    judge said neither yes nor no on any item, so no pair can be tested); every other column PaCoST declares NaN."""
    confidence = settings.confidence
    work = DETECTORS["pacost"].per_item
    assert work is not None
    others = dict.fromkeys(work.writes(settings), math.nan) | {"chat": False}
    rows = []
    for i in range(N):
        original = 0.0 if gaps is None else 0.5 + gaps[i]
        rephrased = 0.0 if gaps is None else 0.5
        rows.append(
            others
            | {
                "id": f"q{i}",
                "rephrase": f"rephrased {i}",
                "answer_original": "yes",
                "answer_rephrased": "yes",
                "correct_original": float(i % 2),
                "correct_norm_original": None,
                f"{confidence}_original": original,
                f"{confidence}_rephrased": rephrased,
            }
        )
    return rows


def benchmark(name: str) -> Benchmark:
    items = [Item(f"q{i}", name, f"question {i}?", 0, choices=("yes", "no")) for i in range(N)]
    return Benchmark(name=name, split="test", items=tuple(items))


def audit(tmp_path, runs_records, *, alpha, preset="jaxcontam", reference=None, capsys=None):
    """One model's audit of one benchmark per entry of `runs_records` (PaCoST alone, its records given), written
    with the real sweep, summary.json and report at `alpha`; returns (summary.json, report.html, console)."""
    settings = PacostSettings(preset=preset)
    config = AuditConfig(
        models=(ModelEntry("m", "m"),),
        benchmarks=tuple(BenchmarkEntry(f"b{i}", "test") for i in range(len(runs_records))),
        out=str(tmp_path),
        alpha=alpha,
        detectors={"pacost": settings},
        stages=("pacost",),
    )
    runs, items = [], []
    for i, gaps in enumerate(runs_records):
        bench = benchmark(f"b{i}")
        made = records(gaps, settings)
        target = AuditTarget(bench, [r["rephrase"] for r in made])
        if reference is not None:
            target = AuditTarget(bench, target.rephrasings, reference=("ref-model", records(reference, settings)))
        result = audit_benchmark(
            None,
            target,
            AuditSettings(detectors=("pacost",), detector_settings={"pacost": settings}),
            run_stage=lambda name, key, stage_items, compute, made=made: made,
        )
        runs.append(ModelRun("m", result, bench))
        items += [
            ItemRow("m", bench.name, "test", item.id, item.question, "yes", "given", None, row)
            for item, row in zip(bench, result.rows)
        ]
    with StageClock() as clock:
        summary = write_outputs(config, runs, items, clock)
    echo_verdicts(summary, tmp_path)
    console = capsys.readouterr().out if capsys is not None else ""
    return (
        json.loads((tmp_path / "summary.json").read_text()),
        (tmp_path / "report.html").read_text(encoding="utf-8"),
        console,
    )


def test_alpha_001_flags_nothing_anywhere_when_the_paper_presets_p_lies_between_001_and_005(tmp_path, capsys):
    """The paper preset keeps its raw, uncorrected verdict: at the audit's alpha = 0.01, p = 0.01-0.05 is not
    contaminated in summary.json, the console or the report (PaCoST once had its own alpha of 0.05)."""
    gaps = gaps_with_pvalue(0.01, 0.05)
    summary, page, console = audit(tmp_path, [gaps], alpha=0.01, preset="paper", capsys=capsys)
    pacost = summary["runs"][0]["pacost"]
    assert 0.01 < pacost["pvalue"] < 0.05 and pacost["test"] == "t" and pacost["correction"] == "none"
    assert summary["alpha"] == 0.01 and not {"alpha", "contaminated"} & set(pacost)  # the level, stored once
    assert "alpha" not in summary["settings"]
    assert [v["outcome"] for v in summary["runs"][0]["verdicts"]] == ["not detected"]
    assert "CONTAMINATED" not in console and "not detected" in console
    assert "badge bad" not in page and "badge ok" in page and "α = 0.01" in page
    # the same p at the default level is flagged: the level, not the data, decided
    summary, _, _ = audit(tmp_path / "at-005", [gaps], alpha=0.05, preset="paper")
    assert summary["runs"][0]["verdicts"][0]["outcome"] == "contaminated"


def test_a_test_that_could_not_run_is_not_tested_everywhere_and_leaves_the_sweep(tmp_path, capsys):
    """The published judge silent on every item: PaCoST stores contaminated null (never false), the sweep leaves the
    run out of its family and says why, the console and the report say "no test: <reason>"."""
    gaps = gaps_with_pvalue(0.0, 0.001)
    summary, page, console = audit(tmp_path, [None, gaps], alpha=0.05, preset="paper", capsys=capsys)
    silent, tested = summary["runs"]
    assert summary["schema_version"] == SCHEMA_VERSION == 3
    assert silent["pacost"]["pvalue"] is None and silent["pacost"]["status"].startswith("no test: ")
    assert silent["verdicts"][0]["outcome"] == "not tested" and silent["verdicts"][0]["contaminated"] is None
    assert tested["verdicts"][0]["outcome"] == "contaminated"
    assert summary["sweep"]["labels"] == ["m | b1:test"]
    assert list(summary["sweep"]["untested"]) == ["m | b0:test"]
    assert "said neither yes nor no" in summary["sweep"]["untested"]["m | b0:test"]
    first = console.splitlines()[0]
    assert "no test: " in first and "CONTAMINATED" not in first and "not detected" not in first
    assert "badge none" in page and "Left out of the family" in page
    read = read_summary(tmp_path)  # the typed reader agrees
    assert read.runs[0].pacost is not None and not read.runs[0].pacost.headline_status.ran
    assert read.runs[0].verdicts[0].contaminated is None
    assert gate_exit_code(read, "contaminated") == EXIT_CONTAMINATED


def test_with_a_reference_the_calibrated_test_is_the_headline(tmp_path, capsys):
    """The audited model as its own reference: the authors' test flags it (p < 0.001), the calibrated test finds no
    gap beyond the reference's (p = 1) and is the verdict in summary.json, the console, the report and the sweep."""
    gaps = gaps_with_pvalue(0.0, 0.001)
    summary, page, console = audit(tmp_path, [gaps], alpha=0.05, reference=gaps, capsys=capsys)
    run = summary["runs"][0]
    pacost, (headline,) = run["pacost"], run["verdicts"]
    assert pacost["pvalue"] < 0.001  # the authors' test, shown beside
    assert pacost["calibrated"]["pvalue"] == 1.0 and "contaminated" not in pacost["calibrated"]
    assert headline["test"].endswith("calibrated against ref-model") and headline["outcome"] == "not detected"
    assert headline["note"] is None and math.isclose(headline["pvalue_adjusted"], 1.0)
    assert summary["sweep"]["tests"] == [headline["test"]] and summary["sweep"]["pvalues"] == [1.0]
    assert "calibrated against ref-model" in console and "not detected" in console and "CONTAMINATED" not in console
    assert "authors' test p=" in console
    assert "badge bad" not in page.split("<h2>Multiple testing")[0]  # the verdict table's headline
    assert "authors&#x27; test (for comparison)" in page


def test_without_a_reference_the_headline_says_uncalibrated_and_how_often_it_flags_clean_models(tmp_path, capsys):
    gaps = gaps_with_pvalue(0.0, 0.001)
    summary, page, console = audit(tmp_path, [gaps], alpha=0.05, capsys=capsys)
    (headline,) = summary["runs"][0]["verdicts"]
    assert "uncalibrated" in headline["test"] and "--reference-model" in headline["note"]
    assert "--reference-model" in console and "--reference-model" in page and "5 of 24 halves" in page


def test_the_uncalibrated_note_states_the_committed_real_model_result():
    """The note's counts are the control arm's halves (4 confidences x 3 benchmarks x 2 halves) flagged at p < 0.05
    by the authors' test and by the calibrated one, in the committed crossover results."""
    from jaxcontam.detect.pacost.results import UNCALIBRATED_NOTE

    results = Path(__file__).resolve().parents[1] / "experiments/real_contamination/results/crossover.json"
    rows = [r for r in json.loads(results.read_text())["calibrated_pacost"]["rows"] if r["arm"] == "control"]
    authors = sum(r["uncalibrated_p"] < 0.05 for r in rows)
    calibrated = sum(r["calibrated_p"] < 0.05 for r in rows)
    assert f"flagged {authors} of {len(rows)} halves at p < 0.05 where {0.05 * len(rows):.1f} are expected" in (
        UNCALIBRATED_NOTE
    )
    assert f"the calibrated test {calibrated} of {len(rows)}" in UNCALIBRATED_NOTE


def test_secondary_confidences_carry_no_verdict_badge(tmp_path):
    """Every measured confidence besides the headline one shows p and effect size, labelled exploratory."""
    gaps = gaps_with_pvalue(0.0, 0.001)
    settings = PacostSettings()
    made = records(gaps, settings)
    for row, gap in zip(made, gaps):  # a second confidence, strongly "significant" on its own
        row |= {"answer_logprob_original": -1.0 + gap, "answer_logprob_rephrased": -1.0}
    target = AuditTarget(benchmark("b"), [r["rephrase"] for r in made])
    result = audit_benchmark(
        None, target, AuditSettings(detectors=("pacost",)), run_stage=lambda *args, made=made: made
    )
    assert result.pacost is not None and result.pacost.variants["answer_logprob"].pvalue < 0.001
    from jaxcontam.report.sections import pacost_section

    exploratory = pacost_section(result.pacost, {}).split("exploratory")[1]
    assert "badge" not in exploratory and "answer_logprob" in exploratory
    assert settings.confidence != "answer_logprob"  # the headline is the default confidence, answer_logprob beside it


@pytest.mark.parametrize(
    ("outcomes", "fail_on", "code"),
    [
        ([True, False], "contaminated", EXIT_CONTAMINATED),
        ([False, None], "contaminated", 0),
        ([False, None], "untested", EXIT_UNTESTED),
        ([True, None], "untested", EXIT_CONTAMINATED),
        ([False, False], "untested", 0),
        ([True, None], "never", 0),
    ],
)
def test_fail_on_exit_codes(outcomes, fail_on, code):
    from jaxcontam.detect.verdict import Verdict
    from jaxcontam.report.summary_schema import AuditSummary, RunEntry

    verdicts = tuple(
        Verdict("pacost", "t", flag, 0.01, reason=None if flag is not None else "no pairs") for flag in outcomes
    )
    summary = AuditSummary(2, "0", 0.05, "holm", {}, (RunEntry("m", "b", verdicts=verdicts),), None)
    assert gate_exit_code(summary, fail_on) == code


def test_the_alpha_and_fail_on_options_reach_the_command(monkeypatch):
    """`--alpha` sets the audit's one level; `--fail-on` turns the summary's headline verdicts into the exit code."""
    import jaxcontam.audit.run
    from jaxcontam.commands.audit import audit
    from jaxcontam.detect.verdict import Verdict
    from jaxcontam.report.summary_schema import AuditSummary, RunEntry

    seen = {}

    def fake_run_audit(config):
        seen["alpha"] = config.alpha
        untested = Verdict("pacost", "t", None, math.nan, reason="no pairs")
        return AuditSummary(2, "0", config.alpha, "holm", {}, (RunEntry("m", "b", verdicts=(untested,)),), None)

    monkeypatch.setattr(jaxcontam.audit.run, "run_audit", fake_run_audit)
    result = CliRunner().invoke(audit, ["--alpha", "0.01", "--fail-on", "untested"])
    assert seen["alpha"] == 0.01 and result.exit_code == EXIT_UNTESTED
    assert "--fail-on: 1 headline verdict(s) not tested: m | b: t (no test: no pairs)" in result.output
    assert CliRunner().invoke(audit, ["--fail-on", "contaminated"]).exit_code == 0
    assert CliRunner().invoke(audit, ["--alpha", "1.5"]).exit_code == 2  # click refuses a level outside (0, 1)
