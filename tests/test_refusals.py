"""Inputs that cannot give a result are refused before any model or corpus work, naming the fix; a run where no
test ran says "no test: <reason>", never a verdict; third-party notices that mislead a jaxcontam user stay off
the console (issue 18)."""

import dataclasses
import html
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

import jaxcontam
from helpers import MODEL_LOAD_REACHED
from jaxcontam import cli
from jaxcontam.commands.verdicts import echo_verdicts
from jaxcontam.data import registry
from jaxcontam.detect.contam import ContamSettings, MetricVerdict, contam_result
from jaxcontam.detect.json_values import json_ready
from jaxcontam.detect.pacost.results import PacostResult
from jaxcontam.detect.pacost.settings import PacostSettings
from jaxcontam.detect.pacost.significance import paired_verdict
from jaxcontam.detect.registry import DETECTORS
from jaxcontam.report import write_report
from jaxcontam.report.formatting import verdict_phrase
from jaxcontam.report.summary_schema import AuditSummary, RunEntry

EXAMPLE = Path(jaxcontam.__file__).parent / "examples" / "tiny_contaminated"
MODEL = EXAMPLE / "model"


def test_paraphrases_covering_none_of_the_selection_are_refused_before_the_model(jaxcontam_cli, tmp_path):
    out = tmp_path / "out"
    code, err = jaxcontam_cli(
        "pacost",
        "--model",
        MODEL,
        "--benchmark",
        "copa",
        "--split",
        "dev",
        "--paraphrases",
        "xcopa_backtranslation",
        "--limit",
        "100",
        "--out",
        out,
    )
    assert code == 2, err
    assert MODEL_LOAD_REACHED not in err and not out.exists()
    # XCOPA's validation rows are COPA dev 401-500 and its test rows COPA test 501-1000 (XCOPA README).
    assert "covers 0 of the 100 selected items of split 'dev'" in err
    assert (
        "split 'test': 500 of 500 items, from copa/test/501; split 'validation': 100 of 100 items, from "
        "copa/validation/401; split 'dev': 100 of 500 items, from copa/dev/401"
    ) in err
    assert "--split" in err and "Traceback" not in err


def test_without_a_split_the_covered_split_is_chosen_and_said(jaxcontam_cli, tmp_path, monkeypatch):
    code, err = jaxcontam_cli(
        "pacost",
        "--model",
        MODEL,
        "--benchmark",
        "copa",
        "--paraphrases",
        "xcopa_backtranslation",
        "--out",
        tmp_path / "out",
    )
    assert err.startswith("model ") and MODEL_LOAD_REACHED in err  # COPA's default, validation, is covered: no warning
    # a default split the source covers too little of: COPA's default made its legacy `dev` (ids 1-500)
    copa = registry.BENCHMARKS["copa"]
    monkeypatch.setitem(registry.BENCHMARKS._entries, "copa", dataclasses.replace(copa, default_split="dev"))
    code, err = jaxcontam_cli(
        "pacost",
        "--model",
        MODEL,
        "--benchmark",
        "copa",
        "--paraphrases",
        "xcopa_backtranslation",
        "--limit",
        "100",
        "--out",
        tmp_path / "out",
    )
    assert err.startswith(
        "warning: benchmark copa: paraphrase source 'xcopa_backtranslation' covers too "
        "few of the selected items of the default split 'dev'; using split 'test' "
        "(100 of 100 covered). Pass --split to choose\n"
    ), err
    assert MODEL_LOAD_REACHED in err  # the run went on to the model with the covered split


def test_a_split_the_source_has_no_rephrasings_for_is_refused(jaxcontam_cli, tmp_path):
    code, err = jaxcontam_cli(
        "pacost",
        "--model",
        MODEL,
        "--benchmark",
        "gsm8k",
        "--split",
        "train",
        "--paraphrases",
        "gsm8k_rephrase",
        "--out",
        tmp_path / "out",
    )
    assert code == 2 and MODEL_LOAD_REACHED not in err
    assert "'gsm8k_rephrase' is for gsm8k split 'test', not gsm8k split 'train'; pass --split test" in err


def test_a_benchmark_without_answers_is_refused_before_the_model(jaxcontam_cli, tmp_path):
    items = tmp_path / "unlabelled.jsonl"
    items.write_text(json.dumps({"question": "What is two plus two?", "answer": ""}) + "\n")
    code, err = jaxcontam_cli("pacost", "--model", MODEL, "--benchmark", items, "--out", tmp_path / "out")
    assert code == 2 and MODEL_LOAD_REACHED not in err
    assert "1 item(s) have no gold answer (e.g. 'unlabelled/test/0')" in err
    assert "use a labelled split" in err


def test_a_corpus_folder_without_text_is_refused_before_the_model(jaxcontam_cli, tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "README.md").write_text("# the crawl")
    (corpus / "provenance.json").write_text(json.dumps([{"file": "crawl.txt", "commit": "abc"}]))
    out = tmp_path / "out"
    code, err = jaxcontam_cli(
        "audit", "--model", MODEL, "--benchmark", "copa", "--split", "test", "--corpus", corpus, "--out", out
    )
    assert code == 2 and MODEL_LOAD_REACHED not in err and not out.exists()
    assert "holds no corpus files" in err and "skipped README.md" in err


@pytest.mark.parametrize("command", ["audit", "ngram"])
def test_a_corpus_file_that_is_not_utf8_is_refused_before_any_work(jaxcontam_cli, tmp_path, command):
    """A Latin-1 file among UTF-8 ones (the shared inaugural-address corpus has one) is named with its line
    and the fix before the model is loaded or any text is tokenized."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("plain text\n" * 3, encoding="utf-8")
    (corpus / "b.txt").write_bytes("first line\nsecond line, caf\u00e9\n".encode("latin-1"))
    out = tmp_path / "out"
    if command == "audit":
        code, err = jaxcontam_cli(
            "audit", "--model", MODEL, "--benchmark", "copa", "--split", "test", "--corpus", corpus, "--out", out
        )
    else:
        code, err = jaxcontam_cli(
            "ngram", "--benchmark", "copa", "--split", "test", "--tokenizer", MODEL, "--corpus", corpus, "--out", out
        )
    assert code == 2 and MODEL_LOAD_REACHED not in err and not out.exists()
    assert "b.txt, line 2: not valid UTF-8" in err and "re-encode it as UTF-8" in err


@pytest.mark.parametrize("command", ["score", "generate"])
def test_the_out_folder_is_created_before_the_model(jaxcontam_cli, tmp_path, command):
    """A missing --out folder used to fail the run after all the model work."""
    out = tmp_path / "new" / "out.jsonl"
    code, err = jaxcontam_cli(
        command, "--model", MODEL, "--data", EXAMPLE / "copa_test_sample.jsonl", "--field", "text=premise", "--out", out
    )
    assert MODEL_LOAD_REACHED in err and out.parent.is_dir()


def no_test_summary() -> dict:
    """A run whose paraphrases were all rejected: the real paired_verdict, round-tripped through summary.json (no
    sweep has decided it)."""
    records = [
        {
            "rephrase": None,
            "p_true_original": 0.9,
            "p_true_rephrased": math.nan,
            "answer_original": "yes",
            "answer_rephrased": None,
        }
        for _ in range(5)
    ]
    verdict = paired_verdict(records, "p_true", PacostSettings())
    result = PacostResult("jaxcontam", "kadavath", "auto", False, verdict, {}, PacostSettings())
    pacost = json.loads(json.dumps(json_ready(result.to_dict())))
    run = {
        "model": "m",
        "benchmark": "copa",
        "split": "dev",
        "n_items": 5,
        "accuracy": {"acc": 0.6, "acc_norm": None},
        "pacost": pacost,
        "likelihood": None,
        "contam": None,
        "ground_truth": None,
    }
    return {
        "jaxcontam_version": jaxcontam.__version__,
        "alpha": 0.05,
        "runs": [run],
        "sweep": {
            "labels": [],
            "pvalues": [],
            "holm": {"adjusted": [], "reject": []},
            "bh": {"adjusted": [], "reject": []},
        },
    }


def test_no_test_reads_as_no_test_in_the_console_and_the_report(tmp_path):
    summary = no_test_summary()
    pacost = summary["runs"][0]["pacost"]

    def verdict_of(entry: dict) -> str:
        """The console's word on the headline verdict read from a summary without `verdicts` (derived at 0.05)."""
        (verdict,) = RunEntry.from_dict({"model": "m", "benchmark": "copa", "pacost": entry}).verdicts
        return verdict_phrase(verdict)

    assert verdict_of(pacost) == "no test: only 0 item(s) have an accepted rephrasing"
    assert verdict_of({**pacost, "status": "no test: every pair tied"}) == "no test: every pair tied"
    older = {k: v for k, v in pacost.items() if k != "status"}  # a summary written before `status` existed
    assert verdict_of(older) == "no test: only 0 item(s) have an accepted rephrasing: no test"
    assert verdict_of({**pacost, "status": "tested", "pvalue": 0.01, "contaminated": True}) == "CONTAMINATED"
    assert verdict_of({**older, "pvalue": 0.4, "contaminated": False}) == "not detected"
    page = write_report(AuditSummary.from_dict(summary), [], tmp_path).read_text(encoding="utf-8")
    assert "no test: only 0 item(s) have an accepted rephrasing" in page
    assert "badge ok" not in page and "badge bad" not in page and "badge none" in page


def contam_rows(n: int) -> list[dict]:
    """`n` items whose four ConTAM metrics are one spread of scores, half answered right."""
    return [
        {
            **dict.fromkeys(("token_match", "ngram_match", "token_extend", "longest_match"), i / n),
            "correct": float(i % 2),
        }
        for i in range(n)
    ]


def test_contam_without_a_sized_threshold_reads_as_no_test_not_as_no_gain(tmp_path, capsys):
    # 15 items: never 10 clean and 10 marked
    result = contam_result(contam_rows(15), ContamSettings(resamples=99))
    small = result.to_dict()
    reason = "no test: no threshold leaves >= 10 clean and >= 10 contaminated items (15 items)"
    assert small["status"] == reason and math.isnan(small["pvalue"]) and "significant" not in small
    assert all(m["status"] == reason for m in small["metrics"].values())
    headline = DETECTORS["contam"].headline
    assert headline is not None
    verdict = headline(result, 0.05)
    assert verdict is not None and verdict.contaminated is None and verdict_phrase(verdict) == reason
    assert contam_result(contam_rows(40), ContamSettings(resamples=99)).to_dict()["status"] == "tested"
    older = {k: v for k, v in small["metrics"]["longest_match"].items() if k != "status"}  # from before `status`
    assert MetricVerdict.from_dict({**older, "reason": "r"}).status.label == "no test: r"
    assert MetricVerdict.from_dict({**older, "reason": "r"}).significant_at(0.05) is None
    assert MetricVerdict.from_dict({**older, "pvalue": 0.2}).significant_at(0.05) is False

    summary = no_test_summary()
    summary["runs"][0]["contam"] = json.loads(json.dumps(json_ready(small)))
    echo_verdicts(AuditSummary.from_dict(summary), tmp_path)
    line = capsys.readouterr().out.splitlines()[0]
    assert f"max-z test: {reason}" in line and "gain" not in line
    page = write_report(AuditSummary.from_dict(summary), [], tmp_path).read_text(encoding="utf-8")
    assert html.escape(reason) in page and "badge ok" not in page and "badge bad" not in page


def test_transformers_pytorch_notice_stays_off_the_console():
    hide_torch = "import sys\nsys.modules['torch'] = None  # a user's runtime without PyTorch\n"
    plain = subprocess.run(
        [sys.executable, "-c", hide_torch + "import transformers"], capture_output=True, text=True, timeout=120
    )
    assert "PyTorch was not found" in plain.stderr  # the notice this test is about, shown without jaxcontam's CLI
    quiet = subprocess.run(
        [
            sys.executable,
            "-c",
            hide_torch + "from jaxcontam.cli import quiet_third_party\n"
            "quiet_third_party()\nimport transformers\nprint(transformers.AutoTokenizer.__name__)",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert quiet.stdout.strip() == "AutoTokenizer" and "PyTorch" not in quiet.stderr, quiet.stderr


def test_cpu_host_with_libtpu_skips_the_tpu_probe_unless_platforms_are_set(monkeypatch):
    monkeypatch.setattr(cli, "_probes_absent_tpu", lambda: True)
    monkeypatch.delenv("JAX_PLATFORMS", raising=False)
    cli.quiet_third_party()
    assert os.environ["JAX_PLATFORMS"] == "cpu"
    monkeypatch.setenv("JAX_PLATFORMS", "tpu,cpu")
    cli.quiet_third_party()
    assert os.environ["JAX_PLATFORMS"] == "tpu,cpu"
    monkeypatch.setattr(cli, "_probes_absent_tpu", lambda: False)
    monkeypatch.delenv("JAX_PLATFORMS")
    cli.quiet_third_party()
    assert "JAX_PLATFORMS" not in os.environ
