"""`jaxcontam data`: inspect benchmarks as the model sees them."""

from __future__ import annotations

import json

import click


def parse_fields(pairs: tuple[str, ...]) -> dict[str, str] | None:
    """`("question=q", "answer=a")` -> `{"question": "q", "answer": "a"}`; None when no pairs."""
    mapping = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise click.BadParameter(f"{pair!r} is not KEY=COLUMN (e.g. question=prompt)", param_hint="--field")
        mapping[key.strip()] = value.strip()
    return mapping or None


@click.group("data")
def data():
    """Inspect benchmarks and their items."""


@data.command("show")
@click.argument("name_or_path")
@click.option("--split", default=None, help="Split to load (the benchmark's default if omitted).")
@click.option("--path", type=click.Path(), default=None,
              help="Local data: the benchmark's file or folder, or a data root holding it.")
@click.option("--field", "fields", multiple=True, metavar="KEY=COLUMN",
              help="Column mapping for table files: question, answer, choices, context, id (repeatable).")
@click.option("--limit", type=click.IntRange(min=0), default=3, show_default=True, help="Items to print.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object {benchmark, split, count, items}.")
def show(name_or_path, split, path, fields, limit, as_json):
    """Print a benchmark's name, split, item count and first items as prompts.

    NAME_OR_PATH is a built-in benchmark name (see `jaxcontam data list`), a Hugging Face id,
    or a .jsonl/.json/.csv/.parquet file read through --field mappings.
    """
    from jaxcontam.data import load_benchmark

    benchmark = load_benchmark(name_or_path, split=split, path=path, fields=parse_fields(fields))
    shown = benchmark.items[:limit]
    if as_json:
        items = [{**item.to_dict(), "prompt": benchmark.prompt(item)} for item in shown]
        click.echo(json.dumps({"benchmark": benchmark.name, "split": benchmark.split, "count": len(benchmark),
                               "items": items}, ensure_ascii=False))
        return
    click.echo(f"benchmark: {benchmark.name}\nsplit: {benchmark.split}\ncount: {len(benchmark)}")
    for item in shown:
        click.echo(f"\n--- {item.id} ({item.kind})")
        click.echo(benchmark.prompt(item))
        if item.choices is not None:
            for index, choice in enumerate(item.choices):
                click.echo(f"  [{index}]{' *' if index == item.answer else '  '} {choice}")
        else:
            click.echo(f"  gold: {item.answer_text}")


@data.command("list")
def list_():
    """List the built-in benchmarks, their splits and hub ids."""
    from jaxcontam.data.registry import SPECS

    for spec in SPECS:
        hub = f"  hub: {', '.join(spec.hub)}" if spec.hub else ""
        click.echo(f"{spec.name:15s} splits: {', '.join(spec.local)}{hub}\n{'':15s} {spec.description}")
