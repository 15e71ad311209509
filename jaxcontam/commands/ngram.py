"""`jaxcontam ngram`: ConTAM n-gram contamination metrics of benchmark items against training corpora."""

from __future__ import annotations

import click

from jaxcontam.commands.cluster_options import runs_on_every_host
from jaxcontam.commands.config_file import config_file_options
from jaxcontam.commands.data_options import benchmark_options
from jaxcontam.ngram.audit import VIEW_OF_METRIC, NgramScoring, NgramSettings
from jaxcontam.ngram.item_text import SCOPES


@runs_on_every_host
@config_file_options
@click.command("ngram")
@benchmark_options
@click.option(
    "--corpus",
    "corpora",
    multiple=True,
    required=True,
    help="Corpus: .txt/.jsonl/.parquet/.npy/.bin file, folder, or hub dataset name (repeatable).",
)
@click.option(
    "--tokenizer",
    required=True,
    help="Folder with tokenizer.json, a tokenizer.json or .tiktoken file, a hub name, or 'words'.",
)
@click.option(
    "--n", type=click.IntRange(min=1), default=NgramSettings.n, show_default=True, help="n-gram length in units."
)
@click.option(
    "--mincount",
    type=click.IntRange(min=1),
    default=NgramScoring.mincount,
    show_default=True,
    help="An n-gram is contaminated when its corpus count is at least this.",
)
@click.option(
    "--skip-budget",
    type=click.IntRange(min=0),
    default=NgramScoring.skip_budget,
    show_default=True,
    help="Unmatched units a matched span may hold in total (TOKEN_EXTEND, LONGEST_MATCH; Llama 2's rule).",
)
@click.option(
    "--scope",
    type=click.Choice(list(SCOPES)),
    default=NgramSettings.scope,
    show_default=True,
    help="item: score the item as the model sees it (question + gold answer, one text); fields: also "
    "its question and its answer, each on its own (<metric>_question, <metric>_answer columns).",
)
@click.option(
    "--normalize",
    type=click.Choice(list(VIEW_OF_METRIC)),
    default=NgramSettings.normalize,
    show_default=True,
    help="paper: lowercase/strip punctuation for TOKEN_MATCH and NGRAM_MATCH only.",
)
@click.option("--text-field", default="text", show_default=True, help="Text field of .jsonl/.parquet corpora.")
@click.option(
    "--token-dtype", type=click.Choice(["uint16", "uint32"]), default=None, help="Token dtype of .bin corpora."
)
@click.option(
    "--chunk-tokens",
    type=click.IntRange(min=1024),
    default=1 << 20,
    show_default=True,
    help="Corpus windows per compiled chunk.",
)
@click.option(
    "--follow-symlinks",
    is_flag=True,
    help="Read the files that symbolic links in a corpus folder lead to outside it (left out and reported otherwise).",
)
@click.option("--out", required=True, help="Output folder (local, or a bucket URL).")
def ngram(
    benchmarks,
    path,
    split,
    corpora,
    tokenizer,
    n,
    mincount,
    skip_budget,
    scope,
    normalize,
    text_field,
    token_dtype,
    chunk_tokens,
    follow_symlinks,
    out,
):
    """Per-item TOKEN_MATCH, NGRAM_MATCH, TOKEN_EXTEND and LONGEST_MATCH -> OUT/items.parquet.

    Corpus counts are kept in OUT/counts and reused by reruns with other --mincount/--skip-budget.
    """
    from jaxcontam.cluster import is_writer
    from jaxcontam.commands.data_options import data_roots_from_environment
    from jaxcontam.data import load_benchmark
    from jaxcontam.data.corpus import open_corpus
    from jaxcontam.errors import DataError
    from jaxcontam.ngram.audit import ensure_counts, item_rows, write_items_parquet
    from jaxcontam.ngram.units import load_units
    from jaxcontam.storage import check_output, claim_output, output_folder

    out_url = str(out).rstrip("/")
    if path is not None and len(benchmarks) > 1:
        raise DataError("--path names one benchmark's files; give one --benchmark with it, or drop --path")
    check_output(out, "ngram")
    settings = NgramSettings(n=n, scope=scope, normalize=normalize)
    units = load_units(tokenizer)
    options = {"split": split} if split else {}
    roots = data_roots_from_environment()
    loaded = [load_benchmark(name, path=path, roots=roots, **options) for name in benchmarks]
    opened = [
        (spec, open_corpus(spec, field=text_field, token_dtype=token_dtype, follow_symlinks=follow_symlinks))
        for spec in corpora
    ]
    claim_output(out, "ngram")
    out = output_folder(out)  # a bucket URL: a local mirror whose files are uploaded as they are written
    counted, scanned = ensure_counts(loaded, opened, units, settings, out / "counts", chunk_tokens=chunk_tokens)
    if not is_writer():  # every process counted its share of the corpus; process 0 writes the items
        return
    rows = item_rows(loaded, counted, units, settings, mincount=mincount, skip_budget=skip_budget)
    write_items_parquet(rows, out / "items.parquet")
    contaminated = sum(r["longest_match"] > 0 for r in rows)
    click.echo(
        f"{'counted' if scanned else 'reused counts from'} {out_url}/counts; {len(rows)} items, "
        f"{contaminated} with a contaminated {n}-gram -> {out_url}/items.parquet"
    )
