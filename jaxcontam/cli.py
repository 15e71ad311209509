"""The `jaxcontam` command line.

Subcommands live in `jaxcontam.commands.*` and are imported only when used, so
`jaxcontam --help` does not import JAX.
"""

from __future__ import annotations

import importlib
import sys

import click

from jaxcontam import __version__
from jaxcontam.errors import JaxcontamError

# name -> "module:attribute" of a click command or group.
COMMANDS: dict[str, str] = {
    "audit": "jaxcontam.commands.audit:audit",
    "pacost": "jaxcontam.commands.pacost:pacost",
    "epg": "jaxcontam.commands.epg:epg",
    "score": "jaxcontam.commands.score:score",
    "generate": "jaxcontam.commands.generate:generate",
    "data": "jaxcontam.commands.data:data",
    "ngram": "jaxcontam.commands.ngram:ngram",
    "convert-llama2c": "jaxcontam.commands.convert:convert_llama2c",
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
def cli():
    """Audit language models for benchmark contamination (PaCoST, ConTAM, likelihood detectors)."""


def main(argv=None):
    """Entry point: run the CLI, printing user errors without a traceback."""
    try:
        cli.main(args=argv, prog_name="jaxcontam", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except JaxcontamError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()
