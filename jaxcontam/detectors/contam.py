# pyright: standard
"""ConTAM's EPG verdict as a detector of the audit (corpus evidence): per-item n-gram metrics (`AuditTarget.ngram`)
against the correctness PaCoST measures; the max-z test of the headline metric at the audit's level
(`detect.contam`). It has nothing to say without a corpus or without PaCoST's answers (no result)."""

from __future__ import annotations

from pathlib import Path

from jaxcontam.detect.contam import ContamResult, ContamSettings, contam_result
from jaxcontam.detect.stage import DetectorStage, DetectorView, StageInput
from jaxcontam.detect.verdict import Verdict
from jaxcontam.report import sections
from jaxcontam.report.formatting import number


def _result(stage_input: StageInput, settings: ContamSettings, rows: list[dict]) -> ContamResult | None:
    if stage_input.target.ngram is None or not rows:
        return None  # EPG needs a corpus's metrics (and the correctness PaCoST measures: `reads`)
    return contam_result(rows, settings)


def _headline(result: ContamResult, alpha: float) -> Verdict:
    """The headline metric's max-z test: p <= alpha, uncorrected (its own threshold search is in its p-value)."""
    metric = result.headline
    return Verdict(
        detector="contam",
        test=f"ConTAM {result.metric.upper()} EPG, max-z test",
        contaminated=metric.significant_at(alpha),
        pvalue=metric.pvalue,
        reason=metric.status.reason,
    )


def _console(result: ContamResult) -> str:
    headline = result.headline
    test = f"max-z test p={number(headline.pvalue)}" if headline.status.ran else f"max-z test: {headline.status.label}"
    selected = (
        f"EPG={headline.epg:+.3f} z={headline.z:.2f} at >= {headline.threshold:.2f} "
        f"({headline.frac_contaminated:.0%} contaminated)"
        if headline.threshold is not None
        else "no threshold qualifies"
    )
    return f"ConTAM {result.metric}: {selected}; {test}"


def _figures(run, items: list[dict], plots_dir: Path, stem: str) -> dict[str, Path]:
    from jaxcontam.report import plots

    return {"contam": plots.contam_curve_png(run, plots_dir / f"{stem}-contam.png")}


CONTAM_STAGE = DetectorStage(
    name="contam",
    settings_type=ContamSettings,
    result_type=ContamResult,
    result=_result,
    summary_entry=ContamResult.to_dict,
    read_entry=ContamResult.from_dict,
    reads=("correct",),  # PaCoST's, per item
    result_clock="epg",
    title="ConTAM",
    headline=_headline,
    view=DetectorView(_console, sections.contam_section, _figures),
)
