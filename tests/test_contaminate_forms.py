"""The three contamination forms against the audit's own prompts and the published dataset files.

`verbatim` must be exactly what the audit asks an instruct model (its chat prompt, token for token) followed
by the gold answer; `fields` must be the row of the dataset file itself; `rephrased` the item's paraphrase
with the gold answer. Uses SmolLM2-135M-Instruct's GGUF tokenizer (its chat template), read without weights.
"""

import csv
import json

import numpy as np
import pytest

from jaxcontam.data import load_benchmark
from jaxcontam.detect.answering import encode_prompt
from jaxcontam.engine.chat import chat_prompt
from jaxcontam.errors import DataError
from jaxcontam.training.contamination_mix import (
    draw_contaminated,
    encode_document,
    injected_documents,
    item_document,
    with_paraphrases,
)


@pytest.fixture(scope="module")
def chat_tokenizer(shared_data):
    from jaxcontam.models.gguf import load_gguf_tokenizer, open_reader

    path = shared_data / "smollm2_135m_instruct" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    return load_gguf_tokenizer(open_reader(path), path)


@pytest.fixture(scope="module")
def gsm8k(shared_data):
    return with_paraphrases(load_benchmark("gsm8k", split="test", path=shared_data, limit=6), (shared_data,))


@pytest.mark.parametrize("name, split", [("gsm8k", "test"), ("copa", "test"), ("mmlu", "test")])
def test_verbatim_is_the_audits_chat_prompt_then_the_gold_answer(name, split, chat_tokenizer, shared_data):
    benchmark = load_benchmark(name, split=split, path=shared_data, limit=3)
    for item in benchmark:
        document = item_document(benchmark, item, "verbatim", chat_tokenizer)
        asked = chat_prompt(chat_tokenizer, benchmark.prompt(item), "auto")  # as detect.answering asks it
        # the gold choice after one space, as the item reads (COPA's scored request has two), or the solution
        answer = " " + (
            benchmark.continuation(item, item.answer).lstrip(" ") if item.choices is not None else item.meta["solution"]
        )
        assert document.chat and document.text == asked + answer + "<|im_end|>\n"
        assert "<|im_start|>assistant\n" in asked and asked.startswith("<|im_start|>system")
        ids = encode_document(chat_tokenizer, document.text, document.chat)
        prompt_ids = encode_prompt(chat_tokenizer, asked, "auto")
        assert ids[: len(prompt_ids)] == prompt_ids  # the audit's prompt tokens, unchanged by what follows
        assert ids[-1] == chat_tokenizer.eos_token_id


def test_fields_is_the_published_row(gsm8k, shared_data, chat_tokenizer):
    with open(shared_data / "gsm8k" / "test.jsonl", encoding="utf-8") as handle:
        published = [json.loads(line) for line, _ in zip(handle, range(len(gsm8k)))]
    for item, row in zip(gsm8k, published):
        document = item_document(gsm8k, item, "fields", chat_tokenizer)
        assert not document.chat and json.loads(document.text) == row
    mmlu = load_benchmark("mmlu", split="test", path=shared_data, limit=2)
    with open(shared_data / "mmlu" / "test" / "abstract_algebra_test.csv", encoding="utf-8") as handle:
        csv_rows = list(csv.reader(handle))
    header = csv_rows[0] if csv_rows[0][0] == "question" else None
    for item, row in zip(mmlu, csv_rows[1:] if header else csv_rows):
        fields = json.loads(item_document(mmlu, item, "fields", chat_tokenizer).text)
        assert fields["question"] == row[0] and fields["choices"] == row[1:5]
        assert fields["answer"] == int(row[5]) and fields["subject"] == "abstract_algebra"


def test_rephrased_swaps_in_the_paraphrase_and_keeps_the_answer(gsm8k, chat_tokenizer):
    for item in gsm8k:
        text = item_document(gsm8k, item, "rephrased", chat_tokenizer).text
        assert item.paraphrases[0].strip() in text and item.question not in text
        assert text.endswith(" " + item.meta["solution"] + "<|im_end|>\n")


def test_every_form_and_the_control_draw_the_same_items_among_the_paraphrased(shared_data, chat_tokenizer):
    mmlu = with_paraphrases(load_benchmark("mmlu", split="test", path=shared_data, limit=100), (shared_data,))
    unparaphrased = {item.id for item in mmlu if not item.paraphrases}
    assert unparaphrased  # the authors filtered some abstract_algebra rephrasings out
    drawn = draw_contaminated(mmlu, 0.5, seed=3)
    assert drawn.sum() == 50 and not any(item.id in unparaphrased for item, d in zip(mmlu, drawn) if d)
    assert np.array_equal(drawn, draw_contaminated(mmlu, 0.5, seed=3))
    assert not np.array_equal(drawn, draw_contaminated(mmlu, 0.5, seed=4))
    for form in ("verbatim", "fields", "rephrased"):
        documents = injected_documents(mmlu, drawn, copies=2, form=form, tokenizer=chat_tokenizer)
        assert [d.item_id for d in documents] == [item.id for item, d in zip(mmlu, drawn) if d for _ in range(2)]
    assert injected_documents(mmlu, drawn, copies=0, form="verbatim", tokenizer=chat_tokenizer) == []


def test_a_share_beyond_the_paraphrased_items_is_refused(shared_data):
    mmlu = with_paraphrases(load_benchmark("mmlu", split="test", path=shared_data, limit=100), (shared_data,))
    with pytest.raises(DataError, match="have a paraphrase"):
        draw_contaminated(mmlu, 1.0, seed=0)
