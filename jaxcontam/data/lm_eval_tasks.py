"""lm-evaluation-harness tasks on local files, and any lm-eval task as a jaxcontam benchmark.

lm-eval's stock tasks download Hugging Face datasets. `write_task_overrides` writes, for each task given a
local file, a YAML that `include`s the stock task (its prompt, choices, target, metrics and `process_docs`
unchanged) and replaces only where the documents come from:

    include: <lm_eval>/tasks/arc/arc_easy.yaml
    task: arc_easy
    dataset_path: json          # or csv / parquet, by the file's suffix
    dataset_name: null
    dataset_kwargs: {data_files: {test: /abs/arc_easy.jsonl}}
    test_split: test            # the split the stock task evaluates; the others are set to null

lm-eval's `TaskManager(include_path=folder)` (CLI: `--include_path`) then finds these under the stock names,
so results keep their usual keys. A file given by the user must hold the stock task's Hugging Face fields.

`LOCAL_TASKS` maps the copies under jaxcontam's data roots (`jaxcontam.data.roots`) to those fields,
the one place this mapping lives (task: local file (split) -> what its rows become):

- arc_easy: llm_adapters_commonsense/ARC-Easy/parsed.jsonl (test) -> question, choices {text, label A..},
  answerKey (the gold letter), id (the row's)
- piqa: piqa/piqa_valid_with_labels.jsonl (validation) -> goal, sol1, sol2, label (already the hub fields)
- hellaswag: hellaswag/hellaswag_val.jsonl (validation) -> ctx_a = ctx, ctx_b = "", activity_label, endings,
  label (a string, as on the hub)
- copa: copa/copa_dev.jsonl ids 401-500 (SuperGLUE's validation ids) -> premise, choice1, choice2, question,
  label, idx

Known differences from the hub copies: the local HellaSwag was preprocessed by llama.cpp's extractor (markers
such as "[title]" already removed, ctx_a and ctx_b joined into ctx), so the stock `process_docs` cannot
capitalise ctx_b and the prompt keeps its lower case ("... sitting on a roof. he" where the hub's gives
"... sitting on a roof. He"); the endings are unchanged;
COPA's rows are put in SuperGLUE's choice order (`adapters.SUPERGLUE_SWAPPED_COPA_IDS`, read off XCOPA).
Items, prompts and scoring are otherwise the stock tasks'.

`load_lm_eval_benchmark` reads an lm-eval task's evaluation documents into a `Benchmark` (`--benchmark
lm_eval:arc_easy`): each item's question is the task's `doc_to_text`, its choices `doc_to_choice`, its gold the
index `doc_to_target` names, and the text scored after the prompt is the task's `target_delimiter` followed
by the choice, exactly the (context, continuation) pairs lm-eval builds (zero-shot).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from jaxcontam.data.adapters import COPA_SPLITS, SUPERGLUE_SWAPPED_COPA_IDS
from jaxcontam.data.item import Benchmark, Item, choice_of
from jaxcontam.data.records import read_jsonl
from jaxcontam.data.roots import DEFAULT_ROOTS, first_holding, named
from jaxcontam.errors import DataError

PREFIX = "lm_eval:"
_LOADERS = {".json": "json", ".jsonl": "json", ".csv": "csv", ".parquet": "parquet"}


def _letters(count: int) -> list[str]:
    return [chr(ord("A") + i) for i in range(count)]


def _arc_row(row: dict) -> dict:
    labels = _letters(len(row["choices"]))
    return {
        "id": str(row["id"]),
        "question": row["question"],
        "choices": {"text": row["choices"], "label": labels},
        "answerKey": labels[row["label"]],
    }


def _piqa_row(row: dict) -> dict:
    return {"goal": row["goal"], "sol1": row["sol1"], "sol2": row["sol2"], "label": row["label"]}


def _hellaswag_row(row: dict) -> dict:
    return {
        "ind": row["ind"],
        "activity_label": row["activity_label"],
        "ctx_a": row["ctx"],
        "ctx_b": "",
        "ctx": row["ctx"],
        "endings": row["endings"],
        "label": str(row["label"]),
    }


def _copa_row(row: dict) -> dict | None:
    number = int(row["id"])
    if number not in COPA_SPLITS["validation"]:  # SuperGLUE: train = ids 1-400, validation = 401-500
        return None
    choices, label = (row["choice1"], row["choice2"]), int(row["label"])
    if number in SUPERGLUE_SWAPPED_COPA_IDS:  # SuperGLUE's own choice order (see `adapters`)
        choices, label = choices[::-1], 1 - label
    return {
        "premise": row["premise"],
        "choice1": choices[0],
        "choice2": choices[1],
        "question": row["question"],
        "label": label,
        "idx": number - COPA_SPLITS["validation"].start,
    }


@dataclasses.dataclass(frozen=True)
class LocalTask:
    """A stock lm-eval task (`stock`: its YAML under lm_eval/tasks) read from a local file under a data root."""

    stock: str
    split: str  # the split the stock task evaluates on
    relative: str  # the local file, relative to a data root
    to_hub_row: Callable[[dict], dict | None]  # local row -> the hub's fields (None: not in the split)


LOCAL_TASKS: dict[str, LocalTask] = {
    "arc_easy": LocalTask("arc/arc_easy.yaml", "test", "llm_adapters_commonsense/ARC-Easy/parsed.jsonl", _arc_row),
    "piqa": LocalTask("piqa/piqa.yaml", "validation", "piqa/piqa_valid_with_labels.jsonl", _piqa_row),
    "hellaswag": LocalTask("hellaswag/hellaswag.yaml", "validation", "hellaswag/hellaswag_val.jsonl", _hellaswag_row),
    "copa": LocalTask("super_glue/copa/default.yaml", "validation", "copa/copa_dev.jsonl", _copa_row),
}


def _lm_eval():
    try:
        from lm_eval.tasks import TaskManager

        import lm_eval  # the lm-evaluation-harness package, not jaxcontam.lm_eval (absolute import)
    except ImportError:
        raise DataError('lm-eval tasks need lm-evaluation-harness: pip install "jaxcontam[lm-eval]"') from None
    return Path(lm_eval.__file__).parent / "tasks", TaskManager


def parse_data_files(pairs: Iterable[str]) -> dict[str, Path]:
    """`TASK=FILE` strings (`--data-files`) -> {task: file}."""
    found = {}
    for pair in pairs:
        task, sep, file = pair.partition("=")
        if not sep or not task or not file:
            raise DataError(f"--data-files {pair!r}: expected TASK=FILE, e.g. arc_easy=arc_easy_test.jsonl")
        found[task.strip()] = Path(file.strip())
    return found


def find_local_copy(task: str, roots: Sequence[Path] = DEFAULT_ROOTS) -> Path | None:
    """jaxcontam's local copy of a `LOCAL_TASKS` task under the first of `roots` holding it, else None."""
    known = LOCAL_TASKS.get(task)
    return None if known is None else first_holding(roots, known.relative, files_only=True)


def _convert(task: LocalTask, source: Path, target: Path) -> None:
    rows = (task.to_hub_row(row) for _, row in read_jsonl(source))  # line by line, each line bounded
    target.write_text("".join(json.dumps(row) + "\n" for row in rows if row is not None))


def _stock_config(tasks_root: Path, task: str, TaskManager) -> tuple[Path, dict]:
    """The stock task's YAML path and its resolved config (`test_split`, `validation_split` ...)."""
    known = LOCAL_TASKS.get(task)
    if known is not None:
        path = tasks_root / known.stock
    else:
        entry = TaskManager().task_index.get(task)
        if entry is None or entry.yaml_path is None:
            raise DataError(
                f"lm-eval has no YAML task named {task!r} to point at a local file; list the tasks with "
                "`lm-eval ls tasks` (groups and Python tasks cannot be overridden here)"
            )
        path = Path(entry.yaml_path)
    from lm_eval.tasks._yaml_loader import load_yaml

    return path, load_yaml(path, resolve_func=False)


def write_task_overrides(
    folder: str | Path,
    data_files: Mapping[str, str | Path] | None = None,
    local_tasks: Iterable[str] = (),
    roots: Sequence[Path] = DEFAULT_ROOTS,
) -> dict[str, Path]:
    """Write task YAMLs into `folder` (for `TaskManager(include_path=folder)`) and return {task: data file}.

    data_files: {task: file in the stock task's hub fields (.jsonl/.json/.csv/.parquet)}. local_tasks: tasks of
    `LOCAL_TASKS` to read from jaxcontam's local copy under `roots` (converted to the hub fields inside
    `folder`), unless `data_files` names a file for them.
    """
    tasks_root, TaskManager = _lm_eval()
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    files = {task: Path(path).resolve() for task, path in (data_files or {}).items()}
    for task in local_tasks:
        if task in files:
            continue
        if task not in LOCAL_TASKS:
            raise DataError(
                f"no local copy of lm-eval task {task!r} is known (known: {', '.join(LOCAL_TASKS)}); "
                f"pass --data-files {task}=FILE with the task's hub fields"
            )
        source = find_local_copy(task, roots)
        if source is None:
            raise DataError(
                f"lm-eval task {task}: {LOCAL_TASKS[task].relative} not found under "
                f"{named(roots)}; set JAXCONTAM_DATA or pass --data-files"
            )
        files[task] = (folder / f"{task}.jsonl").resolve()
        _convert(LOCAL_TASKS[task], source, files[task])
    for task, file in files.items():
        if not file.is_file():
            raise DataError(f"--data-files {task}={file}: no such file")
        loader = _LOADERS.get(file.suffix.lower())
        if loader is None:
            raise DataError(f"--data-files {task}={file}: use a .jsonl, .json, .csv or .parquet file")
        stock, config = _stock_config(tasks_root, task, TaskManager)
        split = config.get("test_split") or config.get("validation_split")
        if split is None:
            raise DataError(f"lm-eval task {task} has no test or validation split to read from a file")
        split_keys = {
            key: (split if config.get(key) == split else None)
            for key in ("training_split", "validation_split", "test_split", "fewshot_split")
        }
        override = {
            "include": str(stock),
            "task": task,
            "tag": [],
            "dataset_path": loader,
            "dataset_name": None,
            "dataset_kwargs": {"data_files": {split: str(file)}},
            **split_keys,
        }
        (folder / f"{task}.yaml").write_text(json.dumps(override, indent=2) + "\n")  # JSON is YAML
    return files


def task_manager(folder: str | Path | None = None, stock: bool = True):
    """lm-eval's TaskManager over the overrides in `folder` and (`stock`) the stock tasks, which they override.
    Without `stock` only the overrides are indexed (they include their stock YAMLs by path): seconds faster."""
    _, TaskManager = _lm_eval()
    return TaskManager(include_path=str(folder) if folder is not None else None, include_defaults=stock)


@dataclasses.dataclass(frozen=True)
class LmEvalBenchmark(Benchmark):
    """A Benchmark whose continuations carry the task's `target_delimiter` (lm-eval's `acc_norm` divides by the
    choice's length without it)."""

    delimiter: str = " "

    def choice_text(self, item: Item, index: int) -> str:
        return self.continuation(item, index).removeprefix(self.delimiter)


def _prompt(item: Item) -> str:
    return item.question


def _continuation(delimiter: str) -> Callable[[Item, int], str]:
    return lambda item, index: delimiter + choice_of(item, index)


def _gold_index(task_name: str, doc_id: int, gold, choices: list[str]) -> int:
    if isinstance(gold, str) and gold in choices:
        return choices.index(gold)
    if isinstance(gold, int) and not isinstance(gold, bool) and 0 <= gold < len(choices):
        return gold
    raise DataError(
        f"lm-eval task {task_name}, document {doc_id}: target {gold!r} is not one of its "
        f"{len(choices)} choices (several gold answers are not supported)"
    )


def load_lm_eval_benchmark(
    task_name: str,
    split: str | None = None,
    path: str | Path | None = None,
    limit: int | None = None,
    folder: str | Path | None = None,
    roots: Sequence[Path] = DEFAULT_ROOTS,
) -> Benchmark:
    """An lm-eval task's evaluation documents as a Benchmark named `lm_eval:<task>` (module docstring).

    split: None or the split the task evaluates (the task defines it). path: a local file with the task's hub
    fields; without it a task of `LOCAL_TASKS` reads jaxcontam's local copy when one of `roots` holds one, any other
    task lm-eval's own source (the hub). folder: where the override YAML and converted rows go (default: a
    temporary folder).
    """
    import tempfile

    if limit is not None and limit < 0:
        raise DataError(f"limit must be a non-negative number of items, got {limit}")
    with tempfile.TemporaryDirectory(prefix="jaxcontam-lm-eval-") as scratch:
        where = Path(folder) if folder is not None else Path(scratch)
        files = {task_name: path} if path is not None else {}
        local = [task_name] if path is None and find_local_copy(task_name, roots) is not None else []
        if files or local:
            write_task_overrides(where, files, local, roots)
        manager = task_manager(where, stock=False) if files or local else task_manager()
        try:
            task = manager.load([task_name])["tasks"][task_name]
        except KeyError:
            raise DataError(f"lm-eval has no task {task_name!r}; list them with `lm-eval ls tasks`") from None
        docs: list[Any] = list(task.eval_docs)  # the rows lm-eval reads (dicts)
    evaluated = task.config.test_split or task.config.validation_split
    if split is not None and split != evaluated:
        raise DataError(
            f"lm-eval task {task_name} evaluates split {evaluated!r}, not {split!r}: leave --split out "
            "(the task defines its documents)"
        )
    kind = task.OUTPUT_TYPE
    if kind not in ("multiple_choice", "generate_until"):
        raise DataError(
            f"lm-eval task {task_name} is a {kind} task; an audit takes multiple_choice or "
            "generate_until tasks (questions with answers)"
        )
    from lm_eval.api.task import ConfigurableTask

    if kind == "multiple_choice" and not isinstance(task, ConfigurableTask):
        raise DataError(f"lm-eval task {task_name} lists no choices (doc_to_choice): it is not a configurable task")
    delimiter = task.config.target_delimiter
    items = []
    for doc_id, doc in enumerate(docs[:limit]):
        question = task.doc_to_text(doc)
        if not isinstance(question, str):
            raise DataError(
                f"lm-eval task {task_name}, document {doc_id}: its text is a {type(question).__name__}, "
                "not a question string"
            )
        choices: tuple[str, ...] | None = None
        if isinstance(task, ConfigurableTask) and kind == "multiple_choice":
            choices = tuple(task.doc_to_choice(doc))
            answer = _gold_index(task_name, doc_id, task.doc_to_target(doc), list(choices))
        else:
            answer = str(task.doc_to_target(doc))
        items.append(
            Item(
                id=str(doc_id),
                benchmark=f"{PREFIX}{task_name}",
                question=question,
                answer=answer,
                choices=choices,
                meta={"lm_eval_task": task_name},
            )
        )
    return LmEvalBenchmark(
        name=f"{PREFIX}{task_name}",
        split=evaluated,
        items=tuple(items),
        prompt_fn=_prompt,
        choice_fn=_continuation(delimiter),
        delimiter=delimiter,
    )
