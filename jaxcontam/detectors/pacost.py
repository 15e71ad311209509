# pyright: standard
"""PaCoST as a detector of the audit: answers and confidences per item (stored, resumed), then the authors' paired
test and, with a reference model's records, the calibrated test, which is then the headline (`detect.pacost`); its
headline verdict at the audit's level, console phrase, report section and confidence figure."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

from jaxcontam.detect.pacost.confidences import CONFIDENCES
from jaxcontam.detect.pacost.records import pacost_records
from jaxcontam.detect.pacost.results import UNCALIBRATED_NOTE, PacostResult
from jaxcontam.detect.pacost.settings import PacostSettings, needs_answer
from jaxcontam.detect.pacost.significance import calibrated_verdict, pacost_result
from jaxcontam.detect.stage import DetectorStage, DetectorView, PerItemWork, StageInput, fingerprint
from jaxcontam.detect.verdict import Verdict, flagged
from jaxcontam.report import sections
from jaxcontam.report.formatting import number


def _records(stage_input: StageInput, settings: PacostSettings, items) -> list[dict]:
    target = stage_input.target
    rephrase_of = target.rephrasing_of()
    rephrasings = [rephrase_of[item.id] for item in items]
    return pacost_records(stage_input.model, target.benchmark, items, rephrasings, settings)


def _resume_key(stage_input: StageInput, settings: PacostSettings) -> dict:
    """The settings and the rephrasings answered."""
    return {"settings": settings.to_dict(), "rephrasings": fingerprint(stage_input.target.rephrasing_of())}


def _writes(settings: PacostSettings) -> tuple[str, ...]:
    """Per item: whether it was asked as chat turns, its accepted rephrasing, and on each side the answer, its
    correctness and every column of every measured confidence."""
    confidences = [column for name in settings.measured() for column in CONFIDENCES[name].columns]
    per_side = ["answer", "correct", "correct_norm", *confidences]
    return ("chat", "rephrase", *(f"{column}_{side}" for side in ("original", "rephrased") for column in per_side))


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
    """The authors' test, and beside it the calibrated one when the target has a reference model's records."""
    seed, resamples = stage_input.seed, stage_input.resamples
    result = pacost_result(rows, settings, seed, resamples)
    reference = stage_input.target.reference
    if reference is None:
        return result
    name, records = reference
    calibrated = calibrated_verdict(rows, records, name, settings, seed, resamples)
    return dataclasses.replace(result, calibrated=calibrated)


def _headline(result: PacostResult, alpha: float) -> Verdict:
    """The calibrated test where a reference was given, else the authors' test, labelled uncalibrated: p < alpha;
    every PaCoST headline enters the sweep's family (a preset whose correction is "none" keeps its raw verdict
    there)."""
    status = result.headline_status
    return Verdict(
        detector="pacost",
        test=result.headline_test,
        contaminated=flagged(status, result.headline_pvalue, alpha),
        pvalue=result.headline_pvalue,
        correction=result.correction,
        swept=True,
        reason=status.reason,
        note=None if result.calibrated is not None else UNCALIBRATED_NOTE,
    )


def _console(result: PacostResult) -> str:
    """The headline test's p (the console adds its verdict); with a calibrated headline, the authors' p beside it."""
    status = result.headline_status
    test = result.headline_test
    line = f"{test}: {status.label}" if not status.ran else f"{test} p={number(result.headline_pvalue)}"
    if result.calibrated is not None:
        authors = result.verdict
        line += "; authors' test " + (f"p={number(authors.pvalue)}" if authors.status.ran else authors.status.label)
    return line


def _figures(run, items: list[dict], plots_dir: Path, stem: str) -> dict[str, Path]:
    from jaxcontam.report import plots

    return {"confidence": plots.confidence_png(run, items, plots_dir / f"{stem}-confidence.png")}


PACOST_STAGE = DetectorStage(
    name="pacost",
    settings_type=PacostSettings,
    result_type=PacostResult,
    per_item=PerItemWork(_records, _resume_key, _writes),
    columns=_columns,
    derives=("correct", "correct_norm", "pacost_conf_original", "pacost_conf_rephrased", "pacost_kept"),
    result=_result,
    summary_entry=PacostResult.to_dict,
    read_entry=PacostResult.from_dict,
    title="PaCoST",
    headline=_headline,
    view=DetectorView(_console, sections.pacost_section, _figures),
    settings_entry=lambda settings: {"pacost": settings.to_dict()},
)
