"""`jaxcontam audit`: every detector for every (model, benchmark), resumable, with a report."""

from __future__ import annotations

import click

from jaxcontam.commands.audit_options import audit_config, audit_options
from jaxcontam.commands.cluster_options import runs_on_every_host
from jaxcontam.commands.verdicts import echo_verdicts, gate_exit_code, gate_message


@runs_on_every_host
@click.command("audit")
@audit_options
def audit(**options):
    """Audit models for benchmark contamination: PaCoST, likelihood detectors and (with a corpus) ConTAM.

    The audit is the --config file (default: the bundled example), then its keys overridden by --set
    (--set pacost.k=0.3), then the named options. Writes OUT/items.parquet, OUT/summary.json, OUT/plots/*.png
    and OUT/report.html. Finished work is kept under OUT/state and OUT/counts: rerunning an interrupted command
    resumes it.
    """
    from jaxcontam.audit.run import run_audit
    from jaxcontam.cluster import is_writer

    config = audit_config(options)
    summary = run_audit(config)
    if is_writer():  # the others computed their share; process 0 wrote the outputs
        echo_verdicts(summary, config.out)
    code = gate_exit_code(summary, options["fail_on"])
    if code:
        if is_writer():
            click.echo(gate_message(summary, code), err=True)
        raise SystemExit(code)
