# pyright: standard
"""GradNorm as a detector of the audit (opt-in: `[gradnorm]`): per item, mimir's mean over parameter tensors of the
norm of the loss gradient of its solved text (`detect.gradnorm`, `engine.gradients`); no test, so no verdict."""

from __future__ import annotations

from jaxcontam.detect.gradnorm import NORM_ORDER, GradNormResult, GradNormSettings, gradnorm_result, mean_tensor_norm
from jaxcontam.detect.stage import DetectorStage, DetectorView, PerItemWork, StageInput
from jaxcontam.engine.gradients import loss_gradient_norms
from jaxcontam.report.formatting import number
from jaxcontam.report.html_parts import facts, text


def _records(stage_input: StageInput, settings: GradNormSettings, items) -> list[dict]:
    model, benchmark = stage_input.model, stage_input.target.benchmark
    encoded = [model.tokenizer.encode(benchmark.solved_text(item)) for item in items]
    norms = loss_gradient_norms(model, encoded, order=NORM_ORDER[settings.norm], upcast=settings.dtype == "float32")
    return [{"id": item.id, "gradnorm": mean_tensor_norm(n.norms)} for item, n in zip(items, norms)]


def _resume_key(stage_input: StageInput, settings: GradNormSettings) -> dict:
    return {"norm": settings.norm, "dtype": settings.dtype}


def _result(stage_input: StageInput, settings: GradNormSettings, rows: list[dict]) -> GradNormResult:
    return gradnorm_result(rows)


def _console(result: GradNormResult) -> str:
    summary = result.gradnorm
    line = f"gradnorm mean={number(summary.mean)}"
    return line + (f" auc={number(summary.auc)}" if summary.auc is not None else "")


def _section(result: GradNormResult, figures) -> str:
    summary = result.gradnorm
    pairs = [("mean", text(summary.mean)), ("median", text(summary.median))]
    if summary.auc is not None:
        pairs += [
            ("AUC, contaminated vs clean", text(summary.auc)),
            ("one-sided Mann-Whitney p", text(summary.pvalue)),
            ("contaminated / clean items", f"{text(summary.n_contaminated)} / {text(summary.n_clean)}"),
        ]
    return (
        "<p>Per item, the mean over parameter tensors of the norm of the gradient of its solved text's mean token "
        "loss (mimir's GradNorm); lower means more likely seen. A score with no test, so no verdict.</p>\n"
        + facts(pairs)
    )


GRADNORM_STAGE = DetectorStage(
    name="gradnorm",
    settings_type=GradNormSettings,
    result_type=GradNormResult,
    per_item=PerItemWork(_records, _resume_key, lambda settings: ("gradnorm",), clock="score"),
    result=_result,
    summary_entry=GradNormResult.to_dict,
    read_entry=GradNormResult.from_dict,
    title="GradNorm (mimir)",
    view=DetectorView(_console, _section),
)
