"""`TestOutcome`: the typed status of a test and its summary.json text, read back exactly."""

import math

import pytest

from jaxcontam.detect.pacost.settings import PacostSettings
from jaxcontam.detect.pacost.significance import paired_verdict
from jaxcontam.detect.status import TestOutcome, TestStatus


def test_label_round_trips_and_keeps_the_summary_strings():
    assert TestOutcome.tested().label == "tested"
    no_test = TestOutcome.no_test("only 1 item(s) have an accepted rephrasing")
    assert no_test.label == "no test: only 1 item(s) have an accepted rephrasing"
    for outcome in (TestOutcome.tested(), no_test):
        assert TestOutcome.from_label(outcome.label) == outcome
    assert no_test.status is TestStatus.NO_TEST and not no_test.ran


def test_a_reason_comes_exactly_with_no_test_and_unknown_text_is_refused():
    with pytest.raises(ValueError, match="exactly when no test ran"):
        TestOutcome(TestStatus.TESTED, "why")
    with pytest.raises(ValueError, match="exactly when no test ran"):
        TestOutcome(TestStatus.NO_TEST)
    with pytest.raises(ValueError, match="neither 'tested' nor"):
        TestOutcome.from_label("skipped")


def test_a_summary_without_status_is_read_from_its_pvalue():
    assert TestOutcome.from_summary({"pvalue": 0.2}).ran
    assert TestOutcome.from_summary({"pvalue": None, "reason": "r"}) == TestOutcome.no_test("r")
    assert TestOutcome.from_summary({"pvalue": math.nan}).reason == "no p-value"


def test_paired_verdict_carries_the_typed_status_and_writes_its_label():
    records = [{"rephrase": None, "p_true_original": 0.5, "p_true_rephrased": 0.5}] * 3
    verdict = paired_verdict(records, "p_true", PacostSettings())
    assert verdict.status == TestOutcome.no_test("only 0 item(s) have an accepted rephrasing")
    assert verdict.to_dict()["status"] == "no test: only 0 item(s) have an accepted rephrasing"
