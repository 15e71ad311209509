"""`jaxcontam decontaminate` on real GSM8K items and corpus files in every format: outputs, policies, resume after
a stop, bad input named or skipped, token mode against `jaxcontam ngram`, and the process pool."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from helpers import run_cli as run
from jaxcontam.decontam import DecontIndex, IndexSettings, benchmark_items, find, words
from jaxcontam.decontam.run import RunSettings, decontaminate


@pytest.fixture(scope="module")
def gsm8k(shared_data):
    from jaxcontam.data import load_benchmark

    return load_benchmark("gsm8k", path=shared_data / "gsm8k", split="test")


@pytest.fixture(scope="module")
def corpus(shared_data, gsm8k, tmp_path_factory):
    """A .jsonl.zst, a .parquet and a .txt.gz shard of Pile and book text; every third record holds a GSM8K item
    (a plain copy: its question, a line break and its answer, re-wrapped at 40 columns)."""
    import textwrap

    folder = tmp_path_factory.mktemp("corpus")
    items = benchmark_items([gsm8k])
    with gzip.open(next((shared_data / "mimir_pile_nonmembers" / "wikipedia_en").rglob("*.jsonl.gz")), "rt") as f:
        pile = [json.loads(line)["text"][:2500] for _, line in zip(range(60), f)]
    records = []
    for k, text in enumerate(pile):
        if k % 3 == 0:
            text = (
                text[:1200]
                + "\n"
                + textwrap.fill(_plain(items[k]), 40, break_long_words=False, break_on_hyphens=False)
                + "\n"
                + text[1200:]
            )
        records.append({"id": f"wiki-{k}", "text": text, "source": "wikipedia"})
    lines = "".join(json.dumps(r) + "\n" for r in records[:30]).encode()
    (folder / "a.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(lines))
    pq.write_table(pa.Table.from_pylist(records[30:]), folder / "b.parquet")
    book = (shared_data / "corpus_gutenberg" / "books" / "pg972.txt").read_text()[:50_000]
    (folder / "c.txt.gz").write_bytes(gzip.compress(book.encode()))
    return folder, records, items


def _plain(item) -> str:
    return f"{item.question}\n{item.answer}"


def _read_jsonl_zst(path):
    return [
        json.loads(line)
        for line in zstandard.ZstdDecompressor().decompressobj().decompress(path.read_bytes()).splitlines()
    ]


def test_spans_writes_matches_items_and_cleaned_shards_in_their_formats(corpus, shared_data, tmp_path, capsys):
    folder, records, items = corpus
    out = tmp_path / "out"
    base = ["decontaminate", "--benchmark", "gsm8k", "--path", shared_data / "gsm8k", "--split", "test"]
    code, text = run([*base, "--corpus", folder, "--out", out, "--workers", 1], capsys)
    assert code == 0 and "20 holding a benchmark item, 20 removed" in text  # GSM8K items hold over 10 13-grams
    code, text = run([*base, "--corpus", folder, "--out", out, "--cutoff", 1000], capsys)
    assert code == 2 and "other settings" in text  # completed shards of another run are never mixed in
    out = tmp_path / "wide"
    code, text = run([*base, "--corpus", folder, "--out", out, "--cutoff", 1000], capsys)
    assert code == 0 and "20 holding a benchmark item, 16 removed, 4 split" in text  # 16 pages too short to keep
    matches = pq.read_table(out / "matches.parquet").to_pylist()
    holding = {r["id"] for r in matches}
    assert holding == {f"wiki-{k}" for k in range(0, 60, 3)}  # every re-wrapped copy, and nothing else
    for row in matches:
        k = int(row["id"].split("-")[1])
        assert row["item"] == items[k].id and row["benchmark"] == "gsm8k"
        assert row["ngrams"] == len(words(_plain(items[k]))) - 12  # every 13-gram of the item, line breaks or not
        assert row["first_start"] == records[k]["text"].index(items[k].question[:12])
        assert 0.95 * len(_plain(items[k])) <= row["longest_chars"] <= len(_plain(items[k])) + 20  # the re-wrapped copy
    cleaned = _read_jsonl_zst(out / "cleaned" / "a.jsonl.zst")
    raw = zstandard.ZstdDecompressor().decompressobj().decompress((out / "cleaned" / "a.jsonl.zst").read_bytes())
    for k in range(1, 30, 3):  # a document without a match keeps its line byte for byte
        assert (json.dumps(records[k]) + "\n").encode() in raw
    split = [r for r in cleaned if "#" in r["id"]]
    assert {r["id"].split("#")[0] for r in split} <= {f"wiki-{k}" for k in range(0, 30, 3)}
    assert all(
        r["source"] == "wikipedia" and items[int(r["id"].split("-")[1].split("#")[0])].question[:60] not in r["text"]
        for r in split
    )
    parquet = pq.read_table(out / "cleaned" / "b.parquet")
    assert parquet.schema.names == ["id", "text", "source"] and parquet.num_rows >= 20
    assert (
        gzip.decompress((out / "cleaned" / "c.txt.gz").read_bytes()).decode()
        == ((shared_data / "corpus_gutenberg" / "books" / "pg972.txt").read_text()[:50_000])
    )
    item_rows = {r["item"]: r for r in pq.read_table(out / "items.parquet").to_pylist()}
    assert len(item_rows) == 1319 and sum(r["documents"] > 0 for r in item_rows.values()) == 20
    summary = json.loads((out / "summary.json").read_text())
    assert summary["benchmarks"]["gsm8k"]["items_found"] == 20 and summary["total"]["documents"] == 61
    assert summary["index"]["n"] == 13 and summary["index"]["preset"] == "gpt3"
    assert "gsm8k" in (out / "report.html").read_text()

    config = tmp_path / "run.toml"  # the same run from a TOML config
    config.write_text(
        f'benchmark = ["gsm8k"]\npath = "{shared_data / "gsm8k"}"\nsplit = "test"\ncorpus = ["{folder}"]\n'
        f'out = "{tmp_path / "again"}"\nworkers = 2\ncutoff = 1000\n'
    )
    code, text = run(["decontaminate", "--config", config], capsys)
    assert code == 0, text
    again = pq.read_table(tmp_path / "again" / "matches.parquet").to_pylist()
    assert again == matches  # two processes: the same rows
    assert (tmp_path / "again" / "cleaned" / "a.jsonl.zst").read_bytes() == (
        out / "cleaned" / "a.jsonl.zst"
    ).read_bytes()


def test_drop_and_annotate(corpus, gsm8k, tmp_path):
    folder, records, items = corpus
    index = DecontIndex.build(benchmark_items([gsm8k]))
    decontaminate(index, [str(folder / "a.jsonl.zst")], str(tmp_path / "drop"), RunSettings(policy="drop"), workers=1)
    kept = _read_jsonl_zst(tmp_path / "drop" / "cleaned" / "a.jsonl.zst")
    assert [r["id"] for r in kept] == [f"wiki-{k}" for k in range(30) if k % 3]
    decontaminate(index, [str(folder / "b.parquet")], str(tmp_path / "ann"), RunSettings(policy="annotate"), workers=1)
    rows = pq.read_table(tmp_path / "ann" / "cleaned" / "b.parquet").to_pylist()
    assert len(rows) == 30
    for r in rows:
        k = int(r["id"].split("-")[1])
        assert r["contamination"] == ([f"gsm8k/{items[k].id}"] if k % 3 == 0 else [])


def _bad_shards(folder):
    good = [json.dumps({"id": f"g{k}", "text": f"plain words number {k}"}) for k in range(20)]
    (folder / "0_good.jsonl").write_text("\n".join(good) + "\n")
    lines = [good[0], '{"id": "x", "text": "broken', good[1], b"\xff\xfe".decode("latin-1"), good[2]]
    data = ("\n".join(lines[:3]) + "\n").encode() + b'{"id": "u", "text": "caf\xe9"}\n' + (lines[4] + "\n").encode()
    (folder / "1_bad.jsonl").write_bytes(data)
    packed = zstandard.ZstdCompressor().compress(("\n".join(good) + "\n").encode())
    (folder / "2_cut.jsonl.zst").write_bytes(packed[: len(packed) - 9])
    return data


def test_bad_input_stops_naming_the_place_then_skip_counts_and_names_it(gsm8k, tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    data = _bad_shards(folder)
    index = DecontIndex.build(benchmark_items([gsm8k]))
    out = str(tmp_path / "out")
    from jaxcontam.errors import DataError

    with pytest.raises(DataError) as error:
        decontaminate(index, [str(folder)], out, workers=1)
    offset = data.index(b'{"id": "x"')
    assert f"1_bad.jsonl, line 2 (byte {offset}): not valid JSON" in str(error.value)
    assert "--on-bad-line skip" in str(error.value)
    assert (tmp_path / "out" / "shards" / "0_good.jsonl.json").exists()  # the completed shard is kept
    assert not (tmp_path / "out" / "shards" / "1_bad.jsonl.json").exists()
    first = json.loads((tmp_path / "out" / "shards" / "0_good.jsonl.json").read_text())

    summary = decontaminate(index, [str(folder)], out, RunSettings(on_bad_line="skip"), workers=1)
    shards = summary["shards"]
    assert shards["1_bad.jsonl"]["bad_lines"] == 2 and shards["1_bad.jsonl"]["documents"] == 3
    assert shards["1_bad.jsonl"]["bad"][0].startswith(f"line 2 (byte {offset}): not valid JSON")
    assert "line 4" in shards["1_bad.jsonl"]["bad"][1] and "invalid UTF-8" in shards["1_bad.jsonl"]["bad"][1]
    assert shards["2_cut.jsonl.zst"]["bad_lines"] == 1 and "truncated" in shards["2_cut.jsonl.zst"]["bad"][0]
    assert summary["total"]["bad_lines"] == 3
    # the rerun resumed: the shard completed before the stop was not processed again
    assert json.loads((tmp_path / "out" / "shards" / "0_good.jsonl.json").read_text()) == first


def test_token_mode_counts_are_ngrams_and_the_filter_shares_the_index(shared_data, gsm8k, corpus, tmp_path, capsys):
    folder, _, _ = corpus
    tokenizer = str(shared_data / "gpt2_tokenizer_whisper" / "gpt2.tiktoken")
    shard = str(folder / "a.jsonl.zst")
    common = ["--benchmark", "gsm8k", "--path", shared_data / "gsm8k", "--split", "test", "--corpus", shard]
    prompt = ["--fields", "prompt", "--letter-share", 0]  # the text `ngram` scores, every n-gram as `ngram` counts
    assert (
        run(["decontaminate", *common, *prompt, "--tokenizer", tokenizer, "--n", 8, "--out", tmp_path / "d"], capsys)[0]
        == 0
    )
    run(["ngram", *common, "--tokenizer", tokenizer, "--normalize", "none", "--out", tmp_path / "g"], capsys)
    ours = pq.read_table(tmp_path / "d" / "items.parquet").to_pylist()
    theirs = pq.read_table(tmp_path / "g" / "items.parquet").to_pylist()
    assert [r["ngram_match"] for r in ours] == pytest.approx([r["ngram_match"] for r in theirs])
    assert [r["documents"] > 0 for r in ours] == [r["longest_match"] > 0 for r in theirs]
    assert sum(r["documents"] for r in ours) >= 10

    index = DecontIndex.build(benchmark_items([gsm8k]), IndexSettings(unit="tokens", tokenizer=tokenizer))
    flt = index.filter()
    assert flt._table.rows == len(index.table.keys)  # one table: the filter uploads the index's own
    doc = "Some words first. " + benchmark_items([gsm8k])[3].whole
    tokens = index.encode([doc])[0]
    assert find(index, doc) and flt.contains(tokens) and not flt.contains(np.asarray(index.encode(["nothing here"])[0]))


def test_the_floor_option_reaches_the_index_the_manifest_and_the_report(shared_data, corpus, tmp_path, capsys):
    """40-grams of the questions alone with --floor 30: every GSM8K question under 30 words is listed as not
    findable, with the reason, in summary.json and report.html; the manifest keeps the floor, so --reproduce repeats
    it."""
    folder, _, _ = corpus
    base = ["decontaminate", "--benchmark", "gsm8k", "--path", shared_data / "gsm8k", "--split", "test"]
    out = tmp_path / "floor"
    args = [*base, "--corpus", folder / "a.jsonl.zst", "--fields", "question", "--n", 40, "--floor", 30, "--out", out]
    assert run(args, capsys)[0] == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["manifest"]["index"]["settings"]["floor"] == 30
    assert summary["not_findable"], "some GSM8K question has fewer than 30 words"
    assert all(e["words"] < 30 and e["reason"].endswith("below the floor of 30") for e in summary["not_findable"])
    page = (out / "report.html").read_text(encoding="utf-8")
    assert f"Not findable ({len(summary['not_findable'])} items)" in page
