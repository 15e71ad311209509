"""DC-PDD's token frequency tables: counted by the n-gram engine equal to a plain Counter over the tokenized corpus,
saved and read back, shipped for the bundled tokenizers, and every bad or foreign table refused."""

import collections
import io
import json
import shutil
import zipfile

import numpy as np
import pytest
import tokenizers
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jaxcontam
from helpers import run_cli
from jaxcontam.audit.config import EXAMPLE_CONFIG
from jaxcontam.data.corpus import open_corpus
from jaxcontam.detect.likelihood import LikelihoodSettings
from jaxcontam.errors import JaxcontamError
from jaxcontam.ngram.frequencies import (
    TokenFrequencies,
    count_token_frequencies,
    load_token_frequencies,
    save_token_frequencies,
    vocabulary_fingerprint,
)
from jaxcontam.ngram.store import write_npz
from jaxcontam.ngram.units import load_units

BUNDLED_MODEL = EXAMPLE_CONFIG.parent / "model"
BUNDLED_TABLE = EXAMPLE_CONFIG.parent / "token_frequencies.npz"


@pytest.fixture(scope="module")
def units():
    return load_units(str(BUNDLED_MODEL))


@pytest.fixture(scope="module")
def corpus_folder(shared_data, tmp_path_factory):
    """Two real inaugural addresses (text files) and a JSONL file of short records, one of them empty."""
    folder = tmp_path_factory.mktemp("reference_corpus")
    for name in ("1789-Washington.txt", "1861-Lincoln.txt"):
        shutil.copy(shared_data / "corpus_misc" / "inaugural" / name, folder / name)
    records = [{"text": "The cause of the man's fall was a banana peel."}, {"text": ""}, {"text": "Ünïcode — 42 ½"}]
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return folder


def counter_reference(folder, tokenizer_json) -> collections.Counter:
    """Every document of the folder tokenized by the `tokenizers` library itself, counted by collections.Counter."""
    tokenizer = tokenizers.Tokenizer.from_file(str(tokenizer_json))
    texts = [path.read_text(encoding="utf-8") for path in sorted(folder.glob("*.txt"))]
    texts += [json.loads(line)["text"] for line in (folder / "records.jsonl").read_text(encoding="utf-8").splitlines()]
    counts = collections.Counter()
    for text in texts:
        counts.update(tokenizer.encode(text, add_special_tokens=False).ids)
    return counts


def test_counted_table_equals_a_counter_over_the_tokenized_corpus(units, corpus_folder, tmp_path):
    table = count_token_frequencies([("ref", open_corpus(corpus_folder))], units, chunk_tokens=1024)
    reference = counter_reference(corpus_folder, BUNDLED_MODEL / "tokenizer.json")
    assert table.vocab_size == 2048 and table.tokens == sum(reference.values()) > 2000
    assert {i: int(c) for i, c in enumerate(table.counts) if c} == dict(reference)
    save_token_frequencies(table, tmp_path / "table.npz")
    loaded = load_token_frequencies(tmp_path / "table.npz")
    np.testing.assert_array_equal(loaded.counts, table.counts)
    assert (loaded.vocabulary_sha256, loaded.tokenizer, loaded.corpus) == (
        table.vocabulary_sha256,
        str(BUNDLED_MODEL),
        ("ref",),
    )
    assert loaded.probabilities() == pytest.approx((table.counts + 1) / (table.tokens + 2048), rel=1e-15)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(st.integers(0, 2047), min_size=1, max_size=1500),
    st.lists(st.lists(st.integers(0, 2047), max_size=300), max_size=4),
)
def test_pretokenized_corpus_counts_equal_a_counter(units, tmp_path_factory, first, others):
    """Token arrays (.npy, one document each) of any length, empty ones among them (a corpus of nothing is refused
    by the corpus reader), across the boundaries of 1024-token chunks."""
    documents = [first, *others]
    folder = tmp_path_factory.mktemp("tokens")
    for number, document in enumerate(documents):
        np.save(folder / f"doc{number}.npy", np.asarray(document, np.uint16))
    table = count_token_frequencies([("tokens", open_corpus(folder))], units, chunk_tokens=1024)
    expected = collections.Counter(token for document in documents for token in document)
    assert {i: int(c) for i, c in enumerate(table.counts) if c} == dict(expected)


def test_corpus_tokens_outside_the_vocabulary_are_refused(units, tmp_path):
    np.save(tmp_path / "doc.npy", np.asarray([1, 2, 5000], np.uint16))
    with pytest.raises(JaxcontamError, match="1 of its 3 tokens are not ids"):
        count_token_frequencies([("foreign", open_corpus(tmp_path))], units, chunk_tokens=1024)


def test_the_freq_command_builds_a_table_the_audit_reads(units, corpus_folder, tmp_path, capsys):
    out = tmp_path / "table.npz"
    code, printed = run_cli(
        ["freq", "--corpus", corpus_folder, "--tokenizer", BUNDLED_MODEL, "--out", out, "--chunk-tokens", 1024], capsys
    )
    assert code == 0, printed
    assert f"-> {out}" in printed and "frequency_table" in printed
    table = load_token_frequencies(out)
    assert dict(collections.Counter({i: int(c) for i, c in enumerate(table.counts) if c})) == dict(
        counter_reference(corpus_folder, BUNDLED_MODEL / "tokenizer.json")
    )
    assert LikelihoodSettings(frequency_table=str(out)).frequency_table == str(out)


def test_the_shipped_bundled_table_fits_the_bundled_tokenizer(units):
    table = load_token_frequencies(BUNDLED_TABLE)
    table.check_tokenizer(units.tokenizer, "bundled")
    assert table.tokens > 1_000_000 and table.vocab_size == 2048 and table.corpus


def a_tokenizer(words):
    """A word-level tokenizer over `words` (ids in order): a vocabulary unlike any model's."""
    from tokenizers import models, pre_tokenizers

    tokenizer = tokenizers.Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token=words[0]))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    return tokenizer


def test_a_table_of_another_vocabulary_is_refused(units):
    table = load_token_frequencies(BUNDLED_TABLE)
    with pytest.raises(JaxcontamError, match="counted for another tokenizer"):
        table.check_tokenizer(a_tokenizer(["<unk>", "a", "b"]), "here")
    same_size = a_tokenizer([f"w{i}" for i in range(2048)])  # as many ids, other tokens
    assert vocabulary_fingerprint(same_size, "here")[1] == 2048
    with pytest.raises(JaxcontamError, match="its ids would index the wrong tokens"):
        table.check_tokenizer(same_size, "here")
    with pytest.raises(JaxcontamError, match="needs the model's own tokenizer"):
        table.check_tokenizer(None, "here")


def good_header(counts) -> dict:
    return {
        "kind": "token_frequencies",
        "vocabulary_sha256": "ab" * 32,
        "vocab_size": len(counts),
        "tokens": int(np.sum(counts)),
        "tokenizer": "t",
        "corpus": ["c"],
    }


HOSTILE = {  # name -> (arrays, header changes), each written with a valid checksum: the content is what is wrong
    "negative counts": ({"counts": np.array([3, -1, 2], np.int64)}, {"tokens": 4}),
    "float counts": ({"counts": np.array([1.0, 2.0])}, {}),
    "2-D counts": ({"counts": np.ones((2, 2), np.int64)}, {"vocab_size": 4, "tokens": 4}),
    "no counts": ({"rows": np.ones(2, np.int64)}, {}),
    "extra array": ({"counts": np.ones(2, np.int64), "more": np.ones(1)}, {}),
    "size": ({"counts": np.ones(3, np.int64)}, {"vocab_size": 5}),
    "tokens": ({"counts": np.ones(3, np.int64)}, {"tokens": 7}),
    "digest": ({"counts": np.ones(3, np.int64)}, {"vocabulary_sha256": "not-a-digest"}),
    "kind": ({"counts": np.ones(3, np.int64)}, {"kind": "ngram_counts"}),
    "corpus": ({"counts": np.ones(3, np.int64)}, {"corpus": [1, 2]}),
}
REASONS = {
    "negative counts": "negative",
    "float counts": "expected a non-empty 1-D int64",
    "2-D counts": "expected a non-empty 1-D int64",
    "no counts": "expected exactly",
    "extra array": "expected exactly",
    "size": "disagrees",
    "tokens": "not the sum",
    "digest": "not a sha256",
    "kind": "not a token frequency table",
    "corpus": "list of strings",
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_tables_are_refused_naming_the_problem(case, tmp_path):
    arrays, changes = HOSTILE[case]
    counts = arrays.get("counts", np.ones(2, np.int64))
    path = tmp_path / "table.npz"
    write_npz(path, arrays, good_header(counts) | changes)
    with pytest.raises(JaxcontamError, match=REASONS[case]) as refused:
        load_token_frequencies(path)
    assert "jaxcontam freq" in str(refused.value)  # the fix
    with pytest.raises(JaxcontamError, match=REASONS[case]):
        LikelihoodSettings(frequency_table=str(path))  # at the config's reading, before any model loads


def test_unreadable_files_are_refused(tmp_path):
    with pytest.raises(JaxcontamError, match="no such file"):
        load_token_frequencies(tmp_path / "missing.npz")
    (tmp_path / "noise.npz").write_bytes(b"not a zip at all")
    with pytest.raises(JaxcontamError, match="not a readable"):
        load_token_frequencies(tmp_path / "noise.npz")
    pickled = io.BytesIO()
    np.savez(pickled, counts=np.array([object(), 1], dtype=object))  # an object array: unpickling would run code
    (tmp_path / "pickle.npz").write_bytes(pickled.getvalue())
    with pytest.raises(JaxcontamError, match="not a readable"):
        load_token_frequencies(tmp_path / "pickle.npz")
    good = tmp_path / "good.npz"
    save_token_frequencies(TokenFrequencies(np.array([1, 2, 3], np.int64), "cd" * 32, "t", ("c",)), good)
    load_token_frequencies(good)
    tampered = tmp_path / "tampered.npz"
    with zipfile.ZipFile(good) as source, zipfile.ZipFile(tampered, "w") as target:
        for member in source.infolist():
            data = source.read(member)
            if member.filename == "counts.npy":
                data = data[:-8] + np.int64(9).tobytes()  # the last count changed, the checksum not
            target.writestr(member, data)
    with pytest.raises(JaxcontamError, match="checksum mismatch"):
        load_token_frequencies(tampered)


def test_a_config_reads_the_table_from_its_own_folder(tmp_path):
    from helpers import small_toml
    from jaxcontam.audit.config import load_config

    shutil.copy(BUNDLED_TABLE, tmp_path / "table.npz")
    config = load_config(small_toml(tmp_path, extra='\n[likelihood]\nfrequency_table = "table.npz"\ngap_window = 4\n'))
    assert config.settings_of("likelihood") == LikelihoodSettings(
        gap_window=4, frequency_table=str(tmp_path / "table.npz")
    )
    assert config.settings()["likelihood"] == {"gap_window": 4, "frequency_table": str(tmp_path / "table.npz")}
    (tmp_path / "table.npz").write_bytes(b"broken")
    with pytest.raises(JaxcontamError, match="frequency table .*table.npz: not a readable"):
        load_config(str(tmp_path / "audit.toml"))


def test_the_audit_refuses_a_table_of_another_tokenizer_before_any_work(tmp_path):
    from jaxcontam.data import load_benchmark
    from jaxcontam.detect.audit_core import AuditSettings, AuditTarget, audit_benchmark

    table = load_token_frequencies(BUNDLED_TABLE)
    foreign = tmp_path / "foreign.npz"
    save_token_frequencies(
        TokenFrequencies(table.counts, "ef" * 32, "another tokenizer", table.corpus), foreign
    )  # the bundled counts under another vocabulary's fingerprint
    benchmark = load_benchmark("copa", split="test", path=EXAMPLE_CONFIG.parent / "copa_test_sample.jsonl", limit=4)
    model = jaxcontam.load_model(str(BUNDLED_MODEL))
    started = []
    settings = AuditSettings(
        detectors=("pacost", "likelihood"),
        detector_settings={"likelihood": LikelihoodSettings(frequency_table=str(foreign))},
    )
    with pytest.raises(JaxcontamError, match="counted for another tokenizer"):
        audit_benchmark(
            model,
            AuditTarget(benchmark, [None] * len(benchmark)),
            settings,
            run_stage=lambda name, key, items, compute: started.append(name),
        )
    assert started == []  # PaCoST, the first stage, never started


def test_score_writes_dc_pdd_with_a_table_and_refuses_a_foreign_one(tmp_path, capsys):
    from helpers import dc_pdd_reference

    out = tmp_path / "scores.jsonl"
    data = EXAMPLE_CONFIG.parent / "copa_test_sample.jsonl"
    args = ["score", "--model", BUNDLED_MODEL, "--data", data, "--field", "text=premise", "--limit", 3, "--out", out]
    code, printed = run_cli([*args, "--frequency-table", BUNDLED_TABLE], capsys)
    assert code == 0, printed
    tokenizer = jaxcontam.load_model(str(BUNDLED_MODEL)).tokenizer
    premises = [json.loads(line)["premise"] for line in data.read_text(encoding="utf-8").splitlines()[:3]]
    frequencies = load_token_frequencies(BUNDLED_TABLE).probabilities()
    for record, premise in zip(map(json.loads, out.read_text().splitlines()), premises, strict=True):
        ids = tokenizer.encode(premise)[1:]
        assert record["dc_pdd"] == pytest.approx(dc_pdd_reference(record["token_logprobs"], ids, frequencies, 0.01))
        assert record["gap_k"] <= 0.0
    foreign = tmp_path / "foreign.npz"
    save_token_frequencies(TokenFrequencies(np.ones(2048, np.int64), "ef" * 32, "other", ("c",)), foreign)
    code, printed = run_cli([*args, "--frequency-table", foreign], capsys)
    assert code != 0 and "counted for another tokenizer" in printed
