"""TS-Guessing (Deng et al. 2023): the authors' prompt, the masked option, the reply's parsing, ROUGE-L against
Google's rouge_score, the authors' item filter, and the records on the bundled tiny model."""

import pathlib
import re
import types

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxcontam.data.item import Item
from jaxcontam.data.registry import load_benchmark
from jaxcontam.detect.ts_guessing import (
    TsGuessingSettings,
    exact_match,
    guessed_option,
    guessing_prompt,
    masked_option,
    rouge_l_f1,
    skip_reason,
    ts_guessing_result,
)
from jaxcontam.detectors.ts_guessing import TS_GUESSING_STAGE, ts_guessing_records

EXAMPLE = pathlib.Path(__file__).resolve().parents[1] / "jaxcontam" / "examples" / "tiny_contaminated"

# Deng et al.'s question-based multiple-choice prompt (arXiv 2311.09783, as LLMSanitize's
# ts_guessing_question_multichoice.py writes it), for a question with options A-D and C masked
AUTHORS_PROMPT = """Please fill in the [] in option C based on your benchmark knowledge.

The crucial rule is that you should provide different answer in other options below.

Question: Which planet is known as the red planet?
Options:
A: [Venus]
B: [Mars]
C: [MASK]
D: [Saturn]

Reply with answer only."""


def test_the_prompt_is_the_authors_wording():
    got = guessing_prompt("Which planet is known as the red planet?", ("Venus", "Mars", "Jupiter", "Saturn"), 2)
    assert got == AUTHORS_PROMPT


def test_the_masked_option_is_a_wrong_one_drawn_per_item_and_seed():
    drawn = [masked_option(f"item-{i}", answer=1, n_options=4, seed=0) for i in range(200)]
    assert 1 not in drawn and set(drawn) == {0, 2, 3}
    assert drawn == [masked_option(f"item-{i}", 1, 4, 0) for i in range(200)]  # the same in every chunk
    assert drawn != [masked_option(f"item-{i}", 1, 4, 7) for i in range(200)]


@pytest.mark.parametrize(
    ("reply", "guess"),
    [
        ("Jupiter", "Jupiter"),
        ("[Jupiter]", "Jupiter"),
        (" C: [Jupiter]. It is the largest planet.", "Jupiter"),
        ("C: Jupiter. It is the largest planet.", "Jupiter."),
        ("Jupiter\nD: [Saturn]", "Jupiter"),
        ("", ""),
    ],
)
def test_the_guess_is_the_replys_first_sentence_after_the_letter(reply, guess):
    assert guessed_option(reply, 2) == guess


def test_exact_match_ignores_case_and_surrounding_space():
    assert exact_match(" jupiter ", "Jupiter") and not exact_match("Jupiter.", "Jupiter")


QUIZ = (
    Item("planet", "quiz", "Which planet is known as the red planet?", 1, ("Venus", "Mars", "Jupiter", "Saturn")),
    Item("gas", "quiz", "Which gas do plants take in?", 0, ("Carbon dioxide", "Helium", "Neon", "Argon", "Xenon")),
    Item("metal", "quiz", "Which metal is liquid at room temperature?", 2, ("Iron", "Copper", "Mercury")),
)


class ByteTokenizer:
    """Text as its UTF-8 bytes, so a stand-in model can read the prompt it is given."""

    def encode(self, text):
        return list(text.encode())


def guesses(monkeypatch, reply) -> list[dict]:
    """QUIZ's records from a stand-in model: `reply(item, masked letter, masked option)` is its reply to the
    prompt that masks that option (read back from the prompt it gets)."""
    by_question = {item.question: item for item in QUIZ}

    def stand_in(model, prompts, **kwargs):
        replies = []
        for prompt in prompts:
            text = bytes(prompt).decode()
            letter = re.search(r"option ([A-Z]) based", text).group(1)
            item = by_question[re.search(r"Question: (.*)", text).group(1)]
            replies.append(types.SimpleNamespace(text=reply(item, letter, item.choices["ABCDE".index(letter)])))
        return replies

    monkeypatch.setattr("jaxcontam.detectors.ts_guessing.generate", stand_in)
    model = types.SimpleNamespace(tokenizer=ByteTokenizer(), config=types.SimpleNamespace(max_position=4096))
    records = ts_guessing_records(model, list(QUIZ), TsGuessingSettings(chat_template="never"), seed=3)
    assert all(r["ts_skipped"] is None and r["ts_masked"] != item.answer for r, item in zip(records, QUIZ))
    return records


def test_a_model_that_restores_the_masked_option_matches_it(monkeypatch):
    """The exact match is against the masked wrong option, after the reply's letter, its brackets and its case."""
    records = guesses(monkeypatch, lambda item, letter, option: f"{letter}: [{option.upper()}]\nThat is all.")
    assert [r["ts_exact_match"] for r in records] == [True] * len(QUIZ)
    assert [r["ts_rouge_l"] for r in records] == [1.0] * len(QUIZ)


def test_a_model_that_names_the_correct_answer_does_not_match(monkeypatch):
    """LLMSanitize scores the guess against the item's correct answer; the paper's task, and jaxcontam, against
    the masked option: naming the correct answer is no restored option."""
    records = guesses(monkeypatch, lambda item, letter, option: item.choices[item.answer])
    assert [r["ts_exact_match"] for r in records] == [False] * len(QUIZ)


@pytest.mark.parametrize(
    ("reply", "matches"),
    [
        (lambda option: option.lower(), True),  # LLMSanitize lowercases both sides
        (lambda option: f"  {option.upper()}  ", True),  # surrounding space dropped (LLMSanitize keeps it)
        (lambda option: f"{option}.", False),  # punctuation kept, as LLMSanitize keeps it
        (lambda option: f"{option} (I think)", False),
    ],
)
def test_the_exact_match_normalisation(monkeypatch, reply, matches):
    records = guesses(monkeypatch, lambda item, letter, option: reply(option))
    assert [r["ts_exact_match"] for r in records] == [matches] * len(QUIZ)


words = st.lists(st.sampled_from(["the", "cat", "sat", "on", "a", "mat", "Dog", "ran", "7", "mat."]), max_size=12)


@settings(max_examples=150, deadline=None)
@given(words, words)
def test_rouge_l_matches_googles_rouge_score(a, b):
    rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    prediction, reference = " ".join(a), " ".join(b)
    assert rouge_l_f1(prediction, reference) == pytest.approx(scorer.score(reference, prediction)["rougeL"].fmeasure)


def test_the_authors_filter():
    assert skip_reason(("Yes", "no")) == "yes/no or true/false options"
    assert skip_reason(("True", "False")) == "yes/no or true/false options"
    assert "overlap" in skip_reason(("The cat sat on the mat", "The cat sat on a mat", "Paris"))
    assert rouge_l_f1("It was fragile.", "It was small.") == pytest.approx(2 / 3)  # >= 0.65: skipped
    assert "overlap" in skip_reason(("It was fragile.", "It was small."))
    assert skip_reason(("Venus", "Mars", "Jupiter")) is None
    assert skip_reason(tuple(f"option {chr(0x3B1 + i)} {i}" for i in range(27))).startswith("more than 26 options")


def test_a_benchmark_without_options_is_not_tested():
    items = [Item(f"q{i}", "gsm8k", f"What is {i} + 1?", str(i + 1)) for i in range(3)]
    result = ts_guessing_result(ts_guessing_records(None, items, TsGuessingSettings(), 0))
    verdict = TS_GUESSING_STAGE.headline(result, 0.05)
    assert result.reason == "no options" and result.n_asked == 0
    assert verdict is not None and verdict.contaminated is None and verdict.label.startswith("no test: no options")


def test_records_on_the_bundled_model():
    import jaxcontam

    model = jaxcontam.load_model(str(EXAMPLE / "model"))
    benchmark = load_benchmark("copa", split="test", path=EXAMPLE / "copa_test_sample.jsonl", limit=6)
    records = ts_guessing_records(model, list(benchmark), TsGuessingSettings(max_new_tokens=12), seed=0)
    for item, record in zip(benchmark, records):
        if record["ts_skipped"] is not None:
            continue
        option = item.choices[record["ts_masked"]]
        assert record["ts_masked"] != item.answer
        assert record["ts_exact_match"] == exact_match(record["ts_guess"], option)
        assert record["ts_rouge_l"] == rouge_l_f1(record["ts_guess"], option)
    result = ts_guessing_result(records)
    assert result.reason is None and result.n_asked + result.n_skipped == 6 and result.n_asked > 0
    assert TS_GUESSING_STAGE.headline(result, 0.05) is None  # an effect size: no verdict
