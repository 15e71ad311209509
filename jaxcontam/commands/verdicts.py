"""The verdict lines `jaxcontam audit` and `jaxcontam pacost` print at the end of a run, and the exit code a
pipeline gates on (`--fail-on`)."""

from __future__ import annotations

import typing
from typing import Literal

import click

from jaxcontam.detect.verdict import Outcome
from jaxcontam.report.formatting import blind_baseline_phrase, number, verdict_phrase
from jaxcontam.report.summary_schema import AuditSummary, RunEntry

FailOn = Literal["never", "contaminated", "untested"]
FAIL_ON: tuple[FailOn, ...] = typing.get_args(FailOn)
EXIT_CONTAMINATED = 4  # a headline verdict is contaminated (after the sweep's correction)
EXIT_UNTESTED = 5  # `--fail-on untested`: no headline verdict is contaminated, but one could not be tested


def ground_truth_line(run: RunEntry) -> str | None:
    """A run's signals against the known labels: each signal's AUC, the blind baseline's beside them; None without
    labels."""
    truth = run.ground_truth
    if truth is None:
        return None
    sizes = "/".join(str(truth.groups[name].n) for name in ("contaminated", "clean") if name in truth.groups)
    aucs = ", ".join(f"{signal} {number(auc)}" for signal, auc in truth.auc.items()) or "no scored signal"
    return f"  against the ground truth ({sizes} contaminated/clean items): AUC {aucs}; blind baseline " + (
        blind_baseline_phrase(truth.blind_baseline)
    )


def echo_verdicts(summary: AuditSummary, out) -> None:
    """One line per (model, benchmark): accuracy, then each registered detector's console phrase (its headline test
    and p) followed by its headline verdict as summary.json holds it (adjusted p and correction where the sweep
    decided; a test that could not run reads "no test: <reason>", never as a verdict), and with known labels a line
    of every signal's AUC with the blind baseline's; then each detector across the models' own lines; then the
    evidence the inputs allow and the strongest measured (`report.evidence`), the wall time per stage, the files."""
    from jaxcontam.detect.registry import DETECTORS, FAMILY_DETECTORS

    for run in summary.runs:
        accuracy = "acc -" if run.accuracy is None else f"acc {run.accuracy.acc:.3f}"  # None: a run without one
        parts = [f"{run.model} | {run.benchmark}:{run.split} ({run.n_items} items)", accuracy]
        verdicts = {verdict.detector: verdict for verdict in run.verdicts}
        for name, stage in DETECTORS.items():
            console = stage.view.console
            if name in run.results and console is not None:
                phrase, verdict = console(run.results[name]), verdicts.get(name)
                if verdict is not None and not (verdict.contaminated is None and verdict.label in phrase):
                    phrase += " " + verdict_phrase(verdict)
                parts.append(phrase)
        click.echo("  ".join(parts))
        truth = ground_truth_line(run)
        if truth is not None:
            click.echo(truth)
    for name, stage in FAMILY_DETECTORS.items():
        console = stage.view.console
        if name in summary.family and console is not None:
            for line in console(summary.family[name], summary.alpha):
                click.echo(line)
    if any(v.note for run in summary.runs for v in run.verdicts):
        click.echo(
            "note: PaCoST's authors' test is uncalibrated and flags clean models too (docs/results.md); "
            "--reference-model M makes the calibrated test the verdict"
        )
    if summary.evidence is not None:
        from jaxcontam.report.evidence import console_lines

        for line in console_lines(summary.evidence):
            click.echo(line)
    if summary.timings:
        from jaxcontam.stage_clock import format_table

        click.echo("wall time per stage (compile: jax's lowering and XLA compiling, taken out of the others):")
        click.echo(format_table(summary.timings))
    click.echo(f"report: {out}/report.html  items: {out}/items.parquet  summary: {out}/summary.json")


def gate_exit_code(summary: AuditSummary, fail_on: FailOn) -> int:
    """The exit code `--fail-on` asks for: 0, `EXIT_CONTAMINATED` when any headline verdict is contaminated
    ("contaminated" and "untested"), `EXIT_UNTESTED` when none is but one could not be tested ("untested")."""
    outcomes = {verdict.outcome for run in summary.runs for verdict in run.verdicts}
    if fail_on == "never":
        return 0
    if Outcome.CONTAMINATED in outcomes:
        return EXIT_CONTAMINATED
    if fail_on == "untested" and Outcome.NOT_TESTED in outcomes:
        return EXIT_UNTESTED
    return 0


def gate_message(summary: AuditSummary, code: int) -> str:
    """What failed the gate: the runs and tests behind `code`."""
    wanted = Outcome.CONTAMINATED if code == EXIT_CONTAMINATED else Outcome.NOT_TESTED
    found = [
        f"{run.model} | {run.benchmark}: {verdict.test} ({verdict.label})"
        for run in summary.runs
        for verdict in run.verdicts
        if verdict.outcome is wanted
    ]
    return f"--fail-on: {len(found)} headline verdict(s) {wanted.value}: " + "; ".join(found)
