"""experiments/real_contamination/compare_audits.py: two audit folders agree only when they hold the same items,
texts and verdict outcomes and every number within the tolerance; missing values count as equal only on both sides.
Tiny synthetic audits only."""

import json
import math
import pathlib

import pandas as pd
import pytest

import experiments.real_contamination.compare_audits


@pytest.fixture(scope="module")
def compare_audits():
    return experiments.real_contamination.compare_audits


def _audit(folder: pathlib.Path, scores, reasons, outcome="not detected", pvalue=0.2) -> pathlib.Path:
    folder.mkdir()
    pd.DataFrame(
        {
            "model": "m",
            "benchmark": "copa",
            "id": ["a", "b", "c"],
            "p_true_original": scores,
            "rephrase_reason": reasons,
        }
    ).to_parquet(folder / "items.parquet")
    verdict = {"detector": "pacost", "test": "t", "outcome": outcome, "pvalue": pvalue}
    summary = {"runs": [{"model": "m", "benchmark": "copa", "verdicts": [verdict]}]}
    (folder / "summary.json").write_text(json.dumps(summary))
    return folder


def test_an_audit_agrees_with_itself_missing_values_included(compare_audits, tmp_path):
    folder = _audit(tmp_path / "a", [0.1, math.nan, 0.3], [None, "numbers_changed", None])
    result = compare_audits.compare(folder, folder)
    assert result.numeric == {"p_true_original": 0.0}
    assert result.text == {"rephrase_reason": 0}
    assert result.agrees(0.0)


def test_a_number_beyond_the_tolerance_disagrees_and_within_agrees(compare_audits, tmp_path):
    a = _audit(tmp_path / "a", [0.1, 0.2, 0.3], [None, None, None])
    b = _audit(tmp_path / "b", [0.1, 0.2 + 3e-5, 0.3], [None, None, None])
    result = compare_audits.compare(a, b)
    assert result.numeric["p_true_original"] == pytest.approx(3e-5)
    assert result.agrees(1e-4) and not result.agrees(1e-5)


def test_a_value_missing_on_one_side_or_another_text_or_outcome_disagrees(compare_audits, tmp_path):
    a = _audit(tmp_path / "a", [0.1, 0.2, 0.3], [None, "x", None])
    assert math.isinf(
        compare_audits.compare(a, _audit(tmp_path / "b", [0.1, math.nan, 0.3], [None, "x", None])).numeric[
            "p_true_original"
        ]
    )
    assert compare_audits.compare(a, _audit(tmp_path / "c", [0.1, 0.2, 0.3], [None, None, None])).text == {
        "rephrase_reason": 1
    }
    flipped = compare_audits.compare(
        a, _audit(tmp_path / "d", [0.1, 0.2, 0.3], [None, "x", None], "CONTAMINATED", 0.01)
    )
    assert flipped.verdicts == [("m/copa", "pacost", "not detected", "CONTAMINATED", 0.2, 0.01)]
    assert not flipped.agrees(1.0)


def test_a_schema_1_summary_is_read_by_its_pacost_entry_and_an_untested_one_is_not_tested(compare_audits, tmp_path):
    folder = _audit(tmp_path / "a", [0.1, 0.2, 0.3], [None, None, None])
    pacost = {"test": "t", "pvalue": None, "contaminated": False, "status": "no test: 1 usable pair(s) of 34"}
    summary = {"schema_version": 1, "runs": [{"model": "m", "benchmark": "copa", "pacost": pacost}]}
    (folder / "summary.json").write_text(json.dumps(summary))
    result = compare_audits.compare(folder, folder)
    assert result.verdicts == [("m/copa", "pacost", "not tested", "not tested", None, None)]
    assert result.agrees(0.0)
