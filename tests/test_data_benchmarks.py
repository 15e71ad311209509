"""Every built-in adapter against the shared data: official counts, stable ids, independent copies."""

import csv
import json

import pytest

from jaxcontam.data import list_benchmarks, load_benchmark
from jaxcontam.data.answers import extract_boxed
from jaxcontam.data.roots import DEFAULT_ROOTS
from jaxcontam.errors import DataError

# Official item counts (papers / dataset cards), split by split.
OFFICIAL_COUNTS = {
    ("gsm8k", "train"): 7473,
    ("gsm8k", "test"): 1319,
    ("mmlu", "test"): 14042,
    ("mmlu", "dev"): 285,
    ("hellaswag", "validation"): 10042,
    ("piqa", "validation"): 1838,
    ("copa", "train"): 400,
    ("copa", "validation"): 100,
    ("copa", "dev"): 500,
    ("copa", "test"): 500,
    ("copa", "balanced_dev"): 500,
    ("arc_easy", "test"): 2376,
    ("arc_challenge", "test"): 1172,
    ("openbookqa", "test"): 500,
    ("boolq", "validation"): 3270,
    ("siqa", "validation"): 1954,
    ("winogrande", "validation"): 1267,
    ("commonsenseqa", "validation"): 1221,
    ("truthfulqa", "validation"): 817,
    ("truthfulqa_mc", "validation"): 817,
    ("nq_open", "validation"): 3610,
    ("nq_open", "efficientqa_dev"): 1800,
    ("nq_open", "efficientqa_test"): 1769,
    ("math", "test"): 5000,
    ("math500", "test"): 500,
}


@pytest.fixture(scope="module")
def roots(shared_data):
    """The shared data as the one data root the library searches (`jaxcontam.data.roots`)."""
    return (shared_data,)


def test_registry_covers_every_counted_benchmark():
    assert sorted({name for name, _ in OFFICIAL_COUNTS}) == sorted(list_benchmarks())


@pytest.mark.parametrize(("name", "split"), sorted(OFFICIAL_COUNTS))
def test_adapter_loads_official_count_with_unique_prompted_items(roots, name, split):
    benchmark = load_benchmark(name, split=split, roots=roots)
    assert (benchmark.name, benchmark.split, len(benchmark)) == (name, split, OFFICIAL_COUNTS[name, split])
    assert all(item.id.startswith(f"{name}/{split}/") for item in benchmark)
    generative = name in ("gsm8k", "truthfulqa", "nq_open", "math", "math500")
    assert benchmark.kind == ("generative" if generative else "multiple_choice")
    first = benchmark[0]
    assert first.question.strip() in benchmark.prompt(first) or name in ("hellaswag", "boolq", "copa")
    assert benchmark.score(first, first.answer if first.choices is not None else first.answer_text) == 1.0


def test_ids_are_stable_across_loads_and_limits(roots):
    full = load_benchmark("mmlu", split="test", roots=roots)
    assert full[0].id == "mmlu/test/abstract_algebra/0"
    assert full.by_id()["mmlu/test/abstract_algebra/3"].question == full[3].question
    assert [i.id for i in load_benchmark("mmlu", limit=5, roots=roots)] == [i.id for i in full.items[:5]]
    assert load_benchmark("gsm8k", roots=roots)[17].id == "gsm8k/test/17"
    assert load_benchmark("openbookqa", roots=roots)[0].id == "openbookqa/test/8-343"
    assert len({i.meta["subject"] for i in full}) == 57


def test_path_may_be_the_file_the_benchmark_folder_or_a_data_root(shared_data):
    by_root = load_benchmark("copa", split="test", path=shared_data, roots=())
    by_folder = load_benchmark("copa", split="test", path=shared_data / "copa", roots=())
    by_file = load_benchmark("copa", split="test", path=shared_data / "copa" / "copa_test.jsonl", roots=())
    assert by_root.items == by_folder.items == by_file.items


def test_the_first_root_holding_the_split_is_read_and_a_miss_names_every_root(shared_data, tmp_path):
    assert len(load_benchmark("copa", split="test", roots=(tmp_path, shared_data))) == 500
    with pytest.raises(DataError, match=f"not found locally \\(looked in {tmp_path}\\) and it has no hub source"):
        load_benchmark("copa", split="test", roots=(tmp_path,))


def test_the_commands_search_jaxcontam_data_first_then_the_default_roots(monkeypatch, tmp_path):
    """The environment is read in the command layer only, into the roots the library is given."""
    from jaxcontam.commands.data_options import CHECKOUT_DATA, data_roots_from_environment

    monkeypatch.setenv("JAXCONTAM_DATA", str(tmp_path))
    assert data_roots_from_environment() == (tmp_path, *DEFAULT_ROOTS, CHECKOUT_DATA)
    monkeypatch.delenv("JAXCONTAM_DATA")
    assert data_roots_from_environment() == (*DEFAULT_ROOTS, CHECKOUT_DATA)


def test_mmlu_matches_the_original_letter_format_csvs(roots, shared_data):
    """The header/integer-answer CSVs agree with LLM-Decontaminator's original MMLU files (no header, letters)."""
    mmlu = load_benchmark("mmlu", roots=roots).by_id()
    for subject in ("abstract_algebra", "high_school_us_history", "sociology"):
        with open(shared_data / "llm_decontaminator_rephrase" / f"{subject}_test.csv", newline="") as handle:
            for index, row in enumerate(csv.reader(handle)):
                item = mmlu[f"mmlu/test/{subject}/{index}"]
                assert (item.question, item.choices, item.answer) == (row[0], tuple(row[1:5]), "ABCD".index(row[5]))
    # The same reader also reads the original format directly.
    original = load_benchmark("mmlu", path=shared_data / "llm_decontaminator_rephrase" / "sociology_test.csv")
    assert [i.answer for i in original] == [mmlu[f"mmlu/test/sociology/{k}"].answer for k in range(201)]


def _stripped(question, choices, answer):
    return question.strip(), [c.strip() for c in choices], answer


@pytest.mark.parametrize("name", ["piqa", "openbookqa"])
def test_official_files_agree_with_the_llm_adapters_copies(roots, shared_data, name):
    """Two independent packagings of the same items (LLM-Adapters strips surrounding spaces)."""
    parsed = [json.loads(line) for line in open(shared_data / "llm_adapters_commonsense" / name / "parsed.jsonl")]
    ours = [_stripped(i.question, i.choices, i.answer) for i in load_benchmark(name, roots=roots)]
    assert ours == [_stripped(r["question"], r["choices"], r["label"]) for r in parsed]


def test_piqa_labels_match_the_separate_label_file(roots, shared_data):
    labels = [int(line) for line in open(shared_data / "piqa" / "valid-labels.lst") if line.strip()]
    assert [item.answer for item in load_benchmark("piqa", roots=roots)] == labels


def test_gsm8k_gold_is_the_number_after_the_hashes_and_scores_generations(roots):
    gsm8k = load_benchmark("gsm8k", split="train", roots=roots)
    for item in gsm8k:
        final = item.meta["solution"].rsplit("####", 1)[1].replace(",", "").strip()
        assert float(item.answer) == float(final)
    item = load_benchmark("gsm8k", roots=roots)[0]
    assert gsm8k.score(item, "She makes 9 * 2 = $18 a day.\nThe answer is $18.") == 1.0
    assert gsm8k.score(item, "The answer is 19") == 0.0


def test_math_boxed_extraction_agrees_with_math500_reference_answers(roots):
    math500 = load_benchmark("math500", roots=roots)
    assert all(extract_boxed(item.meta["solution"]) == item.answer for item in math500)
    item = next(i for i in load_benchmark("math", roots=roots) if i.answer == "\\frac{1}{2}")
    assert load_benchmark("math", roots=roots).score(item, "so the result is $\\boxed{\\dfrac12}$.") == 1.0


def test_generative_aliases_score(roots):
    nq = load_benchmark("nq_open", limit=1, roots=roots)
    item = nq[0]
    assert item.meta["answers"] == ["14 December 1972 UTC", "December 1972"]
    assert nq.score(item, "december 1972") == 1.0 and nq.score(item, "1969") == 0.0
    tqa = load_benchmark("truthfulqa", limit=1, roots=roots)
    assert tqa.score(tqa[0], "Nothing happens") == 1.0 and tqa.score(tqa[0], "You die") == 0.0


def test_balanced_copa_mirrors_each_dev_item_with_the_other_alternative_correct(roots):
    dev = load_benchmark("copa", split="dev", roots=roots)
    by_choices = {frozenset(item.choices): item for item in dev}
    for mirrored in load_benchmark("copa", split="balanced_dev", roots=roots):
        original = by_choices[frozenset(mirrored.choices)]
        assert mirrored.answer_text != original.answer_text
    assert load_benchmark("copa", roots=roots).prompt(dev[0]) == "My body cast a shadow over the grass because"
