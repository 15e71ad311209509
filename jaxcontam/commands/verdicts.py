"""The verdict lines `jaxcontam audit` and `jaxcontam pacost` print at the end of a run."""

from __future__ import annotations

import click

from jaxcontam.report.summary_schema import AuditSummary


def echo_verdicts(summary: AuditSummary, out) -> None:
    """One line per (model, benchmark): PaCoST p (adjusted) and the correction its verdict used, and the headline
    ConTAM EPG when there is one; a test that could not run reads "no test: <reason>", never as a verdict."""
    from jaxcontam.detect.status import TestOutcome
    from jaxcontam.report.formatting import gain_verdict, number, pacost_verdict

    for run in summary.runs:
        accuracy = "acc -" if run.accuracy is None else f"acc {run.accuracy['acc']:.3f}"  # None: a run without one
        parts = [f"{run.model} | {run.benchmark}:{run.split} ({run.n_items} items)", accuracy]
        pacost = run.pacost
        if pacost is not None:
            outcome = TestOutcome.from_summary(pacost)
            parts.append(
                f"PaCoST[{pacost['confidence']}] p={number(pacost['pvalue'])} "
                f"adj={number(pacost['pvalue_adjusted'])} {pacost_verdict(pacost)} "
                f"(correction {pacost['correction']})"
                if outcome.ran
                else f"PaCoST[{pacost['confidence']}]: {outcome.label}"
            )
        exchangeability = run.exchangeability
        if exchangeability is not None:
            outcome = TestOutcome.from_summary(exchangeability)
            parts.append(
                f"exchangeability p={number(exchangeability['pvalue'])}"
                if outcome.ran
                else f"exchangeability {outcome.label}"
            )
        contam = run.contam
        if contam is not None:
            outcome = TestOutcome.from_summary(contam)
            test = (
                f"max-z test p={number(contam['pvalue'])} {gain_verdict(contam)}"
                if outcome.ran
                else f"max-z test: {outcome.label}"
            )
            parts.append(
                f"ConTAM {contam['metric']}: "
                + (
                    f"EPG={contam['epg']:+.3f} z={contam['z']:.2f} at >= {contam['threshold']:.2f} "
                    f"({contam['frac_contaminated']:.0%} contaminated)"
                    if contam["threshold"] is not None
                    else "no threshold qualifies"
                )
                + f"; {test}"
            )
        click.echo("  ".join(parts))
    if summary.timings:
        from jaxcontam.stage_clock import format_table

        click.echo("wall time per stage (compile: jax's lowering and XLA compiling, taken out of the others):")
        click.echo(format_table(summary.timings))
    click.echo(f"report: {out}/report.html  items: {out}/items.parquet  summary: {out}/summary.json")
