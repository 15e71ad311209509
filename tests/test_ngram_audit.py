"""End to end: benchmark items x a corpus -> saved counts -> per-item metrics; reuse and refusals."""

import json

import numpy as np
import pytest

from helpers import Doc, ListCorpus, Shard
from jaxcontam.data.item import Benchmark, Item
from jaxcontam.errors import DataError, IndexMismatchError
from jaxcontam.ngram.audit import NgramSettings, ensure_counts, item_rows, load_counts, write_items_parquet
from jaxcontam.ngram.units import WordUnits, load_units, normalize_for_matching


@pytest.fixture(scope="module")
def gpt2(shared_data):
    return load_units(shared_data / "gpt2_tokenizer_whisper" / "gpt2.tiktoken")


@pytest.fixture(scope="module")
def gsm8k(shared_data):
    rows = [json.loads(line) for line in (shared_data / "gsm8k" / "test.jsonl").open()][:60]
    items = [Item(id=str(i), benchmark="gsm8k", question=r["question"], answer=r["answer"]) for i, r in enumerate(rows)]
    return Benchmark("gsm8k", "test", items)


def leaky_corpus(shared_data, benchmark):
    """Shakespeare paragraphs with items 0-9 pasted in verbatim and items 10-14 in UPPER CASE without punctuation."""
    text = (shared_data / "corpus_misc" / "tinyshakespeare" / "input.txt").read_text()
    docs = [Doc(f"p{i}", text=p) for i, p in enumerate(text.split("\n\n")[:400])]
    docs += [Doc(f"leak{i}", text=f"Worksheet.\n{benchmark[i].question} Good luck!") for i in range(10)]
    docs += [Doc(f"upper{i}", text=normalize_for_matching(benchmark[i].question).upper()) for i in range(10, 15)]
    return ListCorpus(tuple(Shard(f"s{k}", docs[k::2]) for k in range(2)))


def test_metrics_find_pasted_items_and_reuse_counts(shared_data, gsm8k, gpt2, tmp_path):
    corpus = leaky_corpus(shared_data, gsm8k)
    settings = NgramSettings(n=8, scope="fields", normalize="paper")
    counted, scanned = ensure_counts([gsm8k], [("leaky", corpus)], gpt2, settings, tmp_path / "counts")
    assert scanned and sorted(p.name for p in (tmp_path / "counts").iterdir()) == ["normalized.npz", "raw.npz"]
    rows = item_rows([gsm8k], counted, gpt2, settings, mincount=1, skip_budget=0)
    for i in range(10):  # the whole question is in the corpus, the answer (its solution) is not
        # the item text starts "Question: ", which the pasted copy lacks: the n-grams touching the label miss
        span = rows[i]["longest_match_text"]
        assert (
            0.2 < rows[i]["longest_match"] < 1
            and span in gsm8k[i].question
            and len(span) > 0.8 * len(gsm8k[i].question)
        )
        assert rows[i]["longest_match_question"] == 1 and rows[i]["longest_match_answer"] < 0.2
        assert rows[i]["num_tokens"] > rows[i]["num_tokens_question"] + rows[i]["num_tokens_answer"] - 2
    for i in range(10, 15):  # only found after normalisation: TOKEN/NGRAM_MATCH see it, the raw metrics do not
        assert rows[i]["token_match"] > 0.2 and rows[i]["longest_match"] < 0.2
    assert max(r["longest_match"] for r in rows[15:]) < 0.2
    write_items_parquet(rows, tmp_path / "items.parquet")
    import pyarrow.parquet as pq

    written = pq.read_table(tmp_path / "items.parquet").to_pylist()
    assert [r["id"] for r in written] == [item.id for item in gsm8k]
    assert written[3]["longest_match"] == rows[3]["longest_match"]

    again, scanned = ensure_counts([gsm8k], [("leaky", corpus)], gpt2, settings, tmp_path / "counts")
    assert not scanned and [s.reads for s in corpus.shards] == [1, 1]
    rows_skip = item_rows([gsm8k], again, gpt2, settings, mincount=1, skip_budget=8)
    assert all(b["longest_match"] >= a["longest_match"] for a, b in zip(rows, rows_skip))


def test_counts_built_with_another_tokenizer_are_refused(shared_data, gsm8k, gpt2, tmp_path):
    corpus = leaky_corpus(shared_data, gsm8k)
    settings = NgramSettings(n=8, normalize="none")
    ensure_counts([gsm8k], [("leaky", corpus)], gpt2, settings, tmp_path / "counts")
    with pytest.raises(IndexMismatchError, match="tokenizer_sha256"):
        ensure_counts([gsm8k], [("leaky", corpus)], WordUnits(), settings, tmp_path / "counts")
    with pytest.raises(IndexMismatchError, match="corpora"):
        ensure_counts([gsm8k], [("other", corpus)], gpt2, settings, tmp_path / "counts")


def test_corrupted_counts_file_is_refused(shared_data, gsm8k, gpt2, tmp_path):
    settings = NgramSettings(n=8, normalize="none")
    ensure_counts([gsm8k], [("leaky", leaky_corpus(shared_data, gsm8k))], gpt2, settings, tmp_path / "counts")
    path = tmp_path / "counts" / "raw.npz"
    table, counts, header = load_counts(path)
    assert header["tokenizer"] == gpt2.name and header["n"] == 8 and len(counts) == len(table)
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(IndexMismatchError, match="raw.npz"):
        load_counts(path)
    path.write_bytes(bytes(data[:100]))
    with pytest.raises(IndexMismatchError, match="delete it"):
        load_counts(path)


def test_word_units_and_bad_settings():
    words = WordUnits()
    a, b = words.encode_batch(["The cat, the CAT!", "the cat the cat"])
    assert a.tolist() == b.tolist() and a[0] == a[2] and a[0] != a[1]
    assert words.shown_text("Hi, there") == " hi there" and words.char_spans("Hi, there") == [(1, 3), (4, 9)]
    with pytest.raises(DataError, match="scope"):
        NgramSettings(scope="question")
    with pytest.raises(DataError, match="normalize"):
        NgramSettings(normalize="sometimes")


def test_gpt2_tokenizer_from_tiktoken_ranks(shared_data, gpt2):
    # GPT-2's published ids: "Hello world" -> [15496, 995]; byte-level BPE round-trips any text
    assert gpt2.encode_batch(["Hello world"])[0].tolist() == [15496, 995]
    text = (shared_data / "corpus_misc" / "tinyshakespeare" / "input.txt").read_text()[:20000] + " naïve 東京 🙂"
    ids = gpt2.encode_batch([text])[0]
    assert gpt2.tokenizer.decode(ids.tolist()) == text and ids.max() < 50257


def test_only_missing_views_are_counted(shared_data, gsm8k, gpt2, tmp_path):
    corpus = leaky_corpus(shared_data, gsm8k)
    counts_dir = tmp_path / "counts"
    raw_only, _ = ensure_counts([gsm8k], [("leaky", corpus)], gpt2, NgramSettings(normalize="none"), counts_dir)
    stamp = (counts_dir / "raw.npz").stat().st_mtime_ns
    both, scanned = ensure_counts([gsm8k], [("leaky", corpus)], gpt2, NgramSettings(normalize="paper"), counts_dir)
    assert scanned and (counts_dir / "normalized.npz").exists()
    assert (counts_dir / "raw.npz").stat().st_mtime_ns == stamp
    np.testing.assert_array_equal(both["raw"][1], raw_only["raw"][1])
    assert not list(counts_dir.glob("checkpoint-*"))
