"""Where the commands look for local data: the one place the data roots are read from the environment.

Below the commands the roots are a parameter (`jaxcontam.data.roots`, `load_benchmark(..., roots=)`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import click

DATA_VARIABLE = "JAXCONTAM_DATA"  # a folder laid out like ../shared/data, searched first
CHECKOUT_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"  # ../shared/data beside the checkout


def data_roots_from_environment() -> tuple[Path, ...]:
    """$JAXCONTAM_DATA when set, then the library's default roots (../shared/data from the working directory),
    then ../shared/data beside the checkout."""
    from jaxcontam.data.roots import DEFAULT_ROOTS

    given = os.environ.get(DATA_VARIABLE)
    return (*([Path(given)] if given else []), *DEFAULT_ROOTS, CHECKOUT_DATA)


def benchmark_options(command: Callable | None = None, *, required: bool = True):
    """--benchmark (repeatable), --path and --split, as the corpus-side commands (ngram, decontaminate) take them
    (`@benchmark_options`, or `@benchmark_options(required=False)` where the command checks --benchmark itself)."""
    if command is None:
        return lambda command: benchmark_options(command, required=required)
    options = (
        click.option(
            "--benchmark", "benchmarks", multiple=True, required=required, help="Benchmark name (repeatable)."
        ),
        click.option("--path", default=None, help="Benchmark file or folder, local or a bucket URL (one benchmark)."),
        click.option("--split", default=None, help="Benchmark split (the loader's default if omitted)."),
    )
    for option in reversed(options):
        command = option(command)
    return command
