"""The item text n-gram matching scores: the item as the model sees it, one text, without template text.

The must-show: items copied verbatim into a corpus score 1.0 on all four ConTAM metrics (n = 8)
whatever their field lengths, items without a copy score 0, through the real pipeline
(`ensure_counts` / `item_rows`, GPT-2 tokens, paper normalisation).
"""

import json
from collections import Counter

import pytest

from helpers import Doc, ListCorpus, Shard
from jaxcontam.data import load_benchmark
from jaxcontam.data.item import Benchmark, Item
from jaxcontam.ngram.audit import METRICS, NgramSettings, ensure_counts, item_rows
from jaxcontam.ngram.item_text import item_text
from jaxcontam.ngram.units import load_units, normalize_for_matching

MUST_SHOW = ("copa", "piqa", "gsm8k", "mmlu", "winogrande")


@pytest.fixture(scope="module")
def gpt2(shared_data):
    return load_units(shared_data / "gpt2_tokenizer_whisper" / "gpt2.tiktoken")


@pytest.fixture(scope="module")
def benchmarks(shared_data):
    return {name: load_benchmark(name, path=shared_data) for name in MUST_SHOW}


def test_texts_follow_the_definition_on_the_raw_files(shared_data, benchmarks):
    """The prompt and the gold answer as the model reads them, one text; the answer side is the option's text."""
    copa = json.loads((shared_data / "copa" / "copa_dev.jsonl").open().readline())
    gold = copa[f"choice{copa['label'] + 1}"]
    connector = {"cause": "because", "effect": "therefore"}[copa["question"]]
    # lm-eval's COPA: premise minus its '.', the connector, the choice lower-cased, one space between (the scored
    # continuation's second space is the request's, not the item's: Benchmark.solved_text); COPA id 1 is train item 0
    train = load_benchmark("copa", split="train", path=shared_data)
    assert item_text(train, train[0]).whole == f"{copa['premise'][:-1]} {connector} {gold[0].lower()}{gold[1:]}"
    piqa = json.loads((shared_data / "piqa" / "valid.jsonl").open().readline())
    label = int((shared_data / "piqa" / "valid-labels.lst").open().readline())
    piqa_text = item_text(benchmarks["piqa"], benchmarks["piqa"][0])
    assert piqa_text.whole == f"Question: {piqa['goal']}\nAnswer: {piqa[f'sol{label + 1}']}"
    gsm8k = json.loads((shared_data / "gsm8k" / "test.jsonl").open().readline())
    text = item_text(benchmarks["gsm8k"], benchmarks["gsm8k"][0])
    assert text.whole == f"Question: {gsm8k['question']}\nAnswer: {gsm8k['answer']}"
    assert (text.question, text.answer) == (gsm8k["question"], gsm8k["answer"])  # the full solution is the answer
    mmlu = benchmarks["mmlu"][3]
    options = "".join(f"\n{letter}. {choice}" for letter, choice in zip("ABCD", mmlu.choices))
    mmlu_text = item_text(benchmarks["mmlu"], mmlu)
    assert mmlu_text.whole == f"{mmlu.question}{options}\nAnswer: {'ABCD'[mmlu.answer]}"  # subject header dropped
    assert mmlu_text.answer == mmlu.choices[mmlu.answer]
    wino = benchmarks["winogrande"][0]
    assert item_text(benchmarks["winogrande"], wino).answer == wino.choices[wino.answer]


@pytest.mark.parametrize("name", [n for n in MUST_SHOW if n != "winogrande"])
def test_no_header_ngram_is_shared_by_many_items(benchmarks, gpt2, name):
    # MMLU's subject header would put the same 8-grams in every item of a subject; the item texts must
    # not share any (WinoGrande's instruction line is a documented exception, see item_text)
    all_items = benchmarks[name].items
    items = all_items[:: max(1, len(all_items) // 300)][:300]  # spread over MMLU's subjects
    shared = {}
    for label, texts in (
        ("item text", [item_text(benchmarks[name], it).whole for it in items]),
        ("solved text", [benchmarks[name].solved_text(it) for it in items]),
    ):
        per_item = Counter(
            g for ids in gpt2.encode_batch(texts) for g in {tuple(ids[i : i + 8]) for i in range(len(ids) - 7)}
        )
        shared[label] = max(per_item.values()) / len(items)
    assert shared["item text"] < 0.1, shared
    if name == "mmlu":
        assert shared["solved text"] > 0.5  # the header this removes


def test_scope_fields_and_a_prompt_that_hides_its_layout():
    item = Item(id="1", benchmark="toy", question="Why is the sky blue?", answer="Rayleigh scattering")
    plain = Benchmark("toy", "test", [item])
    text = item_text(plain, item)
    assert text.texts("item") == {"": plain.solved_text(item)}
    assert text.texts("fields") == {"": text.whole, "question": "Why is the sky blue?", "answer": "Rayleigh scattering"}
    shouting = Benchmark("toy", "test", [item], prompt_fn=lambda it: f"Q: {it.question.upper()}\nA:")
    assert item_text(shouting, item).question == "WHY IS THE SKY BLUE?"  # placeholders survive upper-casing
    odd = Benchmark("toy", "test", [item], prompt_fn=lambda it: "Q\n" if "\x00" in it.question else "Q: ?\nA:")
    assert item_text(odd, item).question == "Why is the sky blue?"  # layout not found: the raw question


def test_copied_items_score_one_and_the_others_zero(shared_data, benchmarks, gpt2, tmp_path):
    n = 8
    chosen, copied = [], set()
    for name in MUST_SHOW:
        benchmark = benchmarks[name]
        texts = [item_text(benchmark, it) for it in benchmark.items[:400]]
        count = len(texts)
        lengths = [
            len(ids)
            for ids in gpt2.encode_batch(
                [t.question for t in texts]
                + [t.answer for t in texts]
                + [t.whole for t in texts]
                + [normalize_for_matching(t.whole) for t in texts]
            )
        ]
        # copy the items with the shortest question and answer sides among those of >= n units in both
        # views (raw, normalised): a shorter text holds no n-gram
        whole = [i for i in range(count) if min(lengths[2 * count + i], lengths[3 * count + i]) >= n]
        by_question = sorted(whole, key=lambda i: lengths[i])[:3]
        by_answer = sorted(whole, key=lambda i: lengths[count + i])[:3]
        picks = list(dict.fromkeys(by_question + by_answer + [whole[10], whole[20]]))
        if name != "gsm8k":  # GSM8K's answer side is the whole solution
            assert min(lengths[by_question[0]], lengths[count + by_answer[0]]) < n
        items = [benchmark.items[i] for i in picks] + list(benchmark.items[100:106])
        chosen.append(benchmark.replace_items(items))
        copied |= {(name, benchmark.items[i].id) for i in picks}
    plays = (shared_data / "corpus_misc" / "tinyshakespeare" / "input.txt").read_text().split("\n\n")[:300]
    docs = [Doc(f"p{i}", text=p) for i, p in enumerate(plays)]
    # a verbatim copy of what the model is shown (the full solved text, headers included)
    docs += [
        Doc(f"copy-{b.name}-{it.id}", text=f"{b.solved_text(it)}\nWorked solutions, page 3.")
        for b in chosen
        for it in b
        if (b.name, it.id) in copied
    ]
    corpus = ListCorpus((Shard("s0", docs[0::2]), Shard("s1", docs[1::2])))
    settings = NgramSettings(n=n, normalize="paper")
    counted, _ = ensure_counts(chosen, [("leaky", corpus)], gpt2, settings, tmp_path / "counts", chunk_tokens=1 << 14)
    rows = item_rows(chosen, counted, gpt2, settings)
    assert len(rows) == sum(len(b) for b in chosen)
    for row in rows:
        if (row["benchmark"], row["id"]) in copied:
            assert [row[m] for m in METRICS] == [1.0] * 4, row
        elif row["benchmark"] == "winogrande":  # its constant instruction line matches any copied item's
            assert row["longest_match"] < 0.35 and row["ngram_match"] < 0.2, row
        else:
            assert [row[m] for m in METRICS] == [0.0] * 4, row
