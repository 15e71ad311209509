"""jaxcontam's benchmarks against lm-eval's own task code (the optional `[lm-eval]` extra; skipped without it).

lm-eval's tasks are built from its installed YAML and utils and served the shared data's rows in the field names
of the Hugging Face dataset each task loads (experiments/lm_eval_parity/requests.py; no download). For the first
50 docs of each paired task (and 5 of each MMLU subject), jaxcontam's prompt, continuations (target delimiter
included), gold index and item order must be lm-eval's zero-shot request strings exactly; the token ids must be
what lm-eval's `hf` model's `_encode_pair` makes of them with SmolLM2's GGUF tokenizer.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.lm_eval_parity.requests import (
    LM_EVAL_FROZEN,
    LM_EVAL_FROZEN_DOCS,
    LM_EVAL_PAIRS,
    LM_EVAL_VERSION,
    freeze_lm_eval_requests,
    hf_rows,
    jaxcontam_ids,
    jaxcontam_requests,
    lm_eval_hf_encoder,
    lm_eval_requests,
    lm_eval_task_manager,
    with_ids,
)
from helpers import smollm2_tokenizer

lm_eval = pytest.importorskip("lm_eval")

from jaxcontam.data import load_benchmark  # noqa: E402
from jaxcontam.data.registry import BENCHMARKS  # noqa: E402

DOCS = 50


@pytest.fixture(scope="module")
def requests(shared_data):
    return {
        task: lm_eval_requests(task, hf_rows(shared_data, task, DOCS), task_split)
        for _, _, task, task_split in LM_EVAL_PAIRS
    }


@pytest.mark.parametrize("name, split, task, task_split", LM_EVAL_PAIRS, ids=[pair[2] for pair in LM_EVAL_PAIRS])
def test_requests_are_lm_eval_s(requests, name, split, task, task_split):
    expected = requests[task]
    assert len(expected) == (5 if task == "hellaswag" else DOCS)
    benchmark = load_benchmark(name, split=split, limit=len(expected))
    for index, (mine, theirs) in enumerate(zip(jaxcontam_requests(benchmark), expected, strict=True)):
        assert mine == theirs, (task, index)


def test_mmlu_every_subject_is_lm_eval_s(shared_data):
    """Each of the 57 mmlu_<subject> tasks (its own description line) on its first 5 items, in jaxcontam's order."""
    mmlu = load_benchmark("mmlu", split="test")
    subjects = list(dict.fromkeys(item.meta["subject"] for item in mmlu))
    assert len(subjects) == 57 and subjects == sorted(subjects)
    for subject in subjects:
        expected = lm_eval_requests(f"mmlu_{subject}", hf_rows(shared_data, f"mmlu_{subject}", 5), "test")
        items = [item for item in mmlu if item.meta["subject"] == subject][:5]
        assert jaxcontam_requests(mmlu.replace_items(items)) == expected, subject


def test_copa_continuations_start_with_two_spaces(requests):
    """lm-eval's copa: target delimiter " " + doc_to_choice's " " + the choice (super_glue/copa/utils.py)."""
    for request in requests["copa"]:
        assert all(c.startswith("  ") and not c.startswith("   ") for c in request["continuations"])


def test_registered_lm_eval_tasks_exist_in_lm_eval():
    named = {spec.lm_eval_task for spec in BENCHMARKS.values() if spec.lm_eval_task}
    assert named - {"mmlu", "minerva_math"} <= set(lm_eval_task_manager().all_subtasks)
    assert {"mmlu", "minerva_math"} <= set(lm_eval_task_manager().all_groups)


def test_frozen_strings_are_lm_eval_s(shared_data):
    """The CI file (tests/data/lm_eval_requests.json) is what lm-eval's task code makes now."""
    frozen = json.loads(LM_EVAL_FROZEN.read_text(encoding="utf-8"))
    assert frozen["lm_eval_version"] == LM_EVAL_VERSION  # a later lm-eval that words a task anew fails here
    for _, _, task, task_split in LM_EVAL_PAIRS:
        made = lm_eval_requests(task, hf_rows(shared_data, task, LM_EVAL_FROZEN_DOCS.get(task, 5)), task_split)
        strings = [{k: v for k, v in r.items() if not k.endswith("_ids")} for r in frozen["tasks"][task]["requests"]]
        assert strings == made, task


@pytest.mark.slow  # transformers converts SmolLM2's GGUF tokenizer (~20 s); CI checks the frozen items' ids
def test_token_ids_are_lm_eval_hf_s_on_50_items_and_the_frozen_ids_are_current(shared_data, requests):
    encoder, tokenizer = lm_eval_hf_encoder(shared_data), smollm2_tokenizer(shared_data)
    for task, task_requests in requests.items():
        for request in task_requests:
            assert jaxcontam_ids(tokenizer, request) == with_ids(encoder, request), task
    assert (
        freeze_lm_eval_requests(shared_data)["tasks"] == json.loads(LM_EVAL_FROZEN.read_text(encoding="utf-8"))["tasks"]
    )


@pytest.mark.slow  # ~4-7 min: lm-eval's hf model (torch, the GGUF dequantised) and jaxcontam score 200 choices each
def test_copa_loglikelihoods_are_lm_eval_hf_s_on_smollm2(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "JAX_PLATFORMS": "cpu"}
    subprocess.run(
        [sys.executable, "-m", "experiments.lm_eval_parity.copa_smollm2", "--out", str(tmp_path / "copa.json")],
        check=True,
        env=env,
        capture_output=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    result = json.loads((tmp_path / "copa.json").read_text())
    assert result["strings_identical"] and result["token_ids_identical"]
    assert result["max_abs_delta_loglik"] <= 1e-3
    assert result["acc_choices_differing"] == result["acc_norm_choices_differing"] == 0
