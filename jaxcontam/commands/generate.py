"""`jaxcontam generate`: continue each text of a file with the model, one JSON line per text."""

from __future__ import annotations

import json
from pathlib import Path

import click

from jaxcontam.commands.cluster_options import runs_on_every_host
from jaxcontam.commands.config_file import config_file_options
from jaxcontam.commands.mesh_options import dtype_option, mesh_layout, mesh_options
from jaxcontam.commands.text_files import naming_texts, output_file, parse_fields, read_texts
from jaxcontam.errors import DataError
from jaxcontam.storage import publish


@runs_on_every_host
@config_file_options
@click.command("generate")
@click.option("--model", "model_path", required=True, help="Model folder (HF safetensors + config + tokenizer).")
@click.option(
    "--data",
    "data_path",
    type=click.Path(dir_okay=False),
    required=True,
    help=".txt (one prompt per line), .jsonl, .json, .csv or .parquet file.",
)
@click.option(
    "--field",
    "field_pairs",
    multiple=True,
    help="NAME=COLUMN for NAME in text, id (defaults text=text, id=id; repeatable).",
)
@click.option("--out", type=click.Path(dir_okay=False), required=True, help="Output .jsonl, one line per prompt.")
@click.option("--max-new-tokens", type=click.IntRange(min=1), default=64, show_default=True)
@click.option("--temperature", type=click.FloatRange(min=0.0), default=0.0, show_default=True, help="0 = greedy.")
@click.option("--top-p", type=click.FloatRange(0.0, 1.0, min_open=True), default=1.0, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True, help="Sampling seed (deterministic per seed).")
@click.option("--stop", "stop_strings", multiple=True, help="Stop string (repeatable); the eos token always stops.")
@dtype_option("float32")
@click.option("--batch-rows", type=click.IntRange(min=1), default=16, show_default=True, help="Rows per batch.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Only the first N prompts.")
@mesh_options
def generate(
    model_path,
    data_path,
    field_pairs,
    out,
    max_new_tokens,
    temperature,
    top_p,
    seed,
    stop_strings,
    dtype,
    batch_rows,
    limit,
    mesh,
    fsdp,
):
    """Write id, prompt, completion, completion_token_ids, finish_reason per prompt."""
    import jaxcontam
    from jaxcontam.cluster import is_writer
    from jaxcontam.engine.generation import generate as run_generation

    layout, device_mesh = mesh_layout(mesh, fsdp)
    texts = read_texts(data_path, parse_fields(field_pairs, ("text", "id")))[:limit]
    out_url, out = out, output_file(out, "generate") if is_writer() else Path(out)
    model = jaxcontam.load_model(
        model_path, dtype=dtype, mesh=device_mesh, fsdp=layout.fsdp, attention=layout.attention
    )
    if model.tokenizer is None:
        raise DataError(f"{model_path} has no tokenizer: add tokenizer.json beside the weights")
    prompts = [model.tokenizer.encode(text) for _, text in texts]
    with naming_texts(
        [f"prompt {ident!r}" for ident, _ in texts], f"{data_path} answered by {model_path}", model_path, model
    ):
        results = run_generation(
            model,
            prompts,
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            top_p=top_p,
            seed=seed,
            stop_strings=stop_strings,
            rows_per_batch=batch_rows,
            progress=True,
        )
    if not is_writer():  # every process generated its share of each batch; process 0 writes them all
        return
    with open(out, "w", encoding="utf-8") as handle:
        for (ident, text), result in zip(texts, results):
            record = {
                "id": ident,
                "prompt": text,
                "completion": result.text,
                "completion_token_ids": result.token_ids,
                "finish_reason": result.finish_reason,
            }
            handle.write(json.dumps(record) + "\n")
    publish(out)
    click.echo(f"generated {len(texts)} completions -> {out_url}")
