"""Lazy corpus readers: documents, stable shard names, disjoint complete splits, memory-mapped tokens."""

import gzip
import json

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxcontam import JaxcontamWarning
from jaxcontam.data import Corpus, Document, open_corpus
from jaxcontam.data.corpus import CorpusShard
from jaxcontam.errors import DataError


@pytest.fixture
def mixed_folder(tmp_path):
    """A folder with every text format: .txt, .md, .jsonl, .jsonl.gz, .json list, .parquet, hidden and other files."""
    root = tmp_path / "corpus"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("first document", encoding="utf-8")
    (root / "sub" / "b.md").write_text("# second", encoding="utf-8")
    (root / "c.jsonl").write_text(json.dumps({"text": "c1"}) + "\n\n" + json.dumps({"text": "c3", "x": 1}) + "\n")
    with gzip.open(root / "sub" / "d.jsonl.gz", "wt", encoding="utf-8") as handle:
        handle.write(json.dumps({"text": "gz"}) + "\n")
    (root / "e.json").write_text(json.dumps([{"text": "e0"}, {"text": "e1"}]))
    pq.write_table(pa.table({"text": ["p0", "p1", "p2"], "other": [1, 2, 3]}), root / "f.parquet")
    (root / ".hidden.txt").write_text("skip me")
    return root


def test_folder_reads_each_format_in_path_order_with_stable_ids(mixed_folder):
    corpus = open_corpus(mixed_folder)
    assert (corpus.name, corpus.kind, corpus.skipped) == ("corpus", "text", ())
    assert corpus.files == "1 JSON file, 2 JSONL files, 1 Parquet file, 2 text files"
    assert [s.name for s in corpus.shards] == ["a.txt", "c.jsonl", "e.json", "f.parquet", "sub/b.md", "sub/d.jsonl.gz"]
    docs = list(corpus.documents())
    assert [(d.id, d.text) for d in docs] == [
        ("a.txt", "first document"),
        ("c.jsonl:1", "c1"),
        ("c.jsonl:3", "c3"),
        ("e.json:0", "e0"),
        ("e.json:1", "e1"),
        ("f.parquet:0", "p0"),
        ("f.parquet:1", "p1"),
        ("f.parquet:2", "p2"),
        ("sub/b.md", "# second"),
        ("sub/d.jsonl.gz:1", "gz"),
    ]
    assert [d.id for d in open_corpus(mixed_folder).documents()] == [d.id for d in docs]


@settings(max_examples=25, deadline=None)
@given(count=st.integers(1, 9), data=st.data())
def test_splits_are_disjoint_and_together_complete(count, data):
    shards = tuple(CorpusShard(f"s{i}", lambda i=i: iter([Document(id=f"d{i}", text=str(i))])) for i in range(7))
    corpus = Corpus(name="c", kind="text", shards=shards)
    parts = [corpus.split(index, count) for index in range(count)]
    names = [s.name for part in parts for s in part.shards]
    assert sorted(names) == sorted(s.name for s in shards) and len(set(names)) == len(names)
    index = data.draw(st.integers(0, count - 1))
    assert [d.id for d in parts[index].documents()] == [f"d{i}" for i in range(index, 7, count)]


def test_split_rejects_bad_indices(mixed_folder):
    corpus = open_corpus(mixed_folder)
    for index, count in ((2, 2), (-1, 2), (0, 0)):
        with pytest.raises(DataError, match="0 <= index < count"):
            corpus.split(index, count)


def test_metadata_beside_the_text_is_listed_skipped_and_reported(mixed_folder):
    (mixed_folder / "provenance.json").write_text(json.dumps([{"file": "a.txt", "commit": "abc"}]))
    (mixed_folder / "README.md").write_text("# About this corpus")
    (mixed_folder / "LICENSE").write_text("public domain")
    (mixed_folder / "SHA256SUMS").write_text("0" * 64 + "  a.txt\n")
    (mixed_folder / "a.txt.sha256").write_text("0" * 64)
    (mixed_folder / "config.json").write_text(json.dumps({"tokenizer": "gpt2"}, indent=2))
    (mixed_folder / "stats.json").write_text(json.dumps({"docs": 7}))
    (mixed_folder / "notes.csv").write_text("ignored,file\n")
    (mixed_folder / "empty.txt").write_text("")
    with pytest.warns(
        JaxcontamWarning,
        match=r"reading 1 JSON file, 2 JSONL files, 1 Parquet file, 2 text files; "
        r"skipped 9 file\(s\) that are not corpus text: LICENSE \(README",
    ):
        corpus = open_corpus(mixed_folder)
    assert dict(corpus.skipped) == {
        "LICENSE": "README, licence or metadata file",
        "README.md": "README, licence or metadata file",
        "SHA256SUMS": "README, licence or metadata file",
        "a.txt.sha256": "checksum file",
        "config.json": "one JSON document, not records",
        "empty.txt": "empty file",
        "notes.csv": "not a corpus format: .csv",
        "provenance.json": "README, licence or metadata file",
        "stats.json": "no field 'text' in its first record; fields present: docs",
    }
    assert [s.name for s in corpus.shards] == ["a.txt", "c.jsonl", "e.json", "f.parquet", "sub/b.md", "sub/d.jsonl.gz"]


def test_shared_gutenberg_folder_reads_the_books_not_its_provenance(shared_data):
    with pytest.warns(JaxcontamWarning, match="skipped 2 file.*SOURCE.txt .*provenance.json"):
        corpus = open_corpus(shared_data / "corpus_gutenberg")
    assert corpus.files == "15 text files" and all(s.name.startswith("books/") for s in corpus.shards)


def test_a_corpus_without_text_is_refused_before_reading(tmp_path):
    (tmp_path / "README.md").write_text("about")
    (tmp_path / "rows.jsonl").write_text(json.dumps({"content": "the text"}) + "\n")
    with pytest.raises(
        DataError,
        match=r"holds no corpus files .*skipped README.md \(README, licence or metadata "
        r"file\); rows.jsonl \(no field 'text'.*fields present: content\)\. .*"
        r"--text-field",
    ):
        open_corpus(tmp_path)
    with pytest.warns(JaxcontamWarning, match="skipped 1 file"):
        assert open_corpus(tmp_path, field="content").files == "1 JSONL file"
    (tmp_path / "empty.txt").write_text("")
    with pytest.raises(DataError, match=r"empty\.txt: no corpus text \(empty file\)"):
        open_corpus(tmp_path / "empty.txt")
    np.save(tmp_path / "none.npy", np.zeros(0, np.uint16))
    with pytest.raises(DataError, match="token files hold no tokens"):
        open_corpus(tmp_path / "none.npy")


def test_real_text_corpora_open_lazily(shared_data):
    books = open_corpus(shared_data / "corpus_gutenberg" / "books")
    assert len(books.shards) == 15 and books.shards[0].name == "pg10900.txt"
    first = next(books.split(1, 4).documents())
    assert first.id == books.shards[1].name and len(first.text) > 1000
    pile = open_corpus(shared_data / "mimir_pile_nonmembers" / "europarl")
    assert [s.name for s in pile.shards] == ["0/test_raw.jsonl.gz", "1/test_raw.jsonl.gz"]
    assert sum(1 for _ in pile.shards[0].documents()) == 80


def test_npy_tokens_are_memory_mapped_chunks(tmp_path):
    tokens = np.arange(10, dtype=np.uint32) * 7
    np.save(tmp_path / "t.npy", tokens)
    corpus = open_corpus(tmp_path / "t.npy", chunk_tokens=4)
    assert corpus.kind == "tokens"
    assert [s.name for s in corpus.shards] == ["t.npy@0:4", "t.npy@4:8", "t.npy@8:10"]
    docs = list(corpus.documents())
    np.testing.assert_array_equal(np.concatenate([d.tokens for d in docs]), tokens)
    assert all(not d.tokens.flags.owndata and not d.tokens.flags.writeable for d in docs)


@pytest.mark.parametrize("dtype", ["uint16", "uint32"])
def test_raw_bin_tokens_match_numpy_fromfile(tmp_path, dtype):
    tokens = np.random.default_rng(0).integers(0, 50_000, size=1001).astype(dtype)
    tokens.tofile(tmp_path / "train.bin")
    corpus = open_corpus(tmp_path, token_dtype=dtype, chunk_tokens=300)
    assert len(corpus.shards) == 4 and corpus.shards[-1].name == "train.bin@900:1001"
    np.testing.assert_array_equal(
        np.concatenate([d.tokens for d in corpus.documents()]), np.fromfile(tmp_path / "train.bin", dtype=dtype)
    )


def test_token_errors_name_the_file_and_the_fix(tmp_path):
    (tmp_path / "odd.bin").write_bytes(b"\x00\x01\x02")
    with pytest.raises(DataError, match=r"odd\.bin: a raw \.bin token file needs token_dtype"):
        open_corpus(tmp_path / "odd.bin")
    with pytest.raises(DataError, match=r"odd\.bin: 3 bytes is not a whole number of uint16 tokens"):
        open_corpus(tmp_path / "odd.bin", token_dtype="uint16")
    np.save(tmp_path / "f.npy", np.ones((2, 2), dtype=np.float32))
    with pytest.raises(DataError, match=r"f\.npy: expected a 1-D integer token array"):
        open_corpus(tmp_path / "f.npy")
    (tmp_path / "a.txt").write_text("text")
    with pytest.raises(DataError, match="mixes token arrays"):
        open_corpus(tmp_path, token_dtype="uint16")


def test_text_errors_name_file_and_line(tmp_path):
    (tmp_path / "bad.txt").write_bytes(b"line one\nline \xff two\n")
    with pytest.raises(DataError, match=r"bad\.txt, line 2: not valid UTF-8"):
        list(open_corpus(tmp_path / "bad.txt").documents())
    (tmp_path / "d.jsonl").write_text(json.dumps({"body": "x"}) + "\n")
    with pytest.raises(
        DataError,
        match=r"d\.jsonl: no corpus text \(no field 'text' in its first record; "
        r"fields present: body\); pass field=<name> \(--text-field\)",
    ):
        open_corpus(tmp_path / "d.jsonl")
    assert next(open_corpus(tmp_path / "d.jsonl", field="body").documents()).text == "x"
    with pytest.raises(DataError, match="does not exist"):
        open_corpus(tmp_path / "missing.jsonl")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="holds no corpus files"):
        open_corpus(tmp_path / "empty")


def _generate(files):
    for name in files:
        for k in range(3):
            yield {"text": f"{name}-{k}", "meta": k}


def test_hub_streaming_dataset_shards_stay_stable(monkeypatch):
    calls = []

    def load_dataset(name, split=None, streaming=False, **kwargs):
        calls.append((name, split, streaming))
        if streaming:
            return datasets.IterableDataset.from_generator(_generate, gen_kwargs={"files": ["f0", "f1", "f2"]})
        return datasets.Dataset.from_list(list(_generate(["f0", "f1"])))

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    corpus = open_corpus("org/web-corpus")
    assert calls == [("org/web-corpus", "train", True)] and corpus.kind == "text"
    assert [s.name for s in corpus.shards] == [f"org/web-corpus:train/shard{i:05d}-of-00003" for i in range(3)]
    texts = [d.text for d in corpus.split(1, 2).documents()]
    assert texts == ["f1-0", "f1-1", "f1-2"]
    assert sorted(d.text for d in corpus.documents()) == sorted(d["text"] for d in _generate(["f0", "f1", "f2"]))
    eager = open_corpus("org/web-corpus", streaming=False, split="validation")
    assert calls[-1] == ("org/web-corpus", "validation", False)
    ids = [d.id for d in eager.documents()]
    assert ids[:2] == ["org/web-corpus:validation/rows0-6:0", "org/web-corpus:validation/rows0-6:1"]
    with pytest.raises(DataError, match="field 'content' must be a string"):
        list(open_corpus("org/web-corpus", field="content").documents())


def test_unreachable_hub_dataset_is_explained(monkeypatch):
    def load_dataset(*args, **kwargs):
        raise ConnectionError("no network")

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    with pytest.raises(DataError, match="'org/none' is not a local path and loading it .* failed: no network"):
        open_corpus("org/none")


@pytest.mark.parametrize("suffix", [".gz", ".zst"])
def test_a_truncated_compressed_file_is_named_not_read_short(tmp_path, suffix):
    """A download cut short: the audit's reader, like decontaminate's, names the file and says it is truncated, where
    a bare zstd decoder ends the stream early without a word (the documents read so far would look like the corpus)."""
    import zstandard

    data = "".join(json.dumps({"text": f"document {i} " + "word " * 20}) + "\n" for i in range(3000)).encode()
    packed = gzip.compress(data) if suffix == ".gz" else zstandard.ZstdCompressor().compress(data)
    path = tmp_path / f"cut.jsonl{suffix}"
    path.write_bytes(packed[: len(packed) // 2])
    with pytest.raises(DataError, match=r"cut\.jsonl.*(ends early|ends inside a frame).*truncated"):
        list(open_corpus(path).documents())


def test_the_audit_and_decontaminate_list_a_corpus_alike(mixed_folder):
    """One listing (`storage.list_files`): decontaminate's shards are the audit's corpus files, in the same order,
    hidden files left out of both; a README the audit skips as metadata is a plain text shard to decontaminate."""
    from jaxcontam.decontam.shards import list_shards

    (mixed_folder / ".cache").mkdir()
    (mixed_folder / ".cache" / "x.jsonl").write_text(json.dumps({"text": "hidden folder"}) + "\n")
    (mixed_folder / "README.md").write_text("# about this corpus")
    with pytest.warns(JaxcontamWarning, match="README"):
        corpus = open_corpus(mixed_folder)
    shards = [s.label for s in list_shards([str(mixed_folder)])]
    assert shards == ["README.md", *[s.name for s in corpus.shards]]
    assert [s.label for s in list_shards([str(mixed_folder / "*.jsonl")])] == ["c.jsonl"]
