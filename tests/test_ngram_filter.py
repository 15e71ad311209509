"""Decontamination filter: flags exactly the documents / windows holding a benchmark n-gram."""

import json

import jax.numpy as jnp
import numpy as np
import pytest

from jaxcontam.ngram.filter import DecontaminationFilter
from jaxcontam.ngram.table import build_table, encode_items
from jaxcontam.ngram.units import load_units


@pytest.fixture(scope="module")
def setup(shared_data):
    units = load_units(shared_data / "gpt2_tokenizer_whisper" / "gpt2.tiktoken")
    questions = [json.loads(line)["question"] for line in (shared_data / "gsm8k" / "test.jsonl").open()][:200]
    table = build_table(encode_items(((str(i), [q]) for i, q in enumerate(questions)), units), 8)
    text = (shared_data / "corpus_misc" / "tinyshakespeare" / "input.txt").read_text()
    clean = units.encode_batch([p for p in text.split("\n\n")[:300] if p.strip()])
    rng = np.random.default_rng(0)
    documents = []
    for i, doc in enumerate(clean):
        if i % 3 == 0:  # splice a benchmark 8-gram (or a 7-token prefix of one, which must not match)
            row = table.ngrams[rng.integers(len(table))]
            piece = row if i % 2 == 0 else row[:7]
            cut = rng.integers(0, len(doc) + 1)
            doc = np.concatenate([doc[:cut], piece, doc[cut:]]).astype(np.int32)
        documents.append(doc)
    return table, documents


def brute_flags(table, documents):
    rows = {tuple(r) for r in table.ngrams.tolist()}
    return [any(tuple(d[i : i + table.n].tolist()) in rows for i in range(len(d) - table.n + 1)) for d in documents]


def test_documents_flagged_exactly(setup):
    table, documents = setup
    filt = DecontaminationFilter(table)
    expected = brute_flags(table, documents)
    assert 20 < sum(expected) < len(documents) - 20
    assert [filt.contains(d) for d in documents] == expected
    kept = list(filt.filter_documents(iter(documents)))
    assert len(kept) == len(documents) - sum(expected)


def test_padded_batches_of_jax_windows(setup):
    table, documents = setup
    filt = DecontaminationFilter(table)
    width = 64
    batch = np.zeros((len(documents), width), np.int32)
    lengths = np.array([min(len(d), width) for d in documents], np.int32)
    for b, d in enumerate(documents):
        batch[b, : lengths[b]] = d[:width]
    expected = brute_flags(table, [d[:width] for d in documents])
    assert filt.flags(jnp.asarray(batch), jnp.asarray(lengths)).tolist() == expected
    kept, kept_lengths = filt.drop_windows(batch, lengths)
    assert len(kept) == len(kept_lengths) == len(documents) - sum(expected)


def test_min_hits_and_short_inputs(setup):
    table, _ = setup
    row = table.ngrams[0]
    twice = np.concatenate([row, [0], table.ngrams[1]]).astype(np.int32)
    assert DecontaminationFilter(table, min_hits=2).contains(twice)
    assert not DecontaminationFilter(table, min_hits=2).contains(row)
    assert not DecontaminationFilter(table).contains(row[:5])
