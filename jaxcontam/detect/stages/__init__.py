# pyright: standard
"""The registry of the audit core's detectors, in the order they run and appear in summary.json, the console and
the report.

Adding a detector: its own module defining a `detect.stage.DetectorStage`, and one `register(STAGE)` call
(docs/adding_a_detector.md). The console, the report, the config tables and the sweep read the registry.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jaxcontam.detect.stage import DetectorStage
from jaxcontam.detect.stages.contam import CONTAM_STAGE
from jaxcontam.detect.stages.exchangeability import EXCHANGEABILITY_STAGE
from jaxcontam.detect.stages.likelihood import LIKELIHOOD_STAGE
from jaxcontam.detect.stages.pacost import PACOST_STAGE
from jaxcontam.errors import JaxcontamError

STAGES: dict[str, DetectorStage] = {}
CORPUS_STAGES = ("contam",)  # corpus evidence: runs whenever the audit has a corpus (no [stages] choice)
DEFAULT_DETECTORS = ("pacost", "likelihood")  # an audit's model-based stages unless [exchangeability] adds its test


def register(stage: DetectorStage) -> DetectorStage:
    """Add `stage` to the registry (after the built-ins: it runs and shows last); a taken name is refused."""
    if stage.name in STAGES:
        raise JaxcontamError(f"a detector named {stage.name!r} is already registered: give yours another name")
    STAGES[stage.name] = stage
    return stage


def unregister(name: str) -> None:
    """Remove a detector registered with `register` (a test's toy detector, say); the built-ins stay."""
    if name in BUILT_IN:
        raise JaxcontamError(f"{name!r} is a built-in detector and cannot be removed")
    STAGES.pop(name, None)


def settings_of(name: str, given: Mapping[str, Any]) -> Any:
    """Detector `name`'s settings: the ones `given` holds for it, else its settings type's defaults."""
    chosen = given.get(name)
    return STAGES[name].settings_type() if chosen is None else chosen


def detector_names() -> tuple[str, ...]:
    """Every registered detector's name, in registry order."""
    return tuple(STAGES)


for _stage in (PACOST_STAGE, LIKELIHOOD_STAGE, EXCHANGEABILITY_STAGE, CONTAM_STAGE):
    register(_stage)
BUILT_IN = tuple(STAGES)
DETECTORS = BUILT_IN  # the built-in detectors' names (registered plug-ins: `detector_names()`)
