"""`jaxcontam lm-eval`: lm-evaluation-harness's evaluation with the model `jaxcontam` (`jaxcontam.lm_eval`)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import click

from jaxcontam.commands.config_file import config_file_options
from jaxcontam.commands.mesh_options import dtype_option, mesh_layout, mesh_options

SEED_ARGUMENTS = ("random_seed", "numpy_random_seed", "torch_random_seed", "fewshot_random_seed")


@config_file_options
@click.command("lm-eval")
@click.option("--model", "model_path", required=True, help="Hugging Face folder, hub id or GGUF file.")
@click.option("--tasks", required=True, help="Comma-separated lm-eval task (or group) names.")
@click.option(
    "--data-files",
    "data_files",
    multiple=True,
    metavar="TASK=FILE",
    help="Read TASK's documents from FILE (.jsonl/.json/.csv/.parquet with the task's Hugging Face "
    "fields) instead of the hub (repeatable).",
)
@click.option(
    "--local-data/--no-local-data",
    default=True,
    show_default=True,
    help="Read arc_easy, piqa, hellaswag and copa from jaxcontam's local copies when a data root "
    "(../shared/data, $JAXCONTAM_DATA) holds them.",
)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Documents per task.")
@click.option(
    "--seed",
    type=int,
    default=None,
    help="Seed of lm-eval's Python, NumPy, torch and few-shot sampling (default: lm-eval's own seeds).",
)
@click.option("--num-fewshot", type=click.IntRange(min=0), default=None, help="Few-shot examples per prompt.")
@dtype_option("float32")
@click.option("--batch-size", type=click.IntRange(min=1), default=16, show_default=True, help="Rows per engine batch.")
@click.option("--model-args", default="", help="More model_args, k=v,... (max_length, max_gen_toks, add_bos_token).")
@click.option("--apply-chat-template", is_flag=True, help="Render prompts with the tokenizer's chat template.")
@click.option("--log-samples", is_flag=True, help="Also write every request and response (samples.json).")
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default=None,
    help="Folder for results.json (and samples.json, the task overrides).",
)
@mesh_options
def lm_eval(
    model_path,
    tasks,
    data_files,
    local_data,
    limit,
    seed,
    num_fewshot,
    dtype,
    batch_size,
    model_args,
    apply_chat_template,
    log_samples,
    out,
    mesh,
    fsdp,
):
    """Run lm-eval's simple_evaluate on the tasks with jaxcontam's engine and print its table."""
    from lm_eval.evaluator import simple_evaluate  # lm_eval's own lazy export of it
    from lm_eval.utils import handle_non_serializable, make_table, simple_parse_args_string

    import jaxcontam.lm_eval  # noqa: F401  (registers the model "jaxcontam"; raises if lm-eval is missing)
    from jaxcontam.commands.data_options import data_roots_from_environment
    from jaxcontam.data.lm_eval_tasks import find_local_copy, parse_data_files, task_manager, write_task_overrides
    from jaxcontam.storage import check_output, claim_output, output_folder, publish

    if out is not None:
        check_output(out, "lm-eval")
    names = [name.strip() for name in tasks.split(",") if name.strip()]
    files = parse_data_files(data_files)
    roots = data_roots_from_environment()
    local = [name for name in names if local_data and name not in files and find_local_copy(name, roots) is not None]
    layout, device_mesh = mesh_layout(mesh, fsdp)
    args = {
        "pretrained": model_path,
        "dtype": dtype,
        "mesh": device_mesh,
        "fsdp": layout.fsdp,
        "attention": layout.attention,
        **simple_parse_args_string(model_args),
    }
    with tempfile.TemporaryDirectory(prefix="jaxcontam-lm-eval-") as scratch:
        if out is not None:
            claim_output(out, "lm-eval")
        out_dir = output_folder(out, fill=False) if out is not None else None  # a bucket URL: a local mirror
        folder = out_dir / "tasks" if out_dir is not None else Path(scratch)
        used = write_task_overrides(folder, files, local, roots) if files or local else {}
        for name, file in used.items():
            click.echo(f"{name}: documents from {find_local_copy(name, roots) if name in local else file}", err=True)
        manager = task_manager(folder if used else None, stock=not set(names) <= set(used))
        results = simple_evaluate(
            model="jaxcontam",
            model_args=args,
            tasks=names,
            task_manager=manager,
            limit=limit,
            num_fewshot=num_fewshot,
            batch_size=batch_size,
            apply_chat_template=apply_chat_template,
            log_samples=log_samples,
            **({} if seed is None else {name: seed for name in SEED_ARGUMENTS}),
        )
    assert results is not None  # lm-eval returns None on processes of rank > 0; its LM here is rank 0
    click.echo(make_table(results))
    if out is not None:
        samples = results.pop("samples", None)
        written = {"results.json": json.dumps(results, indent=2, default=handle_non_serializable)}
        if samples is not None:
            written["samples.json"] = json.dumps(samples, default=handle_non_serializable)
        assert out_dir is not None  # set with `out` above
        for name, text in written.items():
            (out_dir / name).write_text(text)
            publish(out_dir / name)
        click.echo(f"results -> {str(out).rstrip('/')}/results.json")
