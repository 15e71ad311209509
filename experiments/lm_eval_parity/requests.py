"""lm-eval's side of the parity checks: the shared benchmark files as lm-eval's Hugging Face datasets hold them,
lm-eval's own requests for them, and jaxcontam's requests and token ids in the same shape.

Shared by experiments/lm_eval_parity/copa_smollm2.py and the tests that compare jaxcontam's prompts, continuations
and ids with lm-eval's (tests/test_lm_eval_tasks.py, tests/test_lm_eval_tasks_frozen.py). Run as a module, it
rewrites tests/data/lm_eval_requests.json (the frozen strings and ids CI compares against, without lm-eval
installed), from the repository root with lm-eval installed:

    python -m experiments.lm_eval_parity.requests

Heavy optional imports (transformers, lm-eval, datasets) happen inside the functions that need them.
"""

from __future__ import annotations

import csv
import functools
import json
import re
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SMOLLM2_FOLDER = "smollm2_135m_instruct"  # under the data root
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2 = (SMOLLM2_FOLDER, SMOLLM2_GGUF)
LM_EVAL_FROZEN = REPO_ROOT / "tests" / "data" / "lm_eval_requests.json"

LM_EVAL_VERSION = "0.4.13"
LM_EVAL_FROZEN_DOCS = {"copa": 20}  # docs frozen per task (5 where not named)

# (jaxcontam benchmark, its split, lm-eval task, the task's split holding those docs)
LM_EVAL_PAIRS = (
    ("copa", "validation", "copa", "validation"),
    ("arc_easy", "test", "arc_easy", "test"),
    ("arc_challenge", "test", "arc_challenge", "test"),
    ("piqa", "validation", "piqa", "validation"),
    ("hellaswag", "validation", "hellaswag", "validation"),
    ("openbookqa", "test", "openbookqa", "test"),
    ("mmlu", "test", "mmlu_abstract_algebra", "test"),
    ("commonsenseqa", "validation", "commonsense_qa", "validation"),
    ("siqa", "validation", "social_iqa", "validation"),
    ("gsm8k", "test", "gsm8k", "test"),
    ("nq_open", "validation", "nq_open", "validation"),
    ("truthfulqa_mc", "validation", "truthfulqa_mc1", "validation"),
)

# HellaSwag validation rows 0-4 as rowanz/hellaswag holds them: the shared copy keeps only ctx = ctx_a + " " +
# ctx_b, lm-eval needs the two parts (tests/test_detect_answering.py reads them too).
HELLASWAG_CTX = [
    ("A man is sitting on a roof.", "he"),
    ("A lady walks to a barbell. She bends down and grabs the pole.", "the lady"),
    (
        "Two women in a child are shown in a canoe while a man pulls the canoe while standing in the water, with "
        "other individuals visible in the background.",
        "the child and a different man",
    ),
    ("A boy is running down a track.", "the boy"),
    ("The boy lifts his body above the height of a pole. The boy lands on his back on to a red mat.", "the boy"),
]


def _jsonl(path: Path, limit: int) -> list[dict]:
    rows = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip() and len(rows) < limit:
                rows.append(json.loads(line))
    return rows


def _lettered(texts: list[str]) -> dict:
    return {"text": list(texts), "label": [chr(ord("A") + i) for i in range(len(texts))]}


def superglue_copa_validation(data: Path, limit: int) -> list[dict]:
    """SuperGLUE's COPA validation: COPA ids 401-500 with the choice order and label of XCOPA's `val` (SuperGLUE's
    validation translated in its order; all 11 languages' labels agree), which swaps about half the items."""
    copa = [json.loads(line) for line in (data / "copa" / "copa_dev.jsonl").read_text().splitlines()[400:500]]
    xcopa = _jsonl(data / "xcopa" / "data" / "et" / "val.et.jsonl", 100)
    rows = []
    for index, (row, translated) in enumerate(zip(copa, xcopa)):
        assert translated["idx"] == index and row["id"] == 401 + index
        choices = (row["choice1"], row["choice2"])
        if translated["label"] != row["label"]:
            choices = choices[::-1]
        rows.append(
            {
                "premise": row["premise"],
                "choice1": choices[0],
                "choice2": choices[1],
                "question": row["question"],
                "label": translated["label"],
                "idx": index,
            }
        )
    return rows[:limit]


def hf_rows(data: Path, task: str, limit: int = 50) -> list[dict]:
    """The first `limit` rows of the dataset lm-eval's `task` reads, from the shared files."""
    adapters = data / "llm_adapters_commonsense"
    if task == "copa":
        return superglue_copa_validation(data, limit)
    if task in ("arc_easy", "arc_challenge"):
        folder = {"arc_easy": "ARC-Easy", "arc_challenge": "ARC-Challenge"}[task]
        return [
            {
                "id": str(r["id"]),
                "question": r["question"],
                "choices": _lettered(r["choices"]),
                "answerKey": chr(ord("A") + r["label"]),
            }
            for r in _jsonl(adapters / folder / "parsed.jsonl", limit)
        ]
    if task == "piqa":
        return _jsonl(data / "piqa" / "piqa_valid_with_labels.jsonl", limit)
    if task == "hellaswag":
        rows = _jsonl(data / "hellaswag" / "hellaswag_val.jsonl", min(limit, len(HELLASWAG_CTX)))
        return [
            {
                "ind": r["ind"],
                "activity_label": r["activity_label"],
                "ctx_a": a,
                "ctx_b": b,
                "ctx": f"{a} {b}",
                "endings": r["endings"],
                "label": str(r["label"]),
            }
            for r, (a, b) in zip(rows, HELLASWAG_CTX)
            if r["ctx"] == f"{a} {b}"
        ]
    if task == "openbookqa":
        return [
            {
                "id": r["id"],
                "question_stem": r["question"]["stem"],
                "choices": {
                    "text": [c["text"] for c in r["question"]["choices"]],
                    "label": [c["label"] for c in r["question"]["choices"]],
                },
                "answerKey": r["answerKey"],
            }
            for r in _jsonl(data / "openbookqa" / "openbookqa.jsonl", limit)
        ]
    if task.startswith("mmlu_"):
        subject = task.removeprefix("mmlu_")
        with (data / "mmlu" / "test" / f"{subject}_test.csv").open(encoding="utf-8", newline="") as handle:
            rows = list(csv.DictReader(handle))[:limit]
        return [
            {
                "question": r["question"],
                "subject": subject,
                "choices": [r[f"choice{k}"] for k in range(4)],
                "answer": int(r["answer"]),
            }
            for r in rows
        ]
    if task == "commonsense_qa":
        return _jsonl(data / "commonsenseqa" / "dev_rand_split.jsonl", limit)
    if task == "social_iqa":
        # the shared copy joins context and question with one space, which is all lm-eval's template puts between
        # them: any split at a space gives lm-eval the same text
        rows = []
        for r in _jsonl(adapters / "social_i_qa" / "parsed.jsonl", limit):
            context, _, question = r["question"].rpartition(" ")
            rows.append(
                {
                    "context": context,
                    "question": question,
                    "answerA": r["choices"][0],
                    "answerB": r["choices"][1],
                    "answerC": r["choices"][2],
                    "label": str(r["label"] + 1),
                }
            )
        return rows
    if task == "gsm8k":
        return _jsonl(data / "gsm8k" / "test.jsonl", limit)
    if task == "nq_open":
        return _jsonl(data / "nq_open" / "NQ-open.dev.jsonl", limit)
    if task == "truthfulqa_mc1":
        # the shared CSV has no MC1 targets: the best answer then the incorrect answers stand in for them (the
        # choices' text is data; what is compared is how lm-eval's task words the question and the choices)
        with (data / "truthfulqa" / "TruthfulQA.csv").open(encoding="utf-8", newline="") as handle:
            rows = list(csv.DictReader(handle))[:limit]
        targets = [
            [r["Best Answer"], *(a.strip() for a in r["Incorrect Answers"].split(";") if a.strip())] for r in rows
        ]
        return [
            {"question": r["Question"], "mc1_targets": {"choices": t, "labels": [1] + [0] * (len(t) - 1)}}
            for r, t in zip(rows, targets)
        ]
    raise KeyError(task)


@functools.lru_cache(maxsize=1)
def lm_eval_task_manager():
    from lm_eval.tasks import TaskManager

    return TaskManager()


def lm_eval_requests(task_name: str, rows: list[dict], split: str) -> list[dict]:
    """lm-eval's zero-shot requests for `rows`: [{context, continuations, gold}] per doc, in lm-eval's doc order.

    The task is built from its installed config with `custom_dataset` serving `rows` under every split the config
    names (the other splits only feed few-shot examples, which a zero-shot context never reads).
    """
    import datasets

    manager = lm_eval_task_manager()
    entry = manager.task_index[task_name]
    config = manager._factory._load_full_config(entry)
    names = {config.get(key) for key in ("training_split", "validation_split", "test_split", "fewshot_split")}
    served = datasets.Dataset.from_list(rows)

    def custom_dataset(**_):
        return datasets.DatasetDict({name: served for name in names if name} | {split: served})

    task = manager._factory.build(entry, overrides={"custom_dataset": custom_dataset}, registry=manager.task_index)
    docs = {"train": task.training_docs, "validation": task.validation_docs, "test": task.test_docs}[split]()
    requests = []
    for doc in docs:
        context = task.fewshot_context(doc, 0)
        made = task.construct_requests(doc, context, metadata=(task_name, 0, 1))
        if task.OUTPUT_TYPE != "multiple_choice":
            requests.append({"context": made.arguments[0]})
            continue
        choices = task.doc_to_choice(doc)
        gold = task.doc_to_target(doc)
        gold = choices.index(gold) if isinstance(gold, str) else int(gold)  # as process_results reads it
        assert all(r.arguments[0] == context for r in made)
        requests.append({"context": context, "continuations": [r.arguments[1] for r in made], "gold": gold})
    return requests


def lm_eval_hf_encoder(data: Path):
    """lm-eval's `hf` model's encoding without its weights: an `HFLM` holding only the tokenizer that lm-eval
    loads for SmolLM2's GGUF (`AutoTokenizer.from_pretrained(folder, gguf_file=...)`), with `HFLM`'s defaults
    (causal backend, no `add_bos_token`, no custom prefix token). Its `_encode_pair` and `tok_encode` are lm-eval's."""
    import transformers
    from lm_eval.models.huggingface import HFLM

    folder, file = SMOLLM2
    encoder = HFLM.__new__(HFLM)
    encoder.tokenizer = transformers.AutoTokenizer.from_pretrained(data / folder, gguf_file=file)
    encoder.backend, encoder.add_bos_token, encoder.custom_prefix_token_id = "causal", None, None
    return encoder


def with_ids(encoder, request: dict) -> dict:
    """`request` plus lm-eval's token ids for it: [context ids, continuation ids] per continuation
    (`_encode_pair`), or the context's ids for a generative request (`tok_encode`)."""
    if "continuations" not in request:
        return {**request, "context_ids": encoder.tok_encode(request["context"])}
    pairs = [encoder._encode_pair(request["context"], continuation) for continuation in request["continuations"]]
    return {**request, "pair_ids": [[list(context), list(continuation)] for context, continuation in pairs]}


def jaxcontam_requests(benchmark) -> list[dict]:
    """jaxcontam's prompts, continuations and golds in the shape of `lm_eval_requests`' output."""
    made = []
    for item in benchmark:
        request = {"context": benchmark.prompt(item)}
        if item.choices is not None:
            request |= {
                "continuations": [benchmark.continuation(item, i) for i in range(len(item.choices))],
                "gold": item.answer,
            }
        made.append(request)
    return made


def jaxcontam_ids(tokenizer, request: dict) -> dict:
    """`request` plus jaxcontam's ids for it (`answering.encode_pair` / `encode_prompt`), shaped as `with_ids`."""
    from jaxcontam.detect.answering import encode_pair, encode_prompt

    if "continuations" not in request:
        return {**request, "context_ids": encode_prompt(tokenizer, request["context"])}
    pairs = [encode_pair(tokenizer, request["context"], continuation) for continuation in request["continuations"]]
    return {**request, "pair_ids": [[list(context), list(continuation)] for context, continuation in pairs]}


def freeze_lm_eval_requests(data: Path) -> dict:
    """The frozen file's content: lm-eval's requests, with SmolLM2's ids, for the first docs of each paired task."""
    encoder = lm_eval_hf_encoder(data)
    tasks = {}
    for name, split, task, task_split in LM_EVAL_PAIRS:
        requests = lm_eval_requests(task, hf_rows(data, task, LM_EVAL_FROZEN_DOCS.get(task, 5)), task_split)
        tasks[task] = {
            "benchmark": name,
            "split": split,
            "task_split": task_split,
            "requests": [with_ids(encoder, request) for request in requests],
        }
    return {
        "lm_eval_version": LM_EVAL_VERSION,
        "produced_by": "lm-eval's task code and its hf model's _encode_pair with SmolLM2's GGUF tokenizer "
        "(experiments/lm_eval_parity/requests.py); regenerate with "
        "`python -m experiments.lm_eval_parity.requests` from the repository root with lm-eval installed",
        "tasks": tasks,
    }


if __name__ == "__main__":
    import lm_eval

    assert lm_eval.__version__ == LM_EVAL_VERSION, f"freeze with lm-eval {LM_EVAL_VERSION}, not {lm_eval.__version__}"
    shared = REPO_ROOT.parent / "shared" / "data"
    text = json.dumps(freeze_lm_eval_requests(shared), indent=1, ensure_ascii=False)
    text = re.sub(r"\[[\d,\s]*\]", lambda ids: json.dumps(json.loads(ids.group(0))), text)  # id lists on one line
    LM_EVAL_FROZEN.write_text(text + "\n", encoding="utf-8")
    print(f"wrote {LM_EVAL_FROZEN}")
