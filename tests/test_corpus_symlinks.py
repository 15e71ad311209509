"""A corpus is what it was given (issue 61.4): the readers of `ngram`, `decontaminate` and the audit leave out a
symbolic link (to a file or a folder) that leads outside the corpus folder or glob, and report it (count, first
link), unless `--follow-symlinks` (the audit: `[corpus] follow_symlinks`) asks for it; links inside are read."""

import json
import os

import pytest

from helpers import run_cli
from jaxcontam.audit.config import load_config
from jaxcontam.data.corpus import open_corpus
from jaxcontam.decontam.shards import list_shards
from jaxcontam.errors import JaxcontamWarning
from jaxcontam.storage import list_files

SECRET = "root:x:0:0:the secret outside the corpus"


@pytest.fixture
def linked(tmp_path):
    """corpus/ holds a.jsonl, a link to it (inside), a link to a file outside (passwd.txt), a link to a folder
    outside (more/), and a link back to itself (a loop)."""
    outside = tmp_path / "outside"
    (outside / "folder").mkdir(parents=True)
    (outside / "passwd").write_text(SECRET + "\n")
    (outside / "folder" / "b.jsonl").write_text(json.dumps({"text": SECRET}) + "\n")
    corpus = tmp_path / "corpus"
    (corpus / "sub").mkdir(parents=True)
    (corpus / "a.jsonl").write_text(json.dumps({"id": "a", "text": "a document of the corpus itself"}) + "\n")
    os.symlink(corpus / "a.jsonl", corpus / "sub" / "again.jsonl")
    os.symlink(outside / "passwd", corpus / "passwd.txt")
    os.symlink(outside / "folder", corpus / "more")
    os.symlink(corpus, corpus / "sub" / "loop")
    return corpus


def test_links_leading_outside_the_folder_are_left_out_and_reported(linked):
    with pytest.warns(JaxcontamWarning, match=r"left out 2 symbolic link\(s\).*first: more/.*--follow-symlinks"):
        _, files = list_files(linked)
    assert [label for _, label in files] == ["a.jsonl", "sub/again.jsonl"]  # the inside link is read, once
    with pytest.warns(JaxcontamWarning, match="left out 2"):
        corpus = open_corpus(linked)
    assert [d.text for d in corpus.documents()] == ["a document of the corpus itself"] * 2
    with pytest.warns(JaxcontamWarning, match="left out 2"):
        assert [s.label for s in list_shards([str(linked)])] == ["a.jsonl", "sub/again.jsonl"]


def test_follow_symlinks_reads_what_the_links_lead_to(linked):
    _, files = list_files(linked, follow_symlinks=True)
    assert [label for _, label in files] == ["a.jsonl", "more/b.jsonl", "passwd.txt", "sub/again.jsonl"]
    texts = [d.text for d in open_corpus(linked, follow_symlinks=True).documents()]
    assert texts.count(SECRET) == 1 and texts.count(SECRET + "\n") == 1


def test_a_glob_leaves_out_matches_that_lead_outside_its_folder(linked):
    with pytest.warns(JaxcontamWarning, match=r"left out 1 .*passwd\.txt"):
        _, matched = list_files(str(linked / "*.*"))
    assert [label for _, label in matched] == ["a.jsonl"]
    _, matched = list_files(str(linked / "*.*"), follow_symlinks=True)
    assert [label for _, label in matched] == ["a.jsonl", "passwd.txt"]


def test_decontaminate_copies_no_file_it_was_not_given(shared_data, linked, tmp_path, capsys):
    base = ["decontaminate", "--benchmark", "gsm8k", "--path", shared_data / "gsm8k", "--split", "test"]
    out = tmp_path / "out"
    code, text = run_cli([*base, "--corpus", linked, "--out", out, "--workers", 1], capsys)
    assert code == 0, text
    assert "left out 2 symbolic link(s)" in text and "--follow-symlinks" in text
    cleaned = sorted(p.relative_to(out / "cleaned").as_posix() for p in (out / "cleaned").rglob("*") if p.is_file())
    assert cleaned == ["a.jsonl", "sub/again.jsonl"]
    assert SECRET not in "".join(p.read_text() for p in (out / "cleaned").rglob("*") if p.is_file())
    followed = tmp_path / "followed"
    code, text = run_cli([*base, "--corpus", linked, "--out", followed, "--workers", 1, "--follow-symlinks"], capsys)
    assert code == 0, text
    assert (followed / "cleaned" / "passwd.txt").read_text() == SECRET + "\n"


def test_the_audit_reads_follow_symlinks_from_its_corpus_table(tmp_path):
    config = tmp_path / "audit.toml"
    base = '[[model]]\npath = "m"\n[[benchmark]]\nname = "gsm8k"\n[corpus]\npaths = ["c"]\n'
    config.write_text(base)
    assert load_config(config).corpus.follow_symlinks is False
    config.write_text(base + "follow_symlinks = true\n")
    assert load_config(config).corpus.follow_symlinks is True
