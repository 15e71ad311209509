# pyright: standard
"""The likelihood detectors as one detector of the audit: mean log-prob, zlib ratio, Min-K%, Min-K%++, Gap-K% and
(with a `[likelihood] frequency_table`) DC-PDD of each item's solved text (prompt + gold answer), all from one
forward pass per text, summarised per benchmark (`detect.benchmark_results.likelihood_result`)."""

from __future__ import annotations

from jaxcontam.detect.benchmark_results import DetectorSummary, likelihood_result
from jaxcontam.detect.likelihood import LikelihoodSettings, detector_scores, likelihood_detectors
from jaxcontam.detect.stage import DetectorStage, DetectorView, PerItemWork, StageInput
from jaxcontam.engine import score_logprobs
from jaxcontam.ngram.frequencies import TokenFrequencies, table_for
from jaxcontam.report import sections


def frequency_table(model, settings: LikelihoodSettings) -> TokenFrequencies | None:
    """DC-PDD's table (None without one), refused when it was counted for another tokenizer than the model's."""
    if settings.frequency_table is None:
        return None
    where = f"[likelihood] frequency_table = {settings.frequency_table!r}"
    return table_for(settings.frequency_table, model.tokenizer, where)


def likelihood_records(model, benchmark, items, settings: LikelihoodSettings) -> list[dict]:
    """Reference-free detectors of each item's solved text (prompt + gold answer), from one scoring pass."""
    table = frequency_table(model, settings)
    reference = None if table is None else table.probabilities()
    texts = [benchmark.solved_text(item) for item in items]
    encoded = [model.tokenizer.encode(t) for t in texts]
    scores = score_logprobs(model, encoded, with_stats=True, with_max=True)
    return [
        {"id": item.id, **detector_scores(s, text, settings, ids[s.start : s.start + len(s.logprobs)], reference)}
        for item, text, ids, s in zip(items, texts, encoded, scores)
    ]


def _records(stage_input: StageInput, settings: LikelihoodSettings, items) -> list[dict]:
    return likelihood_records(stage_input.model, stage_input.target.benchmark, items, settings)


def _resume_key(stage_input: StageInput, settings: LikelihoodSettings) -> dict:
    """k and Gap-K%'s window; with DC-PDD its cap and the table's checksum (its content, wherever it lies). The
    table is checked against the model's tokenizer here, before any stage's work (the audit core takes every key
    first)."""
    table = frequency_table(stage_input.model, settings)
    dc_pdd = {} if table is None else {"frequency_table_sha256": table.sha256, "dc_pdd_cap": settings.dc_pdd_cap}
    return {"k": settings.k, "gap_window": settings.gap_window} | dc_pdd


def _result(stage_input: StageInput, settings: LikelihoodSettings, rows: list[dict]) -> dict[str, DetectorSummary]:
    return likelihood_result(rows, likelihood_detectors(settings))


def _summary_entry(result: dict[str, DetectorSummary]) -> dict:
    return {name: summary.to_dict() for name, summary in result.items()}


def _read_entry(entry: dict) -> dict[str, DetectorSummary]:
    return {name: DetectorSummary.from_dict(summary) for name, summary in entry.items()}


def _settings_entry(settings: LikelihoodSettings) -> dict:
    """summary.json's top-level `k`, and under `likelihood` the other settings a config changed."""
    changed = {
        name: value
        for name, value in (
            ("gap_window", settings.gap_window),
            ("frequency_table", settings.frequency_table),
            ("dc_pdd_cap", settings.dc_pdd_cap),
        )
        if value != getattr(LikelihoodSettings, name)
    }
    return {"k": settings.k} | ({"likelihood": changed} if changed else {})


LIKELIHOOD_STAGE = DetectorStage(
    name="likelihood",
    settings_type=LikelihoodSettings,
    result_type=dict,  # detector name -> DetectorSummary
    per_item=PerItemWork(_records, _resume_key, likelihood_detectors, clock="score"),
    result=_result,
    summary_entry=_summary_entry,
    read_entry=_read_entry,
    title="Likelihood detectors",
    view=DetectorView(section=sections.likelihood_section),
    settings_entry=_settings_entry,
)
