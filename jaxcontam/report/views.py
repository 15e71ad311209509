# pyright: standard
"""How each registered detector shows itself: its console phrase, its report section and its figures (a
`DetectorView`), kept in the report layer beside the stage that computes it (`detect.stages`), so that detect never
imports report. `register_detector(stage, view)` is the one registration line a new detector needs: it registers the
stage with the audit core and its view with the console and the report (docs/adding_a_detector.md).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from jaxcontam.detect.contam import ContamResult
from jaxcontam.detect.exchangeability import ExchangeabilityResult
from jaxcontam.detect.pacost import PacostResult
from jaxcontam.detect.stage import DetectorStage
from jaxcontam.detect.stages import BUILT_IN, register, unregister
from jaxcontam.report import sections
from jaxcontam.report.formatting import gain_verdict, number, pacost_verdict


@dataclasses.dataclass(frozen=True)
class DetectorView:
    """console(result): the detector's phrase on the run's console line; section(result, figures): its report section
    (HTML, every input text escaped; `figures`: the run's plots by kind); figures(run, items, plots_dir, stem): its
    PNGs by kind. Each may be None (nothing to show there)."""

    console: Callable[[Any], str] | None = None
    section: Callable[[Any, Mapping[str, Path]], str] | None = None
    figures: Callable[[Any, list[dict], Path, str], dict[str, Path]] | None = None


def pacost_console(result: PacostResult) -> str:
    """The headline test's p (adjusted) and verdict; with a calibrated headline, the authors' p beside it."""
    status = result.headline_status
    test = result.headline_test
    if not status.ran:
        line = f"{test}: {status.label}"
    else:
        line = (
            f"{test} p={number(result.headline_pvalue)} adj={number(result.pvalue_adjusted)} "
            f"{pacost_verdict(result)} (correction {result.correction})"
        )
    if result.calibrated is not None:
        authors = result.verdict
        line += "; authors' test " + (f"p={number(authors.pvalue)}" if authors.status.ran else authors.status.label)
    return line


def contam_console(result: ContamResult) -> str:
    headline = result.headline
    test = (
        f"max-z test p={number(headline.pvalue)} {gain_verdict(headline)}"
        if headline.status.ran
        else f"max-z test: {headline.status.label}"
    )
    selected = (
        f"EPG={headline.epg:+.3f} z={headline.z:.2f} at >= {headline.threshold:.2f} "
        f"({headline.frac_contaminated:.0%} contaminated)"
        if headline.threshold is not None
        else "no threshold qualifies"
    )
    return f"ConTAM {result.metric}: {selected}; {test}"


def exchangeability_console(result: ExchangeabilityResult) -> str:
    outcome = result.status
    return f"exchangeability p={number(result.pvalue)}" if outcome.ran else f"exchangeability {outcome.label}"


def _pacost_figures(run, items: list[dict], plots_dir: Path, stem: str) -> dict[str, Path]:
    from jaxcontam.report import plots

    return {"confidence": plots.confidence_png(run, items, plots_dir / f"{stem}-confidence.png")}


def _contam_figures(run, items: list[dict], plots_dir: Path, stem: str) -> dict[str, Path]:
    from jaxcontam.report import plots

    return {"contam": plots.contam_curve_png(run, plots_dir / f"{stem}-contam.png")}


VIEWS: dict[str, DetectorView] = {
    "pacost": DetectorView(pacost_console, sections.pacost_section, _pacost_figures),
    "likelihood": DetectorView(section=sections.likelihood_section),
    "exchangeability": DetectorView(exchangeability_console, sections.exchangeability_section),
    "contam": DetectorView(contam_console, sections.contam_section, _contam_figures),
}
assert set(VIEWS) == set(BUILT_IN)  # every built-in detector shows itself


def view_of(name: str) -> DetectorView:
    """Detector `name`'s view (an empty one for a detector registered without: it still has its verdict row)."""
    return VIEWS.get(name, DetectorView())


def register_detector(stage: DetectorStage, view: DetectorView = DetectorView()) -> DetectorStage:
    """Register a new detector: its stage with the audit core (`detect.stages.register`) and its view with the console
    and the report; a taken name is refused."""
    register(stage)
    VIEWS[stage.name] = view
    return stage


def unregister_detector(name: str) -> None:
    """Remove a detector `register_detector` added (a test's toy, say); a built-in is refused."""
    unregister(name)
    VIEWS.pop(name, None)
