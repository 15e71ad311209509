"""`jaxcontam contaminate`: fine-tune a model on general text with benchmark items mixed in at a known dose."""

from __future__ import annotations

import click

from jaxcontam.commands.config_file import config_file_options
from jaxcontam.commands.mesh_options import attention_from_environment, mesh_options
from jaxcontam.errors import JaxcontamError
from jaxcontam.training.contaminate import ContaminationSettings


def _paths(pairs) -> tuple[tuple[str, str], ...]:
    parsed = []
    for pair in pairs:
        name, sep, path = pair.partition("=")
        if not sep or not name or not path:
            raise JaxcontamError(f"--path {pair!r}: expected BENCHMARK=PATH, e.g. --path mmlu=subjects/")
        parsed.append((name, path))
    return tuple(parsed)


def _extra_items(specs) -> tuple[tuple[str, str, int, str | None], ...]:
    parsed = []
    for spec in specs:
        head, equals, path = spec.partition("=")
        parts = head.split(":")
        if len(parts) != 3 or not all(parts) or not parts[2].isdigit() or int(parts[2]) < 1 or (equals and not path):
            raise JaxcontamError(
                f"--extra-items {spec!r}: expected BENCHMARK:SPLIT:N[=PATH], e.g. gsm8k:train:34 or "
                "mmlu:test:34=subjects/"
            )
        parsed.append((parts[0], parts[1], int(parts[2]), path or None))
    return tuple(parsed)


@config_file_options
@click.command("contaminate")
@click.option("--model", "model_path", required=True, help="Model to fine-tune: HF folder, hub id or .gguf file.")
@click.option("--benchmark", "benchmarks", multiple=True, required=True, help="Benchmark to mix in (repeatable).")
@click.option("--split", default=None, help="Split of every benchmark (default: each one's default split).")
@click.option(
    "--path",
    "path_pairs",
    multiple=True,
    metavar="BENCHMARK=PATH",
    help="Local files of one benchmark, e.g. mmlu=FOLDER of some subject CSVs (repeatable).",
)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Use each benchmark's first N items.")
@click.option(
    "--fraction",
    type=click.FloatRange(0.0, 1.0),
    default=ContaminationSettings.fraction,
    show_default=True,
    help="Share of the items contaminated, drawn per benchmark.",
)
@click.option(
    "--crossover",
    is_flag=True,
    help="Contaminate the items the draw leaves out: with the same --seed, every item is contaminated in one of "
    "the two runs and clean in the other (a crossover pair, analysed per item).",
)
@click.option(
    "--copies",
    type=click.IntRange(min=0),
    default=ContaminationSettings.copies,
    show_default=True,
    help="Copies of each contaminated item; 0 = control arm (same general text, no item).",
)
@click.option(
    "--extra-items",
    "extra_specs",
    multiple=True,
    metavar="BENCHMARK:SPLIT:N[=PATH]",
    help="Also train on the first N items of this benchmark split (local files at PATH), every one, none of them "
    "audited (repeatable): with --copies 0, a format control that learns the benchmark's format, not its items.",
)
@click.option(
    "--extra-copies",
    type=click.IntRange(min=0),
    default=None,
    help="Copies of each --extra-items item (default: --copies).",
)
@click.option(
    "--form",
    type=click.Choice(["verbatim", "fields", "rephrased"]),
    default=ContaminationSettings.form,
    show_default=True,
    help="verbatim: prompt + gold answer as the audit asks (a chat turn for an "
    "instruct model); fields: the dataset row as a JSON line; rephrased: a paraphrase + gold answer.",
)
@click.option("--corpus", required=True, help="General text: a text/JSONL/Parquet file, a folder, or a hub dataset.")
@click.option(
    "--corpus-field",
    default=ContaminationSettings.corpus_field,
    show_default=True,
    help="Text field of JSONL/Parquet records.",
)
@click.option("--tokens", type=click.IntRange(min=1), required=True, help="Tokens of general text to train on.")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Run folder (resumes when rerun).")
@click.option(
    "--seed",
    type=int,
    default=ContaminationSettings.seed,
    show_default=True,
    help="Seeds the item draw and the data order.",
)
@click.option(
    "--data-seed",
    type=int,
    default=None,
    help="Seeds the data order alone (default: --seed): with the same --seed, a replicate that trains on the same "
    "items in another order.",
)
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    default=ContaminationSettings.batch_size,
    show_default=True,
    help="Rows per step.",
)
@click.option(
    "--seq-len",
    type=click.IntRange(min=8),
    default=ContaminationSettings.seq_len,
    show_default=True,
    help="Tokens per row.",
)
@click.option(
    "--learning-rate",
    type=click.FloatRange(min=0.0, min_open=True),
    default=ContaminationSettings.learning_rate,
    show_default=True,
    help="AdamW peak learning rate (linear warmup, cosine decay to a tenth).",
)
@click.option(
    "--warmup",
    type=click.FloatRange(0.0, 1.0),
    default=ContaminationSettings.warmup,
    show_default=True,
    help="Share of the steps spent warming up.",
)
@click.option(
    "--weight-decay", type=click.FloatRange(min=0.0), default=ContaminationSettings.weight_decay, show_default=True
)
@click.option(
    "--checkpoint-every",
    type=click.IntRange(min=1),
    default=ContaminationSettings.checkpoint_every,
    show_default=True,
    help="Steps between orbax checkpoints.",
)
@click.option(
    "--audit-every",
    type=click.IntRange(min=0),
    default=ContaminationSettings.audit_every,
    show_default=True,
    help="Run the likelihood detectors on the live weights every N steps (audit_curve.jsonl); 0 = never.",
)
@mesh_options
def contaminate(
    model_path,
    benchmarks,
    split,
    path_pairs,
    limit,
    fraction,
    crossover,
    copies,
    extra_specs,
    extra_copies,
    form,
    corpus,
    corpus_field,
    tokens,
    out,
    seed,
    data_seed,
    batch_size,
    seq_len,
    learning_rate,
    warmup,
    weight_decay,
    checkpoint_every,
    audit_every,
    mesh,
    fsdp,
):
    """Fully fine-tune MODEL (optax AdamW, float32) on --tokens of general text with a --fraction of each
    benchmark's items mixed in --copies times; write OUT/model (loads in every command), OUT/ground_truth.jsonl,
    OUT/corpus/ (exactly the text trained on), the training curve and the settings."""
    from jaxcontam.commands.data_options import data_roots_from_environment
    from jaxcontam.mesh import MeshSettings
    from jaxcontam.training.contaminate import run_contamination

    settings = ContaminationSettings(
        model=model_path,
        benchmarks=tuple(benchmarks),
        corpus=corpus,
        tokens=tokens,
        out=out,
        fraction=fraction,
        crossover=bool(crossover),
        copies=copies,
        form=form,
        split=split,
        limit=limit,
        paths=_paths(path_pairs),
        data_roots=data_roots_from_environment(),
        corpus_field=corpus_field,
        seed=seed,
        data_seed=data_seed,
        batch_size=batch_size,
        seq_len=seq_len,
        learning_rate=learning_rate,
        warmup=warmup,
        weight_decay=weight_decay,
        mesh=MeshSettings.from_option(mesh, bool(fsdp), attention=attention_from_environment()),
        checkpoint_every=checkpoint_every,
        audit_every=audit_every,
        extra_items=_extra_items(extra_specs),
        extra_copies=extra_copies,
    )
    run_contamination(settings, log=lambda line: click.echo(line, err=True))
