"""The benchmark registry (`BENCHMARKS`: names and hub ids -> how to read, prompt and score a benchmark), and
`load_benchmark`. Installed packages add benchmarks through the `jaxcontam.benchmarks` entry-point group.

Where the data comes from, in order: `path` (a benchmark file, the benchmark's folder, or a
data root holding it); else the first of `roots` that holds it (`jaxcontam.data.roots`: by default
`../shared/data` from the current directory; the commands put `$JAXCONTAM_DATA` first); else the
Hugging Face hub through `datasets.load_dataset`. A path that is not a registered
name is read as a table file through a field mapping (`jaxcontam.data.custom`).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from jaxcontam.data import adapters, prompts
from jaxcontam.data.answers import alias_scorer, normalize_gsm8k_answer, normalize_math_answer
from jaxcontam.data.custom import parse_field_mapping, read_mapped
from jaxcontam.data.item import Benchmark, Item, default_continuation, default_prompt
from jaxcontam.data.roots import DEFAULT_ROOTS, first_holding, named
from jaxcontam.errors import DataError
from jaxcontam.registry import Registry
from jaxcontam.storage import as_path


@dataclasses.dataclass(frozen=True)
class BenchmarkSpec:
    """How to find, read, prompt and score one benchmark.

    `local` maps split -> path relative to a data root; `hub` lists hub dataset ids (the first
    is loaded, with `hub_config`; splits keep their names). Zero-shot, lm-eval's task
    `lm_eval_task` sends the same context and continuations for the same split and item order,
    except as `lm_eval_differences` says (tests/test_lm_eval_tasks*.py check this).
    """

    name: str
    description: str
    default_split: str
    local: Mapping[str, str]
    read_local: Callable[[Path, str], adapters.Located]
    hub: tuple[str, ...] = ()
    hub_config: str | None = None
    read_hub: Callable[[Iterable[dict], str, str], adapters.Located] | None = None
    prompt_fn: Callable[[Item], str] = default_prompt
    choice_fn: Callable[[Item, int], str] = default_continuation
    normalize_answer: Callable[[str], str] | None = None
    scorer: Callable[[Item, int | str], float] | None = None
    lm_eval_task: str | None = None  # the lm-eval (0.4.13) task whose prompts, choices and split this follows
    lm_eval_differences: str = ""  # where it deliberately differs from that task ("" = same requests)

    @property
    def aliases(self) -> tuple[str, ...]:
        """Lower-cased: each hub id, and `hub_id:config` (a hub id two benchmarks share names neither of them)."""
        return tuple(alias.lower() for hub in self.hub for alias in (hub, f"{hub}:{self.hub_config}"))


_LLM_ADAPTERS = "llm_adapters_commonsense"

BENCHMARKS: Registry[BenchmarkSpec] = Registry(
    "benchmark",
    BenchmarkSpec,
    name_of=lambda spec: spec.name,
    aliases_of=lambda spec: spec.aliases,
    group="jaxcontam.benchmarks",
    error=DataError,
)
for _spec in (
    BenchmarkSpec(
        "gsm8k",
        "GSM8K grade-school math (generative; final number after ####)",
        "test",
        {"train": "gsm8k/train.jsonl", "test": "gsm8k/test.jsonl"},
        adapters.rows_local(adapters.gsm8k_row),
        hub=("openai/gsm8k", "gsm8k"),
        hub_config="main",
        read_hub=adapters.rows_hub(adapters.gsm8k_row),
        prompt_fn=prompts.question_answer,
        normalize_answer=normalize_gsm8k_answer,
        lm_eval_task="gsm8k",
        lm_eval_differences="zero-shot (lm-eval's default is 5-shot); scored on the final number "
        "(lm-eval: its strict-match and flexible-extract regexes)",
    ),
    BenchmarkSpec(
        "mmlu",
        "MMLU, 57 subjects (4-way multiple choice; subject in meta)",
        "test",
        {"test": "mmlu/test", "dev": "mmlu/dev"},
        adapters.mmlu_local,
        hub=("cais/mmlu",),
        hub_config="all",
        read_hub=adapters.mmlu_hub,
        prompt_fn=prompts.mmlu,
        choice_fn=prompts.letter_choice,
        lm_eval_task="mmlu",
        lm_eval_differences="one benchmark, subjects in name order (lm-eval: 57 mmlu_<subject> subtasks)",
    ),
    BenchmarkSpec(
        "hellaswag",
        "HellaSwag sentence completion (4 endings)",
        "validation",
        {"validation": "hellaswag/hellaswag_val.jsonl"},
        adapters.hellaswag_local,
        hub=("Rowan/hellaswag", "hellaswag"),
        read_hub=adapters.rows_hub(adapters.hellaswag_hub),
        prompt_fn=prompts.hellaswag,
        lm_eval_task="hellaswag",
        lm_eval_differences="the shared copy keeps only ctx (ctx_a + ' ' + ctx_b): its trailing fragment after "
        "the last sentence end is taken for ctx_b and capitalised as lm-eval does",
    ),
    BenchmarkSpec(
        "piqa",
        "PIQA physical commonsense (2 solutions)",
        "validation",
        {"validation": "piqa/piqa_valid_with_labels.jsonl"},
        adapters.rows_local(adapters.piqa_row),
        hub=("ybisk/piqa", "piqa"),
        read_hub=adapters.rows_hub(adapters.piqa_row),
        prompt_fn=prompts.question_answer,
        lm_eval_task="piqa",
    ),
    BenchmarkSpec(
        "copa",
        "COPA causal reasoning (SuperGLUE splits: train 1-400, validation 401-500, test 501-1000; "
        "dev: ids 1-500 as released; Balanced-COPA mirrored dev)",
        "validation",
        {
            "train": "copa/copa_dev.jsonl",
            "validation": "copa/copa_dev.jsonl",
            "test": "copa/copa_test.jsonl",
            "dev": "copa/copa_dev.jsonl",
            "balanced_dev": "copa/balanced_copa_mirrored_dev.jsonl",
        },
        adapters.copa_local,
        prompt_fn=prompts.copa,
        choice_fn=prompts.copa_choice,
        lm_eval_task="copa",
        lm_eval_differences="lm-eval evaluates validation; test has COPA's labels (SuperGLUE's test has none); "
        "dev (ids 1-500, COPA's choice order) and balanced_dev are jaxcontam's own splits",
    ),
    BenchmarkSpec(
        "arc_easy",
        "AI2 ARC-Easy (3-5 choices)",
        "test",
        {"test": f"{_LLM_ADAPTERS}/ARC-Easy/parsed.jsonl"},
        adapters.rows_local(adapters.parsed_choices_row("arc_easy")),
        hub=("allenai/ai2_arc", "ai2_arc"),
        hub_config="ARC-Easy",
        read_hub=adapters.rows_hub(adapters.arc_hub("arc_easy")),
        prompt_fn=prompts.question_answer,
        lm_eval_task="arc_easy",
    ),
    BenchmarkSpec(
        "arc_challenge",
        "AI2 ARC-Challenge (3-5 choices)",
        "test",
        {"test": f"{_LLM_ADAPTERS}/ARC-Challenge/parsed.jsonl"},
        adapters.rows_local(adapters.parsed_choices_row("arc_challenge")),
        hub=("allenai/ai2_arc", "ai2_arc"),
        hub_config="ARC-Challenge",
        read_hub=adapters.rows_hub(adapters.arc_hub("arc_challenge")),
        prompt_fn=prompts.question_answer,
        lm_eval_task="arc_challenge",
    ),
    BenchmarkSpec(
        "openbookqa",
        "OpenBookQA main (4 choices, official ids)",
        "test",
        {"test": "openbookqa/openbookqa.jsonl"},
        adapters.openbookqa_local,
        hub=("allenai/openbookqa", "openbookqa"),
        hub_config="main",
        read_hub=adapters.rows_hub(adapters.openbookqa_hub),
        prompt_fn=prompts.bare_question,
        lm_eval_task="openbookqa",
    ),
    BenchmarkSpec(
        "boolq",
        "BoolQ yes/no questions (local copy has no passages)",
        "validation",
        {"validation": f"{_LLM_ADAPTERS}/boolq/parsed.jsonl"},
        adapters.boolq_local,
        hub=("google/boolq", "boolq"),
        read_hub=adapters.rows_hub(adapters.boolq_hub),
        prompt_fn=prompts.boolq,
        lm_eval_task="boolq",
        lm_eval_differences="the shared copy has no passages, so its prompts lack lm-eval's passage line (hub rows "
        "keep it); hub: google/boolq, not aps/super_glue",
    ),
    BenchmarkSpec(
        "siqa",
        "Social IQa (3 choices)",
        "validation",
        {"validation": f"{_LLM_ADAPTERS}/social_i_qa/parsed.jsonl"},
        adapters.rows_local(adapters.parsed_choices_row("siqa")),
        hub=("allenai/social_i_qa", "social_i_qa"),
        read_hub=adapters.rows_hub(adapters.siqa_hub),
        prompt_fn=prompts.siqa,
        lm_eval_task="social_iqa",
    ),
    BenchmarkSpec(
        "winogrande",
        "WinoGrande (xl) dev (2 fillers for the blank)",
        "validation",
        {"validation": f"{_LLM_ADAPTERS}/winogrande/parsed.jsonl"},
        adapters.rows_local(adapters.parsed_choices_row("winogrande")),
        hub=("allenai/winogrande", "winogrande"),
        hub_config="winogrande_xl",
        read_hub=adapters.rows_hub(adapters.winogrande_hub),
        prompt_fn=prompts.winogrande,
        choice_fn=prompts.letter_choice,
        lm_eval_task="winogrande",
        lm_eval_differences="lm-eval scores the sentence's end after each option filled into the blank (one "
        "context per option); jaxcontam asks for the option's letter after a lettered list",
    ),
    BenchmarkSpec(
        "commonsenseqa",
        "CommonsenseQA (5 choices, official ids)",
        "validation",
        {"validation": "commonsenseqa/dev_rand_split.jsonl"},
        adapters.rows_local(adapters.commonsenseqa_row),
        hub=("tau/commonsense_qa", "commonsense_qa"),
        read_hub=adapters.rows_hub(adapters.commonsenseqa_row),
        prompt_fn=prompts.lettered_question,
        choice_fn=prompts.letter_choice,
        lm_eval_task="commonsense_qa",
    ),
    BenchmarkSpec(
        "truthfulqa",
        "TruthfulQA generation (gold: best answer; any correct answer scores)",
        "validation",
        {"validation": "truthfulqa/TruthfulQA.csv"},
        adapters.truthfulqa_local,
        hub=("truthfulqa/truthful_qa", "truthful_qa"),
        hub_config="generation",
        read_hub=adapters.rows_hub(adapters.truthfulqa_hub),
        prompt_fn=prompts.short_qa,
        scorer=alias_scorer("correct_answers"),
        lm_eval_task="truthfulqa_gen",
        lm_eval_differences="`Q: ...?\\nA:` without lm-eval's six-question primer; scored by matching a correct "
        "answer (lm-eval: BLEU/ROUGE against correct and incorrect answers)",
    ),
    BenchmarkSpec(
        "truthfulqa_mc",
        "TruthfulQA MC1 (best answer vs incorrect answers; hub: mc1_targets)",
        "validation",
        {"validation": "truthfulqa/TruthfulQA.csv"},
        adapters.truthfulqa_mc_local,
        hub=("truthfulqa/truthful_qa", "truthful_qa"),
        hub_config="multiple_choice",
        read_hub=adapters.rows_hub(adapters.truthfulqa_mc_hub),
        prompt_fn=prompts.truthfulqa_mc,
        lm_eval_task="truthfulqa_mc1",
        lm_eval_differences="the shared CSV has no MC1 targets: its choices are the best answer then the "
        "incorrect answers (hub rows use mc1_targets, as lm-eval)",
    ),
    BenchmarkSpec(
        "nq_open",
        "NQ-open (generative; any listed answer scores)",
        "validation",
        {
            "validation": "nq_open/NQ-open.dev.jsonl",
            "efficientqa_dev": "nq_open/NQ-open.efficientqa.dev.1.1.jsonl",
            "efficientqa_test": "nq_open/NQ-open.efficientqa.test.1.1.jsonl",
        },
        adapters.rows_local(adapters.nq_open_row),
        hub=("google-research-datasets/nq_open", "nq_open"),
        read_hub=adapters.rows_hub(adapters.nq_open_row),
        prompt_fn=prompts.nq_open,
        scorer=alias_scorer("answers"),
        lm_eval_task="nq_open",
        lm_eval_differences="zero-shot, as lm-eval's default; scored by matching any listed "
        "answer after SQuAD normalisation",
    ),
    BenchmarkSpec(
        "math",
        "MATH competition problems (generative; boxed answer)",
        "test",
        {"test": "math/MATH_test_5000/test.jsonl"},
        adapters.rows_local(adapters.math_row("math")),
        hub=("hendrycks/competition_math", "competition_math"),
        read_hub=adapters.rows_hub(adapters.math_row("math")),
        prompt_fn=prompts.math_problem,
        normalize_answer=normalize_math_answer,
        lm_eval_task="minerva_math",
        lm_eval_differences="one benchmark in MATH_test_5000 order (lm-eval: 7 minerva_math_<subject> subtasks); "
        "zero-shot (lm-eval: 4-shot); not checked against lm-eval (its math tasks need "
        "lm-eval[math])",
    ),
    BenchmarkSpec(
        "math500",
        "MATH-500 subset (PRM800K)",
        "test",
        {"test": "math/MATH500/test.jsonl"},
        adapters.rows_local(adapters.math_row("math500")),
        hub=("HuggingFaceH4/MATH-500",),
        read_hub=adapters.rows_hub(adapters.math_row("math500")),
        prompt_fn=prompts.math_problem,
        normalize_answer=normalize_math_answer,
        lm_eval_task="minerva_math500",
        lm_eval_differences="zero-shot (lm-eval: 4-shot); not checked against lm-eval (its math tasks need "
        "lm-eval[math])",
    ),
):
    BENCHMARKS.register(_spec)
for _alias in ("truthful_qa", "truthfulqa/truthful_qa"):  # the generative task is TruthfulQA's default
    BENCHMARKS.alias(_alias, "truthfulqa")
BENCHMARKS.protect()


def list_benchmarks() -> list[str]:
    """The registered benchmark names."""
    return list(BENCHMARKS.names())


def resolve_spec(name: str) -> BenchmarkSpec | None:
    """The spec for a registered name or hub id (`allenai/ai2_arc:ARC-Easy` for multi-config hub ids)."""
    return BENCHMARKS.get(name.lower())


def _under(folder: Path, relative: str) -> Path | None:
    """`relative` or one of its tails inside `folder` (a data root or the benchmark's own folder)."""
    parts = Path(relative).parts
    for start in range(len(parts)):
        candidate = folder.joinpath(*parts[start:])
        if candidate.exists():
            return candidate
    return None


def find_local(relative: str, path: str | Path | None, what: str, roots: Sequence[Path] = DEFAULT_ROOTS) -> Path:
    """`relative` under `path` (a file is taken as is) or under the first of `roots` holding it."""
    if path is not None:
        given = as_path(path)
        found = given if given.is_file() else (_under(given, relative) if given.is_dir() else None)
        if found is None:
            raise DataError(f"{what}: {given} is not {relative} nor a folder holding it; check the path")
        return found
    found = first_holding(roots, relative)
    if found is not None:
        return found
    raise DataError(
        f"{what}: {relative} not found under {named(roots)}; "
        f"pass its path or set JAXCONTAM_DATA to the folder holding it"
    )


def locate(
    spec: BenchmarkSpec, split: str, path: str | Path | None, roots: Sequence[Path] = DEFAULT_ROOTS
) -> Path | None:
    """The local file or folder of `spec`'s `split`, or None when it must come from the hub."""
    relative = spec.local.get(split)
    if path is not None:
        given = as_path(path)
        if not given.exists():
            raise DataError(
                f"{spec.name}: --path {given} does not exist; give the benchmark's file or folder, "
                f"or a data root holding {relative or spec.name}"
            )
        if given.is_file():
            return given
        found = _under(given, relative) if relative else None
        if found is None:
            wanted = f"{relative} (or its tail)" if relative else f"a local copy of split {split!r}"
            raise DataError(f"{spec.name}: {given} holds no {wanted}; local splits: {', '.join(spec.local)}")
        return found
    return None if relative is None else first_holding(roots, relative)


def _hub_rows(spec: BenchmarkSpec, split: str, roots: Sequence[Path]) -> Iterable[dict]:
    import datasets

    try:
        # a Dataset's rows are dicts; its stubs type them as a union of containers
        return datasets.load_dataset(spec.hub[0], spec.hub_config, split=split)  # pyright: ignore[reportReturnType]
    except Exception as error:  # network, auth and missing-split errors come as many types
        raise DataError(
            f"{spec.name}: no local copy of split {split!r} was found (looked in {named(roots)}) "
            f"and loading {spec.hub[0]} ({spec.hub_config or 'default'} config, split {split!r}) from the hub "
            f"failed: {error}. Pass --path to the local files or set JAXCONTAM_DATA"
        ) from None


def _collect(located: Iterable[tuple[str, Item]], name: str, limit: int | None) -> list[Item]:
    """The first `limit` items, refusing duplicate ids with both places named."""
    if limit is not None and limit < 0:
        raise DataError(f"limit must be a non-negative number of items, got {limit}")
    seen: dict[str, str] = {}
    items = []
    for where, item in itertools.islice(located, limit):
        if item.id in seen:
            raise DataError(
                f"{where}: duplicate item id {item.id!r} in {name} (first at {seen[item.id]}); "
                f"ids must be unique, fix the id column or drop the repeated row"
            )
        seen[item.id] = where
        items.append(item)
    return items


def _benchmark(spec: BenchmarkSpec | None, name: str, split: str, items: list[Item]) -> Benchmark:
    if spec is None:
        return Benchmark(name=name, split=split, items=tuple(items))
    return Benchmark(
        name=spec.name,
        split=split,
        items=tuple(items),
        prompt_fn=spec.prompt_fn,
        choice_fn=spec.choice_fn,
        normalize_answer=spec.normalize_answer,
        scorer=spec.scorer,
    )


def load_benchmark(
    name: str,
    split: str | None = None,
    path: str | Path | None = None,
    fields: Mapping[str, str] | None = None,
    limit: int | None = None,
    roots: Sequence[Path] = DEFAULT_ROOTS,
) -> Benchmark:
    """Load a benchmark by registered name, hub id, or local table file.

    `name`: a name from `list_benchmarks()`, a hub id (`openai/gsm8k`, `cais/mmlu`, ...), or a
    .jsonl/.json/.csv/.parquet file. `path`: local data (file, benchmark folder or data root).
    `fields`: column mapping for table files (see `jaxcontam.data.custom`); given with a
    registered name it reads `path` through the mapping but keeps the benchmark's prompt and scorer.
    `limit`: read only the first items. `roots`: the data roots searched when `path` is None
    (`jaxcontam.data.roots`). `lm_eval:TASK` is lm-evaluation-harness's task TASK, documents, prompt
    and choices as the task defines them (`jaxcontam.data.lm_eval_tasks`; `path`: a file in its hub fields).
    """
    if str(name).startswith("lm_eval:"):
        from jaxcontam.data.lm_eval_tasks import load_lm_eval_benchmark

        return load_lm_eval_benchmark(
            str(name).removeprefix("lm_eval:"), split=split, path=path, limit=limit, roots=roots
        )
    spec = resolve_spec(str(name))
    if spec is None or fields is not None:
        file = as_path(path) if path is not None else as_path(name)
        if spec is None and not file.exists():
            wanted = str(name).lower()
            configs = [f"{hub}:{s.hub_config}" for s in BENCHMARKS.values() for hub in s.hub if hub.lower() == wanted]
            hint = (
                f"this hub id has several configs: {', '.join(configs)}"
                if configs
                else (f"known benchmarks: {', '.join(list_benchmarks())}, or a .jsonl/.json/.csv/.parquet file")
            )
            raise DataError(f"unknown benchmark {name!r} and no such file; {hint}")
        if file.is_dir():
            raise DataError(f"{file} is a folder; a field mapping reads one .jsonl/.json/.csv/.parquet file")
        bench_name = spec.name if spec else file.name.split(".")[0]
        split = split or "test"
        located = read_mapped(file, bench_name, split, parse_field_mapping(fields))
        return _benchmark(spec, bench_name, split, _collect(located, bench_name, limit))

    split = split or spec.default_split
    local = locate(spec, split, path, roots)
    if local is not None:
        located = spec.read_local(local, split)
    elif spec.read_hub is not None:
        located = spec.read_hub(_hub_rows(spec, split, roots), split, spec.hub[0])
    else:
        raise DataError(
            f"{spec.name}: split {split!r} not found locally (looked in "
            f"{named(roots)}) and it has no hub source; local splits: "
            f"{', '.join(spec.local)}. Pass --path or set JAXCONTAM_DATA"
        )
    return _benchmark(spec, spec.name, split, _collect(located, spec.name, limit))
