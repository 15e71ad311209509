# pyright: standard
"""PaCoST as an audit stage: answers and confidences per item (stored, resumed), then the authors' paired test and,
with a reference model's records, the calibrated verdict beside it (`detect.pacost`)."""

from __future__ import annotations

import dataclasses
import math

from jaxcontam.detect.pacost import (
    PacostResult,
    PacostSettings,
    calibrated_verdict,
    needs_answer,
    pacost_records,
    pacost_result,
)
from jaxcontam.detect.stage import DetectorStage, PerItemWork, StageInput, fingerprint


def _records(stage_input: StageInput, settings: PacostSettings, items) -> list[dict]:
    target = stage_input.target
    rephrase_of = target.rephrasing_of()
    rephrasings = [rephrase_of[item.id] for item in items]
    return pacost_records(stage_input.model, target.benchmark, items, rephrasings, settings)


def _resume_key(stage_input: StageInput, settings: PacostSettings) -> dict:
    """The settings and the rephrasings answered."""
    return {"settings": settings.to_dict(), "rephrasings": fingerprint(stage_input.target.rephrasing_of())}


def _columns(settings: PacostSettings, record: dict) -> dict:
    """Accuracy (on the original questions) and the chosen confidence pair with whether it enters the test."""
    confidence = settings.confidence
    assert confidence is not None  # PacostSettings.__post_init__ fills it from the preset
    original, rephrased = record[f"{confidence}_original"], record[f"{confidence}_rephrased"]
    answered = not needs_answer(confidence) or bool(record["answer_original"] and record["answer_rephrased"])
    kept = bool(record["rephrase"]) and answered and all(math.isfinite(v) for v in (original, rephrased))
    return {
        "correct": record["correct_original"],
        "correct_norm": record["correct_norm_original"],
        "pacost_conf_original": original,
        "pacost_conf_rephrased": rephrased,
        "pacost_kept": kept,
    }


def _result(stage_input: StageInput, settings: PacostSettings, rows: list[dict]) -> PacostResult:
    """The authors' verdict, and beside it the calibrated one when the target has a reference model's records."""
    seed, resamples = stage_input.seed, stage_input.resamples
    result = pacost_result(rows, settings, seed, resamples)
    reference = stage_input.target.reference
    if reference is None:
        return result
    name, records = reference
    calibrated = calibrated_verdict(rows, records, name, settings, seed, resamples)
    return dataclasses.replace(result, calibrated=calibrated)


PACOST_STAGE = DetectorStage(
    name="pacost",
    settings_type=PacostSettings,
    result_type=PacostResult,
    per_item=PerItemWork(_records, _resume_key),
    columns=_columns,
    result=_result,
    summary_entry=PacostResult.to_dict,
    read_entry=PacostResult.from_dict,
)
