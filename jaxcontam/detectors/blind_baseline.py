# pyright: standard
"""The blind baseline as a detector of the audit (`detect.blind`): with known labels (`AuditTarget.contaminated`),
a model-free classifier's AUC between the known-contaminated and the known-clean items' texts, shown beside every
detector's AUC in the ground-truth comparison (`detect.benchmark_results.ground_truth_result`). Without labels it
does not run (no result). It states no verdict: it checks the item sets, not the model."""

from __future__ import annotations

from jaxcontam.detect.blind import BlindBaselineSettings, BlindBaselineSummary, blind_summary
from jaxcontam.detect.stage import DetectorStage, DetectorView, StageInput


def _result(stage_input: StageInput, settings: BlindBaselineSettings, rows: list[dict]) -> BlindBaselineSummary | None:
    """The blind baseline of the items' solved texts, contaminated against clean; None without labels."""
    benchmark = stage_input.target.benchmark
    by_id = benchmark.by_id()
    sides: dict[bool, list[str]] = {True: [], False: []}
    for row in rows:
        label = row.get("ground_truth_contaminated")
        if label is not None:
            sides[bool(label)].append(benchmark.solved_text(by_id[row["id"]]))
    if not sides[True] and not sides[False]:
        return None
    return blind_summary(tuple(sides[True]), tuple(sides[False]), settings, stage_input.seed)


BLIND_BASELINE_STAGE = DetectorStage(
    name="blind_baseline",
    settings_type=BlindBaselineSettings,
    result_type=BlindBaselineSummary,
    result=_result,
    summary_entry=BlindBaselineSummary.to_dict,
    read_entry=BlindBaselineSummary.from_dict,
    title="Blind baseline",
    view=DetectorView(),  # shown in the ground-truth comparison, beside every detector's AUC
)
