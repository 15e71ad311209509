"""`jaxcontam pacost`: the PaCoST paired confidence test alone (an audit whose only stage is PaCoST)."""

from __future__ import annotations

import click

from jaxcontam.commands.audit_options import audit_config, audit_options
from jaxcontam.commands.cluster_options import runs_on_every_host
from jaxcontam.commands.verdicts import echo_verdicts, gate_exit_code, gate_message


@runs_on_every_host
@click.command("pacost")
@audit_options
def pacost(**options):
    """Answer original and rephrased items, measure confidence, test original > rephrased (PaCoST).

    Takes `jaxcontam audit`'s options (--config, --set pacost.k=0.3, then the named options) and runs its PaCoST
    stage only. Writes OUT/items.parquet, OUT/summary.json and OUT/report.html; an interrupted run resumes.
    """
    from jaxcontam.audit.run import run_audit
    from jaxcontam.cluster import is_writer

    config = audit_config(options, stages=("pacost",))
    summary = run_audit(config, command="pacost")
    if is_writer():  # the others computed their share; process 0 wrote the outputs
        echo_verdicts(summary, config.out)
    code = gate_exit_code(summary, options["fail_on"])
    if code:
        if is_writer():
            click.echo(gate_message(summary, code), err=True)
        raise SystemExit(code)
