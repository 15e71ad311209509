# pyright: standard
"""The registry of the audit core's detectors, in the order they run and appear in summary.json.

Adding a detector: one module here defining its `detect.stage.DetectorStage`, and its entry in `STAGES`.
"""

from __future__ import annotations

from jaxcontam.detect.stage import DetectorStage
from jaxcontam.detect.stages.exchangeability import EXCHANGEABILITY_STAGE
from jaxcontam.detect.stages.likelihood import LIKELIHOOD_STAGE
from jaxcontam.detect.stages.pacost import PACOST_STAGE

STAGES: dict[str, DetectorStage] = {s.name: s for s in (PACOST_STAGE, LIKELIHOOD_STAGE, EXCHANGEABILITY_STAGE)}
DETECTORS = tuple(STAGES)
DEFAULT_DETECTORS = ("pacost", "likelihood")  # an audit's model-based stages unless [exchangeability] adds its test
