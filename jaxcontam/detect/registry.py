# pyright: standard
"""The registry of the audit core's detectors (`DETECTORS`), in the order they run and appear in summary.json, the
console and the report: the built-ins first (named lazily here, each one module of `jaxcontam/detectors/`), then
those registered from Python (`DETECTORS.register(STAGE)`), then installed packages' entry points of the
`jaxcontam.detectors` group. The console, the report, the config tables and the sweep read the registry
(docs/adding_a_detector.md). `FAMILY_DETECTORS` holds the detectors across the audit's models
(`detect.family_stage.FamilyStage`, entry-point group `jaxcontam.family_detectors`), run once per audit after every
model's audit; a name is one config table, so no name is in both registries.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jaxcontam.detect.family_stage import FamilyStage
from jaxcontam.detect.stage import DetectorStage
from jaxcontam.registry import Registry

DETECTORS: Registry[DetectorStage] = Registry(
    "detector", DetectorStage, name_of=lambda stage: stage.name, group="jaxcontam.detectors"
)
DETECTORS.lazy("pacost", "jaxcontam.detectors.pacost:PACOST_STAGE")
DETECTORS.lazy("likelihood", "jaxcontam.detectors.likelihood:LIKELIHOOD_STAGE")
DETECTORS.lazy("exchangeability", "jaxcontam.detectors.exchangeability:EXCHANGEABILITY_STAGE")
DETECTORS.lazy("contam", "jaxcontam.detectors.contam:CONTAM_STAGE")
DETECTORS.lazy("blind_baseline", "jaxcontam.detectors.blind_baseline:BLIND_BASELINE_STAGE")
DETECTORS.lazy("gradnorm", "jaxcontam.detectors.gradnorm:GRADNORM_STAGE")
DETECTORS.lazy("cdd", "jaxcontam.detectors.cdd:CDD_STAGE")
DETECTORS.lazy("ts_guessing", "jaxcontam.detectors.ts_guessing:TS_GUESSING_STAGE")
DETECTORS.lazy("reference_log_ratio", "jaxcontam.detectors.reference_log_ratio:REFERENCE_LOG_RATIO_STAGE")
DETECTORS.lazy("recall", "jaxcontam.detectors.recall:RECALL_STAGE")
DETECTORS.lazy("codec", "jaxcontam.detectors.codec:CODEC_STAGE")
DETECTORS.protect()

FAMILY_DETECTORS: Registry[FamilyStage] = Registry(
    "family detector", FamilyStage, name_of=lambda stage: stage.name, group="jaxcontam.family_detectors"
)
FAMILY_DETECTORS.lazy("constat", "jaxcontam.detectors.constat:CONSTAT_STAGE")
FAMILY_DETECTORS.protect()

BUILT_IN = DETECTORS.protected  # the built-in detectors' names (every registered one: `DETECTORS.names()`)
CORPUS_STAGES = ("contam",)  # corpus evidence: runs whenever the audit has a corpus (no [stages] choice)
DEFAULT_DETECTORS = ("pacost", "likelihood")  # an audit's model-based stages unless [exchangeability] adds its test


def settings_of(name: str, given: Mapping[str, Any]) -> Any:
    """Detector `name`'s settings: the ones `given` holds for it, else its settings type's defaults."""
    chosen = given.get(name)
    return DETECTORS[name].settings_type() if chosen is None else chosen
