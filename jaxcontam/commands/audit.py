"""`jaxcontam audit`: every detector for every (model, benchmark), resumable, with a report."""

from __future__ import annotations

import click

from jaxcontam.commands.mesh_options import mesh_options
from jaxcontam.commands.verdicts import echo_verdicts
from jaxcontam.detect.pacost import PRESETS


@click.command("audit")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), default=None,
              help="Audit TOML file (models, benchmarks, corpora, settings). Default: the bundled example.")
@click.option("--model", "models", multiple=True, help="Model folder or hub id (repeatable; replaces the config's).")
@click.option("--benchmark", "benchmarks", multiple=True,
              help="Benchmark name, hub id or file (repeatable; replaces the config's).")
@click.option("--path", default=None, help="Local files of the one --benchmark given.")
@click.option("--split", default=None, help="Split of the --benchmark entries.")
@click.option("--corpus", "corpora", multiple=True, help="Training corpus for ConTAM (repeatable).")
@click.option("--out", default=None, help="Output folder (default: the config's, else ./jaxcontam-audit).")
@click.option("--preset", type=click.Choice(list(PRESETS)), default=None,
              help="PaCoST preset (default: the config's [pacost] preset, else jaxcontam). paper: as its authors "
                   "ran it (sampled answers, their Yes/No judge's P(yes), paired t-test at p < alpha, uncorrected).")
@mesh_options
def audit(config_path, models, benchmarks, path, split, corpora, out, preset, mesh, fsdp):
    """Audit models for benchmark contamination: PaCoST, likelihood detectors and (with a corpus) ConTAM.

    Writes OUT/items.parquet, OUT/summary.json, OUT/plots/*.png and OUT/report.html. Finished work is kept
    under OUT/state and OUT/counts: rerunning an interrupted command resumes it.
    """
    from jaxcontam.audit.config import EXAMPLE_CONFIG, load_config, with_overrides
    from jaxcontam.audit.run import run_audit

    if config_path is None and not (models or benchmarks or corpora):
        config_path = EXAMPLE_CONFIG
        click.echo(f"auditing the bundled example ({EXAMPLE_CONFIG.parent})", err=True)
    config = load_config(config_path) if config_path is not None else None
    config = with_overrides(config, models=models, benchmarks=benchmarks, path=path, split=split, corpora=corpora,
                            out=out, mesh=mesh, fsdp=fsdp, preset=preset)
    summary = run_audit(config)
    echo_verdicts(summary, config.out)
