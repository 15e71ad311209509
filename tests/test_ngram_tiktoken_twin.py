"""The tiktoken twin of a `tokenizer.json` gives exactly the `tokenizers` library's ids.

Reference: the `tokenizers` library encoding each whole text itself. Tokenizers: SmolLM2's own (read from
its GGUF: special tokens first in the vocabulary, six control characters missing from it), and tokenizers
trained here by the `tokenizers` trainer with Llama 3's pipeline (its split regex, byte level without regex,
`ignore_merges`) and Qwen2's (its split regex, NFC normalizer).
"""

import gzip
import json

import pytest
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Regex, models, normalizers, pre_tokenizers, trainers

from jaxcontam.ngram.text_encoder import TextEncoder
from jaxcontam.ngram.tiktoken_twin import LLAMA3_PATTERN, QWEN2_PATTERN, tiktoken_twin
from jaxcontam.ngram.units import load_units

pytestmark = pytest.mark.shared_data


@pytest.fixture(scope="module")
def texts(shared_data):
    """Books (cut into pieces), Pile documents (code, maths, markup), XCOPA in eleven languages, and edge cases."""
    texts = [(shared_data / "corpus_gutenberg" / "books" / "pg14881.txt").read_text(encoding="utf-8")]
    for path in sorted((shared_data / "mimir_pile_nonmembers").rglob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            texts += [text for _, line in zip(range(10), handle) if (text := json.loads(line)["text"])]
    for path in sorted((shared_data / "xcopa").rglob("*.jsonl"))[:11]:
        texts.append(" ".join(json.loads(line)["premise"] for line in path.read_text(encoding="utf-8").splitlines()))
    edge = [
        "",
        "x",
        "  spaces  \n\n ",
        "a\x04b \x13\x1d",
        "e\u0301 cafe\u0301 \u212b",
        chr(0x50000) + "z",
        "1234567 89",
    ]
    return texts + edge + ["<|im_start|>user\nhi<|im_end|> <|endoftext|><|begin_of_text|>"]


def trained(pattern: str, nfc: bool, training_texts: list[str], ignore_merges: bool) -> tokenizers.Tokenizer:
    tokenizer = tokenizers.Tokenizer(models.BPE(ignore_merges=ignore_merges))
    if nfc:
        tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    trainer = trainers.BpeTrainer(
        vocab_size=3000,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
        special_tokens=["<|begin_of_text|>", "<|endoftext|>", "<|im_start|>", "<|im_end|>"],
    )
    tokenizer.train_from_iterator(training_texts, trainer)
    return tokenizer


@pytest.fixture(scope="module")
def tokenizers_under_test(shared_data, texts):
    smollm2 = load_units(shared_data / "smollm2_135m_instruct" / "SmolLM2-135M-Instruct.Q4_1.gguf").tokenizer
    books = shared_data / "corpus_gutenberg" / "books"
    training = [(books / f"pg{n}.txt").read_text(encoding="utf-8") for n in (10900, 13272)] + texts[1:60]
    return {
        "smollm2": smollm2,
        "llama3-style": trained(LLAMA3_PATTERN, False, training, ignore_merges=True),
        "qwen2-style": trained(QWEN2_PATTERN, True, training, ignore_merges=False),
    }


@pytest.mark.parametrize("name", ["smollm2", "llama3-style", "qwen2-style"])
def test_twin_ids_equal_the_tokenizers_library_on_real_text(tokenizers_under_test, texts, name):
    tokenizer = tokenizers_under_test[name]
    encoder = TextEncoder(tokenizer, piece_chars=1 << 12)
    assert encoder.engine == "tiktoken" and encoder.splits
    assert len(json.loads(tokenizer.to_str())["model"]["merges"]) > 2500
    assert len(texts[0]) > 10 * encoder.piece_chars  # the book is cut into pieces
    reference = tokenizer.encode_batch(texts, add_special_tokens=False)
    for text, ours, theirs in zip(texts, encoder.encode_batch(texts), reference, strict=True):
        assert ours.tolist() == theirs.ids, text[:80]


def test_smollm2_vocabulary_order_and_missing_bytes_are_what_the_twin_handles(tokenizers_under_test):
    description = json.loads(tokenizers_under_test["smollm2"].to_str())
    vocab = description["model"]["vocab"]
    assert vocab["<|endoftext|>"] == 0  # special tokens before the bytes: vocabulary ids are not merge ranks
    assert "\u0104" not in vocab  # byte 0x04's character: the tokenizer drops it, the twin hands such text over
    twin = tiktoken_twin(description)
    assert twin is not None and twin.encode("a\x04b") is None and twin.encode("ab") is not None


def test_no_twin_where_it_cannot_be_shown_equal(tokenizers_under_test):
    description = json.loads(tokenizers_under_test["llama3-style"].to_str())
    other_pattern = json.loads(json.dumps(description))
    other_pattern["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = r"\S+|\s+"
    assert tiktoken_twin(other_pattern) is None
    lowercased = json.loads(json.dumps(description))
    lowercased["normalizer"] = {"type": "Lowercase"}
    assert tiktoken_twin(lowercased) is None
    swapped = json.loads(json.dumps(description))
    merges = swapped["model"]["merges"]
    late = next(i for i, (left, right) in enumerate(merges) if len(left) > 1 and len(right) > 1)
    merges.insert(0, merges.pop(late))  # first, before the merges building its parts: tiktoken could not derive it
    assert tiktoken_twin(swapped) is None


PIECES = st.sampled_from(list("ab Z9.'\n\t -") + ["  ", "'s", "'LL", "é", "e\u0301", "日本", "\r\n", "123", "\x04"])


@pytest.fixture(scope="module")
def encoders(tokenizers_under_test):
    return [TextEncoder(tokenizer) for tokenizer in tokenizers_under_test.values()]


@settings(max_examples=150, deadline=None)
@given(parts=st.lists(PIECES, max_size=60), piece_chars=st.integers(1, 12))
def test_cutting_into_pieces_never_changes_the_ids(encoders, parts, piece_chars):
    text = "".join(parts)
    for encoder in encoders:
        encoder.piece_chars = piece_chars
        expected = encoder.tokenizer.encode(text, add_special_tokens=False).ids
        assert encoder.encode_batch([text])[0].tolist() == expected
