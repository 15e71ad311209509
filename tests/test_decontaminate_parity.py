"""Decontamination against the peers, with code no one here wrote: lm-eval's Janitor (GPT-3's rule, its Python
mode) and datatrove's NGramsDecontFilter (NLTK words), on hypothesis-drawn documents with planted items and on
1,000 real corpus documents (Pile, Gutenberg) with planted GSM8K items."""

from __future__ import annotations

import dataclasses
import gzip
import json
import random
import re
import string
import tempfile
import types

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxcontam.decontam import DecontIndex, IndexSettings, ItemSides, clean, find, find_batch, word_spans, words

janitor_module = pytest.importorskip("lm_eval.decontamination.janitor")
Janitor = janitor_module.Janitor

# words that keep a letter or digit under both rules (ASCII, with punctuation and a few non-ASCII letters)
_LETTERS = string.ascii_letters + string.digits
_WORD = st.tuples(
    st.text(alphabet=string.punctuation + "éÉøß", max_size=2),
    st.text(alphabet=_LETTERS + "éÉøß", min_size=1, max_size=7),
    st.text(alphabet=string.punctuation, max_size=2),
).map("".join)
_ASCII_UPPER = str.maketrans(string.ascii_lowercase, string.ascii_uppercase)
_SPACE = st.sampled_from([" ", " ", " ", "\n", "  ", "\t", "\n\n", " \r\n"])


def _join(draw, tokens: list[str]) -> str:
    return "".join(w + draw(_SPACE) for w in tokens)


@st.composite
def planted(draw):
    """(items, document): 1-3 items of 13-40 words; a document of filler words with whole items and slices of
    them (re-spaced, re-cased) planted in it."""
    items = [draw(st.lists(_WORD, min_size=13, max_size=40)) for _ in range(draw(st.integers(1, 3)))]
    parts = []
    for _ in range(draw(st.integers(0, 5))):
        parts.append(_join(draw, draw(st.lists(_WORD, max_size=120))))
        item = draw(st.sampled_from(items))
        start = draw(st.integers(0, len(item) - 13))
        stop = draw(st.integers(start + 13, len(item)))
        piece = item[start:stop]
        if draw(st.booleans()):
            piece = [w.translate(_ASCII_UPPER) for w in piece]  # the Janitor folds ASCII case only
        parts.append(_join(draw, piece))
    parts.append(_join(draw, draw(st.lists(_WORD, max_size=120))))
    return [" ".join(words) for words in items], "".join(parts)


def _janitor(items: list[str], **options) -> Janitor:
    janitor = Janitor(**options)
    for item in items:
        janitor.register_contaminant_python(item)
    return janitor


def _index(items: list[str], **options) -> DecontIndex:
    """The index of `items`, reading text as the Janitor does (escapes kept; tests/test_decontaminate_escapes.py
    covers the default)."""
    options.setdefault("escapes", False)
    return DecontIndex.build([ItemSides("b", str(i), text) for i, text in enumerate(items)], IndexSettings(**options))


def _janitor_has_match(janitor: Janitor, document: str) -> bool:
    return any(
        janitor.normalize_string(gram) in janitor.dirt_ngrams
        for gram, _ in janitor_module.word_ngrams_indices(document, janitor.ngram_n)
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(planted())
def test_spans_equal_the_janitors_chunks_on_drawn_documents(case):
    items, document = case
    janitor, index = _janitor(items), _index(items)
    ours = clean(index, document, "spans")
    if _janitor_has_match(janitor, document):
        assert ours == janitor.clean_python(document)
    else:
        assert find(index, document) == [] and ours == [document]  # a clean text is kept byte for byte


@settings(max_examples=40, deadline=None)
@given(planted(), st.integers(0, 60), st.integers(1, 4), st.integers(0, 80))
def test_the_span_options_are_the_janitors(case, window, cutoff, min_slice):
    items, document = case
    janitor = _janitor(items, window_to_remove=window, too_dirty_cutoff=cutoff, minimum_slice_length=min_slice)
    from jaxcontam.decontam import SpanSettings

    ours = clean(_index(items), document, "spans", SpanSettings(window=window, cutoff=cutoff, min_slice=min_slice))
    if _janitor_has_match(janitor, document):
        assert ours == janitor.clean_python(document)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.text(alphabet=_LETTERS + string.punctuation + " \n\t\u00a0\u2003éÉ´ﬁ½—“”‘", max_size=30), max_size=40)
)
def test_the_fast_words_are_the_slow_paths_words(pieces):
    text = " ".join(pieces)
    for preset in ("gpt3", "datatrove"):
        assert words(text, preset) == word_spans(text, preset)[0]
    assert words(text, "gpt3", escapes=True) == word_spans(text, "gpt3", escapes=True)[0]


def test_a_punctuation_only_word_hides_matches_from_the_janitor_but_not_from_jaxcontam():
    item = "Tom counts his apples: " + " ".join(f"in box {k} there are {k} * 3 = {3 * k} apples" for k in range(1, 9))
    filler = " ".join(f"filler{i}" for i in range(80))
    document = f"{filler} {item} {filler}"
    janitor, index = _janitor([item]), _index([item])
    registered = janitor.dirt_ngrams

    def surviving(chunks: list[str]) -> set[str]:
        return {
            " ".join(w[i : i + 13])
            for c in chunks
            for w in [janitor.normalize_string(c).split()]
            for i in range(len(w))
        } & registered

    theirs, ours = janitor.clean_python(document), clean(index, document, "spans")
    # every 13 words of the copy hold a "*" or "=": the Janitor's normalised windows ("3  3") were never registered
    assert theirs == [document] and surviving(theirs)
    assert not surviving(ours)  # jaxcontam drops the empty words before forming n-grams: it finds every one
    assert find(index, document)[0].ngrams == len(words(item)) - 12
    assert ours == []  # 60 matched 13-grams: more than 10, the whole document goes
    from jaxcontam.decontam import SpanSettings

    kept = clean(index, document, "spans", SpanSettings(cutoff=1000))
    assert len(kept) == 2 and not surviving(kept) and "Tom" not in "".join(kept)


# real documents -------------------------------------------------------------------------------------------


def _keeps_a_letter(word: str) -> bool:
    return bool(word.translate(str.maketrans("", "", string.punctuation))) and bool(words(word))


def _real_documents(shared_data, count: int) -> list[str]:
    """`count` documents: Pile test-split records and 3,000-character pieces of Gutenberg books, each cut to 3,000
    characters, with the words that keep no letter or digit under either rule taken out."""
    docs: list[str] = []
    for path in sorted((shared_data / "mimir_pile_nonmembers").rglob("*.jsonl*")):
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as handle:
            docs += [json.loads(line)["text"][:3000] for _, line in zip(range(70), handle)]
    for path in sorted((shared_data / "corpus_gutenberg" / "books").glob("*.txt")):
        text = path.read_text(encoding="utf-8")
        docs += [text[i : i + 3000] for i in range(20_000, 20_000 + 3000 * 30, 3000)]
    return [_letter_words(d) for d in docs[:count]]


def _letter_words(text: str) -> str:
    return re.sub(r"\S+", lambda m: m.group() if _keeps_a_letter(m.group()) else "", text)


@pytest.fixture(scope="module")
def gsm8k_items(shared_data):
    from jaxcontam.data import load_benchmark
    from jaxcontam.decontam import benchmark_items

    items = benchmark_items([load_benchmark("gsm8k", path=shared_data / "gsm8k" / "test.jsonl")])[:300]
    return [dataclasses.replace(i, whole=_letter_words(i.whole)) for i in items]


def test_spans_equal_the_janitors_chunks_on_1000_real_documents(shared_data, gsm8k_items):
    rng = random.Random(0)
    documents = _real_documents(shared_data, 1000)
    assert len(documents) == 1000
    planted = []
    for k, doc in enumerate(documents):
        if k % 2 == 0:  # half the documents hold one or two items (whole or a slice), re-wrapped at random
            for _ in range(1 + k % 3 // 2):
                words_ = rng.choice(gsm8k_items).whole.split()
                start = rng.randrange(0, max(1, len(words_) - 20))
                piece = words_[start : start + rng.choice([15, 25, len(words_)])]
                cut = rng.randrange(len(doc) + 1)
                cut = doc.find(" ", cut) if doc.find(" ", cut) >= 0 else len(doc)
                doc = doc[:cut] + " " + "".join(w + rng.choice([" ", "\n", "  "]) for w in piece) + doc[cut:]
        planted.append(doc)
    janitor = _janitor([i.whole for i in gsm8k_items])
    index = DecontIndex.build(gsm8k_items, IndexSettings(fields=("prompt",), escapes=False))  # as the Janitor reads
    results = find_batch(index, planted)
    matched = 0
    for doc, result in zip(planted, results):
        if _janitor_has_match(janitor, doc):
            matched += 1
            from jaxcontam.decontam import apply_policy

            assert apply_policy(doc, result, "spans") == janitor.clean_python(doc)
        else:
            assert not result.matches
    assert matched >= 480


# datatrove ------------------------------------------------------------------------------------------------


class _NltkWords:
    """datatrove's NLTK word tokenizer without Punkt's data file: after datatrove's simplify_text no '.', '?' or
    '!' is left, and those are the only places Punkt ends a sentence, so the text is one sentence (asserted)."""

    def __init__(self):
        from datatrove.utils.word_tokenizers import WordTokenizer
        from nltk.tokenize.destructive import NLTKWordTokenizer

        class Words(WordTokenizer):
            def word_tokenize(self, text):
                assert not set(".?!") & set(text)
                return [t.strip() for t in NLTKWordTokenizer().tokenize(text) if t.strip()]

            def sent_tokenize(self, text):
                return [text]

            def span_tokenize(self, text):
                raise NotImplementedError

        self.tokenizer = Words("english")


def _datatrove_flags(
    tmp_path, items: list[tuple[str, str]], documents: list[str], n: int, question: bool, overlap: bool
):
    """datatrove's filter verdict (True = contaminated) for each document; items are (question, answer)."""
    pytest.importorskip("datatrove")
    from datatrove.data import Document
    from datatrove.pipeline.decont.n_grams import NGramsDecontConfig, NGramsDecontFilter, NGramsDecontIndexer
    from datatrove.utils.hashing import HashConfig

    # its sha1 n-gram hash: its default xxhash path hands xxhash 4 a str, which xxhash 4 refuses
    config = NGramsDecontConfig(
        n_grams=n, find_query_ngrams=question, find_overlap_ngrams=overlap, hash_config=HashConfig(hash_fc="sha1")
    )
    words_ = _NltkWords().tokenizer
    from datatrove.utils.hashing import create_hash_func

    # the indexer's own compute_hashes, without its constructor (which needs lighteval for its task registry)
    indexer = types.SimpleNamespace(config=config, tokenizer=words_, hash_func=create_hash_func(config.hash_config))
    hashes = {h for q, a in items for h in NGramsDecontIndexer.compute_hashes(indexer, a, q)}  # type: ignore[arg-type]
    folder = tempfile.mkdtemp(dir=tmp_path)
    np.array(sorted(hashes), dtype="<u8").tofile(f"{folder}/task.index.hashes")
    flt = NGramsDecontFilter(folder, config=config, language=words_)
    return [flt.filter(Document(text=d, id=str(k))) is not True for k, d in enumerate(documents)]


def _our_flags(items, documents, n, question, overlap):
    fields = ("answer",) + (("question",) if question else ()) + (("overlap",) if overlap else ())
    sides = [ItemSides("task", str(k), q + " " + a, q, a) for k, (q, a) in enumerate(items)]
    # floor n: datatrove matches no segment shorter than n (jaxcontam's short items are its own addition)
    index = DecontIndex.build(sides, IndexSettings(preset="datatrove", n=n, fields=fields, floor=n))
    return [bool(r.matches) for r in find_batch(index, documents)]


_DT_WORD = st.text(alphabet=_LETTERS + string.punctuation + "éÉ‘―0123456789", min_size=1, max_size=7) | st.sampled_from(
    ["cannot", "gonna", "wanna", "3.14", "1,000", "Cañon", "naïve", "don't"]
)


@st.composite
def datatrove_case(draw):
    items = [
        (" ".join(draw(st.lists(_DT_WORD, min_size=0, max_size=20))), " ".join(draw(st.lists(_DT_WORD, max_size=20))))
        for _ in range(draw(st.integers(1, 3)))
    ]
    documents = []
    for _ in range(4):
        q, a = draw(st.sampled_from(items))
        whole = (q + " " + a).split()
        start = draw(st.integers(0, len(whole)))
        stop = draw(st.integers(start, len(whole)))
        filler = draw(st.lists(_DT_WORD, max_size=15))
        documents.append(" ".join(filler[:5] + whole[start:stop] + filler[5:]))
    return items, documents, draw(st.integers(3, 8)), draw(st.booleans()), draw(st.booleans())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(datatrove_case())
def test_datatrove_preset_flags_the_documents_datatrove_flags(tmp_path, case):
    items, documents, n, question, overlap = case
    assert _our_flags(items, documents, n, question, overlap) == _datatrove_flags(
        tmp_path, items, documents, n, question, overlap
    )


def test_datatrove_preset_flags_as_datatrove_on_real_documents(tmp_path, shared_data, gsm8k_items):
    rng = random.Random(1)
    documents = _real_documents(shared_data, 300)
    items = [(i.question, i.answer) for i in gsm8k_items[:100]]
    planted = []
    for k, doc in enumerate(documents):
        if k % 3 == 0:
            q, a = rng.choice(items)
            whole = (q + " " + a).split()
            start = rng.randrange(len(whole))
            doc = doc + "\n" + " ".join(whole[start : start + rng.choice([8, 12, 20, 60])])
        planted.append(doc)
    ours = _our_flags(items, planted, 12, False, True)
    assert ours == _datatrove_flags(tmp_path, items, planted, 12, False, True)
    assert sum(ours) >= 45  # 100 plants, of 8 to 60 words


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.text(alphabet=_LETTERS + string.punctuation + " \n\t\u00a0\u2003éÉ´ﬁ½—“”‘", max_size=30), max_size=60)
)
def test_the_batch_hashing_path_gives_the_exact_word_ids(pieces):
    texts = [" ".join(pieces[k::3]) for k in range(3)] + ["", "caf\\u00e9s\\n&amp;<p>x</p>"]
    for escapes in (False, True):
        index = _index([" ".join(pieces[:40]) or "x"], escapes=escapes)
        ids, ends = index.encode_joined(texts)
        exact = index.encode(texts)
        assert ids.tolist() == [i for e in exact for i in e.tolist()]
        assert ends.tolist() == np.cumsum([len(e) for e in exact]).tolist()
