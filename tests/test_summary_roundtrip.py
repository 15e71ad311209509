"""summary.json read into the typed results and written again is the same file: every committed audit summary, and
hand-made results with NaN and infinite numbers, tests that did not run, detectors that did not run, sweep decisions
and no sweep."""

import dataclasses
import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxcontam.audit.summary import SweptTest, sweep_decisions
from jaxcontam.detect.contam import ContamSettings, contam_result
from jaxcontam.detect.exchangeability import ExchangeabilityResult
from jaxcontam.detect.pacost import (
    CalibratedVerdict,
    PacostResult,
    PacostSettings,
    PairedVerdict,
    SweepDecision,
    paired_verdict,
)
from jaxcontam.detect.status import TestOutcome
from jaxcontam.detect.summaries import Accuracy, DetectorSummary, GroundTruthResult, GroupSummary
from jaxcontam.detect.summary_values import json_ready
from jaxcontam.report.summary_schema import SCHEMA_VERSION, AuditSummary, RunEntry

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = sorted(ROOT.glob("experiments/real_contamination/results/arms/*/audit_jaxcontam/summary.json")) + [
    ROOT / "experiments/real_model/results/audit/summary.json",
    ROOT / "experiments/real_model/results/audit-paper/summary.json",  # the `paper` preset: sampled answers, judge
]


def written(summary: AuditSummary) -> str:
    """summary.json's text as `audit.run.write_outputs` writes it."""
    return json.dumps(json_ready(summary.to_dict()), indent=2) + "\n"


@pytest.mark.parametrize("path", FIXTURES, ids=lambda path: path.parent.relative_to(ROOT).as_posix())
def test_a_committed_summary_is_written_back_byte_for_byte(path):
    text = path.read_text(encoding="utf-8")
    loaded = json.loads(text)
    if "schema_version" not in loaded:  # written before the version existed: the same layout, now versioned
        loaded = {"schema_version": SCHEMA_VERSION} | loaded
        text = json.dumps(loaded, indent=2) + "\n"
    assert written(AuditSummary.from_dict(loaded)) == text


def no_rephrasing_verdict(confidence: str) -> PairedVerdict:
    """The real paired test where no item has an accepted rephrasing: no test, p NaN."""
    records = [
        {"rephrase": None, f"{confidence}_original": 0.9, f"{confidence}_rephrased": math.nan, "answer_original": "a"}
        for _ in range(3)
    ]
    return paired_verdict(records, confidence, PacostSettings())


def edge_summary() -> AuditSummary:
    """Two runs and no sweep. The first: PaCoST without a test (p NaN, the sweep's decision with adjusted p NaN)
    and a calibrated verdict without one, ConTAM without a sized threshold, exchangeability that could not run,
    NaN and infinite numbers throughout; the second: only the likelihood detectors, with an infinite statistic."""
    pacost = PacostResult(
        "jaxcontam",
        "kadavath",
        "auto",
        False,
        no_rephrasing_verdict("p_true"),
        {"answer_logprob": no_rephrasing_verdict("answer_logprob")},
        PacostSettings(),
        decision=SweepDecision("none", math.nan, False),
        calibrated=CalibratedVerdict("reference", "permutation", "p_true", math.nan, False, 0, math.nan),
    )
    metrics = ("token_match", "ngram_match", "token_extend", "longest_match")
    rows = [dict.fromkeys(metrics, i / 3) | {"correct": float(i % 2)} for i in range(3)]
    likelihood = {
        "min_k": DetectorSummary(math.nan, -math.inf, auc=math.nan, pvalue=1.0, n_contaminated=3, n_clean=0),
        "zlib_ratio": DetectorSummary(0.5, math.inf),
    }
    ground_truth = GroundTruthResult(
        {
            "contaminated": GroupSummary(3, accuracy=math.nan, pacost_pvalue=math.nan, means={"min_k": -math.inf}),
            "clean": GroupSummary(0),
        },
        {"min_k": math.nan},
    )
    audited = RunEntry(
        "m",
        "gsm8k",
        "test",
        3,
        accuracy=Accuracy(math.nan, None),
        results={
            "pacost": pacost,
            "likelihood": likelihood,
            "exchangeability": ExchangeabilityResult(None, 10, None, math.nan, "no chunking fits the model's context"),
        },
        contam=contam_result(rows, ContamSettings(resamples=9)),
        ground_truth=ground_truth,
    )
    scored = RunEntry(
        "m",
        "copa",
        None,
        4,
        results={"likelihood": likelihood, "exchangeability": ExchangeabilityResult(2, 5, math.inf, 0.0)},
    )
    return AuditSummary(SCHEMA_VERSION, "0.1.0", 0.05, "holm", {"k": 0.2}, (audited, scored), None, {"load": 1.5})


def test_nan_infinities_untested_and_absent_detectors_and_no_sweep_are_written_back_the_same():
    summary = edge_summary()
    read = AuditSummary.from_dict(json.loads(written(summary)))
    assert written(read) == written(summary)
    audited, scored = read.runs
    assert read.sweep is None and scored.pacost is None and scored.contam is None and scored.accuracy is None
    assert audited.pacost is not None and not audited.pacost.verdict.status.ran
    assert math.isnan(audited.pacost.verdict.pvalue) and audited.pacost.pvalue_adjusted is not None
    assert audited.contam is not None and not audited.contam.headline.status.ran
    assert audited.exchangeability is not None and audited.exchangeability.status.label.startswith("no test: ")
    assert scored.exchangeability == ExchangeabilityResult(2, 5, math.inf, 0.0)
    assert scored.likelihood is not None and scored.likelihood["zlib_ratio"] == DetectorSummary(0.5, math.inf)


def verdict_at(pvalue: float, settings_: PacostSettings) -> PairedVerdict:
    """A paired verdict with p `pvalue` (NaN: no test) and the raw p < alpha verdict."""
    status = TestOutcome.tested() if math.isfinite(pvalue) else TestOutcome.no_test("every pair tied")
    assert settings_.test is not None and settings_.confidence is not None
    return PairedVerdict(
        settings_.test,
        settings_.confidence,
        settings_.alternative,
        status,
        pvalue,
        20,
        1,
        {"no accepted rephrasing": 1},
        0.1,
        0.3,
        (0.01, math.inf),
        bool(pvalue < settings_.alpha),
        "with 20 pairs the minimum detectable effect at 80% power is d_z = 0.57",
    )


@settings(max_examples=60, deadline=None)
@given(
    pvalue=st.one_of(st.floats(0.0, 1.0), st.just(math.nan)),
    preset=st.sampled_from(["jaxcontam", "paper"]),
    correction=st.sampled_from(["holm", "bh", "none"]),
)
def test_a_pacost_result_reads_back_as_itself_before_and_after_the_sweep(pvalue, preset, correction):
    """The settings, the raw verdict and the sweep's decision come back from the flattened entry (equal as typed
    results where the numbers are finite: NaN is unequal to itself)."""
    settings_ = PacostSettings(preset=preset)
    verdict = verdict_at(pvalue, settings_)
    raw = PacostResult(preset, "kadavath", "auto", True, verdict, {"p_true_raw": verdict}, settings_)
    assert settings_.correction is not None
    test = SweptTest("m | b", pvalue, verdict.contaminated, settings_.correction)
    _, decisions = sweep_decisions([test, SweptTest("n | b", 0.5, False, "sweep")], 0.05, correction)
    decision = decisions[0]
    for result in (raw, dataclasses.replace(raw, decision=decision)):
        entry = json.loads(json.dumps(json_ready(result.to_dict())))
        read = PacostResult.from_dict(entry)
        assert json_ready(read.to_dict()) == entry
        if math.isfinite(pvalue):
            assert read == result
