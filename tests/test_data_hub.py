"""Hub ids load through `datasets.load_dataset` (monkeypatched: rows in each hub dataset's schema, no network)."""

import datasets
import pytest

from jaxcontam.data import load_benchmark
from jaxcontam.data.registry import resolve_spec
from jaxcontam.errors import DataError


@pytest.fixture
def hub(monkeypatch, tmp_path):
    """Serve `rows[(hub_id, config, split)]` as a real `datasets.Dataset`; no local data (the default data root,
    ../shared/data from the working directory, is empty)."""
    monkeypatch.chdir(tmp_path)
    served, calls = {}, []

    def load_dataset(name, config=None, split=None, **kwargs):
        calls.append((name, config, split))
        if (name, config, split) not in served:
            raise FileNotFoundError(f"Dataset {name!r} doesn't exist on the Hub")
        return datasets.Dataset.from_list(served[name, config, split])

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    return served, calls


def test_gsm8k_hub_rows_equal_local_items(hub, shared_data):
    served, calls = hub
    local = load_benchmark("gsm8k", path=shared_data / "gsm8k", limit=3)
    served["openai/gsm8k", "main", "test"] = [{"question": i.question, "answer": i.meta["solution"]} for i in local]
    for name in ("gsm8k", "openai/gsm8k", "GSM8K"):
        assert load_benchmark(name).items == local.items
    assert calls[-1] == ("openai/gsm8k", "main", "test")


def test_mmlu_hub_counts_ids_within_each_subject(hub):
    served, _ = hub
    row = {"question": "q", "choices": ["a", "b", "c", "d"], "answer": 2}
    served["cais/mmlu", "all", "test"] = [{**row, "subject": s} for s in ("anatomy", "anatomy", "virology")]
    bench = load_benchmark("cais/mmlu")
    assert [i.id for i in bench] == ["mmlu/test/anatomy/0", "mmlu/test/anatomy/1", "mmlu/test/virology/0"]
    assert bench[2].answer == 2 and bench[2].meta["subject"] == "virology"
    assert "about virology" in bench.prompt(bench[2])


def test_hellaswag_hub_rows_are_cleaned_like_the_local_copy(hub):
    served, _ = hub
    served["Rowan/hellaswag", None, "validation"] = [
        {
            "ind": 24,
            "activity_label": "Roof shingle removal",
            "ctx_a": "A man is sitting on a roof.",
            "ctx_b": "he",
            "ctx": "A man is sitting on a roof. he",
            "endings": ["is [title] using wrap.", "b", "c", "d"],
            "source_id": "x",
            "split": "val",
            "split_type": "indomain",
            "label": "3",
        }
    ]
    item = load_benchmark("Rowan/hellaswag")[0]
    assert (item.id, item.question, item.answer) == ("hellaswag/validation/24", "A man is sitting on a roof. He", 3)
    assert item.choices[0] == "is. using wrap."


CHOICE_ROWS = {
    ("allenai/ai2_arc:ARC-Challenge", ("allenai/ai2_arc", "ARC-Challenge", "test")): (
        {
            "id": "Mercury_1",
            "question": "Which?",
            "choices": {"text": ["x", "y", "z"], "label": ["1", "2", "3"]},
            "answerKey": "2",
        },
        ("arc_challenge/test/0", ("x", "y", "z"), 1),
    ),
    ("allenai/openbookqa", ("allenai/openbookqa", "main", "test")): (
        {
            "id": "7-980",
            "question_stem": "The sun is",
            "choices": {"text": ["hot", "cold"], "label": ["A", "B"]},
            "answerKey": "A",
            "fact1": "",
            "humanScore": 1.0,
        },
        ("openbookqa/test/7-980", ("hot", "cold"), 0),
    ),
    ("google/boolq", ("google/boolq", None, "validation")): (
        {"question": "is the sky blue", "answer": True, "passage": "The sky is blue."},
        ("boolq/validation/0", ("no", "yes"), 1),
    ),
    ("social_i_qa", ("allenai/social_i_qa", None, "validation")): (
        {
            "context": "Tracy stayed out.",
            "question": "What next?",
            "answerA": "a",
            "answerB": "b",
            "answerC": "c",
            "label": "3",
        },
        ("siqa/validation/0", ("a", "b", "c"), 2),
    ),
    ("winogrande", ("allenai/winogrande", "winogrande_xl", "validation")): (
        {"sentence": "Sarah beat Maria so _ won.", "option1": "Sarah", "option2": "Maria", "answer": "1"},
        ("winogrande/validation/0", ("Sarah", "Maria"), 0),
    ),
    ("tau/commonsense_qa", ("tau/commonsense_qa", None, "validation")): (
        {
            "id": "abc",
            "question": "Where?",
            "question_concept": "c",
            "choices": {"label": ["A", "B", "C", "D", "E"], "text": list("vwxyz")},
            "answerKey": "E",
        },
        ("commonsenseqa/validation/abc", tuple("vwxyz"), 4),
    ),
    ("piqa", ("ybisk/piqa", None, "validation")): (
        {"goal": "Open a jar", "sol1": "twist", "sol2": "push", "label": 0},
        ("piqa/validation/0", ("twist", "push"), 0),
    ),
    ("truthful_qa:multiple_choice", ("truthfulqa/truthful_qa", "multiple_choice", "validation")): (
        {
            "question": "Q?",
            "mc1_targets": {"choices": ["right", "wrong"], "labels": [1, 0]},
            "mc2_targets": {"choices": ["right", "wrong"], "labels": [1, 0]},
        },
        ("truthfulqa_mc/validation/0", ("right", "wrong"), 0),
    ),
}


@pytest.mark.parametrize("name", sorted(CHOICE_ROWS, key=lambda k: k[0]), ids=lambda k: k[0])
def test_multiple_choice_hub_schemas(hub, name):
    served, calls = hub
    alias, source = name
    row, (item_id, choices, answer) = CHOICE_ROWS[name]
    served[source] = [row]
    item = load_benchmark(alias)[0]
    assert (item.id, item.choices, item.answer) == (item_id, choices, answer)
    assert calls[-1] == source


def test_generative_hub_schemas(hub):
    served, _ = hub
    served["google-research-datasets/nq_open", None, "validation"] = [{"question": "who", "answer": ["A", "B"]}]
    served["truthfulqa/truthful_qa", "generation", "validation"] = [
        {
            "type": "Adversarial",
            "category": "Misc",
            "question": "Q?",
            "best_answer": "best",
            "correct_answers": ["best", "good"],
            "incorrect_answers": ["bad"],
            "source": "s",
        }
    ]
    served["hendrycks/competition_math", None, "test"] = [
        {"problem": "1+1?", "level": "Level 1", "type": "Algebra", "solution": "So $\\boxed{2}$."}
    ]
    served["HuggingFaceH4/MATH-500", None, "test"] = [
        {"problem": "p", "solution": "\\boxed{3}", "answer": "3", "subject": "Algebra", "level": 1, "unique_id": "u"}
    ]
    nq = load_benchmark("nq_open")
    assert (nq[0].answer, nq.score(nq[0], "b")) == ("A", 1.0)
    tqa = load_benchmark("truthful_qa")
    assert tqa[0].answer == "best" and tqa.score(tqa[0], "Good") == 1.0
    assert load_benchmark("hendrycks/competition_math")[0].answer == "2"
    assert load_benchmark("HuggingFaceH4/MATH-500")[0].meta["unique_id"] == "u"


def test_unreachable_hub_and_ambiguous_hub_ids_are_explained(hub):
    with pytest.raises(DataError, match="no local copy.*openai/gsm8k.*--path"):
        load_benchmark("gsm8k")
    with pytest.raises(DataError, match="several configs: allenai/ai2_arc:ARC-Easy, allenai/ai2_arc:ARC-Challenge"):
        load_benchmark("allenai/ai2_arc")
    with pytest.raises(DataError, match="no hub source"):
        load_benchmark("copa")
    assert resolve_spec("allenai/ai2_arc:arc-easy").name == "arc_easy"
