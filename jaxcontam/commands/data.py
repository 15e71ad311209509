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


def lm_eval_lines(name_or_path: str) -> dict[str, str]:
    """What lm-eval (0.4.13) task a registered benchmark follows and where it differs; {} for a table file."""
    from jaxcontam.data.registry import resolve_spec

    spec = resolve_spec(name_or_path)
    if spec is None or spec.lm_eval_task is None:
        return {}
    return {
        "task": spec.lm_eval_task,
        "differences": spec.lm_eval_differences or "none: the same zero-shot context, continuations and gold",
    }


@data.command("show")
@click.argument("name_or_path")
@click.option("--split", default=None, help="Split to load (the benchmark's default if omitted).")
@click.option(
    "--path",
    type=click.Path(),
    default=None,
    help="Local data: the benchmark's file or folder, or a data root holding it.",
)
@click.option(
    "--field",
    "fields",
    multiple=True,
    metavar="KEY=COLUMN",
    help="Column mapping for table files: question, answer, choices, context, id (repeatable).",
)
@click.option("--limit", type=click.IntRange(min=0), default=3, show_default=True, help="Items to print.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object {benchmark, split, count, items}.")
def show(name_or_path, split, path, fields, limit, as_json):
    """Print a benchmark's name, split, item count and first items as prompts, each choice with the
    continuation scored after the prompt (quoted: lm-eval's target delimiter and the choice text), and the
    lm-eval task the benchmark follows with where it differs.

    NAME_OR_PATH is a built-in benchmark name (see `jaxcontam data list`), a Hugging Face id,
    or a .jsonl/.json/.csv/.parquet file read through --field mappings.
    """
    from jaxcontam.commands.data_options import data_roots_from_environment
    from jaxcontam.data import load_benchmark

    benchmark = load_benchmark(
        name_or_path, split=split, path=path, fields=parse_fields(fields), roots=data_roots_from_environment()
    )
    shown = benchmark.items[:limit]
    lm_eval = lm_eval_lines(name_or_path)

    def continuations(item):
        return [benchmark.continuation(item, i) for i in range(len(item.choices))] if item.choices else None

    if as_json:
        items = [
            {**item.to_dict(), "prompt": benchmark.prompt(item), "continuations": continuations(item)} for item in shown
        ]
        click.echo(
            json.dumps(
                {
                    "benchmark": benchmark.name,
                    "split": benchmark.split,
                    "count": len(benchmark),
                    "lm_eval": lm_eval or None,
                    "items": items,
                },
                ensure_ascii=False,
            )
        )
        return
    click.echo(f"benchmark: {benchmark.name}\nsplit: {benchmark.split}\ncount: {len(benchmark)}")
    if lm_eval:
        click.echo(f"lm-eval task: {lm_eval['task']}\ndiffers from lm-eval: {lm_eval['differences']}")
    for item in shown:
        click.echo(f"\n--- {item.id} ({item.kind})")
        click.echo(benchmark.prompt(item))
        if item.choices is not None:
            for index, (choice, continuation) in enumerate(zip(item.choices, continuations(item) or [])):
                click.echo(
                    f"  [{index}]{' *' if index == item.answer else '  '} {choice}    "
                    f"continuation: {json.dumps(continuation, ensure_ascii=False)}"
                )
        else:
            click.echo(f"  gold: {item.answer_text}")


def split_sources(spec) -> dict[str, list[str]]:
    """split -> "source (covered of total items)" for each built-in paraphrase source of the benchmark; counted
    on the local data (a split with no local copy says so instead of reaching for the hub)."""
    from jaxcontam.commands.data_options import data_roots_from_environment
    from jaxcontam.data import load_benchmark, load_paraphrases
    from jaxcontam.data.paraphrases import SOURCE_SPLITS
    from jaxcontam.data.registry import locate
    from jaxcontam.errors import DataError

    roots = data_roots_from_environment()
    found: dict[str, list[str]] = {}
    for source, pairs in SOURCE_SPLITS.items():
        for split in (split for name, split in pairs if name == spec.name):
            if locate(spec, split, None, roots) is None:
                found.setdefault(split, []).append(f"{source} (no local copy to count)")
                continue
            benchmark = load_benchmark(spec.name, split=split, roots=roots)
            try:
                covered = len(load_paraphrases(source, benchmark, roots=roots))
            except DataError as error:  # the source's own files are missing locally
                found.setdefault(split, []).append(f"{source} (not counted: {error})")
                continue
            found.setdefault(split, []).append(f"{source} ({covered} of {len(benchmark)} items)")
    return found


@data.command("list")
def list_():
    """List the built-in benchmarks, their splits and hub ids, and the paraphrase sources covering each split.

    A PaCoST run needs rephrasings of the items it selects: pick the --split a --paraphrases source covers.
    """
    from jaxcontam.data.registry import BENCHMARKS

    for spec in BENCHMARKS.values():
        hub = f"  hub: {', '.join(spec.hub)}" if spec.hub else ""
        splits = ", ".join(f"{split} (default)" if split == spec.default_split else split for split in spec.local)
        click.echo(f"{spec.name:15s} splits: {splits}{hub}\n{'':15s} {spec.description}")
        for split, sources in split_sources(spec).items():
            click.echo(f"{'':15s} paraphrases for --split {split}: {', '.join(sources)}")
