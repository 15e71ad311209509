"""The blind baseline as a detector (`detectors/blind_baseline.py`): with known labels its entry, and the one beside
the AUCs in the ground-truth comparison, is `stats.blind.blind_baseline` called directly on the items' solved texts
(known-contaminated first); without labels it does not run, and the report says so where the ground-truth
comparison would be; too few labelled items on a side is "not tested" with the reason; the [blind_baseline] table
turns it on; summary.json, the console and report.html show it and read back to the same content."""

import dataclasses
import json
import math
from pathlib import Path

import pytest

from jaxcontam.audit.config import AuditConfig, BenchmarkEntry, ModelEntry, config_from_toml
from jaxcontam.audit.inputs import load_audit_benchmark
from jaxcontam.audit.run import ItemRow, ModelRun, write_outputs
from jaxcontam.commands.verdicts import echo_verdicts
from jaxcontam.detect.audit_core import AuditSettings, audit_benchmark
from jaxcontam.detect.blind import BlindBaselineSettings
from jaxcontam.detect.json_values import json_ready
from jaxcontam.detect.stage import AuditTarget
from jaxcontam.errors import JaxcontamError
from jaxcontam.report.summary_schema import read_summary
from jaxcontam.stage_clock import StageClock
from jaxcontam.stats.blind import blind_baseline

BUNDLED = Path(__file__).resolve().parents[1] / "jaxcontam" / "examples" / "tiny_contaminated"
SETTINGS = BlindBaselineSettings(permutations=99)


def copa(limit: int = 40, labelled: bool = True):
    entry = BenchmarkEntry(
        "copa",
        "test",
        path=str(BUNDLED / "copa_test_sample.jsonl"),
        ground_truth=str(BUNDLED / "ground_truth.jsonl") if labelled else None,
        limit=limit,
    )
    return load_audit_benchmark(entry)


def audited(bench, truth=None):
    """The audit core with the blind baseline alone (no model: it never reads one)."""
    items = list(bench.benchmark)
    labels = truth if truth is not None else (None if bench.truth is None else [bench.truth.get(i.id) for i in items])
    target = AuditTarget(bench.benchmark, [None] * len(items), labels)
    settings = AuditSettings(detectors=("blind_baseline",), detector_settings={"blind_baseline": SETTINGS})
    return audit_benchmark(None, target, settings)


def test_its_entry_is_blind_baseline_on_the_solved_texts():
    bench = copa()
    result = audited(bench)
    entry = result.results["blind_baseline"]
    texts = {True: [], False: []}
    for item in bench.benchmark:
        texts[bench.truth[item.id]].append(bench.benchmark.solved_text(item))
    expected = blind_baseline(texts[True], texts[False], seed=0, permutations=99)
    interval = expected.confidence_interval(0.95)
    assert entry.status.ran and (entry.n_contaminated, entry.n_clean) == (len(texts[True]), len(texts[False]))
    assert (entry.auc, entry.pvalue, entry.ci95) == (expected.statistic, expected.pvalue, (interval.low, interval.high))
    assert result.ground_truth is not None and result.ground_truth.blind_baseline == entry  # beside the AUCs
    assert result.ground_truth.auc == {}  # no scored signal ran


def test_without_labels_it_does_not_run_and_with_too_few_it_is_not_tested():
    unlabelled = audited(copa(labelled=False))
    assert "blind_baseline" not in unlabelled.results and unlabelled.ground_truth is None
    bench = copa(limit=12)
    few = audited(bench, [True, True, True] + [False] * 9)
    entry = few.results["blind_baseline"]
    assert not entry.status.ran and math.isnan(entry.auc)
    assert entry.status.reason == (
        "3 known-contaminated and 9 known-clean items; 5-fold cross-validation needs at least as many on each side"
    )


def test_the_table_turns_it_on_and_its_keys_are_checked():
    raw = {"model": [{"path": "m"}], "benchmark": [{"name": "copa"}]}
    assert "blind_baseline" not in config_from_toml(raw, Path("."), "audit.toml").stages
    on = config_from_toml(raw | {"blind_baseline": {"permutations": 99}}, Path("."), "audit.toml")
    assert on.stages[-1] == "blind_baseline" and on.settings_of("blind_baseline") == SETTINGS
    assert on.settings()["blind_baseline"] == {"permutations": 99}
    with pytest.raises(JaxcontamError, match=r"ngram_range = \[2, 1\]: expected \[low, high\]"):
        config_from_toml(raw | {"blind_baseline": {"ngram_range": [2, 1]}}, Path("."), "audit.toml")
    with pytest.raises(JaxcontamError, match="folds = 1 is out of range"):
        BlindBaselineSettings(folds=1)


def test_summary_console_and_report_show_it_beside_the_aucs_and_read_back(tmp_path, capsys):
    labelled, unlabelled = copa(), copa(labelled=False)
    unlabelled = dataclasses.replace(unlabelled, benchmark=dataclasses.replace(unlabelled.benchmark, split="other"))
    config = AuditConfig(
        models=(ModelEntry("m", "m"),),
        benchmarks=(BenchmarkEntry("copa", "test"),),
        out=str(tmp_path),
        stages=("blind_baseline",),
        detectors={"blind_baseline": SETTINGS},
    )
    runs, items = [], []
    for bench in (labelled, unlabelled):
        result = audited(bench)
        runs.append(ModelRun("m", result, bench.benchmark))
        items += [
            ItemRow("m", bench.benchmark.name, bench.benchmark.split, item.id, item.question, "x", "given", None, row)
            for item, row in zip(bench.benchmark, result.rows)
        ]
    with StageClock() as clock:
        summary = write_outputs(config, runs, items, clock)
    echo_verdicts(summary, tmp_path)
    console = capsys.readouterr().out
    entry = summary.runs[0].results["blind_baseline"]
    written = json.loads((tmp_path / "summary.json").read_text())
    assert written["runs"][0]["ground_truth"]["blind_baseline"] == json_ready(entry.to_dict())
    assert written["runs"][1]["ground_truth"] is None and written["runs"][1]["blind_baseline"] is None
    assert json_ready(read_summary(tmp_path).to_dict()) == written
    low, high = entry.ci95
    assert f"blind baseline AUC {entry.auc:.3g} [{low:.3g}, {high:.3g}], permutation p = {entry.pvalue:.3g}" in console
    assert console.count("against the ground truth (") == 1  # the unlabelled run has none
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "<strong>blind baseline</strong>" in page and f"AUC {entry.auc:.3g} [" in page
    assert "no ground-truth comparison, and the blind baseline did not run" in page
