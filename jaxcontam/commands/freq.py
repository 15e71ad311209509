"""`jaxcontam freq`: a token frequency table of a reference corpus, for DC-PDD (`[likelihood] frequency_table`)."""

from __future__ import annotations

import click

from jaxcontam.commands.cluster_options import runs_on_every_host
from jaxcontam.commands.config_file import config_file_options


@runs_on_every_host
@config_file_options
@click.command("freq")
@click.option(
    "--corpus",
    "corpora",
    multiple=True,
    required=True,
    help="Reference corpus: .txt/.jsonl/.parquet/.npy/.bin file, folder, or hub dataset name (repeatable).",
)
@click.option(
    "--tokenizer",
    required=True,
    help="The audited model's tokenizer: a folder with tokenizer.json, a tokenizer.json, a GGUF file, or a hub name.",
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
    help="Corpus tokens per compiled counting chunk.",
)
@click.option(
    "--follow-symlinks",
    is_flag=True,
    help="Read the files that symbolic links in a corpus folder lead to outside it (left out and reported otherwise).",
)
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="The table to write (.npz).")
def freq(corpora, tokenizer, text_field, token_dtype, chunk_tokens, follow_symlinks, out):
    """Count how often each token of TOKENIZER's vocabulary occurs in the corpora -> OUT, a table DC-PDD reads.

    The table records the vocabulary's fingerprint: an audit refuses it for a model with another tokenizer.
    """
    from jaxcontam.cluster import is_writer
    from jaxcontam.data.corpus import open_corpus
    from jaxcontam.ngram.frequencies import count_token_frequencies, save_token_frequencies
    from jaxcontam.ngram.units import load_units

    units = load_units(tokenizer)
    opened = [
        (spec, open_corpus(spec, field=text_field, token_dtype=token_dtype, follow_symlinks=follow_symlinks))
        for spec in corpora
    ]
    table = count_token_frequencies(opened, units, chunk_tokens=chunk_tokens)
    if not is_writer():  # every process counted its share of each corpus; process 0 writes the sums
        return
    save_token_frequencies(table, out)
    seen = int((table.counts > 0).sum())
    click.echo(
        f"counted {table.tokens} tokens; {seen} of the {table.vocab_size} vocabulary ids occur -> {out} "
        f'(audit with [likelihood] frequency_table = "{out}")'
    )
