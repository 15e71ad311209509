"""The built-in detectors, one module each, as a plug-in detector is: its `detect.stage.DetectorStage` (settings,
per-item work, result, headline verdict) with its view (console phrase, report section, figures). Above both detect
and report, so a detector's computation and its rendering sit together; the registry (`detect.registry.DETECTORS`)
names each by "module:object" and imports it on first use."""
