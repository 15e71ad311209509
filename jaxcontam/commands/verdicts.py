"""The verdict lines `jaxcontam audit` and `jaxcontam pacost` print at the end of a run."""

from __future__ import annotations

import click

from jaxcontam.report.summary_schema import AuditSummary


def echo_verdicts(summary: AuditSummary, out) -> None:
    """One line per (model, benchmark): PaCoST p (adjusted) and the correction its verdict used, and the headline
    ConTAM EPG when there is one; a test that could not run reads "no test: <reason>", never as a verdict."""
    from jaxcontam.report.formatting import gain_verdict, number, pacost_verdict

    for run in summary.runs:
        accuracy = "acc -" if run.accuracy is None else f"acc {run.accuracy.acc:.3f}"  # None: a run without one
        parts = [f"{run.model} | {run.benchmark}:{run.split} ({run.n_items} items)", accuracy]
        pacost = run.pacost
        if pacost is not None:
            verdict = pacost.verdict
            parts.append(
                f"PaCoST[{verdict.confidence}] p={number(verdict.pvalue)} "
                f"adj={number(pacost.pvalue_adjusted)} {pacost_verdict(pacost)} "
                f"(correction {pacost.correction})"
                if verdict.status.ran
                else f"PaCoST[{verdict.confidence}]: {verdict.status.label}"
            )
        exchangeability = run.exchangeability
        if exchangeability is not None:
            outcome = exchangeability.status
            parts.append(
                f"exchangeability p={number(exchangeability.pvalue)}"
                if outcome.ran
                else f"exchangeability {outcome.label}"
            )
        contam = run.contam
        if contam is not None:
            headline = contam.headline
            test = (
                f"max-z test p={number(headline.pvalue)} {gain_verdict(headline)}"
                if headline.status.ran
                else f"max-z test: {headline.status.label}"
            )
            parts.append(
                f"ConTAM {contam.metric}: "
                + (
                    f"EPG={headline.epg:+.3f} z={headline.z:.2f} at >= {headline.threshold:.2f} "
                    f"({headline.frac_contaminated:.0%} contaminated)"
                    if headline.threshold is not None
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
