"""The evidence an audit's inputs allow (`jaxcontam.report.evidence`): the packaged table is what its script generates
from the committed round-four results, the statement follows the inputs and the table, it reads back from
summary.json, shows on the console and in report.html, and the audit's defaults run the rule's picks."""

import dataclasses
import json
import pathlib

import pytest

from experiments.real_contamination import evidence_table
from jaxcontam.commands.verdicts import echo_verdicts
from jaxcontam.detect.pacost.settings import PacostSettings
from jaxcontam.detect.registry import DEFAULT_DETECTORS
from jaxcontam.report import write_report
from jaxcontam.report.evidence import (
    NOT_MEASURED,
    SCORED_ONLY,
    SITUATIONS,
    TABLE,
    EvidenceStatement,
    MeasuredEvidence,
    console_lines,
    evidence_statement,
    measured_evidence,
)
from jaxcontam.report.summary_schema import AuditSummary

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "real_contamination" / "results"
DEFAULT_CONFIDENCE = PacostSettings().confidence or ""


def picks(table: MeasuredEvidence):
    return {s.situation: s.strongest for s in table.situations if s.strongest is not None}


def test_the_packaged_table_is_what_the_script_generates_from_the_committed_results():
    script = evidence_table
    names = ("decision_rule.json", "round_four.json", "detectors.json")
    committed = [json.loads((RESULTS / name).read_text()) for name in names]
    assert json.loads(TABLE.read_text()) == json.loads(json.dumps(script.build(*committed)))
    decision_rule = committed[0]
    table = measured_evidence()
    assert [s.situation for s in table.situations] == list(SITUATIONS)
    for situation in table.situations:  # the picks are the rule's, never the best cell
        assert situation.pick == decision_rule["situations"][situation.situation].get("choice")
        ranks = [c.power_lower for c in situation.candidates]
        assert ranks == sorted(ranks, reverse=True)
        assert sum(c.picked for c in situation.candidates) == (situation.pick is not None)


def test_each_candidate_splits_its_power_by_form_of_contamination_and_names_the_forms_it_missed():
    rule = json.loads((RESULTS / "decision_rule.json").read_text())
    for situation in measured_evidence().situations:
        for c in situation.candidates:
            by_form = c.power_by_form or {}
            assert (sum(k for k, _ in by_form.values()), sum(n for _, n in by_form.values())) == (
                c.power.flagged,
                c.power.tested,
            )
            assert c.misses() == tuple(form for form, (k, n) in by_form.items() if n and not k)
            assert all(f"{form} {k}/{n}" in c.summary_text() for form, (k, n) in by_form.items())
            assert not c.misses() or f"none of the {' or '.join(c.misses())} halves" in c.summary_text()
            arms = next(
                e for e in rule["situations"][situation.situation]["candidates"] if e["detector"] == c.rule_label
            )
            assert set(arms["power_by_arm"]) <= set(measured_evidence().arms) | {"format_x4"}
    candidate = next(c for s in measured_evidence().situations for c in s.candidates)
    split = dataclasses.replace(
        candidate, power_by_form={"verbatim x1": (3, 6), "rephrased x4": (0, 3), "fields x4": (0, 0)}
    )
    assert split.misses() == ("rephrased x4",)  # a form without a half is not missed
    assert dataclasses.replace(candidate, power_by_form=None).misses() == ()


def test_a_score_of_the_arms_is_traced_to_its_registered_detector():
    assert evidence_table.detector_of("min_k_plus_plus") == "likelihood"
    assert evidence_table.detector_of("reference_log_ratio_control") == "reference_log_ratio"
    assert evidence_table.detector_of("dc_pdd") == "likelihood" and evidence_table.detector_of("gradnorm") == "gradnorm"
    with pytest.raises(SystemExit, match="no registered detector gives it"):
        evidence_table.detector_of("my_score")
    scored = evidence_table.scored({"aucs": [{"score": "recall"}, {"score": "gap_k"}, {"score": "zlib_ratio"}]})
    assert scored == {"likelihood": ["gap_k", "zlib_ratio"], "recall": ["recall"]}


def test_a_detector_scored_on_the_arms_without_a_test_is_told_apart_from_one_not_measured():
    table = dataclasses.replace(measured_evidence(), scored={"gradnorm": ("gradnorm",)})
    statement = evidence_statement(
        reference=False, corpus=False, models=1, ran=DEFAULT_DETECTORS, confidence=DEFAULT_CONFIDENCE, table=table
    )
    alone = statement.situations[0]
    assert alone.scored_only == ("gradnorm",) and "gradnorm" not in alone.not_measured
    assert "likelihood" in alone.not_measured  # not in this table's scores
    assert f"{SCORED_ONLY}: gradnorm" in "\n".join(console_lines(statement))
    assert EvidenceStatement.from_dict(json.loads(json.dumps(statement.to_dict()))) == statement


def test_a_candidate_name_the_script_does_not_know_is_refused():
    with pytest.raises(SystemExit, match="teach evidence_table.py"):
        evidence_table.parse_candidate("ReCaLL, prefix 5")


def test_a_model_alone_states_its_pick_and_what_to_add_for_the_strongest():
    table = measured_evidence()
    statement = evidence_statement(
        reference=False, corpus=False, models=1, ran=DEFAULT_DETECTORS, confidence=DEFAULT_CONFIDENCE
    )
    by_name = {s.situation: s for s in statement.situations}
    assert [s.applies for s in statement.situations] == [True, False, False, False]
    alone = by_name["model_alone"]
    assert alone.strongest == picks(table)["model_alone"] and alone.runs_strongest is True
    assert "likelihood" in alone.scored_only and "likelihood" not in alone.not_measured  # AUCs on the arms only
    assert "exchangeability" in alone.not_measured and "pacost" not in alone.not_measured
    assert by_name["reference_model"].runs_strongest is None  # not given: nothing run or not run
    strongest = max(picks(table).items(), key=lambda item: item[1].power_lower)
    if strongest[0] != "model_alone":  # today: calibrated against a reference model
        assert any(line.startswith(f"give {by_name[strongest[0]].needs}") for line in statement.advice)
    assert not by_name["corpus"].strongest and by_name["corpus"].note.startswith("not measured")


def test_a_reference_model_runs_the_calibrated_pick_and_an_explicit_other_confidence_is_named():
    table = measured_evidence()
    given = evidence_statement(
        reference=True, corpus=True, models=3, ran=DEFAULT_DETECTORS, confidence=DEFAULT_CONFIDENCE
    )
    assert all(s.applies for s in given.situations)
    assert not any(line.startswith("give") for line in given.advice) and not given.advice
    assert {s.situation: s.runs_strongest for s in given.situations if s.strongest} == dict.fromkeys(picks(table), True)
    other = evidence_statement(reference=True, corpus=False, models=1, ran=DEFAULT_DETECTORS, confidence="p_true")
    assert {s.situation: s.runs_strongest for s in other.situations if s.strongest} == dict.fromkeys(
        picks(table), False
    )
    wanted = picks(table)["reference_model"].confidence
    assert any(f"--confidence {wanted}" in line for line in other.advice)


def test_a_detector_the_table_does_not_hold_reads_not_measured():
    statement = evidence_statement(
        reference=False, corpus=False, models=1, ran=("pacost", "my_plugin"), confidence=DEFAULT_CONFIDENCE
    )
    assert statement.other_detectors == ("my_plugin",)
    assert f"also ran, {NOT_MEASURED}: my_plugin" in "\n".join(console_lines(statement))


def test_the_defaults_follow_the_rule():
    """Each measured situation's pick is what an audit with the defaults runs when that situation's input is given:
    PaCoST is a default detector at the pick's confidence (the calibrated verdict is the headline with a reference)."""
    for situation, pick in picks(measured_evidence()).items():
        assert pick.detector in DEFAULT_DETECTORS, f"{situation}: the rule picks {pick.label}, not run by default"
        assert pick.confidence == DEFAULT_CONFIDENCE, f"{situation}: the rule picks {pick.label}"
        assert pick.design in ("authors_test", "calibrated")  # both are audit verdicts


def test_the_statement_round_trips_through_summary_json_and_shows_on_console_and_report(tmp_path, capsys):
    statement = evidence_statement(
        reference=False, corpus=True, models=1, ran=(*DEFAULT_DETECTORS, "contam"), confidence="answer_logprob"
    )
    assert EvidenceStatement.from_dict(json.loads(json.dumps(statement.to_dict()))) == statement
    summary = AuditSummary(2, "test", 0.05, "holm", {}, (), None, evidence=statement)
    read = AuditSummary.from_dict(json.loads(json.dumps(summary.to_dict())))
    written = json.loads(json.dumps(summary.to_dict()))
    assert read.evidence == statement and json.loads(json.dumps(read.to_dict())) == written
    assert "evidence" not in AuditSummary(2, "test", 0.05, "holm", {}, (), None).to_dict()  # older: none
    echo_verdicts(read, tmp_path)
    printed = capsys.readouterr().out
    pick = picks(measured_evidence())["model_alone"]
    assert "evidence these inputs allow" in printed and pick.summary_text() in printed
    assert f"set --confidence {pick.confidence}" in printed and "give --reference-model" in printed
    html = write_report(read, [], tmp_path).read_text()
    assert "Evidence these inputs allow" in html and pick.power.text() in html
    assert "with a training corpus" in html and "not measured: round four" in html
