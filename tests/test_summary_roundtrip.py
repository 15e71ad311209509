"""summary.json read into the typed results and written again is the same file: every committed audit summary (all of
schema version 1, read into version 2 once and then stable, every p-value kept and every untested verdict null), and
hand-made results with NaN and infinite numbers, tests that did not run, detectors that did not run, sweep decisions
and no sweep."""

import dataclasses
import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxcontam.audit.sweep import sweep_decisions
from jaxcontam.detect.benchmark_results import Accuracy, DetectorSummary, GroundTruthResult, GroupSummary
from jaxcontam.detect.contam import ContamSettings, contam_result
from jaxcontam.detect.exchangeability import ExchangeabilityResult
from jaxcontam.detect.json_values import json_ready
from jaxcontam.detect.pacost.results import CalibratedVerdict, PacostResult, PairedVerdict, SweepDecision
from jaxcontam.detect.pacost.settings import PacostSettings
from jaxcontam.detect.pacost.significance import paired_verdict
from jaxcontam.detect.status import TestOutcome
from jaxcontam.detect.verdict import Verdict
from jaxcontam.report.summary_schema import SCHEMA_VERSION, AuditSummary, RunEntry, headline_verdicts

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = sorted(ROOT.glob("experiments/real_contamination/results/arms/*/audit_jaxcontam/summary.json")) + [
    ROOT / "experiments/real_model/results/audit/summary.json",
    ROOT / "experiments/real_model/results/audit-paper/summary.json",  # the `paper` preset: sampled answers, judge
]


def _version(path: Path) -> int:
    return json.loads(path.read_text(encoding="utf-8")).get("schema_version", 1)


FIXTURES = [path for path in COMMITTED if _version(path) == 1]  # written before schema 2
WRITTEN_AS_V2 = [path for path in COMMITTED if _version(path) == 2]  # the round-four arms


def written(summary: AuditSummary) -> str:
    """summary.json's text as `audit.run.write_outputs` writes it."""
    return json.dumps(json_ready(summary.to_dict()), indent=2) + "\n"


@pytest.mark.parametrize("path", FIXTURES, ids=lambda path: path.parent.relative_to(ROOT).as_posix())
def test_a_committed_version_1_summary_reads_into_version_2_keeping_every_test(path):
    """Written as version 2 it reads back to the same bytes; every PaCoST and ConTAM p-value is kept, a tested
    verdict keeps its value, and one whose status says no test becomes null (version 1 stored it as false)."""
    old = json.loads(path.read_text(encoding="utf-8"))
    assert old.get("schema_version", 1) == 1
    upgraded = written(AuditSummary.from_dict(old))
    new = json.loads(upgraded)
    assert new["schema_version"] == SCHEMA_VERSION == 2
    assert written(AuditSummary.from_dict(new)) == upgraded
    for before, after in zip(old["runs"], new["runs"], strict=True):
        for key, flag in (("pacost", "contaminated"), ("contam", "significant")):
            if before.get(key) is None:
                continue
            assert after[key]["pvalue"] == before[key]["pvalue"]
            tested = before[key].get("status", "tested") == "tested"
            assert after[key][flag] == (before[key][flag] if tested else None)
        assert [v["detector"] for v in after["verdicts"]] == [
            k for k in ("pacost", "exchangeability", "contam") if before.get(k) is not None
        ]


@pytest.mark.parametrize("path", WRITTEN_AS_V2, ids=lambda path: path.parent.relative_to(ROOT).as_posix())
def test_a_committed_version_2_summary_reads_back_to_its_own_bytes(path):
    """Byte for byte, once the entries of detectors registered after it was written (null: they did not run) are
    left out."""
    from jaxcontam.detect.registry import DETECTORS

    text = path.read_text(encoding="utf-8")
    again = json.loads(written(AuditSummary.from_dict(json.loads(text))))
    for run, before in zip(again["runs"], json.loads(text)["runs"], strict=True):
        added = set(run) - set(before)
        assert added <= set(DETECTORS.names()) and all(run.pop(name) is None for name in added)
    assert json.dumps(again, indent=2) + "\n" == text


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
        decision=SweepDecision("none", math.nan, None),
        calibrated=CalibratedVerdict(
            "reference", "permutation", "p_true", math.nan, None, 0, math.nan, TestOutcome.no_test("no pairs")
        ),
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
    audited_results = {
        "pacost": pacost,
        "likelihood": likelihood,
        "exchangeability": ExchangeabilityResult(None, 10, None, math.nan, "no chunking fits the model's context"),
        "contam": contam_result(rows, ContamSettings(resamples=9)),
    }
    audited = RunEntry(
        "m",
        "gsm8k",
        "test",
        3,
        accuracy=Accuracy(math.nan, None),
        results=audited_results,
        ground_truth=ground_truth,
        verdicts=headline_verdicts(audited_results, 0.05),
    )
    scored_results = {"likelihood": likelihood, "exchangeability": ExchangeabilityResult(2, 5, math.inf, 0.0)}
    scored = RunEntry("m", "copa", None, 4, results=scored_results, verdicts=headline_verdicts(scored_results, 0.05))
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
    # three outcomes: every test that could not run is not tested (null), never "not contaminated"
    assert [v.contaminated for v in audited.verdicts] == [None, None, None]
    assert [v.contaminated for v in scored.verdicts] == [True]  # exchangeability p = 0.0 < 0.05
    entry = json.loads(written(read))["runs"][0]
    assert entry["pacost"]["calibrated"]["contaminated"] is None and entry["contam"]["significant"] is None
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
        bool(pvalue < 0.05) if math.isfinite(pvalue) else None,
        "with 20 pairs the minimum detectable effect at 80% power is d_z = 0.57",
    )


@settings(max_examples=80, deadline=None)
@given(
    pvalue=st.one_of(st.floats(0.0, 1.0), st.just(math.nan)),
    preset=st.sampled_from(["jaxcontam", "paper"]),
    correction=st.sampled_from(["holm", "bh", "none"]),
    calibrated_p=st.one_of(st.none(), st.floats(0.0, 1.0), st.just(math.nan)),
)
def test_a_pacost_result_reads_back_as_itself_before_and_after_the_sweep(pvalue, preset, correction, calibrated_p):
    """The settings, the raw verdicts (the authors' and, with a reference, the calibrated one) and the sweep's
    decision on the headline come back from the flattened entry (equal as typed results where the numbers are
    finite: NaN is unequal to itself)."""
    settings_ = PacostSettings(preset=preset)
    verdict = verdict_at(pvalue, settings_)
    calibrated = None
    if calibrated_p is not None:
        ran = math.isfinite(calibrated_p)
        calibrated = CalibratedVerdict(
            "ref",
            "permutation",
            "p_true",
            calibrated_p,
            bool(calibrated_p < 0.05) if ran else None,
            20 if ran else 0,
            0.1 if ran else math.nan,
            TestOutcome.tested() if ran else TestOutcome.no_test("no pairs"),
        )
        pvalue = calibrated_p  # the headline the sweep decides
    raw = PacostResult(
        preset, "kadavath", "auto", True, verdict, {"p_true_raw": verdict}, settings_, calibrated=calibrated
    )
    headline_contaminated = raw.contaminated
    assert settings_.correction is not None
    reason = None if math.isfinite(pvalue) else "every pair tied"
    test = Verdict("pacost", "t", headline_contaminated, pvalue, None, settings_.correction, True, reason)
    other = Verdict("pacost", "t", False, 0.5, None, "sweep", True)
    _, decisions = sweep_decisions([("m | b", test), ("n | b", other)], 0.05, correction)
    decision = decisions[0]
    for result in (raw, dataclasses.replace(raw, decision=decision)):
        entry = json.loads(json.dumps(json_ready(result.to_dict())))
        read = PacostResult.from_dict(entry)
        assert json_ready(read.to_dict()) == entry
        if math.isfinite(pvalue) and math.isfinite(verdict.pvalue):
            assert read == result


def test_a_version_1_calibrated_entry_reads_as_an_uncorrected_calibrated_headline():
    """Schema 1's sweep decided the authors' test even beside a calibrated one: read back, the calibrated test is the
    headline, uncorrected at 0.05, and the authors' raw verdict is p < 0.05 again."""
    settings_ = PacostSettings()
    raw = PacostResult("jaxcontam", "kadavath", "auto", False, verdict_at(0.01, settings_), {}, settings_)
    entry = json.loads(
        json.dumps(json_ready(dataclasses.replace(raw, decision=SweepDecision("holm", 0.2, False)).to_dict()))
    )
    entry.pop("alpha")  # schema 1 did not record PaCoST's level
    entry["calibrated"] = {  # schema 1's calibrated entry: no status
        "reference": "ref",
        "test": "permutation",
        "confidence": "p_true",
        "pvalue": 0.03,
        "contaminated": True,
        "n_pairs": 20,
        "mean_difference": 0.1,
    }
    run = RunEntry.from_dict({"model": "m", "benchmark": "b", "pacost": entry})
    (headline,) = run.verdicts
    assert headline.test.endswith("calibrated against ref") and headline.contaminated is True
    assert headline.correction == "sweep" and headline.pvalue == 0.03 and headline.pvalue_adjusted is None
    assert run.pacost is not None and run.pacost.verdict.contaminated is True  # the authors' 0.01 < 0.05, raw
