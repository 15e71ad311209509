"""The `jaxcontam` command line.

Subcommands live in `jaxcontam.commands.*` and are imported only when used, so
`jaxcontam --help` does not import JAX.
"""

from __future__ import annotations

import glob
import importlib
import importlib.metadata
import importlib.util
import logging
import os
import sys
import warnings
from pathlib import Path

import click

from jaxcontam import __version__, compile_cache
from jaxcontam.cluster import peer_lost
from jaxcontam.commands.cluster_options import check_cluster_options, cluster_options
from jaxcontam.errors import ClusterError, JaxcontamError, JaxcontamWarning

GOOGLE_PCI_VENDOR = "0x1ae0"  # TPU chips show on the PCI bus under Google's vendor id

# name -> "module:attribute" of a click command or group.
COMMANDS: dict[str, str] = {
    "audit": "jaxcontam.commands.audit:audit",
    "pacost": "jaxcontam.commands.pacost:pacost",
    "epg": "jaxcontam.commands.epg:epg",
    "score": "jaxcontam.commands.score:score",
    "generate": "jaxcontam.commands.generate:generate",
    "plan": "jaxcontam.commands.plan:plan",
    "data": "jaxcontam.commands.data:data",
    "ngram": "jaxcontam.commands.ngram:ngram",
    "freq": "jaxcontam.commands.freq:freq",
    "convert-llama2c": "jaxcontam.commands.convert:convert_llama2c",
    "lm-eval": "jaxcontam.commands.lm_eval:lm_eval",
    "contaminate": "jaxcontam.commands.contaminate:contaminate",
    "decontaminate": "jaxcontam.commands.decontaminate:decontaminate",
}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use."""

    def list_commands(self, ctx):
        return sorted(COMMANDS)

    def get_command(self, ctx, name):
        target = COMMANDS.get(name)
        if target is None:
            return None
        module_name, attribute = target.split(":")
        return getattr(importlib.import_module(module_name), attribute)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="jaxcontam")
@cluster_options
@click.pass_context
def cli(ctx, distributed, coordinator, num_processes, process_id, distributed_timeout):
    """Audit language models for benchmark contamination (PaCoST, ConTAM, likelihood detectors).

    On several hosts, run the same command on each: on a TPU pod or under SLURM the processes find each other
    (--distributed auto); elsewhere give each --coordinator, --num-processes and its own --process-id.
    """
    check_cluster_options(ctx, distributed, coordinator, num_processes, process_id, distributed_timeout)


class _HideTorchNotice(logging.Filter):
    """transformers' "PyTorch was not found. Models won't be available" is false for jaxcontam: it runs its own
    JAX models and needs transformers only for tokenizers and configs."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "PyTorch was not found" not in record.getMessage()


def _probes_absent_tpu() -> bool:
    """JAX would probe for a TPU here and find none: libtpu installed, no TPU chip, no GPU plugin."""
    if importlib.util.find_spec("libtpu") is None or importlib.metadata.entry_points(group="jax_plugins"):
        return False
    vendors = glob.glob("/sys/bus/pci/devices/*/vendor")
    return not any(Path(path).read_text().strip() == GOOGLE_PCI_VENDOR for path in vendors)


def quiet_third_party() -> None:
    """Keep third-party notices that mislead a jaxcontam user off the console: transformers' PyTorch notice, and
    the TPU probe (its warnings and wait) on a CPU host that has libtpu installed (JAX_PLATFORMS=cpu there,
    unless the user set JAX_PLATFORMS)."""
    logging.getLogger("transformers").addFilter(_HideTorchNotice())
    if "JAX_PLATFORMS" not in os.environ and _probes_absent_tpu():
        os.environ["JAX_PLATFORMS"] = "cpu"


_python_show_warning = warnings.showwarning


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """jaxcontam's own warnings as one "warning: ..." line (they say what to do); others as Python shows them."""
    if issubclass(category, JaxcontamWarning):
        click.echo(f"warning: {message}", err=True)
    else:
        _python_show_warning(message, category, filename, lineno, file, line)


def main(argv=None):
    """Entry point: run the CLI, printing user errors without a traceback."""
    quiet_third_party()
    warnings.showwarning = _show_warning
    compile_cache.configure()
    try:
        cli.main(args=argv, prog_name="jaxcontam", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except ClusterError as exc:  # JAX's connect thread still waits: leave now, without the interpreter's teardown
        click.echo(f"error: {exc}", err=True)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(2)
    except JaxcontamError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except Exception as exc:
        lost = peer_lost(exc)
        if lost is None:
            raise
        click.echo(f"error: {lost}", err=True)  # leave without JAX's shutdown barrier, which waits for the dead peer
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(3)


if __name__ == "__main__":
    main()
