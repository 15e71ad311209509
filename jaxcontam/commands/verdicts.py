"""The verdict lines `jaxcontam audit` and `jaxcontam pacost` print at the end of a run, and the exit code a
pipeline gates on (`--fail-on`)."""

from __future__ import annotations

import typing
from typing import Literal

import click

from jaxcontam.detect.verdict import Outcome
from jaxcontam.report.summary_schema import AuditSummary

FailOn = Literal["never", "contaminated", "untested"]
FAIL_ON: tuple[FailOn, ...] = typing.get_args(FailOn)
EXIT_CONTAMINATED = 4  # a headline verdict is contaminated (after the sweep's correction)
EXIT_UNTESTED = 5  # `--fail-on untested`: no headline verdict is contaminated, but one could not be tested


def echo_verdicts(summary: AuditSummary, out) -> None:
    """One line per (model, benchmark): accuracy, then each registered detector's console phrase (its headline test,
    p, adjusted p and verdict; a test that could not run reads "no test: <reason>", never as a verdict); then the
    evidence the inputs allow and the strongest measured (`report.evidence`), the wall time per stage, the files."""
    from jaxcontam.detect.registry import DETECTORS

    for run in summary.runs:
        accuracy = "acc -" if run.accuracy is None else f"acc {run.accuracy.acc:.3f}"  # None: a run without one
        parts = [f"{run.model} | {run.benchmark}:{run.split} ({run.n_items} items)", accuracy]
        for name, stage in DETECTORS.items():
            console = stage.view.console
            if name in run.results and console is not None:
                parts.append(console(run.results[name]))
        click.echo("  ".join(parts))
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
