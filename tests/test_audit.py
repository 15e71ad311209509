"""`jaxcontam audit` end to end on a small slice of the bundled example: outputs, resume after SIGKILL, bad input."""

import collections
import dataclasses
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest

from helpers import run_cli, small_toml, without_timings
from jaxcontam.audit.config import EXAMPLE_CONFIG, load_config
from jaxcontam.errors import JaxcontamError
from jaxcontam.report.summary_schema import SCHEMA_VERSION, read_summary

EXAMPLE = EXAMPLE_CONFIG.parent
DC_PDD = f"\n[likelihood]\nfrequency_table = {json.dumps(str(EXAMPLE / 'token_frequencies.npz'))}\n"  # shipped


def audit_command(config_path):
    return [sys.executable, "-m", "jaxcontam.cli", "audit", "--config", config_path]


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    folder = tmp_path_factory.mktemp("audit")
    environment = {**os.environ, "JAX_LOG_COMPILES": "1"}  # logged on a persistent-cache hit too
    done = subprocess.run(
        audit_command(small_toml(folder, extra=DC_PDD)), check=True, capture_output=True, text=True, env=environment
    )
    (folder / "audit-log.txt").write_text(done.stderr)
    return folder / "out"


# Issue 63: the bundled audit compiled 37 XLA programs (8 scoring, 3 prefill, 3 decode, ...), most of a cold run
# on a GPU; experiments/perf/audit_programs.py counts the whole bundled audit's (12), this slice of it runs fewer:
# 2 scoring (buckets 256 and 512, the latter for the exchangeability test's chunks), 3 generation (fill, decode,
# empty rows: one shape), 2 n-gram counts (a table each), window fingerprints and the decode's layer split.
MOST_PROGRAMS = 9


def test_audit_compiles_few_programs(finished):
    log = (finished.parent / "audit-log.txt").read_text()
    programs = collections.Counter(re.findall(r"Finished XLA compilation of (\S+) in", log))
    assert 0 < sum(programs.values()) <= MOST_PROGRAMS, programs
    assert programs["jit(score_step)"] <= 2, programs  # one program per bucket: the statistics always


def test_audit_writes_items_summary_plots_and_report(finished):
    rows = pq.read_table(finished / "items.parquet").to_pylist()
    assert len(rows) == 16 and {r["benchmark"] for r in rows} == {"gsm8k", "copa"}
    for column in (
        "p_true_original",
        "p_true_rephrased",
        "answer_logprob_original",
        "min_k_plus_plus",
        "gap_k",
        "dc_pdd",
        "zlib_ratio",
        "longest_match",
        "token_match",
        "correct",
        "ground_truth_contaminated",
    ):
        assert column in rows[0]
    summary = json.loads((finished / "summary.json").read_text())
    assert summary["schema_version"] == SCHEMA_VERSION
    assert [run.label for run in read_summary(finished).runs] == [
        f"{r['model']} | {r['benchmark']}" for r in summary["runs"]
    ]
    assert len(summary["runs"]) == 2
    for run in summary["runs"]:
        assert set(run["pacost"]) >= {
            "test",
            "statistic",
            "pvalue",
            "n_pairs",
            "n_dropped",
            "mean_difference",
            "effect_size",
            "ci",
        }
        assert not {"alpha", "contaminated", "pvalue_adjusted"} & set(run["pacost"])  # evidence, no verdict
        (pacost,) = [v for v in run["verdicts"] if v["detector"] == "pacost"]
        assert pacost["pvalue"] == run["pacost"]["pvalue"] and pacost["pvalue_adjusted"] is not None
        assert set(run["contam"]) >= {"metric", "threshold", "frac_contaminated", "epg", "epg_ci", "z"}
        assert set(run["likelihood"]) == {"mean_logprob", "zlib_ratio", "min_k", "min_k_plus_plus", "gap_k", "dc_pdd"}
        assert run["ground_truth"]["auc"].keys() >= {"gap_k", "dc_pdd"}
        assert run["pacost"]["n_pairs"] + run["pacost"]["n_dropped"] == run["n_items"] == 8
        exchangeability = run["exchangeability"]  # 8 items in the fewest chunks (>= 2) that fit 512 tokens
        assert exchangeability["status"] == "tested" and exchangeability["chunks"] in (2, 3, 4)
        assert 0 <= exchangeability["pvalue"] <= 1 and exchangeability["permutations"] == 2
    assert summary["settings"]["likelihood"] == {"frequency_table": str(EXAMPLE / "token_frequencies.npz")}
    html = (finished / "report.html").read_text()
    assert "Exchangeability (Oren et al.)" in html
    assert "Gap-K%" in html and "DC-PDD" in html
    evidence = read_summary(finished).evidence  # one model, a corpus, no reference; the example tests answer_logprob
    assert evidence is not None and "Evidence these inputs allow" in html
    applies = {s.situation: s.applies for s in evidence.situations}
    assert applies == {"model_alone": True, "reference_model": False, "corpus": True, "model_family": False}
    alone = evidence.situations[0]
    assert alone.strongest is not None and alone.runs_strongest is False  # the rule picks another confidence
    assert any(f"--confidence {alone.strongest.confidence}" in line for line in evidence.advice)
    assert "exchangeability" in alone.not_measured and evidence.situations[2].allows == ("contam",)
    assert "data:image/png;base64" in html and len(list((finished / "plots").glob("*.png"))) == 5


def test_audit_values_on_the_bundled_example(finished):
    """Pinned facts of the example: its contaminated half was copied verbatim (prompt + answer) 12 times."""
    rows = pq.read_table(finished / "items.parquet").to_pylist()
    truth = {
        json.loads(line)["id"]: json.loads(line)["contaminated"]
        for line in (EXAMPLE / "ground_truth.jsonl").read_text().splitlines()
    }
    assert {r["ground_truth_contaminated"] for r in rows} == {True, False}
    for row in rows:
        assert row["ground_truth_contaminated"] is truth[row["id"]]
        if row["ground_truth_contaminated"]:  # a verbatim copy of what the model sees: every metric is 1
            assert [row[m] for m in ("token_match", "ngram_match", "token_extend", "longest_match")] == [1.0] * 4
        else:
            assert row["longest_match"] < 0.6, row["id"]
    copa = [r for r in rows if r["benchmark"] == "copa"]
    assert all(r["correct"] == 1.0 for r in copa if r["ground_truth_contaminated"])  # memorised answers
    summary = json.loads((finished / "summary.json").read_text())
    for run in summary["runs"]:
        assert run["pacost"]["status"] == "tested" and run["pacost"]["confidence"] == "answer_logprob"
        # 8 items cannot leave >= 10 clean and >= 10 contaminated: no threshold search, so no test and no verdict
        assert run["contam"]["pvalue"] is None and "significant" not in run["contam"]  # not tested, not "no"
        assert run["contam"]["status"].startswith("no test: no threshold leaves >= 10 clean")
        contam = next(v for v in run["verdicts"] if v["detector"] == "contam")
        assert contam["outcome"] == "not tested" and contam["reason"].startswith("no threshold leaves >= 10 clean")
        assert run["ground_truth"]["auc"]["longest_match"] == 1.0


def test_killed_audit_resumes_to_identical_outputs(finished, tmp_path):
    config = small_toml(tmp_path, extra=DC_PDD)
    process = subprocess.Popen(audit_command(config), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    state = tmp_path / "out" / "state"
    deadline = time.time() + 300
    while time.time() < deadline and process.poll() is None:
        if any(p.stat().st_size > 0 for p in state.glob("pacost-*.jsonl")):
            break
        time.sleep(0.05)
    assert process.poll() is None, "the audit finished before it could be killed"
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert not (tmp_path / "out" / "summary.json").exists()
    finished_chunks = sum(len(p.read_text().splitlines()) for p in state.glob("*.jsonl"))
    assert finished_chunks >= 1

    resumed = subprocess.run(audit_command(config), check=True, capture_output=True, text=True)
    progress = [line for line in resumed.stderr.splitlines() if ": chunk " in line]
    assert len(progress) == 8  # 2 stages x 2 benchmarks x 2 chunks
    computed = [line for line in progress if "reused" not in line]
    assert len(computed) == 8 - finished_chunks
    assert pq.read_table(tmp_path / "out" / "items.parquet").equals(pq.read_table(finished / "items.parquet"))
    resumed_summary, finished_summary = (
        json.loads((f / "summary.json").read_text()) for f in (tmp_path / "out", finished)
    )
    assert without_timings(resumed_summary) == without_timings(finished_summary)
    assert set(resumed_summary["timings"]) == set(finished_summary["timings"])


def test_truncated_last_line_is_redone_and_a_corrupt_line_is_an_error(tmp_path):
    from jaxcontam.audit.store import StageStore, run_chunked

    store = StageStore(tmp_path, "stage", {"k": 1})
    run_chunked(store, list(range(6)), 2, lambda chunk: [{"x": x} for x in chunk])
    text = store.path.read_text()
    store.path.write_text(text[:-10])  # a kill in the middle of the last write
    calls = []
    records = run_chunked(
        StageStore(tmp_path, "stage", {"k": 1}),
        list(range(6)),
        2,
        lambda chunk: calls.append(chunk) or [{"x": x} for x in chunk],
    )
    assert calls == [[4, 5]] and [r["x"] for r in records] == list(range(6))
    store.path.write_text("garbage\n" + text)
    with pytest.raises(JaxcontamError, match="corrupted"):
        StageStore(tmp_path, "stage", {"k": 1})


def test_a_chunk_is_reused_only_for_the_items_it_was_computed_on(tmp_path):
    from jaxcontam.audit.store import StageStore, run_chunked

    calls = []

    def compute(chunk):
        calls.append(list(chunk))
        return [{"x": x} for x in chunk]

    run_chunked(StageStore(tmp_path, "stage", {"k": 1}), [0, 1, 2, 3, 4, 5], 2, compute)
    edited = [0, 1, 2, 30, 4, 5]  # the same stage key, one item of the second chunk changed
    records = run_chunked(StageStore(tmp_path, "stage", {"k": 1}), edited, 2, compute)
    assert calls[3:] == [[2, 30]] and [r["x"] for r in records] == edited
    records = run_chunked(StageStore(tmp_path, "stage", {"k": 1}), edited, 2, compute)  # the later line holds
    assert len(calls) == 4 and [r["x"] for r in records] == edited


def test_an_edited_benchmark_file_in_the_same_folder_recomputes_its_changed_chunks(tmp_path, capsys):
    """The same benchmark (name and split) read from another file into the same output folder: the chunks whose
    items changed are computed again, the others reused."""
    config = small_toml(tmp_path, limit=8, chunk_size=4, exchangeability=False)
    code, printed = run_cli(["pacost", "--config", config], capsys)
    assert code == 0, printed
    lines = (EXAMPLE_CONFIG.parent / "gsm8k_test_sample.jsonl").read_text().splitlines()
    item = json.loads(lines[5])
    item["question"] = item["question"].replace("ordered", "bought")  # small: its rephrasing still passes the gates
    edited = tmp_path / "gsm8k_edited.jsonl"
    edited.write_text("\n".join(lines[:5] + [json.dumps(item)] + lines[6:]) + "\n")
    text = pathlib.Path(config).read_text()
    pathlib.Path(config).write_text(
        text.replace(json.dumps(str(EXAMPLE_CONFIG.parent / "gsm8k_test_sample.jsonl")), json.dumps(str(edited)))
    )
    code, printed = run_cli(["pacost", "--config", config], capsys)
    assert code == 0, printed
    gsm8k = [line for line in printed.splitlines() if ": chunk " in line and "gsm8k" in line]
    copa = [line for line in printed.splitlines() if ": chunk " in line and "copa" in line]
    assert gsm8k and all(("reused" in line) == ("chunk 1/" in line) for line in gsm8k)
    assert copa and all("reused" in line for line in copa)
    rows = pq.read_table(tmp_path / "out" / "items.parquet").to_pandas()
    assert rows[rows.benchmark == "gsm8k"].question.tolist()[5] == item["question"]


def config_with(tmp_path, **changes):
    config = load_config(small_toml(tmp_path))
    return dataclasses.replace(config, **changes)


def test_unknown_model_path_fails_before_any_work(tmp_path):
    from jaxcontam.audit.config import ModelEntry
    from jaxcontam.audit.run import run_audit

    config = config_with(tmp_path, models=(ModelEntry(path=str(tmp_path / "nope"), name="nope"),))
    with pytest.raises(JaxcontamError, match="no such directory"):
        run_audit(config)
    assert not (tmp_path / "out").exists()


def test_benchmark_without_answers_and_empty_benchmark_are_refused(tmp_path):
    from jaxcontam.audit.config import BenchmarkEntry
    from jaxcontam.audit.run import run_audit

    unlabeled = tmp_path / "unlabeled.jsonl"
    unlabeled.write_text(json.dumps({"question": "What is 2 + 2?", "answer": ""}) + "\n")
    config = config_with(tmp_path, benchmarks=(BenchmarkEntry(name=str(unlabeled)),))
    with pytest.raises(JaxcontamError, match="no gold answer"):
        run_audit(config)
    empty = dataclasses.replace(
        config.benchmarks[0], name="gsm8k", path=str(EXAMPLE / "gsm8k_test_sample.jsonl"), offset=10**6
    )  # (limit = 0 is refused as the config is built: test_config_ranges)
    with pytest.raises(JaxcontamError, match="has no items"):
        run_audit(dataclasses.replace(config, benchmarks=(empty,)))
    assert not (tmp_path / "out").exists()


def test_counts_from_another_tokenizer_are_refused(tmp_path, shared_data):
    from jaxcontam.audit.run import run_audit

    config = load_config(small_toml(tmp_path))
    config = dataclasses.replace(
        config,
        ngram=dataclasses.replace(config.ngram, tokenizer=str(shared_data / "gpt2_tokenizer_whisper/gpt2.tiktoken")),
        corpus=dataclasses.replace(config.corpus, counts=str(tmp_path / "counts")),
    )
    from jaxcontam.audit.inputs import check_inputs
    from jaxcontam.audit.run import ngram_rows

    ngram_rows(config, check_inputs(config), tmp_path / "out")  # counts with the GPT-2 tokenizer
    with pytest.raises(JaxcontamError, match="tokenizer"):
        run_audit(
            dataclasses.replace(config, ngram=dataclasses.replace(config.ngram, tokenizer=None))
        )  # the model's own tokenizer: the saved counts do not match


@pytest.mark.parametrize(
    "extra, where",
    [
        ("\nmodle = 1\n", r"\[exchangeability\]"),
        ("\n[ngram]\nmincont = 2\n", r"\[ngram\]"),
        ("\n[[benchmark]]\nname = 'copa'\nsplt = 'test'\n", r"\[\[benchmark\]\] #3"),
    ],
)
def test_unknown_config_key_is_an_error_naming_its_table(tmp_path, extra, where):
    path = small_toml(tmp_path, extra=extra)
    with pytest.raises(JaxcontamError, match=where + ": unknown key"):
        load_config(path)
