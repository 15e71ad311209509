"""`jaxcontam pacost`: the PaCoST paired confidence test alone, for one model and one benchmark."""

from __future__ import annotations

import click

from jaxcontam.commands.mesh_options import mesh_options
from jaxcontam.detect.pacost import CONFIDENCES, PRESETS
from jaxcontam.engine.chat import CHAT_MODES


@click.command("pacost")
@click.option("--model", required=True, help="Model under test: folder or hub id.")
@click.option("--benchmark", required=True, help="Benchmark name, hub id or file.")
@click.option("--path", default=None, help="Local files of the benchmark.")
@click.option("--split", default=None, help="Benchmark split.")
@click.option("--paraphrases", default=None,
              help="Rephrasings: a built-in source (gsm8k_rephrase, gsm_plus, mmlu_rephrase, xcopa_backtranslation) "
                   "or an {id, paraphrase} file.")
@click.option("--rephrase-model", default=None, help="A model that rephrases items lacking an accepted rephrasing.")
@click.option("--preset", type=click.Choice(list(PRESETS)), default="jaxcontam", show_default=True,
              help="jaxcontam: greedy answers, Kadavath's judge, normalised P(True), permutation test; paper: "
                   "PaCoST as its authors ran it (sampled answers, their Yes/No judge's P(yes), paired t-test at "
                   "p < alpha, uncorrected).")
@click.option("--confidence", type=click.Choice(CONFIDENCES), default=None, help="Confidence (default: the preset's).")
@click.option("--test", type=click.Choice(["permutation", "t", "wilcoxon", "sign"]), default=None,
              help="Paired test (default: the preset's).")
@click.option("--chat-template", type=click.Choice(list(CHAT_MODES)), default="auto", show_default=True,
              help="Ask and judge as chat turns: auto = when the model's tokenizer has a chat template.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Audit only the first N items.")
@click.option("--out", required=True, help="Output folder.")
@click.option("--dtype", type=click.Choice(["float32", "bfloat16"]), default="float32", show_default=True,
              help="Weights of the model under test.")
@mesh_options
@click.option("--rephrase-dtype", type=click.Choice(["float32", "bfloat16"]), default="float32", show_default=True,
              help="Weights of the rephrase model.")
@click.option("--rephrase-mesh", default=None, metavar="data=D,model=M",
              help="Mesh of the rephrase model, read as --mesh is (default: --mesh's); --fsdp applies to it too.")
def pacost(model, benchmark, path, split, paraphrases, rephrase_model, preset, confidence, test, chat_template, limit,
           out, dtype, mesh, fsdp, rephrase_dtype, rephrase_mesh):
    """Answer original and rephrased items, measure confidence, test original > rephrased (PaCoST).

    Writes OUT/items.parquet, OUT/summary.json and OUT/report.html; an interrupted run resumes.
    """
    from jaxcontam.audit.config import AuditConfig, BenchmarkEntry, ModelEntry
    from jaxcontam.audit.run import run_audit
    from jaxcontam.commands.verdicts import echo_verdicts
    from jaxcontam.detect.pacost import PacostSettings
    from jaxcontam.mesh import MeshSettings

    config = AuditConfig(
        models=(ModelEntry(path=model, name=model, dtype=dtype),),
        benchmarks=(BenchmarkEntry(name=benchmark, split=split, path=path, paraphrases=paraphrases, limit=limit),),
        out=out, pacost=PacostSettings(preset=preset, confidence=confidence, test=test, chat_template=chat_template),
        rephrase_model=rephrase_model, stages=("pacost",), mesh=MeshSettings.from_option(mesh, bool(fsdp)),
        rephrase_dtype=rephrase_dtype, rephrase_mesh=None if rephrase_mesh is None else MeshSettings.from_option(
            rephrase_mesh, bool(fsdp), "--rephrase-mesh"),
    )
    echo_verdicts(run_audit(config), out)
