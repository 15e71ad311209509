"""jaxcontam's benchmarks against strings and token ids frozen from lm-eval 0.4.13 (CI: lm-eval not needed).

tests/data/lm_eval_requests.json holds, for the first docs of each task in `LM_EVAL_PAIRS`, the zero-shot
requests lm-eval's own task code made (context, continuations with the target delimiter, gold index, in lm-eval's
doc order) and the ids its `hf` model's `_encode_pair` made of them with SmolLM2's GGUF tokenizer. It was written
by `python -m experiments.lm_eval_parity.requests` with lm-eval 0.4.13 installed; tests/test_lm_eval_tasks.py
checks it is current.
"""

import json

import pytest

from experiments.lm_eval_parity.requests import LM_EVAL_FROZEN, LM_EVAL_PAIRS, jaxcontam_ids, jaxcontam_requests
from helpers import smollm2_tokenizer
from jaxcontam.data import load_benchmark
from jaxcontam.data.registry import BENCHMARKS

FROZEN_TASKS = json.loads(LM_EVAL_FROZEN.read_text(encoding="utf-8"))["tasks"]


@pytest.fixture(scope="module")
def benchmarks(shared_data):
    return {
        task: load_benchmark(entry["benchmark"], split=entry["split"], path=shared_data, limit=len(entry["requests"]))
        for task, entry in FROZEN_TASKS.items()
    }


def strings(request: dict) -> dict:
    return {key: value for key, value in request.items() if not key.endswith("_ids")}


@pytest.mark.parametrize("task", list(FROZEN_TASKS))
def test_requests_are_lm_eval_s(benchmarks, task):
    expected = [strings(r) for r in FROZEN_TASKS[task]["requests"]]
    assert jaxcontam_requests(benchmarks[task]) == expected


def test_token_ids_are_lm_eval_hf_s(shared_data):
    """jaxcontam's torch-free SmolLM2 tokenizer and `encode_pair` give lm-eval's `_encode_pair` ids: the whole text
    encoded, the context's ids cut off its front, COPA's two leading spaces a token of their own."""
    tokenizer = smollm2_tokenizer(shared_data)
    for task, entry in FROZEN_TASKS.items():
        for request in entry["requests"]:
            assert jaxcontam_ids(tokenizer, strings(request)) == request, task
    first = FROZEN_TASKS["copa"]["requests"][0]
    assert tokenizer.decode(first["pair_ids"][0][1][:1]) == " "


def test_each_benchmark_follows_an_lm_eval_task_checked_here_or_says_how_it_differs():
    checked = {name for name, *_ in LM_EVAL_PAIRS}
    assert {(name, split, task) for name, split, task, _ in LM_EVAL_PAIRS} == {
        (entry["benchmark"], entry["split"], task) for task, entry in FROZEN_TASKS.items()
    }
    for spec in BENCHMARKS.values():
        assert spec.lm_eval_task, spec.name
        assert spec.name in checked or spec.lm_eval_differences, spec.name
        pair = next((p for p in LM_EVAL_PAIRS if p[0] == spec.name), None)
        if pair is not None and pair[2] != spec.lm_eval_task:
            assert spec.lm_eval_task == "mmlu" and pair[2].startswith("mmlu_"), spec.name
