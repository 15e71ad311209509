"""Paraphrase sources attach to items by id; alignment is checked against the gold data."""

import dataclasses
import json

import pytest

from jaxcontam.data import attach_paraphrases, load_benchmark, load_paraphrases
from jaxcontam.errors import DataError


@pytest.fixture(scope="module")
def roots(shared_data):
    """The shared data as the one data root the library searches (`jaxcontam.data.roots`)."""
    return (shared_data,)


@pytest.fixture(scope="module")
def gsm8k_test(shared_data):
    return load_benchmark("gsm8k", path=shared_data)


def test_gsm8k_gpt4_rephrasings_are_index_aligned(roots, gsm8k_test):
    found = load_paraphrases("gsm8k_rephrase", gsm8k_test, roots=roots)
    # 4 of the 1,319 lines have an empty rephrased question (309, 669, 727, 948).
    assert len(found) == 1315 and "gsm8k/test/309" not in found
    assert found["gsm8k/test/0"][0].startswith("Janet's ducks produce 16 eggs each day.")
    attached = attach_paraphrases(gsm8k_test, found)
    assert attached[0].paraphrases == tuple(found["gsm8k/test/0"]) and attached[309].paraphrases == ()
    assert attached.prompt(attached[0], attached[0].paraphrases[0]).startswith("Question: Janet's ducks produce")


def test_gsm_plus_problem_understanding_rows_match_their_seed_question(roots, gsm8k_test, shared_data):
    found = load_paraphrases("gsm_plus", gsm8k_test, roots=roots)
    assert len(found) == 300 and all(len(v) == 1 for v in found.values())
    seeds = {}
    for line in open(shared_data / "gsm_plus" / "gsmplus_testmini.jsonl"):
        row = json.loads(line)
        if row["perturbation_type"] == "problem understanding":
            seeds[row["question"]] = row["seed_question"]
    by_id = gsm8k_test.by_id()
    assert all(" ".join(seeds[texts[0]].split()) == " ".join(by_id[i].question.split()) for i, texts in found.items())


def test_mmlu_rephrasings_skip_filtered_rows_and_check_alignment(roots):
    mmlu = load_benchmark("mmlu", roots=roots)
    found = load_paraphrases("mmlu_rephrase", mmlu, roots=roots)
    # 505 rows in three subjects, 20 of them filtered out (empty) by the authors.
    assert len(found) == 485 and "mmlu/test/abstract_algebra/0" not in found
    assert found["mmlu/test/abstract_algebra/1"] == [
        "In S_5, if p can be represented as (1, 2, 5, 4)(2, 3), what is the index of <p> within S_5?"
    ]
    # Swap the questions of items 1 and 2: the rephrase of row 1 no longer belongs to item 1.
    swapped = [
        dataclasses.replace(mmlu[1], question=mmlu[2].question),
        dataclasses.replace(mmlu[2], question=mmlu[1].question),
    ]
    shifted = mmlu.replace_items([mmlu[0], *swapped, *mmlu.items[3:]])
    with pytest.raises(DataError, match=r"row 1 of abstract_algebra_test.csv is not mmlu/test/abstract_algebra/1's"):
        load_paraphrases("mmlu_rephrase", shifted, roots=roots)


def test_xcopa_back_translations_attach_to_copa_test_and_dev(roots):
    test = load_paraphrases("xcopa_backtranslation", load_benchmark("copa", split="test", roots=roots))
    assert len(test) == 500 and "The item was wrapped in stamped plastic." in test["copa/test/501"]
    dev = load_paraphrases("xcopa_backtranslation", load_benchmark("copa", split="dev", roots=roots))
    assert sorted(dev) == sorted(f"copa/dev/{k}" for k in range(401, 501))


def test_source_for_another_benchmark_is_refused(roots, gsm8k_test):
    with pytest.raises(DataError, match="'mmlu_rephrase' is for mmlu split 'test', not gsm8k"):
        load_paraphrases("mmlu_rephrase", gsm8k_test, roots=roots)
    with pytest.raises(DataError, match="neither a built-in source"):
        load_paraphrases("no_such_source", gsm8k_test)


def test_user_file_attaches_by_id_and_refuses_unknown_ids(tmp_path, gsm8k_test):
    good = tmp_path / "p.jsonl"
    good.write_text(
        json.dumps({"id": "gsm8k/test/3", "paraphrase": "Reworded."})
        + "\n"
        + json.dumps({"id": "gsm8k/test/3", "paraphrase": ["Again.", "Reworded."]})
        + "\n"
    )
    assert load_paraphrases(good, gsm8k_test) == {"gsm8k/test/3": ["Reworded.", "Again."]}
    csv_file = tmp_path / "p.csv"
    csv_file.write_text("id,paraphrase\ngsm8k/test/0,Fine.\ngsm8k/test/99999,Lost.\n")
    with pytest.raises(DataError, match=r"p\.csv, line 3: paraphrase for unknown id 'gsm8k/test/99999'"):
        load_paraphrases(csv_file, gsm8k_test)
    with pytest.raises(DataError, match="not in gsm8k split 'test', e.g. 'mmlu/test/x/0'"):
        attach_paraphrases(gsm8k_test, {"mmlu/test/x/0": ["p"]})
    empty = tmp_path / "e.jsonl"
    empty.write_text(json.dumps({"id": "gsm8k/test/0", "paraphrase": " "}) + "\n")
    with pytest.raises(DataError, match=r"e\.jsonl, line 1: field 'paraphrase' must be a non-empty"):
        load_paraphrases(empty, gsm8k_test)
