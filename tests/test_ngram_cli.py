"""`jaxcontam ngram` on real GSM8K items and a local corpus folder with some items pasted in."""

import json

import pyarrow.parquet as pq
import pytest

from jaxcontam.cli import main


@pytest.fixture(scope="module")
def leaky_folder(shared_data, tmp_path_factory):
    folder = tmp_path_factory.mktemp("corpus")
    text = (shared_data / "corpus_misc" / "tinyshakespeare" / "input.txt").read_text()
    (folder / "plays.txt").write_text(text[:200_000])
    questions = [json.loads(line)["question"] for line in (shared_data / "gsm8k" / "test.jsonl").open()][:5]
    with (folder / "forum.jsonl").open("w") as f:
        for q in questions:
            f.write(json.dumps({"text": f"{q}\nCan someone help with my homework? Thanks!"}) + "\n")
    return folder, questions


def run(args, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    captured = capsys.readouterr()
    return exit_info.value.code, captured.out + captured.err


def test_ngram_command_writes_items_and_reuses_counts(shared_data, leaky_folder, tmp_path, capsys):
    folder, questions = leaky_folder
    tokenizer = str(shared_data / "gpt2_tokenizer_whisper" / "gpt2.tiktoken")
    base = [
        "ngram",
        "--benchmark",
        "gsm8k",
        "--path",
        str(shared_data / "gsm8k"),
        "--split",
        "test",
        "--corpus",
        str(folder),
        "--tokenizer",
        tokenizer,
        "--scope",
        "fields",
        "--out",
        str(tmp_path),
    ]
    main(base)
    assert "counted" in capsys.readouterr().out
    rows = pq.read_table(tmp_path / "items.parquet").to_pylist()
    assert len(rows) == 1319 and set(rows[0]) >= {
        "id",
        "num_tokens",
        "token_match",
        "ngram_match",
        "token_extend",
        "longest_match",
        "longest_match_text",
        "longest_match_question",
        "longest_match_answer",
        "num_tokens_question",
    }
    for row, question in zip(rows[:5], questions):  # the question is copied, its solution is not
        assert row["longest_match_question"] == 1.0 and 0.2 < row["longest_match"] < 1.0
        # the item text starts "Question: ", which the pasted copy lacks: the n-grams touching the label miss
        assert row["longest_match_text"].strip() in question and len(row["longest_match_text"]) > 0.8 * len(question)
    assert sum(r["longest_match_question"] == 1.0 for r in rows) == 5

    main(base + ["--skip-budget", "3", "--mincount", "2"])
    assert "reused counts" in capsys.readouterr().out
    rows = pq.read_table(tmp_path / "items.parquet").to_pylist()
    assert max(r["longest_match_question"] for r in rows) < 1.0  # each pasted question occurs once: mincount 2 drops it

    code, message = run([*base[:-6], "--tokenizer", "words", "--scope", "fields", "--out", str(tmp_path)], capsys)
    assert code == 2 and "tokenizer" in message and "fresh output folder" in message


def test_ngram_command_refuses_bad_scope_and_counts_of_another_scope(shared_data, leaky_folder, tmp_path, capsys):
    folder, _ = leaky_folder
    base = [
        "ngram",
        "--benchmark",
        "gsm8k",
        "--path",
        str(shared_data / "gsm8k"),
        "--corpus",
        str(folder),
        "--tokenizer",
        "words",
        "--out",
        str(tmp_path),
    ]
    code, message = run([*base, "--scope", "rationale"], capsys)
    assert code == 2 and "--scope" in message and "rationale" in message
    main(base)
    code, message = run([*base, "--scope", "fields"], capsys)
    assert code == 2 and "scope" in message and "fresh output folder" in message
