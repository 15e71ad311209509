"""Paraphrase sources that attach rephrased questions to benchmark items by id (for PaCoST).

Built-in sources (read from `path`, or the first data root holding them: `jaxcontam.data.roots`):

- `gsm8k_rephrase`: LLM-Decontaminator GPT-4 rephrasings, line i <-> `gsm8k/test/i`
  (alignment checked: each line's `#### <final>` must equal the item's gold answer).
- `gsm_plus`: GSM-Plus testmini "problem understanding" rows, human-verified paraphrases of a
  GSM8K test question, matched to the item whose question equals `seed_question`.
- `mmlu_rephrase`: LLM-Decontaminator English rephrasings of three MMLU test subjects, line i
  <-> `mmlu/test/<subject>/i` (alignment checked against the vendored original CSV; empty
  lines are items the authors filtered out and get no paraphrase).
- `xcopa_backtranslation`: XCOPA premises machine-translated back to English (10 languages),
  test idx i <-> `copa/test/(501+i)`, val idx i <-> `copa/validation/(401+i)` (and `copa/dev/(401+i)`).

Any other source is a user file (.jsonl/.json/.csv/.parquet) of rows `{id, paraphrase}`;
`paraphrase` may be one string or a list; several rows may share an id.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from jaxcontam.data.answers import gsm8k_final_answer, normalize_gsm8k_answer
from jaxcontam.data.item import Benchmark
from jaxcontam.data.records import field, position_name, read_csv, read_jsonl, read_rows, require_file, text_field
from jaxcontam.data.registry import find_local
from jaxcontam.data.roots import DEFAULT_ROOTS
from jaxcontam.errors import DataError
from jaxcontam.storage import as_path

Paraphrases = dict[str, list[str]]

BUILTIN_SOURCES = ("gsm8k_rephrase", "gsm_plus", "mmlu_rephrase", "xcopa_backtranslation")
MMLU_REPHRASED_SUBJECTS = ("abstract_algebra", "high_school_us_history", "sociology")
XCOPA_LANGUAGES = ("et", "ht", "id", "it", "sw", "ta", "th", "tr", "vi", "zh")
# Built-in source -> the (benchmark, split) pairs it has rephrasings for, the split it suits best first.
SOURCE_SPLITS = {
    "gsm8k_rephrase": (("gsm8k", "test"),),
    "gsm_plus": (("gsm8k", "test"),),
    "mmlu_rephrase": (("mmlu", "test"),),
    "xcopa_backtranslation": (("copa", "test"), ("copa", "validation"), ("copa", "dev")),
}


def _squeeze(text: str) -> str:
    return " ".join(text.split())


def covered_splits(source: str | None, benchmark_name: str) -> tuple[str, ...]:
    """The splits of `benchmark_name` that built-in `source` has rephrasings for (none for a user file or None)."""
    return tuple(split for name, split in SOURCE_SPLITS.get(str(source), ()) if name == benchmark_name)


def _require(benchmark: Benchmark, source: str) -> None:
    """Refuse a benchmark split the built-in `source` has no rephrasings for, naming the splits it has."""
    if (benchmark.name, benchmark.split) in SOURCE_SPLITS[source]:
        return
    covered = ", ".join(f"{name} split {split!r}" for name, split in SOURCE_SPLITS[source])
    splits = covered_splits(source, benchmark.name)
    fix = f"pass --split {splits[0]}" if splits else "use a benchmark it covers or an {id, paraphrase} file"
    raise DataError(
        f"paraphrase source {source!r} is for {covered}, not {benchmark.name} split {benchmark.split!r}; {fix}"
    )


def _add(found: Paraphrases, item_id: str, text: str) -> None:
    text = text.strip()
    if text and text not in found.setdefault(item_id, []):
        found[item_id].append(text)


def gsm8k_rephrase(
    benchmark: Benchmark, path: str | Path | None = None, roots: Sequence[Path] = DEFAULT_ROOTS
) -> Paraphrases:
    _require(benchmark, "gsm8k_rephrase")
    file = find_local("llm_decontaminator_rephrase/rephrase_gsm8k.jsonl", path, "gsm8k_rephrase", roots)
    items = benchmark.by_id()
    found: Paraphrases = {}
    for index, (line, row) in enumerate(read_jsonl(file)):
        where = position_name(file, line)
        text = text_field(row, "text", where)
        match = re.match(r"\s*Question:\s*(.*?)\nAnswer:", text, flags=re.S)
        final = gsm8k_final_answer(text)
        if match is None or final is None:
            raise DataError(f"{where}: expected 'Question: ...\\nAnswer: ... #### <final>', got {text[:80]!r}")
        item = items.get(f"gsm8k/test/{index}")
        if item is None:
            continue
        if normalize_gsm8k_answer(final) != item.answer:
            raise DataError(
                f"{where}: final answer {final!r} differs from {item.id}'s gold {item.answer!r}; "
                f"the rephrase file is not aligned with this GSM8K test file"
            )
        _add(found, item.id, match.group(1))
    return found


def gsm_plus(
    benchmark: Benchmark, path: str | Path | None = None, roots: Sequence[Path] = DEFAULT_ROOTS
) -> Paraphrases:
    _require(benchmark, "gsm_plus")
    file = find_local("gsm_plus/gsmplus_testmini.jsonl", path, "gsm_plus", roots)
    by_question = {_squeeze(item.question): item for item in benchmark}
    found: Paraphrases = {}
    for line, row in read_jsonl(file):
        where = position_name(file, line)
        if field(row, "perturbation_type", where) != "problem understanding":
            continue
        item = by_question.get(_squeeze(text_field(row, "seed_question", where)))
        if item is None:
            continue
        if normalize_gsm8k_answer(str(field(row, "seed_answer", where))) != item.answer:
            raise DataError(
                f"{where}: seed answer {row['seed_answer']!r} differs from {item.id}'s gold {item.answer!r}"
            )
        _add(found, item.id, text_field(row, "question", where))
    return found


def mmlu_rephrase(
    benchmark: Benchmark, path: str | Path | None = None, roots: Sequence[Path] = DEFAULT_ROOTS
) -> Paraphrases:
    _require(benchmark, "mmlu_rephrase")
    folder = find_local("llm_decontaminator_rephrase", path, "mmlu_rephrase", roots)
    items = benchmark.by_id()
    found: Paraphrases = {}
    for subject in MMLU_REPHRASED_SUBJECTS:
        original = require_file(folder / f"{subject}_test.csv", "MMLU rephrase original CSV")
        rephrased = require_file(
            folder / f"{subject}_test_rephrase_english_filtered_question.jsonl", "MMLU rephrase file"
        )
        columns = ["question", "a", "b", "c", "d", "answer"]
        questions = [row["question"] for _, row in read_csv(original, fieldnames=columns)]
        for index, (line, row) in enumerate(read_jsonl(rephrased)):
            where = position_name(rephrased, line)
            item = items.get(f"mmlu/test/{subject}/{index}")
            if item is None:
                continue
            if index >= len(questions) or _squeeze(questions[index]) != _squeeze(item.question):
                raise DataError(
                    f"{where}: row {index} of {original.name} is not {item.id}'s question; "
                    f"the rephrase files are not aligned with this MMLU test data"
                )
            _add(found, item.id, str(field(row, "text", where)))
    return found


def xcopa_backtranslation(
    benchmark: Benchmark, path: str | Path | None = None, roots: Sequence[Path] = DEFAULT_ROOTS
) -> Paraphrases:
    _require(benchmark, "xcopa_backtranslation")
    folder = find_local("xcopa/data-gmt", path, "xcopa_backtranslation", roots)
    xcopa_split, first_id = ("test", 501) if benchmark.split == "test" else ("val", 401)
    items = benchmark.by_id()
    found: Paraphrases = {}
    for language in XCOPA_LANGUAGES:
        file = require_file(folder / language / f"{xcopa_split}.{language}.jsonl", "XCOPA back-translation file")
        for line, row in read_jsonl(file):
            item = items.get(f"copa/{benchmark.split}/{first_id + int(field(row, 'idx', position_name(file, line)))}")
            premise = str(row.get("premise", ""))
            if item is not None and _squeeze(premise) != _squeeze(item.question):
                _add(found, item.id, premise)
    return found


def user_file(
    benchmark: Benchmark, path: str | Path, id_field: str = "id", text_field_name: str = "paraphrase"
) -> Paraphrases:
    """Rows `{id, paraphrase}` of a table file; an id not in `benchmark` is an error naming the row."""
    file = require_file(as_path(path), "paraphrase file")
    known = benchmark.by_id()
    found: Paraphrases = {}
    for position, row in read_rows(file):
        where = position_name(file, position)
        item_id = str(field(row, id_field, where, "an item id"))
        if item_id not in known:
            example = benchmark.items[0].id if benchmark.items else "none loaded"
            raise DataError(
                f"{where}: paraphrase for unknown id {item_id!r}; no such item in {benchmark.name} "
                f"split {benchmark.split!r} (ids look like {example!r})"
            )
        value = field(row, text_field_name, where, "a paraphrase string or list")
        texts = value if isinstance(value, (list, tuple)) else [value]
        if not texts or not all(isinstance(t, str) and t.strip() for t in texts):
            raise DataError(
                f"{where}: field {text_field_name!r} must be a non-empty string or list of them, got {value!r}"
            )
        for text in texts:
            _add(found, item_id, text)
    return found


_BUILTIN = {
    "gsm8k_rephrase": gsm8k_rephrase,
    "gsm_plus": gsm_plus,
    "mmlu_rephrase": mmlu_rephrase,
    "xcopa_backtranslation": xcopa_backtranslation,
}


def load_paraphrases(
    source: str | Path,
    benchmark: Benchmark,
    *,
    path: str | Path | None = None,
    roots: Sequence[Path] = DEFAULT_ROOTS,
) -> Paraphrases:
    """Paraphrases by item id for `benchmark` from a built-in source name (read from `path` or `roots`) or a user
    file path."""
    if str(source) in _BUILTIN:
        return _BUILTIN[str(source)](benchmark, path, roots)
    if not as_path(source).exists():
        raise DataError(
            f"paraphrase source {str(source)!r} is neither a built-in source "
            f"({', '.join(BUILTIN_SOURCES)}) nor an existing file"
        )
    return user_file(benchmark, source)


def attach_paraphrases(benchmark: Benchmark, paraphrases: Mapping[str, Sequence[str]]) -> Benchmark:
    """`benchmark` with each item's paraphrases extended; an unknown id is an error."""
    known = benchmark.by_id()
    unknown = [item_id for item_id in paraphrases if item_id not in known]
    if unknown:
        raise DataError(
            f"paraphrases for {len(unknown)} id(s) not in {benchmark.name} split {benchmark.split!r}, "
            f"e.g. {unknown[0]!r}; load the matching benchmark and split"
        )
    return benchmark.replace_items(
        [item.with_paraphrases(paraphrases[item.id]) if item.id in paraphrases else item for item in benchmark]
    )
