"""summary.json read into the typed results and written again is the same file: every committed audit summary (those
of schema version 1, and of version 2 written while results still held verdicts, read into today's layout once and
then stable, every p-value and every verdict kept and every untested verdict null), and hand-made results with NaN
and infinite numbers, tests that did not run, detectors that did not run, sweep decisions and no sweep."""

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxcontam.detect.audit_core import headline_verdicts
from jaxcontam.detect.benchmark_results import Accuracy, DetectorSummary, GroundTruthResult, GroupSummary
from jaxcontam.detect.contam import ContamSettings, contam_result
from jaxcontam.detect.exchangeability import ExchangeabilityResult
from jaxcontam.detect.json_values import json_ready
from jaxcontam.detect.pacost.results import CalibratedVerdict, PacostResult, PairedVerdict
from jaxcontam.detect.pacost.settings import PacostSettings
from jaxcontam.detect.pacost.significance import paired_verdict
from jaxcontam.detect.status import TestOutcome
from jaxcontam.report.summary_schema import SCHEMA_VERSION, AuditSummary, RunEntry

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
def test_a_committed_version_1_summary_reads_into_version_3_keeping_every_test(path):
    """Written as version 3 it reads back to the same bytes; every PaCoST and ConTAM p-value is kept, a tested
    verdict keeps its value, and one whose status says no test becomes null (version 1 stored it as false)."""
    old = json.loads(path.read_text(encoding="utf-8"))
    assert old.get("schema_version", 1) == 1
    upgraded = written(AuditSummary.from_dict(old))
    new = json.loads(upgraded)
    assert new["schema_version"] == SCHEMA_VERSION == 3
    assert written(AuditSummary.from_dict(new)) == upgraded
    for before, after in zip(old["runs"], new["runs"], strict=True):
        verdicts = {v["detector"]: v for v in after["verdicts"]}
        for key, flag in (("pacost", "contaminated"), ("contam", "significant")):
            if before.get(key) is None:
                continue
            assert after[key]["pvalue"] == before[key]["pvalue"] and flag not in after[key]
            if key == "pacost" and "calibrated" in before[key]:
                continue  # the calibrated test is the headline (test_a_version_1_calibrated_entry_reads...)
            tested = before[key].get("status", "tested") == "tested"
            assert verdicts[key]["contaminated"] == (before[key][flag] if tested else None)
        assert list(verdicts) == [k for k in ("pacost", "exchangeability", "contam") if before.get(k) is not None]


@pytest.mark.parametrize("path", WRITTEN_AS_V2, ids=lambda path: path.parent.relative_to(ROOT).as_posix())
def test_a_committed_version_2_summary_reads_into_todays_layout_keeping_its_verdicts(path):
    """A version-2 summary written while results held verdicts: its stored verdicts, sweep and every test's p-value
    stand; the level is stored once (top-level alpha, none in the entries or settings) and no entry holds a verdict;
    written again it reads back to its own bytes."""
    old = json.loads(path.read_text(encoding="utf-8"))
    upgraded = written(AuditSummary.from_dict(old))
    new = json.loads(upgraded)
    assert written(AuditSummary.from_dict(new)) == upgraded
    assert new["alpha"] == old["alpha"] and new["sweep"] == old["sweep"] and "alpha" not in new["settings"]
    for before, after in zip(old["runs"], new["runs"], strict=True):
        assert after["verdicts"] == before["verdicts"]
        for key in ("pacost", "contam"):
            if before.get(key) is not None:
                assert after[key]["pvalue"] == before[key]["pvalue"]
                assert not {"alpha", "contaminated", "significant", "pvalue_adjusted"} & set(after[key])
        if before.get("pacost") is not None:
            assert [after["pacost"]["variants"][c]["pvalue"] for c in before["pacost"]["variants"]] == [
                v["pvalue"] for v in before["pacost"]["variants"].values()
            ]


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
        calibrated=CalibratedVerdict(
            "reference", "permutation", "p_true", math.nan, 0, math.nan, TestOutcome.no_test("no pairs")
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
    assert math.isnan(audited.pacost.verdict.pvalue)
    assert audited.contam is not None and not audited.contam.headline.status.ran
    assert audited.exchangeability is not None and audited.exchangeability.status.label.startswith("no test: ")
    # three outcomes: every test that could not run is not tested (null), never "not contaminated"
    assert [v.contaminated for v in audited.verdicts] == [None, None, None]
    assert [v.contaminated for v in scored.verdicts] == [True]  # exchangeability p = 0.0 < 0.05
    entry = json.loads(written(read))["runs"][0]
    assert [v["contaminated"] for v in entry["verdicts"]] == [None, None, None]
    assert entry["pacost"]["calibrated"]["pvalue"] is None and entry["contam"]["pvalue"] is None
    assert scored.exchangeability == ExchangeabilityResult(2, 5, math.inf, 0.0)
    assert scored.likelihood is not None and scored.likelihood["zlib_ratio"] == DetectorSummary(0.5, math.inf)


def verdict_at(pvalue: float, settings_: PacostSettings) -> PairedVerdict:
    """A paired test with p `pvalue` (NaN: no test)."""
    status = TestOutcome.tested() if math.isfinite(pvalue) else TestOutcome.no_test("every pair tied")
    assert settings_.test is not None and settings_.confidence is not None
    return PairedVerdict(
        settings_.test,
        settings_.confidence,
        settings_.alternative,
        status,
        2.5 if math.isfinite(pvalue) else math.nan,
        pvalue,
        20,
        1,
        {"no accepted rephrasing": 1},
        0.1,
        0.3,
        (0.01, math.inf),
        "with 20 pairs the minimum detectable effect at 80% power and level 0.05 is d_z = 0.57",
    )


@settings(max_examples=80, deadline=None)
@given(
    pvalue=st.one_of(st.floats(0.0, 1.0), st.just(math.nan)),
    preset=st.sampled_from(["jaxcontam", "paper"]),
    calibrated_p=st.one_of(st.none(), st.floats(0.0, 1.0), st.just(math.nan)),
)
def test_a_pacost_result_reads_back_as_itself(pvalue, preset, calibrated_p):
    """The settings and the tests (the authors' and, with a reference, the calibrated one) come back from the
    flattened entry (equal as typed results where the numbers are finite: NaN is unequal to itself)."""
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
            20 if ran else 0,
            0.1 if ran else math.nan,
            TestOutcome.tested() if ran else TestOutcome.no_test("no pairs"),
            statistic=0.1 if ran else math.nan,
        )
    result = PacostResult(
        preset, "kadavath", "auto", True, verdict, {"p_true_raw": verdict}, settings_, calibrated=calibrated
    )
    entry = json.loads(json.dumps(json_ready(result.to_dict())))
    read = PacostResult.from_dict(entry)
    assert json_ready(read.to_dict()) == entry
    if math.isfinite(pvalue) and (calibrated_p is None or math.isfinite(calibrated_p)):
        assert read == result


@pytest.mark.parametrize("correction", ["holm", "bh", "none"])
@pytest.mark.parametrize("preset", ["jaxcontam", "paper"])
def test_an_entry_holding_the_sweeps_decision_reads_with_its_settings(preset, correction):
    """A version-2 PaCoST entry written while results held verdicts carries the sweep's decision on its headline
    (its correction, verdict and adjusted p): read back, the settings are the ones it ran with and no verdict is
    read into the result."""
    settings_ = PacostSettings(preset=preset)
    result = PacostResult(preset, "kadavath", "auto", True, verdict_at(0.01, settings_), {}, settings_)
    decided = "none" if correction == "none" or settings_.correction == "none" else correction
    entry = result.to_dict() | {"alpha": 0.05, "contaminated": False, "correction": decided, "pvalue_adjusted": 0.2}
    read = PacostResult.from_dict(json.loads(json.dumps(json_ready(entry))))
    assert read == result and json_ready(read.to_dict()) == json_ready(result.to_dict())


def test_a_version_1_calibrated_entry_reads_as_an_uncorrected_calibrated_headline():
    """Schema 1's sweep decided the authors' test even beside a calibrated one: read back, the calibrated test is the
    headline, uncorrected at 0.05."""
    settings_ = PacostSettings()
    raw = PacostResult("jaxcontam", "kadavath", "auto", False, verdict_at(0.01, settings_), {}, settings_)
    entry = json.loads(json.dumps(json_ready(raw.to_dict())))
    entry |= {"correction": "holm", "contaminated": False, "pvalue_adjusted": 0.2}  # schema 1: the sweep's decision
    entry.pop("statistic")  # schema 1 recorded no statistic
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
    assert run.pacost is not None and run.pacost.settings.correction == "sweep"
    assert math.isnan(run.pacost.verdict.statistic)


def test_a_version_1_entry_decided_by_the_sweep_reads_with_that_decision():
    """Schema 1 kept the sweep's decision in PaCoST's entry and no `verdicts`: the headline verdict is derived at the
    summary's alpha with the stored decision (adjusted p, correction, verdict) on it."""
    settings_ = PacostSettings()
    raw = PacostResult("jaxcontam", "kadavath", "auto", False, verdict_at(0.01, settings_), {}, settings_)
    entry = json.loads(json.dumps(json_ready(raw.to_dict())))
    entry |= {"correction": "holm", "contaminated": False, "pvalue_adjusted": 0.2}
    (headline,) = RunEntry.from_dict({"model": "m", "benchmark": "b", "pacost": entry}).verdicts
    assert (headline.pvalue, headline.pvalue_adjusted, headline.correction) == (0.01, 0.2, "holm")
    assert headline.contaminated is False  # Holm's, not the raw 0.01 < 0.05
