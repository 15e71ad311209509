# pyright: standard
"""Oren et al.'s exchangeability test as a detector of the audit: the benchmark's items in order against shuffles
(`detect.exchangeability`); it works on the benchmark as a whole, so it has no per-item records."""

from __future__ import annotations

from jaxcontam.detect.exchangeability import ExchangeabilityResult, ExchangeabilitySettings, benchmark_exchangeability
from jaxcontam.detect.stage import DetectorStage, DetectorView, StageInput
from jaxcontam.detect.verdict import Verdict, flagged
from jaxcontam.report import sections
from jaxcontam.report.formatting import number


def _result(stage_input: StageInput, settings: ExchangeabilitySettings, rows: list[dict]) -> ExchangeabilityResult:
    return benchmark_exchangeability(stage_input.model, stage_input.target.benchmark, settings, stage_input.seed)


def _headline(result: ExchangeabilityResult, alpha: float) -> Verdict:
    """p < the audit's alpha, uncorrected (one test per benchmark, outside the sweep's PaCoST family)."""
    return Verdict(
        detector="exchangeability",
        test="exchangeability (Oren et al.): canonical order against shuffles",
        contaminated=flagged(result.status, result.pvalue, alpha),
        pvalue=result.pvalue,
        reason=result.status.reason,
    )


def _console(result: ExchangeabilityResult) -> str:
    outcome = result.status
    return f"exchangeability p={number(result.pvalue)}" if outcome.ran else f"exchangeability {outcome.label}"


EXCHANGEABILITY_STAGE = DetectorStage(
    name="exchangeability",
    settings_type=ExchangeabilitySettings,
    result_type=ExchangeabilityResult,
    result=_result,
    summary_entry=ExchangeabilityResult.to_dict,
    read_entry=ExchangeabilityResult.from_dict,
    result_clock="score",
    title="Exchangeability (Oren et al.)",
    headline=_headline,
    view=DetectorView(_console, sections.exchangeability_section),
)
