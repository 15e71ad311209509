"""Streaming counts: chunk/document boundaries, infini-gram agreement on real text, resume, verification."""

import os
import resource
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import FIXED_TABLE, Doc, ListCorpus, Shard, brute_counts, free_port, items_from_token_lists, run_processes
from jaxcontam.errors import DataError, IndexMismatchError
from jaxcontam.ngram.hashing import to_uint64, window_fingerprints
from jaxcontam.ngram.stream import CountView, count_corpus
from jaxcontam.ngram.table import NgramTable, build_table, encode_items
from jaxcontam.ngram.units import load_units


@pytest.fixture(scope="module")
def gpt2(shared_data):
    return load_units(shared_data / "gpt2_tokenizer_whisper" / "gpt2.tiktoken")


@settings(max_examples=25, deadline=None)
@given(
    documents=st.lists(st.lists(st.integers(0, 3), max_size=60), min_size=1, max_size=8),
    shards=st.integers(1, 3),
    chunk=st.sampled_from([16, 64]),
    capacity=st.sampled_from([1, 8]),
)
def test_counts_equal_brute_force_across_chunk_and_document_boundaries(documents, shards, chunk, capacity):
    # tiny chunks put many windows on chunk edges; capacity 1 forces the overflow rerun path
    docs = [Doc(str(i), tokens=np.array(d, np.int32)) for i, d in enumerate(documents)]
    corpus = ListCorpus(tuple(Shard(f"s{k}", docs[k::shards]) for k in range(shards)))
    result = count_corpus([CountView(FIXED_TABLE)], corpus, chunk_tokens=chunk, capacity=capacity)
    np.testing.assert_array_equal(result.counts[0], brute_counts(FIXED_TABLE, documents))
    assert result.units_scanned == (sum(map(len, documents)),)
    assert result.rejected == 0


def paragraphs(path):
    return [p for p in path.read_text(encoding="utf-8", errors="replace").split("\n\n") if p.strip()]


@pytest.fixture(scope="module")
def real_corpus(shared_data, gpt2):
    misc = shared_data / "corpus_misc"
    texts = paragraphs(misc / "tinyshakespeare" / "input.txt")
    texts += [p for f in sorted((misc / "state_union").glob("*.txt"))[:30] for p in paragraphs(f)]
    return texts, gpt2.encode_batch(texts)


def build_infinigram_index(directory, documents):
    """infini-gram's own suffix-array indexer over our token ids (u16, 0xFFFF document separators)."""
    directory.mkdir()
    offset = 0
    with open(directory / "tokenized.0", "wb") as data, open(directory / "offset.0", "wb") as offsets:
        for tokens in documents:
            record = b"\xff\xff" + tokens.astype(np.uint16).tobytes()
            offsets.write(np.array([offset], np.uint64).tobytes())
            data.write(record)
            offset += len(record)
    (directory / "raw").mkdir()
    limit = str(resource.getrlimit(resource.RLIMIT_NOFILE)[1])
    subprocess.run(
        [
            sys.executable,
            "-m",
            "infini_gram.indexing",
            "--data_dir",
            str(directory / "raw"),
            "--save_dir",
            str(directory),
            "--token_dtype",
            "u16",
            "--cpus",
            "2",
            "--mem",
            "2",
            "--ulimit",
            limit,
        ],
        check=True,
        capture_output=True,
    )
    from infini_gram.engine import InfiniGramEngine

    return InfiniGramEngine(index_dir=str(directory), eos_token_id=50256, token_dtype="u16", version=4)


def test_counts_identical_to_infinigram_on_real_text(shared_data, gpt2, real_corpus, tmp_path):
    texts, documents = real_corpus
    # benchmark items: GSM8K test questions (mostly absent) + inaugural paragraphs (shared phrases)
    # + corpus lines (present, some many times)
    import json

    gsm8k = [json.loads(line)["question"] for line in (shared_data / "gsm8k" / "test.jsonl").open()][:400]
    speeches = sorted((shared_data / "corpus_misc" / "inaugural").glob("*.txt"))[-8:]
    inaugural = [p for f in speeches for p in paragraphs(f)]
    rng = np.random.default_rng(0)
    lines = [texts[i].split("\n")[-1] for i in rng.choice(len(texts), 300, replace=False)]
    items = encode_items(((str(i), [s]) for i, s in enumerate(gsm8k + inaugural + lines)), gpt2)
    engine = build_infinigram_index(tmp_path / "index", documents)
    shards = [Shard(f"part{k}", [Doc(str(i), text=t) for i, t in enumerate(texts[k::3])]) for k in range(3)]
    corpus = ListCorpus(tuple(shards))
    for n, repeated in ((8, 2), (4, 50)):
        table = build_table(items, n)
        result = count_corpus([CountView(table)], corpus, gpt2, chunk_tokens=1 << 14)
        expected = np.array([engine.count(row)["count"] for row in table.ngrams.tolist()], np.int64)
        np.testing.assert_array_equal(result.counts[0], expected)
        assert len(table) >= 10_000 and (expected > 0).sum() >= 1_000 and expected.max() >= repeated
        assert result.rejected == 0


def test_no_fingerprint_collision_among_distinct_corpus_ngrams(real_corpus):
    _, documents = real_corpus
    stream = np.concatenate(documents).astype(np.int32)
    for n in (8, 4):
        windows = np.lib.stride_tricks.sliding_window_view(stream, n)
        hi, lo = window_fingerprints(stream, n)
        keys = to_uint64(hi, lo)
        distinct_windows = np.unique(np.ascontiguousarray(windows).view(np.dtype((np.void, 4 * n))))
        distinct_pairs = np.unique(
            np.concatenate([keys[:, None].view(np.int32), windows], axis=1).view(np.dtype((np.void, 4 * n + 8)))
        )
        assert len(np.unique(keys)) == len(distinct_windows) == len(distinct_pairs) > 100_000


def test_interrupted_pass_resumes_from_the_checkpoint(tmp_path):
    rng = np.random.default_rng(1)
    documents = [rng.integers(0, 4, rng.integers(0, 50)).astype(np.int32) for _ in range(12)]
    shards = tuple(Shard(f"s{k}", [Doc(str(i), tokens=d) for i, d in enumerate(documents[k::3])]) for k in range(3))
    checkpoint = tmp_path / "checkpoint.npz"
    shards[1].fail_after = 2
    with pytest.raises(KeyboardInterrupt):
        count_corpus([CountView(FIXED_TABLE)], ListCorpus(shards), chunk_tokens=16, checkpoint=checkpoint)
    assert checkpoint.exists()
    shards[1].fail_after = None
    result = count_corpus([CountView(FIXED_TABLE)], ListCorpus(shards), chunk_tokens=16, checkpoint=checkpoint)
    assert [s.reads for s in shards] == [1, 2, 1]  # the finished shard was not read again
    assert result.shards == ("s0", "s1", "s2")
    np.testing.assert_array_equal(result.counts[0], brute_counts(FIXED_TABLE, documents))


def test_checkpoint_of_another_table_is_refused(tmp_path):
    corpus = ListCorpus((Shard("s0", [Doc("a", tokens=np.array([0, 1, 2, 0], np.int32))]),))
    checkpoint = tmp_path / "checkpoint.npz"
    count_corpus([CountView(FIXED_TABLE)], corpus, chunk_tokens=16, checkpoint=checkpoint)
    other = build_table(items_from_token_lists([[5, 6, 7, 8]]), 3)
    with pytest.raises(IndexMismatchError, match="checkpoint of a different table"):
        count_corpus([CountView(other)], corpus, chunk_tokens=16, checkpoint=checkpoint)


def test_token_verification_rejects_fingerprint_hits_with_other_tokens():
    # a table whose stored tokens disagree with its fingerprints stands in for a hash collision
    tampered = NgramTable(
        FIXED_TABLE.n, FIXED_TABLE.keys, FIXED_TABLE.ngrams + 100, FIXED_TABLE.items, FIXED_TABLE.position_ngram
    )
    corpus = ListCorpus((Shard("s0", [Doc("a", tokens=np.array([0, 1, 2, 0, 1, 2], np.int32))]),))
    checked = count_corpus([CountView(tampered)], corpus, chunk_tokens=16)
    unchecked = count_corpus([CountView(tampered)], corpus, chunk_tokens=16, verify=False)
    assert checked.counts[0].sum() == 0 and checked.rejected == 4
    assert unchecked.counts[0].sum() == 4


def test_normalised_view_needs_text(gpt2):
    corpus = ListCorpus((Shard("tok", [Doc("a", tokens=np.array([1, 2, 3], np.int32))]),))
    with pytest.raises(DataError, match="pre-tokenized"):
        count_corpus([CountView(FIXED_TABLE, normalize=True)], corpus, gpt2)


WORKER = """
import sys, numpy as np, jax
jax.config.update("jax_cpu_collectives_implementation", "gloo")
jax.distributed.initialize(coordinator_address="127.0.0.1:" + sys.argv[1], num_processes=2, process_id=int(sys.argv[2]))
sys.path.insert(0, sys.argv[3])
from helpers import FIXED_TABLE, ListCorpus, Shard, Doc
from jaxcontam.ngram.stream import CountView, count_corpus
rng = np.random.default_rng(7)
docs = [rng.integers(0, 4, 40).astype(np.int32) for _ in range(10)]
corpus = ListCorpus(tuple(Shard(f"s{k}", [Doc(str(i), tokens=d) for i, d in enumerate(docs[k::5])]) for k in range(5)))
result = count_corpus([CountView(FIXED_TABLE)], corpus, chunk_tokens=16, checkpoint=sys.argv[4])
np.save(sys.argv[5], np.concatenate([result.counts[0], [len(result.shards), result.units_scanned[0]]]))
"""


def test_two_processes_split_shards_and_sum_counts(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    port = free_port()
    tests_dir = os.path.dirname(__file__)
    run_processes(lambda i: [script, port, i, tests_dir, tmp_path / "ckpt.npz", tmp_path / f"out{i}.npy"])
    rng = np.random.default_rng(7)
    docs = [rng.integers(0, 4, 40).astype(np.int32) for _ in range(10)]
    expected = brute_counts(FIXED_TABLE, docs)
    outs = [np.load(tmp_path / f"out{i}.npy") for i in range(2)]
    for out in outs:  # every process returns the global sum
        np.testing.assert_array_equal(out[:-2], expected)
        assert out[-1] == 400
    assert sorted(int(o[-2]) for o in outs) == [2, 3]  # shards split round-robin: 3 + 2
    assert (tmp_path / "ckpt.npz.process0of2").exists() and (tmp_path / "ckpt.npz.process1of2").exists()


def test_items_shorter_than_n_give_an_empty_table_and_no_counts():
    table = build_table(items_from_token_lists([[1, 2], [3]]), 3)
    corpus = ListCorpus((Shard("s0", [Doc("a", tokens=np.array([1, 2, 3, 1, 2], np.int32))]),))
    result = count_corpus([CountView(table)], corpus, chunk_tokens=16)
    assert len(table) == 0 and result.counts[0].shape == (0,) and result.units_scanned == (5,)


LANES_WORKER = """
import sys, numpy as np
sys.path.insert(0, sys.argv[1])
import jax
from jaxcontam.ngram.stream import CountView, count_corpus
from helpers import FIXED_TABLE, ListCorpus, Shard, Doc, brute_counts
assert len(jax.local_devices()) == 3
rng = np.random.default_rng(3)
docs = [rng.integers(0, 4, int(rng.integers(0, 90))).astype(np.int32) for _ in range(30)]
corpus = ListCorpus((Shard("a", [Doc(str(i), tokens=d) for i, d in enumerate(docs[:17])]),
                     Shard("b", [Doc(str(i), tokens=d) for i, d in enumerate(docs[17:])])))
result = count_corpus([CountView(FIXED_TABLE)], corpus, chunk_tokens=16, capacity=2)
np.testing.assert_array_equal(result.counts[0], brute_counts(FIXED_TABLE, docs))
print("ok")
"""


def test_chunks_spread_over_several_devices_count_the_same():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=3", JAX_PLATFORMS="cpu")
    done = subprocess.run(
        [sys.executable, "-c", LANES_WORKER, os.path.dirname(__file__)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-2000:]


@settings(max_examples=80, deadline=None)
@given(mask=st.lists(st.booleans(), min_size=1, max_size=300), capacity=st.sampled_from([1, 5, 64, 400]))
def test_compaction_lists_the_first_true_positions(mask, capacity):
    import jax

    from jaxcontam.ngram.lookup import _compact

    expected = np.flatnonzero(mask)[:capacity]
    padded = np.zeros(333, bool)  # one shape (one compile per capacity); False padding changes nothing
    padded[: len(mask)] = mask
    got = np.asarray(jax.jit(_compact, static_argnums=1)(padded, capacity))
    np.testing.assert_array_equal(got[: len(expected)], expected)
    assert (got[len(expected) :] == 0).all()


def test_prefilter_passes_every_table_ngram_and_rejects_most_others():
    from jaxcontam.ngram.lookup import _may_be_in_table, device_table

    rng = np.random.default_rng(5)
    table = build_table(items_from_token_lists([rng.integers(0, 50_000, 400).tolist() for _ in range(250)]), 8)
    device = device_table(table)
    _, lo = (np.asarray(w) for w in window_fingerprints(table.ngrams, 8))
    assert np.asarray(_may_be_in_table(device, lo[:, 0])).all()
    absent = rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32)
    assert np.asarray(_may_be_in_table(device, absent)).mean() < 0.05  # >= 12 bits per n-gram, 3 probes
