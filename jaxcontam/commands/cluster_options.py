"""The `jaxcontam` group's multi-host options (`--distributed`, `--coordinator`, `--num-processes`, `--process-id`,
`--distributed-timeout`, each also a JAXCONTAM_* variable) and `@runs_on_every_host`, which marks the commands that
run as one process per host (`jaxcontam.cluster`).

The group checks the options before any work and refuses the explicit triple for a command that runs on one
process; a marked command joins the other processes once its own options parse (so `jaxcontam score --help` stays
instant) and before it reads anything.
"""

from __future__ import annotations

import functools

import click

from jaxcontam.cluster import DEFAULT_TIMEOUT, DISTRIBUTED_MODES, ClusterSettings
from jaxcontam.errors import JaxcontamError

_SETTINGS = "jaxcontam.cluster"
_MARK = "jaxcontam_runs_on_every_host"


def cluster_options(group):
    """Add the multi-host options to the `jaxcontam` group (whose callback calls `check_cluster_options`)."""
    options = [
        click.option(
            "--distributed",
            type=click.Choice(DISTRIBUTED_MODES),
            default="auto",
            show_default=True,
            envvar="JAXCONTAM_DISTRIBUTED",
            help="auto: when JAX detects a cluster of several processes (TPU pod, SLURM, Open MPI, Kubernetes), "
            "join them: each computes its share, process 0 writes the outputs. off: this process alone.",
        ),
        click.option(
            "--coordinator",
            metavar="HOST:PORT",
            envvar="JAXCONTAM_COORDINATOR",
            help="Process 0's host and a free port: with --num-processes and --process-id, runs the command as "
            "one of several processes (start the same command on every host).",
        ),
        click.option(
            "--num-processes",
            type=click.IntRange(min=1),
            envvar="JAXCONTAM_NUM_PROCESSES",
            help="Processes of the multi-host run (one per host).",
        ),
        click.option(
            "--process-id",
            type=click.IntRange(min=0),
            envvar="JAXCONTAM_PROCESS_ID",
            help="This process's id, 0..N-1; process 0 writes the outputs.",
        ),
        click.option(
            "--distributed-timeout",
            type=click.FloatRange(min=0, min_open=True),
            default=DEFAULT_TIMEOUT,
            show_default=True,
            envvar="JAXCONTAM_DISTRIBUTED_TIMEOUT",
            help="Seconds for every process to join before the run stops with an error.",
        ),
    ]
    for option in reversed(options):
        group = option(group)
    return group


def check_cluster_options(ctx: click.Context, distributed, coordinator, num_processes, process_id, timeout) -> None:
    """Check the options now (an incomplete triple is refused before any work) and keep them for the command."""
    settings = ClusterSettings(distributed, coordinator, num_processes, process_id, timeout)
    name = ctx.invoked_subcommand
    group = ctx.command
    assert isinstance(group, click.Group)  # the options sit on the `jaxcontam` group
    command = group.get_command(ctx, name) if name else None
    if settings.explicit and command is not None and not getattr(command, _MARK, False):
        raise JaxcontamError(
            f"jaxcontam {name} runs as one process: drop --coordinator, --num-processes and --process-id "
            "(and unset JAXCONTAM_COORDINATOR, JAXCONTAM_NUM_PROCESSES, JAXCONTAM_PROCESS_ID); "
            "audit, pacost, score, generate and ngram run on several"
        )
    ctx.meta[_SETTINGS] = settings


def runs_on_every_host(command: click.Command) -> click.Command:
    """Mark `command` as one that runs as one process per host: it joins the others before its body runs."""
    body = command.callback
    assert body is not None, f"{command.name} has no callback to run on every host"

    @functools.wraps(body)
    def joined_first(*args, **kwargs):
        from jaxcontam.cluster import start

        settings = click.get_current_context().meta.get(_SETTINGS)
        if settings is not None:  # None: the command was invoked on its own, not through the `jaxcontam` group
            start(settings)
        return body(*args, **kwargs)

    command.callback = joined_first
    setattr(command, _MARK, True)
    return command
