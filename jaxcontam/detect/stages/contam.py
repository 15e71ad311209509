# pyright: standard
"""ConTAM's EPG verdict as an audit stage (corpus evidence): per-item n-gram metrics (`AuditTarget.ngram`) against
the correctness PaCoST measures; the max-z test of the headline metric at the audit's level (`detect.contam`). It
has nothing to say without a corpus or without PaCoST's answers (no result)."""

from __future__ import annotations

import dataclasses

from jaxcontam.detect.contam import ContamResult, ContamSettings, contam_result
from jaxcontam.detect.stage import DetectorStage, StageInput
from jaxcontam.detect.verdict import Verdict


def _result(stage_input: StageInput, settings: ContamSettings, rows: list[dict]) -> ContamResult | None:
    if stage_input.target.ngram is None or not rows or "correct" not in rows[0]:
        return None  # EPG needs a corpus's metrics and the correctness PaCoST measures
    return contam_result(rows, dataclasses.replace(settings, alpha=stage_input.alpha))


def _headline(result: ContamResult, alpha: float) -> Verdict:
    """The headline metric's max-z test: p <= alpha, uncorrected (its own threshold search is in its p-value)."""
    metric = result.headline
    ran = metric.status.ran
    return Verdict(
        detector="contam",
        test=f"ConTAM {result.metric.upper()} EPG, max-z test",
        contaminated=metric.significant if ran else None,
        pvalue=metric.pvalue,
        reason=metric.status.reason,
    )


CONTAM_STAGE = DetectorStage(
    name="contam",
    settings_type=ContamSettings,
    result_type=ContamResult,
    result=_result,
    summary_entry=ContamResult.to_dict,
    read_entry=ContamResult.from_dict,
    result_clock="epg",
    title="ConTAM",
    headline=_headline,
)
