# pyright: standard
"""The likelihood detectors as one detector of the audit: mean log-prob, zlib ratio, Min-K% and Min-K%++ of each item's
solved text (prompt + gold answer), summarised per benchmark (`detect.benchmark_results.likelihood_result`)."""

from __future__ import annotations

from jaxcontam.detect.benchmark_results import DetectorSummary, likelihood_result
from jaxcontam.detect.likelihood import LIKELIHOOD_DETECTORS, LikelihoodSettings, detector_scores
from jaxcontam.detect.stage import DetectorStage, DetectorView, PerItemWork, StageInput
from jaxcontam.engine import score_logprobs
from jaxcontam.report import sections


def likelihood_records(model, benchmark, items, k: float) -> list[dict]:
    """Reference-free detectors of each item's solved text (prompt + gold answer)."""
    texts = [benchmark.solved_text(item) for item in items]
    scores = score_logprobs(model, [model.tokenizer.encode(t) for t in texts], with_stats=True)
    return [{"id": item.id, **detector_scores(s, text, k)} for item, text, s in zip(items, texts, scores)]


def _records(stage_input: StageInput, settings: LikelihoodSettings, items) -> list[dict]:
    return likelihood_records(stage_input.model, stage_input.target.benchmark, items, settings.k)


def _resume_key(stage_input: StageInput, settings: LikelihoodSettings) -> dict:
    return {"k": settings.k}


def _result(stage_input: StageInput, settings: LikelihoodSettings, rows: list[dict]) -> dict[str, DetectorSummary]:
    return likelihood_result(rows)


def _summary_entry(result: dict[str, DetectorSummary]) -> dict:
    return {name: summary.to_dict() for name, summary in result.items()}


def _read_entry(entry: dict) -> dict[str, DetectorSummary]:
    return {name: DetectorSummary.from_dict(summary) for name, summary in entry.items()}


LIKELIHOOD_STAGE = DetectorStage(
    name="likelihood",
    settings_type=LikelihoodSettings,
    result_type=dict,  # detector name -> DetectorSummary
    per_item=PerItemWork(_records, _resume_key, lambda settings: LIKELIHOOD_DETECTORS, clock="score"),
    result=_result,
    summary_entry=_summary_entry,
    read_entry=_read_entry,
    title="Likelihood detectors",
    view=DetectorView(section=sections.likelihood_section),
    settings_entry=lambda settings: {"k": settings.k},  # summary.json's top-level `k`
)
