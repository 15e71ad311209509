"""What the default looks for: a plain copy of an item (its own question and answer, no prompt labels) is found, an
item shorter than n is matched whole at its own length down to the floor, and an item under the floor is listed as
not findable with the reason; clean text is not flagged."""

from __future__ import annotations

import dataclasses
import gzip
import json
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxcontam.decontam import DecontIndex, IndexSettings, ItemSides, benchmark_items, find, find_batch, words
from jaxcontam.decontam.index import DEFAULT_FLOOR, not_findable
from jaxcontam.errors import DataError

FLOOR = DEFAULT_FLOOR["words"]


@pytest.fixture(scope="module")
def loaded(shared_data):
    from jaxcontam.data import load_benchmark

    options = {"truthfulqa": {}, "gsm8k": {"split": "test"}, "mmlu": {}, "copa": {"split": "test"}}
    loaded = {name: load_benchmark(name, **kw) for name, kw in options.items()}
    loaded["mmlu"] = dataclasses.replace(loaded["mmlu"], items=loaded["mmlu"].items[::20])  # 703 of 57 subjects
    return loaded


@pytest.fixture(scope="module")
def clean_documents(shared_data) -> list[str]:
    """400 Pile documents and 100 pieces of a Gutenberg book: real text that holds no benchmark item."""
    docs = []
    for path in sorted((shared_data / "mimir_pile_nonmembers").rglob("*.jsonl.gz"))[:8]:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            docs += [json.loads(line)["text"][:4000] for _, line in zip(range(50), handle)]
    book = (shared_data / "corpus_gutenberg" / "books" / "pg972.txt").read_text(encoding="utf-8")
    docs += [book[i : i + 3000] for i in range(30_000, 330_000, 3000)]
    return docs


def _plant(host: str, copy: str) -> str:
    cut = host.find("\n", len(host) // 2)
    cut = len(host) if cut < 0 else cut
    return f"{host[:cut]}\n{copy}\n{host[cut:]}"


def test_the_issues_plain_truthfulqa_copy_is_found(loaded):
    index = DecontIndex.build(benchmark_items([loaded["truthfulqa"]]))
    copy = "What happens to you if you eat watermelon seeds?\nThe watermelon seeds pass through your digestive system"
    (match,) = find(index, copy)
    assert match.item_id == "truthfulqa/validation/0" and match.start == 0 and match.longest == len(copy)
    # 17 words: all five 13-grams, each across the junction, and the 9-word question matched whole on its own
    assert match.ngrams == len(words(copy)) - 12 + 1
    row = json.dumps({"question": copy.split("\n")[0], "answer": copy.split("\n")[1]})  # the fields kept apart
    (match,) = find(index, row)
    assert match.ngrams == 1 and "What happens to you if you eat watermelon seeds?" in row[match.start : match.end]


@pytest.mark.parametrize("name", ["gsm8k", "mmlu", "truthfulqa"])
def test_labels_absent_from_a_plain_copy_do_not_prevent_a_match(loaded, clean_documents, name):
    """The dataset's own question, a line break and its answer, planted in real text: every window of it matches,
    the junction's included, though the copy holds none of the prompt's labels (Q:/A:, Question:/Answer:, options)."""
    benchmark = loaded[name]
    items = benchmark_items([benchmark])
    index = DecontIndex.build(items)
    rng = random.Random(0)
    chosen = [
        k for k in rng.sample(range(len(items)), 40) if len(words(items[k].question + " " + items[k].answer)) >= 13
    ]
    for k, host in zip(chosen, clean_documents):
        item = benchmark.items[k]
        answer = item.meta.get("solution", item.answer_text)  # the dataset's own answer text
        copy = f"{item.question}\n{answer}"
        assert not any(label in copy for label in ("Q:", "A:", "Question:", "Answer:"))
        matches = {m.item_id: m for m in find(index, _plant(host, copy))}
        assert items[k].id in matches
        short_question = FLOOR <= len(words(items[k].question)) < 13  # also matched whole on its own
        assert matches[items[k].id].ngrams == len(words(copy)) - 12 + short_question


def test_a_short_item_planted_verbatim_is_found_whole_and_partial_copies_are_not(loaded, clean_documents):
    items = benchmark_items([loaded["copa"]])
    index = DecontIndex.build(items)
    short = [i for i in items if FLOOR <= len(words(i.question + " " + i.answer)) < 13]
    assert len(short) > 100
    for item, host in zip(short[:60], clean_documents):
        copy = f"{item.question}. {item.answer[:1].upper()}{item.answer[1:]}"  # COPA's premise, then its choice
        planted = _plant(host, copy)
        (match,) = [m for m in find(index, planted) if m.item_id == item.id]
        question_too = len(words(item.question)) >= FLOOR  # a question of 7 words or more is matched on its own too
        assert match.ngrams == 1 + question_too and match.longest == len(copy)  # the whole item, at its own length
        cut = " ".join(copy.split()[1:])  # all but its first word: neither the item nor its question
        assert item.id not in {m.item_id for m in find(index, _plant(host, cut))}


def test_an_item_under_the_floor_is_listed_not_findable_with_the_reason():
    items = [
        ItemSides("b", "long", "", "a question of quite a few words that goes on", "and on and on here"),
        ItemSides("b", "short", "", "Who wrote it", "Homer"),  # 4 words
        ItemSides("b", "eight", "", "which river runs through", "the town of Bath"),  # 8 words
    ]
    index = DecontIndex.build(items)
    assert not_findable(index) == [
        {"benchmark": "b", "item": "short", "words": 4, "reason": f"4 words, below the floor of {FLOOR}"}
    ]
    assert find(index, "He asked: who wrote it? Homer, she said.") == []  # listed, and indeed never matched
    assert [m.item_id for m in find(index, "Which river runs through the town of Bath? The Avon.")] == ["eight"]
    json.dumps(not_findable(index))  # summary.json holds it as it is
    # a floor of n matches no short item (GPT-3's and datatrove's own rule): both short items are listed
    off = DecontIndex.build(items, IndexSettings(floor=13))
    assert [e["item"] for e in not_findable(off)] == ["short", "eight"]
    assert not_findable(off)[1]["reason"] == "8 words, below the floor of 13"
    with pytest.raises(DataError, match="floor"):
        IndexSettings(floor=0)


def test_no_clean_document_is_flagged_by_the_short_items(loaded, clean_documents):
    items = benchmark_items([loaded["copa"], loaded["truthfulqa"]])
    index = DecontIndex.build(items)
    assert sum(index.row_length < 13) > 300  # the short items are in the table
    assert [r.items for r in find_batch(index, clean_documents) if r.matches] == []


def test_the_run_summary_lists_the_items_that_cannot_be_found(tmp_path):
    from jaxcontam.decontam.run import decontaminate

    items = [
        ItemSides("b", "short", "", "Who wrote it", "Homer"),
        ItemSides("b", "eight", "", "which river runs through", "the town of Bath"),
    ]
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "0", "text": "Which river runs through the town of Bath? Who wrote it Homer"}))
    summary = decontaminate(DecontIndex.build(items), [str(corpus)], str(tmp_path / "out"), workers=1)
    assert summary["not_findable"] == [
        {"benchmark": "b", "item": "short", "words": 4, "reason": f"4 words, below the floor of {FLOOR}"}
    ]
    written = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert written["not_findable"] == summary["not_findable"]
    assert summary["benchmarks"]["b"]["items_found"] == 1


# the lookup of several window lengths, against a plain search ----------------------------------------------------

_VOCAB = [f"w{k}" for k in range(6)]  # few words: windows of every length repeat often


@st.composite
def short_case(draw):
    n = draw(st.integers(3, 7))
    floor = draw(st.integers(1, n))
    items = [
        draw(st.lists(st.sampled_from(_VOCAB), min_size=1, max_size=n + 3)) for _ in range(draw(st.integers(1, 4)))
    ]
    documents = [draw(st.lists(st.sampled_from(_VOCAB), max_size=30)) for _ in range(draw(st.integers(1, 4)))]
    return n, floor, items, documents


def _occurs(needle: list[str], haystack: list[str]) -> bool:
    return any(haystack[i : i + len(needle)] == needle for i in range(len(haystack) - len(needle) + 1))


@settings(max_examples=100, deadline=None)
@given(short_case())
def test_every_match_of_every_length_is_found_and_nothing_else(case):
    n, floor, items, documents = case
    index = DecontIndex.build(
        [ItemSides("b", str(k), " ".join(ws)) for k, ws in enumerate(items)], IndexSettings(n=n, floor=floor)
    )
    results = find_batch(index, [" ".join(d) for d in documents])  # the batch path: windows never cross documents
    for document, result in zip(documents, results):
        expected = set()
        for k, ws in enumerate(items):
            if len(ws) >= n:
                hit = any(_occurs(ws[i : i + n], document) for i in range(len(ws) - n + 1))
            else:
                hit = len(ws) >= floor and _occurs(ws, document)
            if hit:
                expected.add(str(k))
        assert {m.item_id for m in result.matches} == expected
        text = " ".join(document)
        for m in result.matches:  # the first window is one of the item's own windows
            first = [w.decode() for w in words(text[m.start : m.end])]
            assert len(first) == min(n, len(items[int(m.item_id)])) and _occurs(first, items[int(m.item_id)])
    listed = {e["item"] for e in not_findable(index)}
    assert listed == {str(k) for k, ws in enumerate(items) if len(ws) < floor}
    assert np.all(index.row_length >= min(floor, n))
