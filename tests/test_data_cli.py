"""`jaxcontam data show` and `jaxcontam data list` through click's CliRunner."""

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from jaxcontam.cli import cli
from jaxcontam.data import list_benchmarks
from jaxcontam.errors import DataError


@pytest.fixture
def run(shared_data, monkeypatch):
    monkeypatch.setenv("JAXCONTAM_DATA", str(shared_data))
    runner = CliRunner()
    return lambda *args: runner.invoke(cli, ["data", *args], catch_exceptions=True)


def test_show_prints_name_split_count_and_prompts(run):
    result = run("show", "mmlu", "--limit", "2")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("benchmark: mmlu\nsplit: test\ncount: 14042\n")
    assert "--- mmlu/test/abstract_algebra/1 (multiple_choice)" in result.output
    assert "about abstract algebra.\n\nFind the degree" in result.output
    assert "mmlu/test/abstract_algebra/2" not in result.output


def test_show_json_is_one_object_with_prompts(run):
    result = run("show", "gsm8k", "--split", "train", "--limit", "2", "--json")
    payload = json.loads(result.output)
    assert (payload["benchmark"], payload["split"], payload["count"]) == ("gsm8k", "train", 7473)
    assert [item["id"] for item in payload["items"]] == ["gsm8k/train/0", "gsm8k/train/1"]
    assert payload["items"][0]["answer"] == "72" and payload["items"][0]["prompt"].startswith("Question: Natalia")


def test_show_names_the_lm_eval_task_its_differences_and_each_continuation(run, tmp_path):
    result = run("show", "copa", "--limit", "1")
    assert "count: 100\nlm-eval task: copa\ndiffers from lm-eval: lm-eval evaluates validation;" in result.output
    assert '[1] * Water flowed from the spout.    continuation: "  water flowed from the spout."' in result.output
    payload = json.loads(run("show", "winogrande", "--limit", "1", "--json").output)
    assert payload["lm_eval"]["task"] == "winogrande" and "one context per option" in payload["lm_eval"]["differences"]
    assert payload["items"][0]["continuations"] == [" A", " B"]
    same = json.loads(run("show", "piqa", "--limit", "1", "--json").output)["lm_eval"]
    assert same == {"task": "piqa", "differences": "none: the same zero-shot context, continuations and gold"}
    file = tmp_path / "mine.csv"
    file.write_text("question,answer\nq,a\n", encoding="utf-8")
    assert json.loads(run("show", str(file), "--json").output)["lm_eval"] is None


def test_show_local_file_with_field_mappings(run, tmp_path):
    file = tmp_path / "mine.csv"
    file.write_text("text,a,b,gold\nPick one,left,right,B\n", encoding="utf-8")
    mapping = ["--field", "question=text", "--field", "choices=a,b", "--field", "answer=gold"]
    result = run("show", str(file), *mapping, "--json")
    payload = json.loads(result.output)
    assert (payload["benchmark"], payload["count"]) == ("mine", 1)
    assert payload["items"][0]["choices"] == ["left", "right"] and payload["items"][0]["answer"] == 1


def test_show_path_option_and_bad_input(run, shared_data, tmp_path):
    result = run("show", "copa", "--split", "test", "--path", str(shared_data / "copa"), "--limit", "1")
    assert "count: 500" in result.output and "copa/test/501" in result.output
    bad = run("show", str(tmp_path / "mine.csv"), "--field", "question")
    assert bad.exit_code == 2 and "is not KEY=COLUMN" in bad.output
    missing = run("show", "copa", "--split", "nope")
    assert isinstance(missing.exception, DataError)
    assert "local splits: train, validation, test, dev, balanced_dev" in str(missing.exception)


def test_list_names_every_benchmark(run):
    result = run("list")
    assert all(name in result.output for name in list_benchmarks())


def test_list_shows_the_paraphrase_sources_of_each_split_with_counts(run, shared_data):
    # XCOPA's English back-translations: test rows are COPA test items, validation rows COPA dev items.
    def rows(split):
        return {
            json.loads(line)["idx"]
            for file in (shared_data / "xcopa" / "data-gmt").glob(f"*/{split}.*.jsonl")
            for line in file.read_text(encoding="utf-8").splitlines()
            if line.strip()
        }

    copa = {
        split: sum(1 for line in (shared_data / "copa" / f"copa_{split}.jsonl").open() if line.strip())
        for split in ("dev", "test")
    }
    output = run("list").output
    block = output[output.index("\ncopa ") :].split("\narc_easy")[0]
    assert "splits: train, validation (default), test, dev, balanced_dev" in block
    assert f"paraphrases for --split test: xcopa_backtranslation ({len(rows('test'))} of {copa['test']} items)" in block
    assert f"paraphrases for --split validation: xcopa_backtranslation ({len(rows('val'))} of 100 items)" in block
    assert f"paraphrases for --split dev: xcopa_backtranslation ({len(rows('val'))} of {copa['dev']} items)" in block
    assert "paraphrases for --split test: gsm8k_rephrase (" in output and "gsm_plus (" in output


def test_errors_print_without_traceback_and_data_show_does_not_import_jax(shared_data):
    code = (
        "import sys; from jaxcontam.cli import main\n"
        "try:\n    main(['data', 'show', 'piqa', '--limit', '1'])\nexcept SystemExit:\n    pass\n"
        "print('jax' in sys.modules)\n"
        "main(['data', 'show', 'no_such_benchmark'])\n"
    )
    env = {"JAXCONTAM_DATA": str(shared_data), "PATH": "/usr/bin:/bin"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert "count: 1838" in result.stdout and result.stdout.strip().endswith("False")
    assert result.returncode == 2 and result.stderr.startswith("error: unknown benchmark 'no_such_benchmark'")
    assert "Traceback" not in result.stderr
