"""summary.json's manifest and `jaxcontam decontaminate --reproduce`: a run repeated from its summary alone gives
the same bytes; a changed input shard or benchmark file is refused, naming it; the summary is a typed, versioned
result that round-trips."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from helpers import run_cli as run
from jaxcontam.decontam.manifest import SCHEMA_VERSION, DecontSummary, read_summary
from jaxcontam.decontam.report import render as render_report


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def benchmark_file(shared_data, tmp_path_factory) -> Path:
    """A copy of GSM8K's test file (a test may change it)."""
    folder = tmp_path_factory.mktemp("bench")
    shutil.copy(shared_data / "gsm8k" / "test.jsonl", folder / "test.jsonl")
    return folder / "test.jsonl"


def _corpus(shared_data, benchmark_file: Path, folder: Path) -> None:
    """Pile text in a .jsonl.zst, a .parquet and a .jsonl.gz shard (with two bad lines); every third document holds
    a GSM8K item, as the model sees it or as the dataset's question and answer."""
    from jaxcontam.data import load_benchmark
    from jaxcontam.decontam import benchmark_items

    items = benchmark_items([load_benchmark("gsm8k", path=benchmark_file, split="test")])
    rows = [json.loads(line) for line in benchmark_file.read_text().splitlines()[:60]]
    with gzip.open(next((shared_data / "mimir_pile_nonmembers" / "wikipedia_en").rglob("*.jsonl.gz")), "rt") as f:
        pile = [json.loads(line)["text"][:2000] for _, line in zip(range(60), f)]
    records = []
    for k, text in enumerate(pile):
        if k % 6 == 0:
            text = f"{text[:800]}\n{items[k].whole}\n{text[800:]}"
        elif k % 6 == 3:
            text = f"{text[:800]}\n{rows[k]['question']}\n{rows[k]['answer']}\n{text[800:]}"
        records.append({"id": f"doc-{k}", "text": text, "source": "wikipedia"})
    folder.mkdir()
    lines = "".join(json.dumps(r) + "\n" for r in records[:20]).encode()
    (folder / "a.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(lines))
    pq.write_table(pa.Table.from_pylist(records[20:40]), folder / "b.parquet")
    bad = b'{"id": "bad", "text": "cut\n' + b'{"id": "latin", "text": "caf\xe9"}\n'
    lines = "".join(json.dumps(r) + "\n" for r in records[40:]).encode()
    (folder / "c.jsonl.gz").write_bytes(gzip.compress(lines[:3000] + b"\n" + bad + lines[3000:], mtime=0))


def _files(out: Path) -> dict[str, bytes]:
    """Every output file but the two that hold timings (summary.json, the shard markers)."""
    return {
        p.relative_to(out).as_posix(): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and p.name != "summary.json" and p.parent.name != "shards"
    }


def test_reproduce_gives_the_same_bytes_and_refuses_a_changed_shard(shared_data, benchmark_file, tmp_path, capsys):
    corpus = tmp_path / "corpus"
    _corpus(shared_data, benchmark_file, corpus)
    out = tmp_path / "out"
    first = [
        *("decontaminate", "--benchmark", "gsm8k", "--path", benchmark_file, "--split", "test"),
        *("--corpus", corpus, "--out", out, "--policy", "spans", "--cutoff", 1000, "--on-bad-line", "skip"),
    ]
    code, text = run([*first, "--workers", 1], capsys)
    assert code == 0, text
    summary = json.loads((out / "summary.json").read_text())
    assert summary["schema_version"] == SCHEMA_VERSION and summary["total"]["matched"] >= 5
    manifest = summary["manifest"]
    from jaxcontam import __version__

    assert manifest["jaxcontam_version"] == __version__ == summary["jaxcontam_version"]
    (bench,) = manifest["benchmarks"]
    assert bench["name"] == "gsm8k" and bench["split"] == "test" and bench["items"] == 1319
    size = benchmark_file.stat().st_size
    assert bench["files"] == [{"path": str(benchmark_file.resolve()), "bytes": size, "sha256": _sha256(benchmark_file)}]
    assert manifest["index"]["settings"]["n"] == 13 and manifest["index"]["table_sha256"]
    assert manifest["index"]["settings"]["escapes"] is True  # the default, resolved
    assert manifest["run"]["policy"] == "spans" and manifest["run"]["spans"]["cutoff"] == 1000
    assert manifest["run"]["on_bad_line"] == "skip"
    assert manifest["corpora"] == [str(corpus)]
    assert {s["label"]: (s["bytes"], s["sha256"]) for s in manifest["shards"]} == {
        p.name: (p.stat().st_size, _sha256(p)) for p in corpus.iterdir()
    }
    assert DecontSummary.from_dict(summary).to_dict() == summary  # typed, and read back whole
    typed = read_summary(out / "summary.json")
    assert typed.not_findable is not None and typed.common_ngrams is None and "not_findable" not in typed.extra
    report = (out / "report.html").read_text()
    assert render_report(typed) == report  # the report is its summary.json read back
    assert _sha256(benchmark_file) in report and "--reproduce OUT/summary.json" in report

    again = tmp_path / "again"  # from the summary alone, in another process count, from another folder
    code, text = run(["decontaminate", "--reproduce", out / "summary.json", "--out", again, "--workers", 2], capsys)
    assert code == 0, text
    assert _files(again) == _files(out)  # cleaned shards, matches, items, rejects, report: byte for byte
    assert len(_files(out)) >= 9
    reproduced = json.loads((again / "summary.json").read_text())
    assert reproduced["manifest"] == manifest
    assert {k: reproduced[k] for k in ("total", "benchmarks", "shards", "rejects")} == {
        k: summary[k] for k in ("total", "benchmarks", "shards", "rejects")
    }

    code, text = run(["decontaminate", "--reproduce", out / "summary.json", "--out", again, "--cutoff", 5], capsys)
    assert code == 2 and "drop --cutoff" in text  # the settings come from the manifest alone

    shard = corpus / "c.jsonl.gz"  # the same documents, packed again: other bytes
    shard.write_bytes(gzip.compress(gzip.decompress(shard.read_bytes()), compresslevel=1, mtime=0))
    code, text = run(["decontaminate", "--reproduce", out / "summary.json", "--out", tmp_path / "changed"], capsys)
    assert code == 2 and "input shard c.jsonl.gz" in text and "changed since the run" in text, text
    assert "restore that file" in text
    assert not (tmp_path / "changed").exists()  # refused before anything is written
    shard.unlink()
    code, text = run(["decontaminate", "--reproduce", out / "summary.json", "--out", tmp_path / "changed"], capsys)
    assert code == 2 and "missing: c.jsonl.gz" in text


def test_reproduce_from_another_folder_and_a_changed_benchmark_file(
    shared_data, benchmark_file, tmp_path, capsys, monkeypatch
):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.jsonl").write_text(json.dumps({"text": "nothing of any benchmark here at all"}) + "\n")
    bench = tmp_path / "gsm8k.jsonl"
    shutil.copy(benchmark_file, bench)
    out = tmp_path / "out"
    monkeypatch.chdir(tmp_path)  # relative paths, read back from another folder
    code, text = run(
        ["decontaminate", "--benchmark", "gsm8k", "--path", "gsm8k.jsonl", "--corpus", "corpus"] + ["--out", "out"],
        capsys,
    )
    assert code == 0, text
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    code, text = run(["decontaminate", "--reproduce", out / "summary.json", "--out", "again"], capsys)
    assert code == 0, text
    assert (tmp_path / "elsewhere" / "again" / "cleaned" / "a.jsonl").read_bytes() == (corpus / "a.jsonl").read_bytes()
    lines = bench.read_text().splitlines(keepends=True)
    bench.write_text("".join(lines[:-1]))  # one row fewer
    code, text = run(["decontaminate", "--reproduce", out / "summary.json", "--out", tmp_path / "again"], capsys)
    assert code == 2 and f"file {bench.resolve()} changed since the run" in text, text


def test_summary_versions(tmp_path):
    old = {"corpora": ["c"], "out": "o", "engine": "local", "units": "words", "seconds": 1.0, "policy": "spans"}
    old |= {"total": {"documents": 1, "units": 9, "matched": 0, "removed": 0, "split": 0, "bad_lines": 0}}
    old |= {"benchmarks": {}, "shards": {}}
    read = DecontSummary.from_dict(old)  # written before schema_version: read, without a manifest
    assert read.schema_version == 0 and read.manifest is None and read.extra["policy"] == "spans"
    with pytest.raises(Exception, match="schema_version 99 is not one this jaxcontam reads"):
        DecontSummary.from_dict(old | {"schema_version": 99})
    (tmp_path / "summary.json").write_text(json.dumps(old))
    assert read_summary(tmp_path / "summary.json").total == old["total"]
    assert read.not_findable is None and "not_findable" not in read.to_dict()  # absent stays absent
    assert "policy spans" in render_report(read)  # an old summary renders too


def test_a_manifest_from_before_escapes_were_decoded_reproduces_them_kept():
    from jaxcontam.decontam.manifest import IndexEntry

    recorded = {"unit": "words", "preset": "gpt3", "n": 13, "fields": ["item"], "tokenizer": None, "floor": None}
    entry = IndexEntry(recorded, None, "0" * 64, 1)
    assert entry.index_settings().escapes is False
    assert IndexEntry({**recorded, "escapes": True}, None, "0" * 64, 1).index_settings().escapes is True
