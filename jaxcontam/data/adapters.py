"""Row -> Item converters for each built-in benchmark, for its local files and its hub schema.

A local adapter reads the benchmark's files in the form they are stored in `../shared/data`
(see each folder's SOURCE.txt) and yields `(where, item)` pairs, `where` naming file and line
for error messages. A hub adapter converts one row of the Hugging Face dataset's schema.
Both give the same ids for the same item where the order is the same (`name/split/index`, or
the official id where the data has one).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from jaxcontam.data.answers import extract_boxed, gsm8k_final_answer, normalize_gsm8k_answer
from jaxcontam.data.item import Item
from jaxcontam.data.records import field, position_name, read_csv, read_jsonl, require_file, text_field
from jaxcontam.errors import DataError

Located = Iterator[tuple[str, Item]]


def make_item(where: str, **fields: Any) -> Item:
    """An Item, with any schema error prefixed by the file and line it came from."""
    try:
        return Item(**fields)
    except DataError as error:
        raise DataError(f"{where}: {error}") from None


def choice_index(labels: Sequence[str], key: Any, where: str) -> int:
    """The position of answer key `key` among choice labels (`"B"` in `["A", "B"]` -> 1)."""
    key = str(key).strip()
    if key in labels:
        return list(labels).index(key)
    raise DataError(f"{where}: answer key {key!r} is not one of the choice labels {list(labels)}")


def int_field(row: dict, key: str, where: str, offset: int = 0) -> int:
    """An integer field (int or digit string) minus `offset` (for 1-based labels)."""
    value = field(row, key, where, "an integer")
    if isinstance(value, bool) or not re.fullmatch(r"-?\d+", str(value).strip()):
        raise DataError(f"{where}: field {key!r} must be an integer, got {value!r}")
    return int(str(value).strip()) - offset


def _jsonl(path: Path) -> Iterator[tuple[str, dict]]:
    for line, row in read_jsonl(require_file(path, "benchmark file")):
        yield position_name(path, line), row


# GSM8K ---------------------------------------------------------------------------------------


def gsm8k_row(row: dict, index: int, split: str, where: str) -> Item:
    """GSM8K {question, answer: solution ending '#### <final>'}; gold = the normalised final number."""
    solution = text_field(row, "answer", where)
    final = gsm8k_final_answer(solution)
    if final is None:
        raise DataError(f"{where}: GSM8K answer has no '#### <number>' final line: {solution[-80:]!r}")
    return make_item(
        where,
        id=f"gsm8k/{split}/{index}",
        benchmark="gsm8k",
        question=text_field(row, "question", where),
        answer=normalize_gsm8k_answer(final),
        meta={"solution": solution},
    )


# MMLU ----------------------------------------------------------------------------------------

MMLU_COLUMNS = ["question", "choice0", "choice1", "choice2", "choice3", "answer"]


def _mmlu_rows(path: Path) -> Iterator[tuple[int, dict]]:
    """Rows of one subject CSV: with a header row (shared data) or without (original MMLU format)."""
    first = next(read_csv(path, fieldnames=MMLU_COLUMNS), None)
    has_header = first is not None and first[1]["question"].strip() == "question"
    rows = read_csv(path) if has_header else read_csv(path, fieldnames=MMLU_COLUMNS)
    yield from rows


def mmlu_answer(value: Any, where: str) -> int:
    """An MMLU gold answer: an index 0-3 or a letter A-D."""
    text = str(value).strip()
    if text in ("A", "B", "C", "D"):
        return "ABCD".index(text)
    if text.isdigit():
        return int(text)
    raise DataError(f"{where}: MMLU answer must be 0-3 or A-D, got {value!r}")


def mmlu_item(
    subject: str, split: str, index: int, question: str, choices: Sequence[str], answer: int, where: str
) -> Item:
    return make_item(
        where,
        id=f"mmlu/{split}/{subject}/{index}",
        benchmark="mmlu",
        question=question,
        choices=tuple(choices),
        answer=answer,
        meta={"subject": subject},
    )


def mmlu_subject(path: Path) -> str:
    """`abstract_algebra_test.csv` -> `abstract_algebra`."""
    return re.sub(r"_(test|dev|val|validation)$", "", path.stem)


def mmlu_local(path: Path, split: str) -> Located:
    """A folder of `<subject>_<split>.csv` files (subjects in name order) or one subject CSV."""
    files = sorted(path.glob(f"*_{split}.csv")) if path.is_dir() else [require_file(path, "MMLU CSV")]
    if not files:
        raise DataError(f"{path}: no MMLU subject files named <subject>_{split}.csv; check --path and --split")
    for file in files:
        subject = mmlu_subject(file)
        for index, (line, row) in enumerate(_mmlu_rows(file)):
            where = position_name(file, line)
            choices = [str(field(row, f"choice{k}", where)) for k in range(4)]
            yield (
                where,
                mmlu_item(
                    subject,
                    split,
                    index,
                    text_field(row, "question", where),
                    choices,
                    mmlu_answer(field(row, "answer", where), where),
                    where,
                ),
            )


# HellaSwag -----------------------------------------------------------------------------------


def hellaswag_clean(text: str) -> str:
    """HellaSwag text clean-up as in lm-eval: drop `[header]`-style markers and double spaces."""
    text = text.strip().replace(" [title]", ". ")
    text = re.sub(r"\[.*?\]", "", text)
    return text.replace("  ", " ")


def hellaswag_local(path: Path, split: str) -> Located:
    """The shared-data conversion {ind, activity_label, ctx (already cleaned), endings, label}."""
    for where, row in _jsonl(path):
        index = int_field(row, "ind", where)
        yield (
            where,
            make_item(
                where,
                id=f"hellaswag/{split}/{index}",
                benchmark="hellaswag",
                question=text_field(row, "ctx", where),
                choices=tuple(field(row, "endings", where, "a list of 4 endings")),
                answer=int_field(row, "label", where),
                meta={"activity_label": row.get("activity_label", "")},
            ),
        )


def hellaswag_hub(row: dict, index: int, split: str, where: str) -> Item:
    """Rowan/hellaswag rows: context = ctx_a + capitalised ctx_b, cleaned like the local copy."""
    context = hellaswag_clean(f"{field(row, 'ctx_a', where)} {str(field(row, 'ctx_b', where)).capitalize()}")
    return make_item(
        where,
        id=f"hellaswag/{split}/{int_field(row, 'ind', where)}",
        benchmark="hellaswag",
        question=context,
        choices=tuple(hellaswag_clean(e) for e in field(row, "endings", where)),
        answer=int_field(row, "label", where),
        meta={"activity_label": row.get("activity_label", "")},
    )


# PIQA ----------------------------------------------------------------------------------------


def piqa_row(row: dict, index: int, split: str, where: str) -> Item:
    """PIQA {goal, sol1, sol2, label} (local merged file and hub alike)."""
    return make_item(
        where,
        id=f"piqa/{split}/{index}",
        benchmark="piqa",
        question=text_field(row, "goal", where),
        choices=(str(field(row, "sol1", where)), str(field(row, "sol2", where))),
        answer=int_field(row, "label", where),
    )


# COPA ----------------------------------------------------------------------------------------

# SuperGLUE's splits of COPA (Wang et al. 2019), which lm-eval's `copa` task reads: train = COPA ids 1-400,
# validation = 401-500, test = 501-1000 (its test has no labels), each in COPA's id order.
COPA_SPLITS = {"train": range(1, 401), "validation": range(401, 501), "test": range(501, 1001)}

# The COPA validation items whose two alternatives SuperGLUE lists the other way round from the original COPA
# release (its label flips with them). Read off XCOPA (Ponti et al. 2020), whose `val` is SuperGLUE's validation
# translated in SuperGLUE's order: for each of these items all 11 languages' labels differ from COPA's, for every
# other item all 11 agree, and the English back-translations (data-gmt) match the swapped order, by majority, on
# the same 55 items. XCOPA's test lists all 500 test items in COPA's order, so no test item is swapped.
SUPERGLUE_SWAPPED_COPA_IDS = frozenset(
    {
        401,
        402,
        403,
        407,
        408,
        409,
        412,
        414,
        415,
        416,
        417,
        418,
        421,
        422,
        423,
        425,
        428,
        430,
        431,
        432,
        436,
        437,
        438,
        440,
        441,
        442,
        446,
        447,
        448,
        449,
        450,
        453,
        454,
        455,
        456,
        457,
        458,
        459,
        462,
        464,
        470,
        472,
        474,
        476,
        478,
        479,
        480,
        484,
        485,
        486,
        488,
        490,
        494,
        498,
        499,
    }
)


def _copa_number(row: dict, split: str, where: str) -> int:
    """A row's COPA id: its `id` (COPA's numbering), else SuperGLUE's `idx` within the split + the split's first id."""
    if "id" in row or split not in COPA_SPLITS:
        return int_field(row, "id", where)
    return COPA_SPLITS[split].start + int_field(row, "idx", where)


def copa_local(path: Path, split: str) -> Located:
    """COPA rows {id, premise, choice1, choice2, question: cause|effect, label}; ids keep the COPA number.

    `train`, `validation` and `test` are SuperGLUE's splits (the items, order and choice order lm-eval's `copa`
    evaluates; SuperGLUE's `idx` is in meta): a file in COPA's release numbering (`id`, original choice order)
    gives the split's id range with SuperGLUE's choice order; a SuperGLUE file (`idx`, no `id`) is read as it is.
    Other splits (`dev`: ids 1-500 as released; `balanced_dev`) are the file's rows as they are.
    """
    ids = COPA_SPLITS.get(split)
    found = False
    for where, row in _jsonl(path):
        number = _copa_number(row, split, where)
        if ids is not None and number not in ids:
            continue
        found = True
        relation = field(row, "question", where, "'cause' or 'effect'")
        if relation not in ("cause", "effect"):
            raise DataError(f"{where}: COPA field 'question' must be 'cause' or 'effect', got {relation!r}")
        choices = (text_field(row, "choice1", where), text_field(row, "choice2", where))
        answer = int_field(row, "label", where)
        if "id" in row and number in SUPERGLUE_SWAPPED_COPA_IDS and split == "validation":
            choices, answer = choices[::-1], 1 - answer
        meta = {"relation": relation, **({"superglue_idx": number - ids.start} if ids is not None else {})}
        yield (
            where,
            make_item(
                where,
                id=f"copa/{split}/{number}",
                benchmark="copa",
                question=text_field(row, "premise", where),
                choices=choices,
                answer=answer,
                meta=meta,
            ),
        )
    if ids is not None and not found:
        raise DataError(
            f"{path}: no COPA items of split {split!r} (COPA ids {ids.start}-{ids.stop - 1}); "
            f"give the file holding them, or read the file's rows as they are with split 'dev'"
        )


# LLM-Adapters parsed files: ARC, SIQA, WinoGrande, BoolQ --------------------------------------


def parsed_choices_row(name: str):
    """A row converter for LLM-Adapters `parsed.jsonl` {id, question, choices[], label (0-based)}."""

    def convert(row: dict, index: int, split: str, where: str) -> Item:
        return make_item(
            where,
            id=f"{name}/{split}/{index}",
            benchmark=name,
            question=text_field(row, "question", where),
            choices=tuple(field(row, "choices", where, "a list of choices")),
            answer=int_field(row, "label", where),
        )

    return convert


def arc_hub(name: str):
    """A row converter for allenai/ai2_arc {id, question, choices: {text, label}, answerKey}."""

    def convert(row: dict, index: int, split: str, where: str) -> Item:
        choices = field(row, "choices", where, "{text, label}")
        return make_item(
            where,
            id=f"{name}/{split}/{index}",
            benchmark=name,
            question=text_field(row, "question", where),
            choices=tuple(choices["text"]),
            answer=choice_index(choices["label"], field(row, "answerKey", where), where),
            meta={"source_id": row.get("id")},
        )

    return convert


def siqa_hub(row: dict, index: int, split: str, where: str) -> Item:
    """social_i_qa rows: question = context + question (as LLM-Adapters joins them), 1-based label."""
    question = f"{text_field(row, 'context', where).strip()} {text_field(row, 'question', where).strip()}"
    return make_item(
        where,
        id=f"siqa/{split}/{index}",
        benchmark="siqa",
        question=question,
        choices=tuple(str(field(row, key, where)) for key in ("answerA", "answerB", "answerC")),
        answer=int_field(row, "label", where, offset=1),
    )


def winogrande_hub(row: dict, index: int, split: str, where: str) -> Item:
    """winogrande rows {sentence, option1, option2, answer: '1'|'2'}."""
    return make_item(
        where,
        id=f"winogrande/{split}/{index}",
        benchmark="winogrande",
        question=text_field(row, "sentence", where),
        choices=(str(field(row, "option1", where)), str(field(row, "option2", where))),
        answer=int_field(row, "answer", where, offset=1),
    )


BOOLQ_CHOICES = ("no", "yes")


def _boolean(value: Any, where: str) -> int:
    if isinstance(value, bool):
        return int(value)
    if str(value).strip().lower() in ("true", "false"):
        return int(str(value).strip().lower() == "true")
    raise DataError(f"{where}: BoolQ label must be true or false, got {value!r}")


def boolq_local(path: Path, split: str) -> Located:
    """LLM-Adapters BoolQ {id, question, label: bool}; passage only if the row has one."""
    for index, (where, row) in enumerate(_jsonl(path)):
        yield (
            where,
            make_item(
                where,
                id=f"boolq/{split}/{index}",
                benchmark="boolq",
                question=text_field(row, "question", where),
                choices=BOOLQ_CHOICES,
                answer=_boolean(field(row, "label", where, "true/false"), where),
                context=row.get("passage"),
            ),
        )


def boolq_hub(row: dict, index: int, split: str, where: str) -> Item:
    """google/boolq rows {question, answer: bool, passage}."""
    return make_item(
        where,
        id=f"boolq/{split}/{index}",
        benchmark="boolq",
        question=text_field(row, "question", where),
        choices=BOOLQ_CHOICES,
        answer=_boolean(field(row, "answer", where, "true/false"), where),
        context=row.get("passage"),
    )


# OpenBookQA and CommonsenseQA (official ids) ---------------------------------------------------


def openbookqa_local(path: Path, split: str) -> Located:
    """Official OBQA {id, question: {stem, choices: [{text, label}]}, answerKey}."""
    for where, row in _jsonl(path):
        question = field(row, "question", where, "{stem, choices}")
        if not isinstance(question, dict):
            raise DataError(f"{where}: OpenBookQA field 'question' must be an object with 'stem' and 'choices'")
        choices = field(question, "choices", where, "a list of {text, label}")
        yield (
            where,
            make_item(
                where,
                id=f"openbookqa/{split}/{field(row, 'id', where)}",
                benchmark="openbookqa",
                question=text_field(question, "stem", where),
                choices=tuple(c["text"] for c in choices),
                answer=choice_index([c["label"] for c in choices], field(row, "answerKey", where), where),
            ),
        )


def openbookqa_hub(row: dict, index: int, split: str, where: str) -> Item:
    """allenai/openbookqa rows {id, question_stem, choices: {text, label}, answerKey}."""
    choices = field(row, "choices", where, "{text, label}")
    return make_item(
        where,
        id=f"openbookqa/{split}/{field(row, 'id', where)}",
        benchmark="openbookqa",
        question=text_field(row, "question_stem", where),
        choices=tuple(choices["text"]),
        answer=choice_index(choices["label"], field(row, "answerKey", where), where),
    )


def commonsenseqa_row(row: dict, index: int, split: str, where: str) -> Item:
    """CommonsenseQA in the HF schema {id, question, choices: {label, text}, answerKey}."""
    choices = field(row, "choices", where, "{label, text}")
    return make_item(
        where,
        id=f"commonsenseqa/{split}/{field(row, 'id', where)}",
        benchmark="commonsenseqa",
        question=text_field(row, "question", where),
        choices=tuple(choices["text"]),
        answer=choice_index(choices["label"], field(row, "answerKey", where), where),
        meta={"concept": row.get("question_concept")},
    )


# TruthfulQA ----------------------------------------------------------------------------------


def _answer_list(value: str) -> list[str]:
    """TruthfulQA's `; `-separated answer lists."""
    return [part.strip() for part in str(value).split(";") if part.strip()]


def truthfulqa_local(path: Path, split: str) -> Located:
    """TruthfulQA.csv: gold = Best Answer; correct/incorrect answer lists in meta."""
    for index, (line, row) in enumerate(read_csv(require_file(path, "TruthfulQA CSV"))):
        where = position_name(path, line)
        best = text_field(row, "Best Answer", where)
        yield (
            where,
            make_item(
                where,
                id=f"truthfulqa/{split}/{index}",
                benchmark="truthfulqa",
                question=text_field(row, "Question", where),
                answer=best,
                meta={
                    "category": row.get("Category"),
                    "correct_answers": _answer_list(field(row, "Correct Answers", where)),
                    "incorrect_answers": _answer_list(field(row, "Incorrect Answers", where)),
                },
            ),
        )


def truthfulqa_hub(row: dict, index: int, split: str, where: str) -> Item:
    """truthful_qa `generation` rows {question, best_answer, correct_answers, incorrect_answers}."""
    return make_item(
        where,
        id=f"truthfulqa/{split}/{index}",
        benchmark="truthfulqa",
        question=text_field(row, "question", where),
        answer=text_field(row, "best_answer", where),
        meta={
            "category": row.get("category"),
            "correct_answers": list(field(row, "correct_answers", where)),
            "incorrect_answers": list(field(row, "incorrect_answers", where)),
        },
    )


def truthfulqa_mc_local(path: Path, split: str) -> Located:
    """MC1-style items from the CSV: the best answer (index 0) against the incorrect answers."""
    for where, item in truthfulqa_local(path, split):
        choices = (item.answer, *item.meta["incorrect_answers"])
        yield (
            where,
            make_item(
                where,
                id=item.id.replace("truthfulqa/", "truthfulqa_mc/", 1),
                benchmark="truthfulqa_mc",
                question=item.question,
                choices=choices,
                answer=0,
                meta={"category": item.meta["category"]},
            ),
        )


def truthfulqa_mc_hub(row: dict, index: int, split: str, where: str) -> Item:
    """truthful_qa `multiple_choice` rows: the MC1 targets (exactly one correct)."""
    targets = field(row, "mc1_targets", where, "{choices, labels}")
    labels = list(targets["labels"])
    if labels.count(1) != 1:
        raise DataError(f"{where}: mc1_targets must mark exactly one correct choice, got labels {labels}")
    return make_item(
        where,
        id=f"truthfulqa_mc/{split}/{index}",
        benchmark="truthfulqa_mc",
        question=text_field(row, "question", where),
        choices=tuple(targets["choices"]),
        answer=labels.index(1),
    )


# NQ-open -------------------------------------------------------------------------------------


def nq_open_row(row: dict, index: int, split: str, where: str) -> Item:
    """NQ-open {question, answer: [aliases]}; gold = first alias, all aliases in meta['answers']."""
    answers = field(row, "answer", where, "a list of answer strings")
    if isinstance(answers, str):
        answers = [answers]
    if not answers:
        raise DataError(f"{where}: NQ-open field 'answer' is an empty list; expected at least one answer")
    return make_item(
        where,
        id=f"nq_open/{split}/{index}",
        benchmark="nq_open",
        question=text_field(row, "question", where),
        answer=str(answers[0]),
        meta={"answers": [str(a) for a in answers]},
    )


# MATH ----------------------------------------------------------------------------------------


def math_row(name: str):
    """MATH / MATH-500 rows: {problem, solution[, answer], level, type|subject}; gold = `answer` or the boxed part."""

    def convert(row: dict, index: int, split: str, where: str) -> Item:
        solution = text_field(row, "solution", where)
        answer = row.get("answer") or extract_boxed(solution)
        if not answer:
            raise DataError(f"{where}: MATH solution has no \\boxed{{...}} answer and no 'answer' field")
        meta = {"solution": solution, "level": row.get("level"), "subject": row.get("type") or row.get("subject")}
        if row.get("unique_id"):
            meta["unique_id"] = row["unique_id"]
        return make_item(
            where,
            id=f"{name}/{split}/{index}",
            benchmark=name,
            question=text_field(row, "problem", where),
            answer=answer,
            meta=meta,
        )

    return convert


# Generic wrappers ------------------------------------------------------------------------------


def rows_local(convert):
    """A local adapter for a JSONL file whose rows a row converter reads (ids by position)."""

    def read(path: Path, split: str) -> Located:
        for index, (where, row) in enumerate(_jsonl(path)):
            yield where, convert(row, index, split, where)

    return read


def rows_hub(convert):
    """A hub adapter applying a row converter to each row of a hub split (ids by position)."""

    def read(rows: Iterable[dict], split: str, source: str) -> Located:
        for index, row in enumerate(rows):
            where = f"{source} [{split}] row {index}"
            yield where, convert(row, index, split, where)

    return read


def mmlu_hub(rows: Iterable[dict], split: str, source: str) -> Located:
    """cais/mmlu rows {question, subject, choices, answer}; ids count within each subject."""
    counts: dict[str, int] = {}
    for position, row in enumerate(rows):
        where = f"{source} [{split}] row {position}"
        subject = text_field(row, "subject", where)
        index = counts.get(subject, 0)
        counts[subject] = index + 1
        yield (
            where,
            mmlu_item(
                subject,
                split,
                index,
                text_field(row, "question", where),
                [str(c) for c in field(row, "choices", where, "4 choices")],
                mmlu_answer(field(row, "answer", where), where),
                where,
            ),
        )
