"""CI-sized run of the controlled-contamination experiment (experiments/contamination): a tiny model, every
stage (base training with orbax checkpoints, injection, decontamination control, in-training and final audits,
n-gram evidence), the report, and resuming a finished grid."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
GRID = REPO / "tests" / "data" / "contamination_smoke.toml"
CELLS = ("rate0-copies0-none-seed0", "rate0.5-copies2-prompt_answer-seed0", "rate0.5-copies2-file-decon-seed0")

# the experiment reads the benchmarks and corpora through jaxcontam's data roots (../shared/data)
pytestmark = [pytest.mark.shared_data, pytest.mark.skipif(not SHARED.is_dir(), reason="needs ../shared/data")]


def _run(*args: str) -> subprocess.CompletedProcess:
    """Run a module of the checkout (with the checkout's package, as the tests import it)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, *args], cwd=REPO, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> pathlib.Path:
    out = tmp_path_factory.mktemp("contamination")
    _run("-m", "experiments.contamination.run", "--grid", str(GRID), "--out", str(out))
    return out


def _cell(results: pathlib.Path, cell: str) -> dict:
    return json.loads((results / "cells" / f"{cell}.json").read_text())


def test_every_cell_records_every_detector(results):
    for cell in CELLS:
        record = _cell(results, cell)
        assert set(record["benchmarks"]) == {"gsm8k", "copa"}
        for entry in record["benchmarks"].values():
            assert {"likelihood", "pacost", "exchangeability", "contam", "seconds"} <= set(entry)
            assert set(entry["pacost"]["variants"]) == {"p_true", "p_true_raw", "question_min_k_plus_plus"}
            assert entry["exchangeability"]["chunks"] >= 2
            assert set(entry["contam"]["per_metric"]) == {"token_match", "ngram_match", "token_extend", "longest_match"}
        assert [h["step"] for h in record["in_training"]] == sorted({h["step"] for h in record["in_training"]})


def test_injection_and_the_decontamination_control(results):
    clean, contaminated, control = (_cell(results, c) for c in CELLS)
    assert clean["contaminated_items"] == {"gsm8k": 0, "copa": 0} and clean["n_injected_documents"] == 0
    assert contaminated["contaminated_items"] == {"gsm8k": 4, "copa": 4}
    assert contaminated["n_injected_documents"] == 2 * 8  # 2 copies of 4 + 4 items
    gsm8k = contaminated["benchmarks"]["gsm8k"]
    # every contaminated item's text was in the training data: n-gram evidence finds it whole
    assert gsm8k["contam"]["per_metric"]["longest_match"]["separation"]["auc"] == 1.0
    assert control["filter"]["dropped_injected"] == control["n_injected_documents"] == 4  # each leaked file, twice
    assert control["benchmarks"]["gsm8k"]["contam"]["per_metric"]["longest_match"]["separation"]["auc"] < 1.0


def test_the_report_and_a_resumed_run(results):
    rerun = _run("-m", "experiments.contamination.run", "--grid", str(GRID), "--out", str(results))
    assert rerun.stderr.count("done in an earlier run") == len(CELLS)
    _run("-m", "experiments.contamination.report", str(results))
    report = (results / "report.md").read_text()
    assert "False-positive rate" in report and "Minimum detectable" in report
    assert (results / "power_vs_rate.png").is_file()
