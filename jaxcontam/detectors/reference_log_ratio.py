# pyright: standard
"""The reference-model log-likelihood ratio as a detector of the audit (`detect.reference_log_ratio`): per item, the
audited model's mean log-prob of the solved text minus the reference model's (`StageInput.reference`), and the
calibrated sign-flip test of that ratio on the original against its rephrasing. Opt-in (`[reference_log_ratio]`);
without a reference model it states "not tested: no reference model"."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from jaxcontam.detect.reference_log_ratio import (
    COLUMNS,
    ReferenceLogRatioResult,
    ReferenceLogRatioSettings,
    reference_log_ratio_records,
    reference_log_ratio_result,
)
from jaxcontam.detect.stage import DetectorStage, DetectorView, PerItemWork, StageInput, fingerprint
from jaxcontam.detect.verdict import Verdict, flagged
from jaxcontam.report.formatting import number
from jaxcontam.report.html_parts import facts, text

TEST = "reference log-likelihood ratio, original vs rephrased, sign-flip test"


def _records(stage_input: StageInput, settings: ReferenceLogRatioSettings, items) -> list[dict]:
    target = stage_input.target
    rephrase_of = target.rephrasing_of()
    rephrasings = [rephrase_of[item.id] for item in items]
    return reference_log_ratio_records(stage_input.model, stage_input.reference, target.benchmark, items, rephrasings)


def _resume_key(stage_input: StageInput, settings: ReferenceLogRatioSettings) -> dict:
    """The reference model scored against (the stored chunks' key holds the audited model only) and the
    rephrasings."""
    reference = stage_input.reference
    return {
        "reference": None if reference is None else reference.name,
        "rephrasings": fingerprint(stage_input.target.rephrasing_of()),
    }


def _result(
    stage_input: StageInput, settings: ReferenceLogRatioSettings, rows: list[dict]
) -> ReferenceLogRatioResult | None:
    if not rows:
        return None
    reference = stage_input.reference
    name = None if reference is None else reference.name
    return reference_log_ratio_result(rows, name, stage_input.seed, stage_input.resamples)


def _headline(result: ReferenceLogRatioResult, alpha: float) -> Verdict:
    """p < alpha, uncorrected (outside the sweep's PaCoST family); not tested without a reference or rephrasings."""
    test = TEST if result.reference is None else f"{TEST}, calibrated against {result.reference}"
    return Verdict(
        detector="reference_log_ratio",
        test=test,
        contaminated=flagged(result.status, result.pvalue, alpha),
        pvalue=result.pvalue,
        reason=result.status.reason,
    )


def _console(result: ReferenceLogRatioResult) -> str:
    status = result.status
    if not status.ran:
        return f"reference log-ratio {status.label}"
    return f"reference log-ratio p={number(result.pvalue)} (gap {number(result.statistic)}, {result.n} items)"


def _section(result: ReferenceLogRatioResult, figures: Mapping[str, Path]) -> str:
    if result.reference is None:
        return (
            f"<p>{text(result.status.label)}: give --reference-model (reference_model in the TOML file), a model "
            "believed clean on the benchmark, for this detector.</p>"
        )
    summary = result.summary
    rows = [
        ("reference model", text(result.reference)),
        ("mean log-ratio (audited - reference)", text(summary.mean)),
        ("median log-ratio", text(summary.median)),
    ]
    if summary.auc is not None:
        rows.append(("AUC, known contaminated vs clean", text(summary.auc)))
    test = [
        ("mean of (ratio on original - ratio on rephrasing)", text(result.statistic)),
        ("items tested / dropped", f"{text(result.n)} / {text(result.n_dropped)}"),
        ("p (one-sided sign-flip)", text(result.pvalue) if result.status.ran else text(result.status.label)),
    ]
    return (
        "<p>Per item, the audited model's mean log-prob per token of the solved text minus the reference model's "
        "(higher: the audited model finds the item likelier than a clean model does). The test compares that ratio "
        "on the original with the ratio on its rephrasing, so what makes any rephrasing less likely cancels.</p>\n"
        + facts(rows + test)
    )


REFERENCE_LOG_RATIO_STAGE = DetectorStage(
    name="reference_log_ratio",
    settings_type=ReferenceLogRatioSettings,
    result_type=ReferenceLogRatioResult,
    per_item=PerItemWork(_records, _resume_key, lambda settings: COLUMNS, clock="score"),
    result=_result,
    summary_entry=ReferenceLogRatioResult.to_dict,
    read_entry=ReferenceLogRatioResult.from_dict,
    title="Reference-model log-likelihood ratio",
    headline=_headline,
    view=DetectorView(_console, _section),
)
