"""Corpora in zstd shards and on an S3-compatible bucket read exactly as the same files on local disk.

The bucket is a real S3 server that the test starts (moto in server mode) and that s3fs reaches through the
standard `AWS_ENDPOINT_URL`; the reference is the same text read from local, uncompressed files. N-gram counts
are checked, not only documents, because counting is what a bucket corpus is for.
"""

import gzip
import json
import pathlib

import pytest
import zstandard

from experiments.object_stores import gcs_server, s3_server
from jaxcontam import JaxcontamWarning
from jaxcontam.data import open_corpus
from jaxcontam.errors import DataError
from jaxcontam.ngram.stream import CountView, count_corpus
from jaxcontam.ngram.table import build_table, encode_items
from jaxcontam.ngram.units import load_units


@pytest.fixture(scope="module")
def texts(shared_data):
    """Pile documents and two Gutenberg books."""
    found = []
    for path in sorted((shared_data / "mimir_pile_nonmembers").rglob("*.jsonl.gz"))[:2]:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            found += [json.loads(line)["text"] for _, line in zip(range(60), handle)]
    books = [shared_data / "corpus_gutenberg" / "books" / f"pg{n}.txt" for n in (14881, 9198)]
    return found, [p.read_text(encoding="utf-8") for p in books]


def write_corpus(root, texts, compress: bool):
    """Two JSONL shards and two text files, zstd-compressed or not."""
    records, books = texts
    root.mkdir(parents=True)
    pack = zstandard.ZstdCompressor(level=3).compress if compress else (lambda data: data)
    end = ".zst" if compress else ""
    for part in range(2):
        lines = "".join(json.dumps({"text": t}) + "\n" for t in records[part::2])
        (root / f"shard{part}.jsonl{end}").write_bytes(pack(lines.encode()))
        (root / f"book{part}.txt{end}").write_bytes(pack(books[part].encode()))
    return root


def counts_of(corpus, texts):
    """Word 8-gram counts of every record's first 300 characters and the books' openings in `corpus`."""
    units = load_units("words")
    records, books = texts
    items = encode_items(((str(i), [t[:300]]) for i, t in enumerate(records + [b[:2000] for b in books])), units)
    result = count_corpus([CountView(build_table(items, 8))], corpus, units, chunk_tokens=1 << 14)
    return result.counts[0].tolist(), result.units_scanned


def plain_ids(corpus):
    """(document id without the compression suffix, text) of every document."""
    return [(d.id.replace(".zst", ""), d.text) for d in corpus.documents()]


def test_zstd_shards_read_and_count_as_the_uncompressed_files(tmp_path, texts):
    plain = open_corpus(write_corpus(tmp_path / "plain", texts, compress=False))
    packed = open_corpus(write_corpus(tmp_path / "packed", texts, compress=True))
    assert packed.files == "2 JSONL files, 2 text files"
    assert plain_ids(packed) == plain_ids(plain)
    counts, scanned = counts_of(packed, texts)
    assert (counts, scanned) == counts_of(plain, texts)
    assert sum(counts) > 100  # the table's n-grams are in the corpus


def test_a_zstd_file_that_is_not_utf8_is_named(tmp_path):
    path = tmp_path / "bad.txt.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress("caf\xe9\n".encode("latin-1")))
    with pytest.raises(DataError, match=r"bad\.txt\.zst, line 1: not valid UTF-8"):
        open_corpus(path)


@pytest.fixture(scope="module")
def s3():
    """The direct filesystem (to set up buckets) and the counting proxy every S3 client of the test goes through."""
    with s3_server() as (direct, proxy):
        direct.mkdir("corpora")
        direct.mkdir("models")
        yield direct, proxy


@pytest.fixture
def s3_bucket(s3):
    return s3[0]


def test_a_corpus_on_s3_reads_and_counts_as_on_local_disk(tmp_path, texts, s3_bucket):
    local = write_corpus(tmp_path / "packed", texts, compress=True)
    s3_bucket.put(str(local) + "/", "corpora/packed/", recursive=True)
    (tmp_path / "README.md").write_text("about")
    s3_bucket.put(str(tmp_path / "README.md"), "corpora/packed/README.md")
    with pytest.warns(JaxcontamWarning, match="skipped 1 file"):
        remote = open_corpus("s3://corpora/packed")
    assert [s.name for s in remote.shards] == [s.name for s in open_corpus(local).shards]
    assert remote.skipped == (("README.md", "README, licence or metadata file"),)
    assert all(shard.fetch is not None for shard in remote.shards)  # read ahead by the counting pass
    assert plain_ids(remote) == plain_ids(open_corpus(local))
    assert counts_of(remote, texts) == counts_of(open_corpus(local), texts)


def test_a_glob_picks_shards_on_the_bucket(tmp_path, texts, s3_bucket):
    local = write_corpus(tmp_path / "packed", texts, compress=True)
    s3_bucket.put(str(local) + "/", "corpora/glob/", recursive=True)
    remote = open_corpus("s3://corpora/glob/*.jsonl.zst")
    assert [s.name for s in remote.shards] == ["shard0.jsonl.zst", "shard1.jsonl.zst"]
    one_by_one = [d for name in ("shard0", "shard1") for d in plain_ids(open_corpus(local / f"{name}.jsonl.zst"))]
    assert plain_ids(remote) == one_by_one


def test_a_missing_bucket_or_prefix_is_named_with_its_fix(s3_bucket):
    with pytest.raises(DataError, match=r"s3://no-such-bucket/x.*does not exist; check the URL"):
        open_corpus("s3://no-such-bucket/x")
    with pytest.raises(DataError, match=r"s3://corpora/nothing-here.*does not exist"):
        open_corpus("s3://corpora/nothing-here")


def test_a_url_whose_filesystem_is_not_installed_names_the_package():
    with pytest.raises(DataError, match=r"abfs://container/corpus/: reading abfs:// needs .*adlfs"):
        open_corpus("abfs://container/corpus/")


def test_a_model_in_a_bucket_scores_as_on_local_disk_reading_each_weight_byte_once(s3):
    import numpy as np

    import jaxcontam
    from jaxcontam.engine.scoring import score_logprobs
    from jaxcontam.models.safetensors_file import read_header

    direct, proxy = s3
    example_model = pathlib.Path(jaxcontam.__file__).parent / "examples" / "tiny_contaminated" / "model"
    direct.put(str(example_model) + "/", "models/tiny/", recursive=True)
    proxy.fetched.clear()
    remote = jaxcontam.load_model("s3://models/tiny")
    local = jaxcontam.load_model(str(example_model))
    texts = ["The sun rose over the hill.", "2 + 2 = 4"]
    seqs = [local.tokenizer.encode(t) for t in texts]
    assert [remote.tokenizer.encode(t) for t in texts] == seqs
    for got, want in zip(score_logprobs(remote, seqs), score_logprobs(local, seqs)):
        np.testing.assert_array_equal(got.logprobs, want.logprobs)
    header = read_header(example_model / "model.safetensors")
    weight_bytes = sum(info.end - info.begin for info in header.values())
    header_bytes = min(info.begin for info in header.values())
    assert proxy.fetched["/models/tiny/model.safetensors"] == weight_bytes + header_bytes


def test_a_corpus_and_a_model_on_gcs_read_as_on_local_disk(tmp_path, texts):
    """The same reads through gcsfs, against a GCS emulator."""
    import numpy as np

    import jaxcontam
    from jaxcontam.engine.scoring import score_logprobs

    local = write_corpus(tmp_path / "packed", texts, compress=True)
    example_model = pathlib.Path(jaxcontam.__file__).parent / "examples" / "tiny_contaminated" / "model"
    with gcs_server("jaxcontam-test") as gcs:
        gcs.put(str(local) + "/", "jaxcontam-test/packed/", recursive=True)
        gcs.put(str(example_model) + "/", "jaxcontam-test/model/", recursive=True)
        remote = open_corpus("gs://jaxcontam-test/packed/")
        assert plain_ids(remote) == plain_ids(open_corpus(local))
        assert counts_of(remote, texts) == counts_of(open_corpus(local), texts)
        seqs = [[1, 5, 9, 30, 7], [2, 42, 42]]
        got = score_logprobs(jaxcontam.load_model("gs://jaxcontam-test/model"), seqs)
    for ours, want in zip(got, score_logprobs(jaxcontam.load_model(str(example_model)), seqs)):
        np.testing.assert_array_equal(ours.logprobs, want.logprobs)


def test_a_gguf_file_in_a_bucket_loads_from_its_header_and_tensor_parts(s3, tmp_path, monkeypatch):
    """The tensor table is parsed from growing ranged reads of the file's start; then each tensor's blocks are
    fetched once: the bytes on the wire are the tensor bytes plus the header reads."""
    import gguf
    import numpy as np
    import torch
    import transformers

    import jaxcontam
    from gguf_writer import write_gguf
    from helpers import TINY_LLAMA_CONFIG
    from jaxcontam.engine.scoring import score_logprobs
    from jaxcontam.models import gguf_file

    torch.manual_seed(0)
    config = {k: v for k, v in TINY_LLAMA_CONFIG.items() if k != "model_type"}
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**config)).eval()
    path = tmp_path / "tiny.Q8_0.gguf"
    write_gguf(path, model, "llama", gguf.GGMLQuantizationType.Q8_0)
    direct, proxy = s3
    direct.put(str(path), "models/gguf/tiny.Q8_0.gguf")
    monkeypatch.setattr(gguf_file, "HEAD_BYTES", 1024)  # several header reads, as a large vocabulary needs
    proxy.fetched.clear()
    remote = jaxcontam.load_model("s3://models/gguf/tiny.Q8_0.gguf")
    local = jaxcontam.load_model(str(path))
    seqs = [[1, 5, 9, 30, 7], [2, 42, 42]]
    for got, want in zip(score_logprobs(remote, seqs), score_logprobs(local, seqs)):
        np.testing.assert_array_equal(got.logprobs, want.logprobs)
    stored = gguf_file.read_gguf(path)
    tensor_bytes = sum(t.data.nbytes for t in stored.tensors)
    header = min(t.offset for t in stored.tensors)
    fetched = proxy.fetched["/models/gguf/tiny.Q8_0.gguf"]
    assert tensor_bytes + header <= fetched <= tensor_bytes + 2 * header + 4 * 1024


def test_a_transient_error_is_retried_and_a_refusal_is_named_with_its_fix(s3, tmp_path, texts):
    """A 503 (S3's SlowDown) on a shard is retried by the client and the counts are unchanged; a 403 is not retried
    and is reported with what to do about it."""
    direct, proxy = s3
    local = write_corpus(tmp_path / "packed", texts, compress=True)
    direct.put(str(local) + "/", "corpora/flaky/", recursive=True)
    proxy.faults["/corpora/flaky/shard1.jsonl.zst"] = [503, 503]
    proxy.requests.clear()
    assert plain_ids(open_corpus("s3://corpora/flaky")) == plain_ids(open_corpus(local))
    assert proxy.faults["/corpora/flaky/shard1.jsonl.zst"] == []  # both failures were answered, then retried
    direct.pipe("corpora/denied/a.txt", b"text")
    proxy.faults["/corpora/denied/a.txt"] = [403] * 20
    with pytest.raises(DataError, match=r"s3://corpora/denied.*cannot be read.*grant read access"):
        list(open_corpus("s3://corpora/denied").documents())
    assert proxy.requests["/corpora/denied/a.txt"] <= 3  # a refusal is not retried


def test_missing_credentials_are_named_before_anything_is_read(s3, monkeypatch):
    import s3fs

    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    s3fs.S3FileSystem.clear_instance_cache()
    with pytest.raises(DataError, match=r"no credentials found: .*AWS_PROFILE"):
        open_corpus("s3://corpora/packed")
    s3fs.S3FileSystem.clear_instance_cache()


def test_the_ngram_command_reads_a_glob_of_bucket_shards_and_writes_to_the_bucket(s3, tmp_path, texts):
    """`jaxcontam ngram` with the benchmark file, the corpus as a glob of .jsonl.zst shards, the tokenizer folder
    and --out in the bucket writes the items of the same command on local files."""
    import jaxcontam
    from jaxcontam.cli import main

    direct, _ = s3
    local = write_corpus(tmp_path / "packed", texts, compress=True)
    model = pathlib.Path(jaxcontam.__file__).parent / "examples" / "tiny_contaminated"
    premises = [json.loads(line)["premise"] for line in (model / "copa_test_sample.jsonl").open()][:20]
    leaked = "".join(json.dumps({"text": f"Forum post: {p} What do you think?"}) + "\n" for p in premises)
    (local / "leaked.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(leaked.encode()))
    direct.put(str(local) + "/", "corpora/ngram/", recursive=True)
    direct.put(str(model / "model") + "/", "models/ngram-tokenizer/", recursive=True)

    direct.put(str(model / "copa_test_sample.jsonl"), "corpora/ngram-benchmark/copa.jsonl")

    def ngram(benchmark, corpus, tokenizer, out):
        args = ["ngram", "--benchmark", "copa", "--path", benchmark, "--split", "test"]
        args += ["--corpus", corpus, "--tokenizer", tokenizer, "--out", out, "--n", "4"]
        main(args)

    ngram(
        str(model / "copa_test_sample.jsonl"), str(local / "*.jsonl.zst"), str(model / "model"), str(tmp_path / "out")
    )
    ngram("s3://corpora/ngram-benchmark/copa.jsonl", "s3://corpora/ngram/*.jsonl.zst", "s3://models/ngram-tokenizer",
          "s3://corpora/ngram-out")  # fmt: skip
    import pyarrow.parquet as pq

    with direct.open("corpora/ngram-out/items.parquet", "rb") as handle:
        remote = pq.read_table(handle).to_pylist()
    assert remote == pq.read_table(tmp_path / "out" / "items.parquet").to_pylist()
    assert sum(row["longest_match"] > 0 for row in remote) >= 20  # the leaked premises are found
    assert any(name.startswith("corpora/ngram-out/counts/") for name in direct.find("corpora/ngram-out"))


def test_score_reads_its_model_and_texts_from_the_bucket_and_writes_its_scores_there(s3, tmp_path):
    import jaxcontam
    from jaxcontam.cli import main

    direct, _ = s3
    example = pathlib.Path(jaxcontam.__file__).parent / "examples" / "tiny_contaminated"
    direct.put(str(example / "model") + "/", "models/score/", recursive=True)
    direct.put(str(example / "copa_test_sample.jsonl"), "corpora/score/copa.jsonl")
    common = ["--field", "text=premise", "--limit", "6"]
    main(["score", "--model", str(example / "model"), "--data", str(example / "copa_test_sample.jsonl"), *common,
          "--out", str(tmp_path / "scores.jsonl")])  # fmt: skip
    main(["score", "--model", "s3://models/score", "--data", "s3://corpora/score/copa.jsonl", *common,
          "--out", "s3://corpora/score-out/scores.jsonl"])  # fmt: skip
    local = (tmp_path / "scores.jsonl").read_text().splitlines()
    assert direct.cat("corpora/score-out/scores.jsonl").decode().splitlines() == local and len(local) == 6


@pytest.mark.parametrize("suffix", [".npy", ".bin"])
def test_a_token_array_in_a_bucket_reads_as_the_local_one_by_byte_range(s3, tmp_path, suffix):
    import numpy as np

    direct, proxy = s3
    tokens = np.random.default_rng(0).integers(0, 60_000, size=10_000).astype(np.uint16)
    path = tmp_path / f"tokens{suffix}"
    np.save(path, tokens) if suffix == ".npy" else tokens.tofile(path)
    direct.put(str(path), f"corpora/tokens/tokens{suffix}")
    options = {"token_dtype": "uint16", "chunk_tokens": 3_000}
    local = open_corpus(path, **options)
    proxy.fetched.clear()
    remote = open_corpus(f"s3://corpora/tokens/tokens{suffix}", **options)
    assert (
        [s.name for s in remote.shards]
        == [s.name for s in local.shards]
        == [f"tokens{suffix}@{a}:{min(a + 3000, 10_000)}" for a in range(0, 10_000, 3000)]
    )
    for got, want in zip(remote.documents(), local.documents()):
        assert got.id == want.id and np.array_equal(got.tokens, want.tokens)
    header = (1 << 16) if suffix == ".npy" else 0  # one ranged read of the .npy header's first 64 KB at most
    assert proxy.fetched[f"/corpora/tokens/tokens{suffix}"] <= tokens.nbytes + header


def test_a_refused_upload_names_the_fix_and_keeps_the_local_copy(s3, tmp_path, monkeypatch):
    from jaxcontam.storage import output_file, publish

    _, proxy = s3
    monkeypatch.setenv("JAXCONTAM_CACHE", str(tmp_path))
    local = output_file("s3://corpora/refused/scores.jsonl")
    local.parent.mkdir(parents=True, exist_ok=True)
    local.write_text("{}\n")
    proxy.faults["/corpora/refused/scores.jsonl"] = [403] * 20
    with pytest.raises(DataError, match=r"cannot be written .*grant write access.*kept in .*a rerun resumes"):
        publish(local)
    assert local.read_text() == "{}\n"


def test_a_file_url_reads_as_the_local_path(tmp_path, texts):
    local = write_corpus(tmp_path / "packed", texts, compress=True)
    assert plain_ids(open_corpus(f"file://{local}")) == plain_ids(open_corpus(local))


MIRROR_WORKER = """
import json, sys
import jax
jax.config.update("jax_cpu_collectives_implementation", "gloo")
port, pid, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
jax.distributed.initialize(coordinator_address=f"127.0.0.1:{port}", num_processes=2, process_id=pid)
from jaxcontam.storage import output_folder, publish
local = output_folder("s3://corpora/two-processes")
(local / f"from-{pid}.txt").write_text(str(pid))
publish(local / f"from-{pid}.txt")
json.dump(str(local), open(out, "w"))
"""


def test_processes_sharing_a_machine_keep_their_output_mirrors_apart(s3, tmp_path, monkeypatch):
    """Two processes of one `jax.distributed` group on one machine (one per GPU), one cache folder: each writes
    through its own mirror, and both files reach the bucket."""
    from helpers import free_port, run_processes

    direct, _ = s3
    monkeypatch.setenv("JAXCONTAM_CACHE", str(tmp_path / "cache"))
    port = free_port()
    run_processes(lambda i: ["-c", MIRROR_WORKER, port, i, tmp_path / f"{i}.json"], timeout=120)
    mirrors = [json.loads((tmp_path / f"{i}.json").read_text()) for i in range(2)]
    assert mirrors[0] != mirrors[1] and all(m.startswith(str(tmp_path / "cache")) for m in mirrors)
    assert sorted(direct.ls("corpora/two-processes")) == [f"corpora/two-processes/from-{i}.txt" for i in range(2)]
