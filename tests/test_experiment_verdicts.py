"""The experiments' readers of summary.json and items.parquet verdicts count a test that could not run as not tested,
never as not detected, in both schemas: schema 1 stored it as `contaminated: false` / `significant: false` beside
`status: "no test: <reason>"` (the `calibrated` entry without a status, its p-value NaN), schema 2 as null
(`experiments/summary_verdicts.py`; real_contamination's report and crossover, contamination's report, real_model's
report). Tiny synthetic entries only: no committed numbers."""

import json
import math

import numpy as np
import pandas as pd
import pytest

import experiments.contamination.report
import experiments.real_contamination.crossover
import experiments.real_contamination.report
import experiments.real_model.report
from experiments import summary_verdicts

REASON = "1 usable pair(s) of 34: the judge's reply said neither yes nor no on 31 of the 32 items with a rephrasing"

# one PaCoST entry per schema that could not run, and one of each that ran
V1_NO_TEST = {
    "test": "t",
    "confidence": "p_yes",
    "pvalue": None,
    "n_pairs": 1,
    "contaminated": False,
    "status": f"no test: {REASON}",
}
V1_NO_TEST_NAN = V1_NO_TEST | {"pvalue": math.nan}
V1_CALIBRATED_NO_TEST = {
    "reference": "base",
    "test": "permutation",
    "confidence": "p_true",
    "pvalue": math.nan,
    "contaminated": False,
    "n_pairs": 0,
    "mean_difference": math.nan,
}  # schema 1: no status
V2_NO_TEST = V1_NO_TEST | {"contaminated": None}
V1_TESTED = {
    "test": "t",
    "confidence": "p_yes",
    "pvalue": 0.01,
    "n_pairs": 30,
    "contaminated": True,
    "status": "tested",
}
V2_TESTED_NEGATIVE = V1_TESTED | {"pvalue": 0.4, "contaminated": False}
CONTAM_V1_NO_TEST = {
    "metric": "longest_match",
    "pvalue": None,
    "significant": False,
    "epg": None,
    "threshold": None,
    "status": "no test: no threshold leaves >= 5 clean and >= 5 contaminated items (68 items)",
}
CONTAM_V2_NO_TEST = CONTAM_V1_NO_TEST | {"significant": None}


@pytest.fixture(scope="module")
def verdicts():
    return summary_verdicts


@pytest.fixture(scope="module")
def report():
    return experiments.real_contamination.report


def test_schema_1_and_2_no_tests_are_not_tested_whatever_contaminated_says(verdicts):
    for entry in (V1_NO_TEST, V1_NO_TEST_NAN, V1_CALIBRATED_NO_TEST, V2_NO_TEST, CONTAM_V1_NO_TEST, None, {}):
        assert verdicts.outcome(entry) == verdicts.NOT_TESTED, entry
    assert verdicts.outcome(CONTAM_V2_NO_TEST, "significant") == verdicts.NOT_TESTED
    assert verdicts.outcome(V1_TESTED | {"pvalue": 0.01, "status": "no test: a stale p"}) == verdicts.NOT_TESTED
    assert verdicts.outcome(V1_TESTED) == verdicts.CONTAMINATED
    assert verdicts.outcome(V2_TESTED_NEGATIVE) == verdicts.NOT_DETECTED
    headline = {
        "detector": "pacost",
        "outcome": "not tested",
        "contaminated": None,
        "pvalue": math.nan,
        "reason": REASON,
    }  # a schema-2 run's `verdicts` entry
    assert verdicts.outcome(headline) == verdicts.NOT_TESTED and verdicts.no_test_label(headline).endswith(REASON)
    counts = verdicts.tally(verdicts.outcome(e) for e in (V1_NO_TEST, V2_NO_TEST, V1_TESTED, V2_TESTED_NEGATIVE))
    assert counts == {"flagged": 1, "tested": 2, "untested": 2}


def _pacost_items() -> pd.DataFrame:
    """Two benchmarks, PaCoST's answer log-prob on each half: COPA's contaminated half has a clear gap, its clean
    half none; GSM8K's contaminated half has no rephrasing at all (no test), its clean half no gap."""
    rng = np.random.default_rng(0)
    rows = []
    for benchmark in ("copa", "gsm8k"):
        for i in range(24):
            drawn = i < 12
            untestable = benchmark == "gsm8k" and drawn
            base = rng.normal(-2.0, 0.3)
            rows.append(
                {
                    "benchmark": benchmark,
                    "id": f"{benchmark}/{i}",
                    "drawn": drawn,
                    "rephrase": None if untestable else "a rewording",
                    "answer_original": "an answer",
                    "answer_rephrased": None if untestable else "an answer",
                    "answer_logprob_original": base
                    + (1.0 if benchmark == "copa" and drawn else 0.0)
                    + rng.normal(0, 0.05),
                    "answer_logprob_rephrased": np.nan if untestable else base + rng.normal(0, 0.05),
                }
            )
    return pd.DataFrame(rows)


def test_real_contamination_rates_are_over_the_tested_halves(report):
    row = report.pacost_halves(_pacost_items(), "jaxcontam")["pacost_jaxcontam_answer_logprob"]
    assert math.isnan(row["pvalues"]["gsm8k"]["contaminated"])  # no test: stored as NaN, not as a p-value
    assert row["n"] == [1, 2]  # tested halves: the untested GSM8K half is out of the denominator
    assert row["power"] == 1.0 and row["fpr"] == 0.0  # schema 1's reading (untested = not flagged) gave 1 / 2
    assert row["flags"]
    cell = report.rate_cell(row)
    assert cell.startswith("1/1 [") and "/ 0/2 [" in cell and cell.endswith("(no test on 1 / 0)")
    none_tested = {
        "power": None,
        "power_ci95": [math.nan] * 2,
        "fpr": None,
        "fpr_ci95": [math.nan] * 2,
        "n": [0, 0],
        "flags": False,
        "pvalues": {b: {"contaminated": math.nan, "clean": math.nan} for b in ("copa", "gsm8k", "mmlu")},
    }
    assert report.rate_cell(none_tested) == "no test on 3 / 3"  # never "0% / 0%"
    fake = {
        "arms": {
            "verbatim_x4": {"detectors": {"pacost_paper_p_yes": none_tested}},
            "verbatim_x1": {"detectors": {"pacost_paper_p_yes": row}},
        }
    }
    doses = report.smallest_doses(fake)["pacost_paper_p_yes"]
    assert doses["not_tested"] == ["verbatim_x4"] and doses["flags"] == ["verbatim_x1"]
    docs = report.docs_table(fake)
    assert "| no test on 3 / 3 |" in docs and "| 1/1 / 0/2 * (no test on 1 / 0) |" in docs


def test_real_contamination_contam_table_reads_both_schemas(report, tmp_path):
    arms = {}
    for arm, contam in (("control", CONTAM_V1_NO_TEST), ("verbatim_x1", CONTAM_V2_NO_TEST)):
        folder = tmp_path / arm / "audit_jaxcontam"
        folder.mkdir(parents=True)
        summary = {
            "schema_version": 1 if arm == "control" else 2,
            "runs": [
                {
                    "benchmark": "gsm8k",
                    "pacost": V1_NO_TEST if arm == "control" else V2_NO_TEST,
                    "contam": contam,
                    "ground_truth": {"auc": {}},
                }
            ],
        }
        (folder / "summary.json").write_text(json.dumps(summary))
        arms[arm] = {"audit": report.summary_entries(tmp_path / arm, "jaxcontam")}
    text = report.markdown({"arms": arms, "smallest_dose": {}})
    rows = [line for line in text.splitlines() if line.startswith(("| control | gsm8k", "| verbatim_x1 | gsm8k"))]
    assert len(rows) == 2 and all(row.endswith("| no test |") for row in rows)


def test_crossover_calibrated_counts_leave_untested_halves_out():
    crossover = experiments.real_contamination.crossover
    rng = np.random.default_rng(1)
    frames = {}
    for arm in ("control", "verbatim_x4", "base"):
        rows = []
        for benchmark in crossover.BENCHMARKS:
            for i in range(16):
                drawn = i < 8
                original = rng.normal(0, 1)
                # verbatim_x4's contaminated MMLU half has no rephrased confidence: no test
                missing = arm == "verbatim_x4" and benchmark == "mmlu" and drawn
                rows.append(
                    {
                        "id": f"{benchmark}/{i}",
                        "benchmark": benchmark,
                        "drawn": drawn,
                        "p_true_original": original,
                        "p_true_rephrased": np.nan if missing else original - rng.normal(0, 0.1),
                    }
                )
        frames[arm] = pd.DataFrame(rows).set_index("id", drop=False)
    out = crossover.calibrated_pacost(
        {a: frames[a] for a in ("control", "verbatim_x4")}, frames["base"], confidences=("p_true",)
    )
    power = out["summary"]["calibrated_p"]["power_contaminated_halves"]
    assert power["n"] == 2 and power["untested"] == 1  # 3 contaminated halves, one without a test
    assert out["summary"]["calibrated_p"]["fpr_clean_halves_of_contaminated_arms"]["untested"] == 0
    text = "\n".join(crossover.calibrated_markdown(out, "base"))
    assert f"{power['flagged']}/2 (" in text and "; 1 not tested)" in text


def test_contamination_report_counts_seeds_it_could_not_test_apart():
    contamination = experiments.contamination.report

    def record(seed: int, pacost: dict) -> dict:
        entry = {
            "pacost": pacost | {"variants": {}},
            "likelihood": {},
            "exchangeability": {},
            "contam": {
                "per_metric": {
                    "longest_match": {
                        "max_z": 1.0,
                        "pvalue": 0.5,
                        "status": "tested",
                        "separation": {"auc": 0.9, "pvalue": 0.001},
                    }
                }
            },
        }
        return {
            "cell": {"rate": 0.5, "copies": 4, "form": "prompt_answer", "decontaminate": False, "seed": seed},
            "benchmarks": {"gsm8k": entry},
        }

    records = [record(0, V1_TESTED), record(1, V1_NO_TEST_NAN), record(2, V2_NO_TEST), record(3, V2_TESTED_NEGATIVE)]
    # 1 of the 2 tested seeds detected (median p of 0.01 and 0.4), the 2 untested apart
    assert contamination.summary_cell(records, "gsm8k", "PaCoST answer log-prob") == "1/2 (p 0.21; 2 no test)"
    # ConTAM LONGEST-MATCH reads the separation's p-value, not the max-z verdict's beside it
    assert contamination.summary_cell(records, "gsm8k", "ConTAM LONGEST-MATCH") == "4/4 (p 0.001, AUC 0.90)"
    only_untested = [record(0, V1_NO_TEST), record(1, V2_NO_TEST)]
    assert contamination.summary_cell(only_untested, "gsm8k", "PaCoST answer log-prob") == "-"


def test_real_model_verdict_cell_says_no_test(tmp_path):
    real_model = experiments.real_model.report
    for entry in (V1_NO_TEST, V1_NO_TEST_NAN, V2_NO_TEST):
        assert real_model.verdict_cell(entry) == f"no test: {REASON}"
        assert real_model.pvalue_cell(entry) == "no test"
    assert real_model.verdict_cell(V1_TESTED) == "contaminated (p 0.01, t)"
    assert real_model.verdict_cell(V2_TESTED_NEGATIVE) == "not flagged (p 0.4, t)"
    items = pd.DataFrame({"token_match": [0.0, 0.2], "longest_match": [0.0, 0.1]})
    for contam in (CONTAM_V1_NO_TEST, CONTAM_V2_NO_TEST):
        assert real_model.contam_cell(contam, items).endswith(CONTAM_V1_NO_TEST["status"])
