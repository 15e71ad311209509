"""`--out` overwrites nothing it did not write (issue 61.4): an output folder is claimed by a marker naming the command
that writes it; a non-empty folder without that command's marker is refused before any work, a rerun of the same
command resumes, and decontaminate deletes only the scratch folders it made."""

import json

import pytest

from experiments.object_stores import s3_server
from helpers import run_cli, small_toml
from jaxcontam.errors import DataError
from jaxcontam.storage import OUTPUT_MARKER, claim_output


def test_a_folder_is_claimed_when_absent_or_empty_and_refused_when_it_holds_other_files(tmp_path):
    claim_output(tmp_path / "new", "ngram")
    marker = json.loads((tmp_path / "new" / OUTPUT_MARKER).read_text())
    assert marker == {"command": "ngram", "format": 1}
    claim_output(tmp_path / "new", "ngram")  # a rerun of the same command resumes
    with pytest.raises(DataError, match="outputs of jaxcontam ngram, not of decontaminate"):
        claim_output(tmp_path / "new", "decontaminate")
    (tmp_path / "empty").mkdir()
    claim_output(tmp_path / "empty", "audit")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "summary.json").write_text("my own results")
    with pytest.raises(DataError, match=r"mine: the folder is not empty \(summary\.json.*empty or new folder") as info:
        claim_output(mine, "audit")
    assert f'write {{"command": "audit", "format": 1}} to {mine}/{OUTPUT_MARKER}' in str(info.value)
    assert not (mine / OUTPUT_MARKER).exists() and (mine / "summary.json").read_text() == "my own results"
    (mine / OUTPUT_MARKER).write_text(json.dumps({"command": "audit", "format": 2}))
    with pytest.raises(DataError, match="newer jaxcontam"):
        claim_output(mine, "audit")
    (mine / OUTPUT_MARKER).write_text("not json")
    with pytest.raises(DataError, match="not a jaxcontam output marker"):
        claim_output(mine, "audit")


def test_a_bucket_folder_is_claimed_and_refused_as_a_local_one():
    with s3_server() as (direct, _):
        direct.mkdir("outs")
        direct.pipe("outs/mine/report.html", b"<p>my report</p>")
        with pytest.raises(DataError, match="not empty"):
            claim_output("s3://outs/mine", "audit")
        claim_output("s3://outs/fresh", "audit")
        assert json.loads(direct.cat("outs/fresh/" + OUTPUT_MARKER)) == {"command": "audit", "format": 1}
        claim_output("s3://outs/fresh/", "audit")
        with pytest.raises(DataError, match="outputs of jaxcontam audit"):
            claim_output("s3://outs/fresh", "ngram")
        assert direct.cat("outs/mine/report.html") == b"<p>my report</p>"


def test_decontaminate_refuses_a_users_folder_resumes_its_own_and_deletes_only_its_scratch(
    shared_data, tmp_path, capsys
):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.jsonl").write_text(json.dumps({"text": "a document without benchmark items"}) + "\n")
    base = ["decontaminate", "--benchmark", "gsm8k", "--path", shared_data / "gsm8k", "--split", "test"]
    base += ["--corpus", corpus, "--workers", 1, "--out"]
    mine = tmp_path / "mine"
    (mine / ".partial-notes").mkdir(parents=True)
    (mine / "summary.json").write_text("my own summary")
    code, text = run_cli([*base, mine], capsys)
    assert code != 0 and "not empty" in text and "no jaxcontam decontaminate run wrote it" in text
    assert (mine / "summary.json").read_text() == "my own summary" and (mine / ".partial-notes").is_dir()

    out = tmp_path / "out"
    code, text = run_cli([*base, out], capsys)
    assert code == 0, text
    (out / ".partial-users").mkdir()  # not decontaminate's: kept
    (out / ".partial-killed").mkdir()  # a killed run's scratch: removed
    (out / ".partial-killed" / ".jaxcontam-scratch").touch()
    code, text = run_cli([*base, out], capsys)
    assert code == 0, text  # the rerun resumes in its own folder
    assert (out / ".partial-users").is_dir() and not (out / ".partial-killed").exists()
    code, text = run_cli(
        ["ngram", "--benchmark", "gsm8k", "--corpus", corpus, "--tokenizer", "words", "--out", out], capsys
    )
    assert code != 0 and "outputs of jaxcontam decontaminate, not of ngram" in text


def test_the_audit_refuses_a_users_folder_before_any_model_work(tmp_path, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "items.parquet").write_bytes(b"the user's own table")
    code, text = run_cli(["pacost", "--config", small_toml(tmp_path, out=mine)], capsys)
    assert code != 0 and "mine: the folder is not empty (items.parquet" in text
    assert (mine / "items.parquet").read_bytes() == b"the user's own table"


def test_score_refuses_to_overwrite_a_file_it_did_not_write(tmp_path, capsys):
    data = tmp_path / "texts.txt"
    data.write_text("one text to score\n")
    mine = tmp_path / "notes.jsonl"
    mine.write_text('{"my": "notes"}\n')
    code, text = run_cli(["score", "--model", tmp_path / "no-model", "--data", data, "--out", mine], capsys)
    assert code != 0 and "not the output of an earlier jaxcontam score" in text
    assert mine.read_text() == '{"my": "notes"}\n'
    mine.write_text(json.dumps({"id": "1", "num_tokens": 4, "token_logprobs": []}) + "\n")  # an earlier score's
    code, text = run_cli(["score", "--model", tmp_path / "no-model", "--data", data, "--out", mine], capsys)
    assert "not the output" not in text  # it goes on, to the missing model


def test_a_folder_an_earlier_jaxcontam_wrote_before_markers_is_marked_and_resumes(tmp_path):
    """Known by the command's own record: an audit's summary.json, decontaminate's run.json, contaminate's
    settings.json, ngram's counts; a file of the same name that is not that record is a user's."""
    audit = tmp_path / "audit"
    audit.mkdir()
    (audit / "summary.json").write_text(json.dumps({"schema_version": 1, "jaxcontam_version": "0.1.0", "runs": []}))
    claim_output(audit, "pacost")
    assert json.loads((audit / OUTPUT_MARKER).read_text())["command"] == "pacost"
    decontaminated = tmp_path / "decontaminated"
    decontaminated.mkdir()
    (decontaminated / "run.json").write_text(json.dumps({"index": {}, "table": "abc", "run": {}}))
    claim_output(decontaminated, "decontaminate")
    users = tmp_path / "users"
    users.mkdir()
    (users / "summary.json").write_text(json.dumps({"runs": [], "note": "mine"}))
    with pytest.raises(DataError, match="not empty"):
        claim_output(users, "audit")
    (users / "counts").mkdir()
    with pytest.raises(DataError, match="not empty"):
        claim_output(users, "ngram")
