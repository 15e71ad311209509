"""`jaxcontam decontaminate`: which corpus documents hold which benchmark items, and a cleaned copy of the corpus."""

from __future__ import annotations

import click

from jaxcontam.commands.config_file import config_file_options
from jaxcontam.commands.data_options import benchmark_options
from jaxcontam.decontam.index import FIELDS, IndexSettings
from jaxcontam.decontam.matching import POLICIES, SpanSettings
from jaxcontam.decontam.rules import PRESETS
from jaxcontam.decontam.run import RunSettings


@config_file_options
@click.command("decontaminate")
@benchmark_options(required=False)
@click.option(
    "--corpus",
    "corpora",
    multiple=True,
    help="Corpus file, folder or glob, local or a bucket URL: .jsonl/.json/.parquet/.txt (.gz/.zst) (repeatable).",
)
@click.option("--out", required=True, help="Output folder, local or a bucket URL.")
@click.option(
    "--reproduce",
    default=None,
    metavar="SUMMARY",
    help="Repeat the run whose summary.json this is (its manifest: benchmarks, rule, settings, input shards) into "
    "--out; a changed input shard or benchmark file is refused, naming it. Only --out, --engine, --workers and "
    "--address may be given with it.",
)
@click.option(
    "--tokenizer",
    default=None,
    help="Match the model's tokens (a folder with tokenizer.json, a .tiktoken or GGUF file) instead of words.",
)
@click.option(
    "--normalize",
    type=click.Choice(list(PRESETS)),
    default=IndexSettings.preset,
    show_default=True,
    help="Word rule: gpt3 (GPT-3 / lm-eval Janitor, 13-grams) or datatrove (its simplify_text + NLTK words, 12-grams).",
)
@click.option(
    "--n", type=click.IntRange(min=1), default=None, help="n-gram length (default: 13 gpt3, 12 datatrove, 8 tokens)."
)
@click.option(
    "--fields",
    multiple=True,
    type=click.Choice(list(FIELDS)),
    default=("item",),
    show_default=True,
    help="What of an item is looked for: item (its own question and answer text as one text, without the "
    "prompt's labels, and apart from it the prompt and gold answer as the model sees them; an item shorter than n is "
    "matched whole down to --floor), prompt (the latter alone), or any of question, answer, overlap (datatrove's "
    "options; repeatable).",
)
@click.option(
    "--floor",
    type=click.IntRange(min=1),
    default=None,
    help="The shortest item text matched whole when it is shorter than n (default: 7 words, 8 tokens; measured: "
    "docs/decontamination.md); shorter items are listed as not findable in summary.json and the report.",
)
@click.option(
    "--escapes/--no-escapes",
    default=None,
    help="Read escaped text as the text it stands for before the word rule (JSON's \\n and \\uXXXX, HTML's &amp; "
    "and tags), items and corpus alike [on for the gpt3 word rule; --no-escapes reads text as lm-eval's Janitor does].",
)
@click.option(
    "--letter-share",
    type=click.FloatRange(0, 1),
    default=None,
    help="The share of an n-gram's units that must hold a letter for it to count [0.5 in token mode, where a "
    "tokenizer that splits digits one by one makes n-grams of `100,000`; 0 in word mode]. 0 counts every n-gram, as "
    "jaxcontam ngram does.",
)
@click.option(
    "--drop-common",
    type=click.IntRange(min=1),
    default=None,
    metavar="K",
    help="Leave out benchmark n-grams found in more than K documents of the corpus (a first pass counts them): "
    "boilerplate, not copies. They are listed in summary.json and the report.",
)
@click.option("--policy", type=click.Choice(list(POLICIES)), default=RunSettings.policy, show_default=True)
@click.option("--window", type=click.IntRange(min=0), default=SpanSettings.window, show_default=True)
@click.option("--cutoff", type=click.IntRange(min=0), default=SpanSettings.cutoff, show_default=True)
@click.option("--min-slice", type=click.IntRange(min=0), default=SpanSettings.min_slice, show_default=True)
@click.option("--text-field", default="text", show_default=True)
@click.option("--id-field", default="id", show_default=True)
@click.option("--annotate-field", default="contamination", show_default=True)
@click.option("--on-bad-line", type=click.Choice(["stop", "skip"]), default="stop", show_default=True)
@click.option(
    "--follow-symlinks",
    is_flag=True,
    help="Read the files that symbolic links in a corpus folder lead to outside it (left out and reported otherwise).",
)
@click.option("--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True)
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Processes of the local engine [every core].")
@click.option("--address", default=None, help="Ray cluster: auto or HOST:PORT (default: RAY_ADDRESS or a new one).")
def decontaminate(
    benchmarks,
    path,
    split,
    corpora,
    out,
    tokenizer,
    normalize,
    n,
    fields,
    floor,
    escapes,
    letter_share,
    drop_common,
    policy,
    window,
    cutoff,
    min_slice,
    text_field,
    id_field,
    annotate_field,
    on_bad_line,
    follow_symlinks,
    engine,
    workers,
    address,
    reproduce,
):
    """Find benchmark items in a corpus -> OUT/matches.parquet, items.parquet, cleaned/, report.html, summary.json.

    --policy spans cuts each match out with --window characters each side (GPT-3's rule), drop removes the
    document, annotate keeps it with a field naming the items. A rerun skips the shards already done.
    """
    from jaxcontam.commands.data_options import data_roots_from_environment
    from jaxcontam.decontam.index import DecontIndex, benchmark_items
    from jaxcontam.decontam.manifest import load_benchmarks
    from jaxcontam.decontam.run import decontaminate as run
    from jaxcontam.errors import DataError
    from jaxcontam.storage import check_output

    roots = data_roots_from_environment()
    if reproduce is not None:
        context = click.get_current_context()
        given = [
            name
            for name in context.params
            if name not in ("reproduce", "out", "engine", "workers", "address", "config")
            and context.get_parameter_source(name) not in (None, click.core.ParameterSource.DEFAULT)
        ]
        if given:
            options = ", ".join("--" + name.replace("_", "-") for name in given)
            raise DataError(f"--reproduce takes the run's settings from its manifest; drop {options}")
        summary = _reproduce(reproduce, out, roots, engine=engine, workers=workers, address=address)
        _echo(summary, out)
        return
    if not benchmarks:
        raise DataError("name a benchmark (--benchmark), or repeat a run with --reproduce OUT/summary.json")
    if not corpora:
        raise DataError("name the corpus (--corpus), or repeat a run with --reproduce OUT/summary.json")
    check_output(out, "decontaminate")
    loaded, sources = load_benchmarks(benchmarks, path, split, roots)
    index_settings = IndexSettings(
        unit="tokens" if tokenizer else "words",
        preset=normalize,
        n=n,
        fields=tuple(fields),
        tokenizer=tokenizer,
        floor=floor,
        escapes=escapes,
        letter_share=letter_share,
    )
    index = DecontIndex.build(benchmark_items(loaded), index_settings)
    settings = RunSettings(
        policy=policy,
        spans=SpanSettings(window=window, cutoff=cutoff, min_slice=min_slice),
        text_field=text_field,
        id_field=id_field,
        annotate_field=annotate_field,
        on_bad_line=on_bad_line,
        drop_common=drop_common,
        follow_symlinks=follow_symlinks,
    )
    summary = run(index, corpora, out, settings, engine=engine, workers=workers, address=address, benchmarks=sources)
    _echo(summary, out)


def _reproduce(summary_path: str, out: str, roots, **engine) -> dict:
    """The run of `summary_path`'s manifest, into `out`, after checking that its inputs are the same."""
    from jaxcontam import __version__
    from jaxcontam.decontam.index import DecontIndex, benchmark_items
    from jaxcontam.decontam.manifest import (
        check_benchmarks,
        check_index,
        check_shards,
        load_benchmarks,
        read_summary,
    )
    from jaxcontam.decontam.run import decontaminate as run
    from jaxcontam.decontam.shards import list_shards
    from jaxcontam.errors import DataError

    manifest = read_summary(summary_path).manifest
    if manifest is None:
        raise DataError(
            f"{summary_path} was written before decontamination runs had a manifest (no schema_version); "
            "rerun it with its options"
        )
    if manifest.jaxcontam_version != __version__:
        click.echo(
            f"note: the run was made by jaxcontam {manifest.jaxcontam_version}, this is {__version__}; "
            "its n-gram table is checked before anything is written",
            err=True,
        )
    settings = RunSettings.from_dict(manifest.run)
    shards = list_shards(manifest.corpora, settings.follow_symlinks)
    check_shards(manifest, shards)
    loaded, sources = [], []
    for source in manifest.benchmarks:
        one, (now,) = load_benchmarks([source.name], source.path, source.split, roots)
        loaded += one
        sources.append(now)
    check_benchmarks(manifest, sources)
    index = DecontIndex.build(benchmark_items(loaded), manifest.index.index_settings())
    check_index(manifest, index)
    summary = run(index, manifest.corpora, out, settings, benchmarks=sources, shards=shards, **engine)
    read = {s["label"]: (s["bytes"], s["sha256"]) for s in summary["manifest"]["shards"]}
    for entry in manifest.shards:  # the bytes each shard was read as
        if read.get(entry.label) != (entry.bytes, entry.sha256):
            raise DataError(
                f"input shard {entry.label} changed while it was read (its bytes as read differ from the manifest's); "
                f"the outputs in {out} are not the run's: restore the file and reproduce into a fresh --out"
            )
    return summary


def _echo(summary: dict, out: str) -> None:
    total = summary["total"]
    click.echo(
        f"{total['documents']} documents, {total['matched']} holding a benchmark item, {total['removed']} removed, "
        f"{total['split']} split, {total['bad_lines']} bad lines -> {str(out).rstrip('/')}/summary.json"
    )
