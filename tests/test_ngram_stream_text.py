"""Raw-text encoding for corpus counts: the fast paths give exactly the ids of the tokenizer they stand for.

References: tiktoken itself on the .tiktoken ranks file with OpenAI's published r50k (GPT-2) split
pattern, and the `tokenizers` library encoding each whole text on its own.
"""

import base64
import gzip
import json

import numpy as np
import pytest
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import Doc, ListCorpus, Shard
from jaxcontam.ngram.stream import CountView, count_corpus
from jaxcontam.ngram.table import build_table, encode_items
from jaxcontam.ngram.text_encoder import TextEncoder
from jaxcontam.ngram.units import load_units, tokenizer_from_tiktoken

# OpenAI's r50k_base pattern as published in tiktoken_ext/openai_public.py (GPT-2's encoder.py regex)
R50K_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""


@pytest.fixture(scope="module")
def ranks_file(shared_data):
    return shared_data / "gpt2_tokenizer_whisper" / "gpt2.tiktoken"


@pytest.fixture(scope="module")
def gpt2(ranks_file):
    return load_units(ranks_file)


@pytest.fixture(scope="module")
def real_texts(shared_data):
    """Whole books and speeches (long documents, cut into pieces) and Pile documents (code, maths, markup)."""
    books = [shared_data / "corpus_gutenberg" / "books" / f"pg{n}.txt" for n in (14881, 9198)]
    texts = [p.read_text(encoding="utf-8") for p in books]
    speeches = sorted((shared_data / "corpus_misc" / "state_union").glob("*.txt"))[:5]
    texts += [p.read_text(encoding="utf-8") for p in speeches]
    for path in sorted((shared_data / "mimir_pile_nonmembers").rglob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            texts += [json.loads(line)["text"] for _, line in zip(range(40), f)]
    return texts + ["a literal <|endoftext|> inside text", "  leading and trailing spaces \n\n ", "", "x"]


def test_tiktoken_file_ids_equal_tiktoken_and_our_byte_level_bpe_on_real_text(gpt2, ranks_file, real_texts):
    import tiktoken

    ranks = {}
    for line in ranks_file.read_text().splitlines():
        token, rank = line.split()
        ranks[base64.b64decode(token)] = int(rank)
    reference = tiktoken.Encoding(
        "r50k-reference", pat_str=R50K_PATTERN, mergeable_ranks=ranks, special_tokens={"<|endoftext|>": 50256}
    )
    assert gpt2.encoder.engine == "tiktoken"
    assert any(len(t) > 1.5 * gpt2.encoder.piece_chars for t in real_texts)  # books are cut into pieces
    ours = gpt2.encode_batch(real_texts)
    byte_level_bpe = gpt2.tokenizer.encode_batch_fast(real_texts, add_special_tokens=False)
    for text, fast, slow in zip(real_texts, ours, byte_level_bpe):
        expected = reference.encode(text, allowed_special="all")
        assert fast.dtype == np.int32
        assert fast.tolist() == expected == slow.ids
    assert sum(map(len, ours)) > 300_000


SPLIT_ALPHABET = st.sampled_from(list("ab Z9.'\n\t -") + ["  ", "'s", "'ll", "é", "日本", "\r\n", "<|endoftext|>"])


@pytest.fixture(scope="module")
def prefix_space_tokenizer(ranks_file):
    """A byte-level BPE with add_prefix_space: splits like GPT-2 but has no tiktoken twin (the `tokenizers` path)."""
    tokenizer = tokenizer_from_tiktoken(ranks_file)
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True)
    return tokenizer


@pytest.fixture(scope="module")
def small_piece_encoders(gpt2, prefix_space_tokenizer):
    return [TextEncoder(gpt2.tokenizer, piece_chars=1), TextEncoder(prefix_space_tokenizer, piece_chars=1)]


@settings(max_examples=120, deadline=None)
@given(parts=st.lists(SPLIT_ALPHABET, max_size=80), piece_chars=st.integers(1, 12))
def test_cutting_texts_into_pieces_never_changes_the_ids(small_piece_encoders, parts, piece_chars):
    text = "".join(parts)
    for encoder in small_piece_encoders:
        encoder.piece_chars = piece_chars
        assert encoder.splits
        expected = [encoder.tokenizer.encode(t, add_special_tokens=False).ids for t in (text, text[::-1])]
        assert [ids.tolist() for ids in encoder.encode_batch([text, text[::-1]])] == expected


def test_engines_chosen_by_what_can_be_shown_equal(gpt2, prefix_space_tokenizer, ranks_file):
    assert TextEncoder(prefix_space_tokenizer).engine == "tokenizers"
    lowercased = tokenizer_from_tiktoken(ranks_file)
    lowercased.normalizer = tokenizers.normalizers.Lowercase()
    encoder = TextEncoder(lowercased, piece_chars=4)
    assert encoder.engine == "tokenizers" and not encoder.splits  # a normalizer may move the safe cuts
    text = "Hello World, this is Some Text"
    assert encoder.encode_batch([text])[0].tolist() == lowercased.encode(text, add_special_tokens=False).ids


def test_text_counts_equal_counts_of_whole_document_ids(gpt2, real_texts):
    # the reference ids come from `tokenizers` over whole documents, counted as pre-tokenized documents
    texts = real_texts[:2]
    documents = [np.asarray(e.ids, np.int32) for e in gpt2.tokenizer.encode_batch_fast(texts, add_special_tokens=False)]
    rng = np.random.default_rng(0)
    snippets = []
    for d in documents:
        for start in rng.integers(0, len(d) - 40, 60):
            snippets.append(gpt2.tokenizer.decode(d[start : start + 30].tolist()))
    table = build_table(encode_items(((str(i), [s]) for i, s in enumerate(snippets)), gpt2), 8)
    text_corpus = ListCorpus((Shard("t", [Doc(str(i), text=t) for i, t in enumerate(texts)]),))
    id_corpus = ListCorpus((Shard("i", [Doc(str(i), tokens=d) for i, d in enumerate(documents)]),))
    from_text = count_corpus([CountView(table)], text_corpus, gpt2, chunk_tokens=1 << 14)
    from_ids = count_corpus([CountView(table)], id_corpus, chunk_tokens=1 << 14)
    np.testing.assert_array_equal(from_text.counts[0], from_ids.counts[0])
    assert from_text.units_scanned == from_ids.units_scanned
    assert (from_ids.counts[0] > 0).mean() > 0.9
