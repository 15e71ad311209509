"""COPA's splits as SuperGLUE has them (lm-eval's `copa` task reads aps/super_glue), on the shared data.

References: SuperGLUE's split sizes and numbering (train = COPA 1-400, validation = 401-500, test = 501-1000),
XCOPA's `val` (SuperGLUE's validation translated in SuperGLUE's choice order: its labels, in all 11 languages,
say which items list the alternatives the other way round) and SuperGLUE validation's first two rows as public
copies of the dataset print them.
"""

import json

import pytest

from jaxcontam.data import load_benchmark
from jaxcontam.errors import DataError

# aps/super_glue copa validation rows idx 0 and 1, as public loaders of the dataset quote them
SUPERGLUE_VALIDATION_HEAD = [
    ("The man turned on the faucet.", ("The toilet filled with water.", "Water flowed from the spout."), 1, "effect"),
    ("The girl found a bug in her cereal.", ("She poured milk in the bowl.", "She lost her appetite."), 1, "effect"),
]


def jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_splits_number_items_as_superglue(shared_data):
    for split, first, count in (("train", 1, 400), ("validation", 401, 100), ("test", 501, 500)):
        benchmark = load_benchmark("copa", split=split)
        assert [item.id for item in benchmark] == [f"copa/{split}/{first + k}" for k in range(count)]
        assert [item.meta["superglue_idx"] for item in benchmark] == list(range(count))


def test_validation_lists_choices_in_superglue_s_order(shared_data):
    validation = load_benchmark("copa", split="validation")
    for item, (premise, choices, label, relation) in zip(validation, SUPERGLUE_VALIDATION_HEAD):
        assert (item.question, item.choices, item.answer, item.meta["relation"]) == (premise, choices, label, relation)
    original = {row["id"]: row for row in jsonl(shared_data / "copa" / "copa_dev.jsonl")}
    languages = sorted((shared_data / "xcopa" / "data").glob("*/val.*.jsonl"))
    assert len(languages) == 11
    swapped = 0
    for item in validation:
        row = original[int(item.id.rsplit("/", 1)[1])]
        assert {row["choice1"], row["choice2"]} == set(item.choices)
        assert item.answer_text == row[f"choice{row['label'] + 1}"]  # the same gold alternative
        swapped += item.choices[0] != row["choice1"]
    for file in languages:  # XCOPA's labels are SuperGLUE's: the gold's position in SuperGLUE's order
        assert [row["label"] for row in jsonl(file)] == [item.answer for item in validation], file.name
    assert swapped == 55


def test_train_and_test_keep_copa_s_order(shared_data):
    for split, file in (("train", "copa_dev.jsonl"), ("test", "copa_test.jsonl")):
        rows = {row["id"]: row for row in jsonl(shared_data / "copa" / file)}
        for item in load_benchmark("copa", split=split):
            row = rows[int(item.id.rsplit("/", 1)[1])]
            assert (item.choices, item.answer) == ((row["choice1"], row["choice2"]), row["label"])
    for file in sorted((shared_data / "xcopa" / "data").glob("*/test.*.jsonl")):
        assert [row["label"] for row in jsonl(file)] == [item.answer for item in load_benchmark("copa", split="test")]


def test_legacy_dev_split_and_superglue_files(shared_data, tmp_path):
    dev = load_benchmark("copa", split="dev")
    assert len(dev) == 500 and dev[400].choices == ("Water flowed from the spout.", "The toilet filled with water.")
    superglue = tmp_path / "val.jsonl"  # a SuperGLUE file: `idx` within the split, SuperGLUE's order, read as is
    premise, choices, label, relation = SUPERGLUE_VALIDATION_HEAD[0]
    superglue.write_text(
        json.dumps(
            {
                "premise": premise,
                "choice1": choices[0],
                "choice2": choices[1],
                "question": relation,
                "label": label,
                "idx": 0,
            }
        )
        + "\n"
    )
    item = load_benchmark("copa", split="validation", path=superglue)[0]
    assert (item.id, item.choices, item.answer) == ("copa/validation/401", choices, label)
    with pytest.raises(DataError, match=r"no COPA items of split 'validation' \(COPA ids 401-500\).*split 'dev'"):
        load_benchmark("copa", split="validation", path=shared_data / "copa" / "copa_test.jsonl")


@pytest.mark.shared_data  # copa through jaxcontam's data roots (../shared/data), without the fixture
def test_lm_eval_copa_continuation_and_acc_norm_length():
    """lm-eval's copa: `doc_to_choice` = " " + choice (first letter lower-cased), after the " " target delimiter;
    acc_norm divides by len(doc_to_choice text), the choice's own space included."""
    validation = load_benchmark("copa", split="validation", limit=1)
    item = validation[0]
    assert validation.continuation(item, 1) == "  water flowed from the spout."
    assert validation.choice_text(item, 1) == " water flowed from the spout."
    # the item as one text (n-gram search, likelihood detectors, injection) reads with one space
    assert validation.solved_text(item) == "The man turned on the faucet therefore water flowed from the spout."


def test_lm_eval_copa_from_local_files_is_superglue_validation(shared_data):
    """lm-eval's own `copa` task, served the local COPA file (`lm_eval:copa`), sees SuperGLUE's validation: the same
    premises, choices in the same order (lm-eval lower-cases each choice's first letter) and the same gold as
    jaxcontam's `copa` validation split."""
    pytest.importorskip("lm_eval")
    through_lm_eval = load_benchmark("lm_eval:copa")
    ours = load_benchmark("copa", split="validation")
    assert len(through_lm_eval) == len(ours) == 100
    for theirs, mine in zip(through_lm_eval, ours):
        assert [c.strip().lower() for c in theirs.choices] == [c.lower() for c in mine.choices]
        assert theirs.answer == mine.answer
        assert mine.question.rstrip(".") in theirs.question
