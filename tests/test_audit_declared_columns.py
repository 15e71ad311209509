"""Declared columns: each detector's per-item work declares the columns it writes and they name its stored chunks, so
an audit folder written before a confidence was added resumes (PaCoST's chunks computed again with the new column,
the likelihood chunks reused); ConTAM reads PaCoST's correctness by declaration; records that lack a declared column
are refused."""

import dataclasses
import json

import pytest
from click.testing import CliRunner

from helpers import small_toml
from jaxcontam.cli import cli
from jaxcontam.detect.pacost.confidences import CONFIDENCES, Confidence
from jaxcontam.detect.registry import DETECTORS
from jaxcontam.errors import JaxcontamError


def question_length(side) -> dict[str, list]:
    return {"question_length": [float(len(question)) for question in side.questions]}


@pytest.fixture
def a_new_confidence():
    """A confidence every audit measures (not on demand), registered after the folder was written."""
    yield lambda: CONFIDENCES.register(Confidence("question_length", question_length, "score", needs_answer=False))
    CONFIDENCES.unregister("question_length")


def chunk_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if ": chunk " in line]


def test_a_folder_written_before_a_confidence_was_added_resumes_with_it(tmp_path, a_new_confidence):
    config = small_toml(tmp_path, limit=4, chunk_size=4, exchangeability=False)
    first = CliRunner().invoke(cli, ["audit", "--config", config])
    assert first.exit_code in (0, 4), first.output
    assert all("reused" not in line for line in chunk_lines(first.output))
    a_new_confidence()
    resumed = CliRunner().invoke(cli, ["audit", "--config", config])
    assert resumed.exit_code == first.exit_code, resumed.output
    lines = chunk_lines(resumed.output)
    assert len(lines) == 4  # 2 stages x 2 benchmarks x 1 chunk
    assert all(("reused" in line) == ("likelihood" in line) for line in lines), lines
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    for run in summary["runs"]:
        assert run["pacost"]["variants"]["question_length"]["n_pairs"] >= 1


def test_contam_reads_pacost_correctness_by_declaration():
    contam, pacost = DETECTORS["contam"], DETECTORS["pacost"]
    assert contam.reads == ("correct",) and "correct" in pacost.provides(pacost.settings_type())
    assert {"mean_logprob", "min_k_plus_plus"} <= DETECTORS["likelihood"].provides(
        DETECTORS["likelihood"].settings_type()
    )
    paper = pacost.settings_type(preset="paper")
    assert {"p_yes_original", "judge_reply_rephrased"} <= pacost.provides(paper)
    assert "p_yes_original" not in pacost.provides(pacost.settings_type())  # measured only when chosen


def test_records_lacking_a_declared_column_are_refused():
    work = DETECTORS["likelihood"].per_item
    assert work is not None
    settings = DETECTORS["likelihood"].settings_type()
    work.check(
        "likelihood",
        settings,
        [{"id": "a", "mean_logprob": 0.0, "zlib_ratio": 1.0, "min_k": 0.0, "min_k_plus_plus": 0.0, "gap_k": 0.0}],
    )
    undeclared = dataclasses.replace(work, writes=lambda settings: ("mean_logprob", "lowercase_ratio"))
    with pytest.raises(JaxcontamError, match="lack the column\\(s\\) lowercase_ratio its per-item work declares"):
        undeclared.check("likelihood", settings, [{"id": "a", "mean_logprob": 0.0}])
