"""`jaxcontam score`: per-text log-probs and likelihood membership scores, one JSON line per text."""

from __future__ import annotations

import json
from pathlib import Path

import click

from jaxcontam.commands.cluster_options import runs_on_every_host
from jaxcontam.commands.config_file import config_file_options
from jaxcontam.commands.mesh_options import dtype_option, mesh_layout, mesh_options
from jaxcontam.commands.text_files import naming_texts, output_file, parse_fields, read_texts
from jaxcontam.detect.likelihood import LikelihoodSettings
from jaxcontam.errors import DataError
from jaxcontam.storage import publish


def tokenize_texts(tokenizer, texts, path) -> list[list[int]]:
    """Token ids per text (with the tokenizer's special tokens, e.g. BOS)."""
    if tokenizer is None:
        raise DataError("the model directory has no tokenizer: add tokenizer.json beside the weights")
    encoded = [tokenizer.encode(text) for _, text in texts]
    for (ident, _), ids in zip(texts, encoded):
        if len(ids) < 2:
            raise DataError(f"{path}: text {ident!r} has {len(ids)} token(s); scoring needs at least two")
    return encoded


@runs_on_every_host
@config_file_options
@click.command("score")
@click.option("--model", "model_path", required=True, help="Model folder (HF safetensors + config + tokenizer).")
@click.option(
    "--data",
    "data_path",
    type=click.Path(dir_okay=False),
    required=True,
    help=".txt (one text per line), .jsonl, .json, .csv or .parquet file.",
)
@click.option(
    "--field",
    "field_pairs",
    multiple=True,
    help="NAME=COLUMN for NAME in text, id (defaults text=text, id=id; repeatable).",
)
@click.option("--out", type=click.Path(dir_okay=False), required=True, help="Output .jsonl, one line per text.")
@click.option(
    "--k",
    type=click.FloatRange(0.0, 1.0, min_open=True),
    default=LikelihoodSettings.k,
    show_default=True,
    help="Fraction of lowest-scoring tokens for Min-K%, Min-K%++ and Gap-K% (its windows).",
)
@click.option(
    "--frequency-table",
    type=click.Path(dir_okay=False),
    default=None,
    help="A `jaxcontam freq` table for the model's tokenizer: adds dc_pdd (DC-PDD).",
)
@click.option("--reference-model", default=None, help="Second model folder: adds reference_ratio.")
@dtype_option("float32")
@click.option("--batch-rows", type=click.IntRange(min=1), default=16, show_default=True, help="Rows per batch.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Only the first N texts.")
@mesh_options
def score(
    model_path, data_path, field_pairs, out, k, frequency_table, reference_model, dtype, batch_rows, limit, mesh, fsdp
):
    """Write id, num_tokens, token_logprobs, mean_logprob, zlib_ratio, min_k, min_k_plus_plus, gap_k (and dc_pdd
    with a frequency table) per text, all from one forward pass per text."""
    import jaxcontam
    from jaxcontam.cluster import is_writer
    from jaxcontam.detect import likelihood
    from jaxcontam.engine.scoring import score_logprobs
    from jaxcontam.ngram.frequencies import table_for

    settings = LikelihoodSettings(k=k, frequency_table=frequency_table)  # a bad table is refused before the model loads
    layout, device_mesh = mesh_layout(mesh, fsdp)
    texts = read_texts(data_path, parse_fields(field_pairs, ("text", "id")))[:limit]
    out_url, out = out, output_file(out, "score") if is_writer() else Path(out)
    model = jaxcontam.load_model(
        model_path, dtype=dtype, mesh=device_mesh, fsdp=layout.fsdp, attention=layout.attention
    )
    reference_probabilities = None
    if frequency_table is not None:
        table = table_for(frequency_table, model.tokenizer, f"--frequency-table {frequency_table}")
        reference_probabilities = table.probabilities()
    token_ids = tokenize_texts(model.tokenizer, texts, data_path)
    ids = [f"text {ident!r}" for ident, _ in texts]
    with naming_texts(ids, f"{data_path} scored by {model_path}", model_path, model):
        scores = score_logprobs(
            model, token_ids, with_stats=True, with_max=True, rows_per_batch=batch_rows, progress=True
        )
    reference = None
    if reference_model is not None:
        ref = jaxcontam.load_model(
            reference_model, dtype=dtype, mesh=device_mesh, fsdp=layout.fsdp, attention=layout.attention
        )
        with naming_texts(ids, f"{data_path} scored by {reference_model}", reference_model, ref):
            reference = score_logprobs(
                ref, tokenize_texts(ref.tokenizer, texts, data_path), rows_per_batch=batch_rows, progress=True
            )
    if not is_writer():  # every process scored its share of each batch; process 0 writes them all
        return
    with open(out, "w", encoding="utf-8") as handle:
        for i, ((ident, text), ids, s) in enumerate(zip(texts, token_ids, scores)):
            scored_ids = ids[s.start : s.start + len(s.logprobs)]
            record = {
                "id": ident,
                "num_tokens": len(ids),
                "token_logprobs": [float(x) for x in s.logprobs],
                **likelihood.detector_scores(s, text, settings, scored_ids, reference_probabilities),
            }
            if reference is not None:
                record["reference_ratio"] = likelihood.reference_ratio(s.logprobs, reference[i].logprobs)
            handle.write(json.dumps(record) + "\n")
    publish(out)
    click.echo(f"scored {len(texts)} texts -> {out_url}")
