"""answer_items against lm-eval-harness's rules, written here from their definition, on real items and a real model.

The reference builds each task's context and choices from the raw data rows (lm-eval's doc_to_text /
doc_to_choice for COPA, PIQA, HellaSwag and ARC), splits context and continuation as lm-eval's
`_encode_pair` does, sums the continuation's log-probs from torch transformers' Llama on the same converted
checkpoint (an implementation apart from the engine's packed scoring), and picks acc = argmax sum,
acc_norm = argmax sum / characters of the choice. Generative answers are checked against a greedy torch
decode and its log-probs.
"""

import json
import re

import numpy as np
import pytest
import torch
import transformers as tf
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxcontam
from experiments.lm_eval_parity.requests import HELLASWAG_CTX
from jaxcontam.cli import main
from jaxcontam.data import Benchmark, Item, load_benchmark, prompts
from jaxcontam.data.adapters import hellaswag_hub
from jaxcontam.detect.answering import answer_items, answer_token_count

TIE = 1e-3  # reference margins below this (log-prob units) are near-ties the two float paths may order apart


@pytest.fixture(scope="module")
def stories(shared_data, tmp_path_factory):
    folder = shared_data / "tiny_lm_stories260K"
    out = tmp_path_factory.mktemp("stories260K")
    main(["convert-llama2c", str(folder / "stories260K.bin"), str(folder / "tok512.bin"), str(out)])
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # many tiny forwards: one thread is ~20x faster than two competing with JAX
    yield out, jaxcontam.load_model(out), tf.LlamaForCausalLM.from_pretrained(out).eval()
    torch.set_num_threads(threads)


def rows(path, indices):
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(lines[i]) for i in indices]


def lm_eval_hellaswag_preprocess(text):
    text = text.strip().replace(" [title]", ". ")
    text = re.sub("\\[.*?\\]", "", text)
    return text.replace("  ", " ")


def lm_eval_docs(data):
    """{benchmark: [(row index, context, choices, gold)]} from the raw rows, as lm-eval's task configs build them
    (COPA: SuperGLUE's train split, COPA ids 1-400; its doc_to_choice puts a space before each choice)."""
    copa = [
        (
            i,
            r["premise"].strip()[:-1] + " " + {"cause": "because", "effect": "therefore"}[r["question"]],
            [" " + c[0].lower() + c[1:] for c in (r["choice1"], r["choice2"])],
            r["label"],
        )
        for i, r in zip(range(6), rows(data / "copa" / "copa_dev.jsonl", range(6)))
    ]
    piqa_rows = [0, 1, 2, 3, 20, 99]  # 20 and 99 have non-ASCII solutions
    piqa = [
        (i, f"Question: {r['goal']}\nAnswer:", [r["sol1"], r["sol2"]], r["label"])
        for i, r in zip(piqa_rows, rows(data / "piqa" / "piqa_valid_with_labels.jsonl", piqa_rows))
    ]
    hellaswag = []
    for i, r in enumerate(rows(data / "hellaswag" / "hellaswag_val.jsonl", range(5))):
        ctx_a, ctx_b = HELLASWAG_CTX[i]
        assert r["ctx"] == f"{ctx_a} {ctx_b}"
        query = lm_eval_hellaswag_preprocess(r["activity_label"] + ": " + ctx_a + " " + ctx_b.capitalize())
        hellaswag.append((i, query, [lm_eval_hellaswag_preprocess(e) for e in r["endings"]], r["label"]))
    arc = {}
    for name, folder, extra in (("arc_easy", "ARC-Easy", 22), ("arc_challenge", "ARC-Challenge", 12)):
        indices = [0, 1, 2, extra]  # extra: a non-ASCII choice
        arc[name] = [
            (i, f"Question: {r['question']}\nAnswer:", r["choices"], r["label"])
            for i, r in zip(indices, rows(data / "llm_adapters_commonsense" / folder / "parsed.jsonl", indices))
        ]
    return {"copa": copa, "piqa": piqa, "hellaswag": hellaswag, **arc}


SPLITS = {"copa": "train"}  # the split lm_eval_docs reads, where not the benchmark's default


def lm_eval_encode_pair(tokenizer, context, continuation):
    """lm-eval `_encode_pair`: trailing context spaces join the continuation; the whole is encoded and split."""
    n_spaces = len(context) - len(context.rstrip())
    if n_spaces > 0:
        continuation = context[-n_spaces:] + continuation
        context = context[:-n_spaces]
    whole_enc = tokenizer.encode(context + continuation)
    context_enc = tokenizer.encode(context)
    return context_enc, whole_enc[len(context_enc) :]


def token_logprobs(reference, ids):
    """log p(ids[t] | ids[:t]) for t >= 1 from the torch transformers model, in float64."""
    with torch.no_grad():
        logp = torch.log_softmax(reference(torch.tensor([ids])).logits[0].double(), -1)
    return logp[torch.arange(len(ids) - 1), torch.tensor(ids[1:])].numpy()


def lm_eval_loglikelihoods(reference, tokenizer, context, choices):
    """Summed log-prob and token count of each `" " + choice` after `context`."""
    pairs = [lm_eval_encode_pair(tokenizer, context, " " + choice) for choice in choices]
    return (
        np.array([token_logprobs(reference, ctx + cont)[-len(cont) :].sum() for ctx, cont in pairs]),
        np.array([len(cont) for _, cont in pairs]),
    )


def check_choice(picked, scores):
    """`picked` is the argmax of `scores`, or ties with it within TIE."""
    assert scores[picked] >= scores.max() - TIE, (picked, scores)


def test_prompts_and_choices_are_lm_eval_s(shared_data):
    for name, docs in lm_eval_docs(shared_data).items():
        benchmark = load_benchmark(name, split=SPLITS.get(name), limit=max(d[0] for d in docs) + 1)
        for index, context, choices, gold in docs:
            item = benchmark[index]
            assert benchmark.prompt(item) == context, name
            assert [benchmark.choice_text(item, c) for c in range(len(choices))] == choices, name
            assert [benchmark.continuation(item, c) for c in range(len(choices))] == [" " + c for c in choices]
            assert item.answer == gold


def test_hellaswag_hub_rows_prompt_like_the_local_copy(shared_data):
    local = load_benchmark("hellaswag", limit=5)
    for (ctx_a, ctx_b), item in zip(HELLASWAG_CTX, local):
        row = {
            "ind": 0,
            "activity_label": item.meta["activity_label"],
            "ctx_a": ctx_a,
            "ctx_b": ctx_b,
            "endings": list(item.choices),
            "label": item.answer,
        }
        assert local.prompt(hellaswag_hub(row, 0, "validation", "row")) == local.prompt(item)


def test_acc_and_acc_norm_choices_match_lm_eval_on_real_items(stories, shared_data):
    _, model, reference = stories
    for name, docs in lm_eval_docs(shared_data).items():
        benchmark = load_benchmark(name, split=SPLITS.get(name), limit=max(d[0] for d in docs) + 1)
        answers = answer_items(model, benchmark, [benchmark[d[0]] for d in docs])
        for (_, context, choices, gold), answer in zip(docs, answers):
            sums, counts = lm_eval_loglikelihoods(reference, model.tokenizer, context, choices)
            check_choice(answer.choice, sums)
            check_choice(answer.choice_norm, sums / np.array([len(c) for c in choices]))
            assert answer.correct == float(answer.choice == gold)
            assert answer.correct_norm == float(answer.choice_norm == gold)
            assert answer.answer_logprob == pytest.approx(sums[answer.choice] / counts[answer.choice], abs=1e-4)


def test_acc_norm_divides_by_characters_not_bytes(stories):
    """A constructed item where characters and UTF-8 bytes pick different choices; lm-eval counts characters."""
    _, model, reference = stories
    item = Item(
        id="cafe",
        benchmark="custom",
        question="What did Lily eat at the café?",
        choices=("pho", "crème brûlée with her mom."),
        answer=1,
    )
    benchmark = Benchmark(name="custom", split="test", items=[item], prompt_fn=prompts.question_answer)
    sums, _ = lm_eval_loglikelihoods(reference, model.tokenizer, benchmark.prompt(item), item.choices)
    by_chars = sums / np.array([len(c) for c in item.choices])
    by_bytes = sums / np.array([len(c.encode("utf-8")) for c in item.choices])
    assert np.argmax(by_chars) != np.argmax(by_bytes)  # the item tells the two rules apart
    [answer] = answer_items(model, benchmark, [item])
    assert answer.choice_norm == int(np.argmax(by_chars))


def torch_greedy(reference, prompt_ids, steps, eos):
    """Greedy continuation of prompt_ids (stopping at eos) and each generated token's log-prob."""
    ids, logprobs = list(prompt_ids), []
    with torch.no_grad():
        for _ in range(steps):
            logp = torch.log_softmax(reference(torch.tensor([ids])).logits[0, -1].double(), -1)
            token = int(torch.argmax(logp))
            if token == eos:
                break
            ids.append(token)
            logprobs.append(float(logp[token]))
    return ids[len(prompt_ids) :], logprobs


def test_mixed_items_answer_in_order_and_generated_answers_score_their_own_tokens(stories):
    _, model, reference = stories
    tok = model.tokenizer
    story = lambda i, text: Item(id=f"story{i}", benchmark="mixed", question=text, answer="x")  # noqa: E731
    items = [
        story(0, "Once upon a time, there was a little girl named Lily."),
        Item(
            id="mc",
            benchmark="mixed",
            question="What did Lily eat at the café?",
            choices=("pho", "crème brûlée with her mom."),
            answer=1,
        ),
        story(1, "Tom had a big red ball. One day,"),
    ]
    benchmark = Benchmark(name="mixed", split="test", items=items, prompt_fn=lambda item: item.question)
    stops, steps = (".", "!"), 24
    answers = answer_items(model, benchmark, items, max_new_tokens=steps, stop_strings=stops)
    sums, _ = lm_eval_loglikelihoods(reference, tok, items[1].question, items[1].choices)
    check_choice(answers[1].choice, sums)
    check_choice(answers[1].choice_norm, sums / np.array([len(c) for c in items[1].choices]))

    for item, answer in zip((items[0], items[2]), (answers[0], answers[2])):
        generated, logprobs = torch_greedy(reference, tok.encode(item.question), steps, tok.eos_token_id)
        text = tok.decode(generated, skip_special_tokens=True)
        cut = min([text.find(s) for s in stops if s in text] or [len(text)])
        kept = next(
            n
            for n in range(1, len(generated) + 1)
            if tok.decode(generated[:n], skip_special_tokens=True).startswith(text[:cut])
        )
        assert cut < len(text) and kept < len(generated)  # the stop string cut the generation short
        assert answer.choice is None and answer.text == text[:cut].strip()
        assert answer.answer_logprob == pytest.approx(np.mean(logprobs[:kept]), abs=1e-4)


@settings(max_examples=60, deadline=None)
@given(ids=st.lists(st.integers(3, 511), max_size=12), fraction=st.floats(0, 1))
def test_answer_tokens_are_the_shortest_prefix_decoding_to_the_cut_text(stories, ids, fraction):
    """Byte-fallback ids (3-258) make prefixes that decode to replacement characters: they must not end the answer."""
    tok = stories[1].tokenizer
    text = tok.decode(ids, skip_special_tokens=True)
    answer = text[: int(fraction * len(text))]
    count = answer_token_count(tok, ids, answer)
    decoded = [tok.decode(ids[:n], skip_special_tokens=True) for n in range(len(ids) + 1)]
    assert count == min(n for n in range(len(ids) + 1) if decoded[n].startswith(answer) and (n or not answer))
