"""PaCoST rephrasing: quality gates on hand-made and real GPT-4 rephrasings, attached and generated choices."""

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jaxcontam.data import Item, attach_paraphrases, load_benchmark, load_paraphrases
from jaxcontam.detect import rephrase
from jaxcontam.detect.rephrase import (
    GATE_REASONS,
    PACOST_REPHRASE_INSTRUCTION,
    RephraseGates,
    check_rephrase,
    choose_attached,
    generate_rephrasings,
    rephrase_items,
)
from jaxcontam.errors import JaxcontamError

# Lets any non-empty, non-identical candidate through: isolates the bookkeeping from the gates.
LENIENT = RephraseGates(
    min_length_ratio=1e-3, max_length_ratio=1e3, max_ngram_overlap=1.0, preserve_numbers=False, preserve_names=False
)
SHORT_INSTRUCTION = "Say it another way.\nQuestion: {question}\nRephrased question:"  # fits stories260K's 512 positions


def test_identical_and_empty_rephrases_fail_first():
    assert check_rephrase("How many eggs are left?", "  how MANY eggs\n are left? ").reason == "identical"
    assert check_rephrase("How many eggs are left?", " \n ").reason == "empty"


def test_a_changed_number_fails_and_is_named():
    result = check_rephrase(
        "Janet's ducks lay 16 eggs and she eats 3 of them.",
        "Every day Janet's ducks produce 61 eggs, of which she consumes 3.",
    )
    assert not result.passed and result.reason == "numbers_changed"
    assert "16" in result.detail and "3" not in result.detail.split(":")[-1]


def test_number_forms_are_normalised():
    passes = [
        ("He buys a house for $1,000 today.", "Today he purchases a home for 1000 dollars."),
        ("Each apple costs $2.50 at the shop.", "At the store one apple is priced at $2.5."),
        ("The value rose by 60% this year.", "This year the worth went up 60 percent."),
        ("Tom runs 3 sprints 3 times a week.", "Three times weekly, Tom does 3 sprints."),
        ("She owns 25 cats and no dogs.", "She has twenty-five cats but not a single dog."),
    ]
    for original, candidate in passes:
        assert check_rephrase(original, candidate).reason != "numbers_changed", (original, candidate)
    lost = check_rephrase("Tom runs 3 sprints 3 times a week.", "Tom does 3 sprints several times weekly.")
    assert lost.reason == "numbers_changed" and lost.detail.endswith(": 3")  # a multiset: one 3 of two is lost
    fraction = check_rephrase("Of the 200 units, 3/4 are occupied.", "Three quarters of all 200 units have tenants.")
    assert fraction.reason == "numbers_changed" and "3/4" in fraction.detail


def test_a_lost_capitalised_name_fails_but_sentence_initial_words_are_not_names():
    result = check_rephrase(
        "Every morning, Janet walks to Paris with Max.", "Each morning janet goes on foot to PARIS."
    )
    assert result.reason == "names_changed" and result.detail.endswith(": max")
    # "She", "How" and "Janet" open sentences: not required; "Paris" is matched case-insensitively.
    ok = check_rephrase(
        "Janet lives in Paris. She has 2 cats. How many cats does she own?",
        "How many cats are owned by a woman who lives in paris and keeps 2 cats?",
    )
    assert ok.passed, ok


def test_length_bounds():
    original = "one two three four five six seven eight nine ten"
    short = check_rephrase(original, "alpha beta gamma delta")
    assert short.reason == "too_short" and short.length_ratio == pytest.approx(0.4)
    long = check_rephrase(original, " ".join(["word"] * 21))
    assert long.reason == "too_long" and long.length_ratio == pytest.approx(2.1)
    assert check_rephrase(original, " ".join(["word"] * 20)).passed


def test_ngram_overlap_on_hand_computed_examples():
    # original 3-grams: the cat sat | cat sat on | sat on the | on the mat
    # rephrase 3-grams: the cat sat (yes) | cat sat on (yes) | sat on a (no) | on a rug (no) -> 2/4
    assert check_rephrase("The cat sat on the mat.", "the cat sat, on a RUG!").ngram_overlap == pytest.approx(0.5)
    # fewer than 3 words: unigrams; "ball" and "red" occur in the original, "big" does not -> 2/3
    assert check_rephrase("Red ball?", "ball red big").ngram_overlap == pytest.approx(2 / 3)
    near_copy = check_rephrase(
        "John buys 2 pairs of shoes for each of his 3 children at the mall.",
        "John buys 2 pairs of shoes for each of his 3 children at the store.",
    )
    assert near_copy.reason == "too_similar" and near_copy.ngram_overlap == pytest.approx(12 / 13)
    assert check_rephrase(
        "John buys 2 pairs of shoes for each of his 3 children at the mall.",
        "John buys 2 pairs of shoes for each of his 3 children at the store.",
        RephraseGates(max_ngram_overlap=1.0),
    ).passed


def test_gates_run_in_the_documented_order():
    # Both a lost number and too few words: the number gate comes first.
    assert (
        check_rephrase("Sam has 12 red apples and 4 green pears in his big basket.", "Sam has apples.").reason
        == "numbers_changed"
    )
    assert GATE_REASONS == (
        "identical",
        "empty",
        "numbers_changed",
        "names_changed",
        "too_short",
        "too_long",
        "too_similar",
    )


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"min_length_ratio": 0.0}, "min_length_ratio"),
        ({"min_length_ratio": 1.5, "max_length_ratio": 1.2}, "min_length_ratio <= max_length_ratio"),
        ({"max_ngram_overlap": 1.5}, r"\[0, 1\]"),
        ({"max_ngram_overlap": float("nan")}, r"\[0, 1\]"),
    ],
)
def test_gate_settings_are_validated(kwargs, match):
    with pytest.raises(JaxcontamError, match=match):
        RephraseGates(**kwargs)


@given(st.text(), st.sampled_from([str, str.upper, str.lower, lambda t: f"  {t}\n"]))
def test_the_original_itself_never_passes(text, variant):
    result = check_rephrase(text, variant(text))
    assert not result.passed and result.reason in ("identical", "empty")


@given(st.text(), st.text())
def test_gates_never_raise_and_measure_within_bounds(original, candidate):
    result = check_rephrase(original, candidate)
    assert 0.0 <= result.ngram_overlap <= 1.0 and result.length_ratio >= 0.0
    assert result.passed == (result.reason is None)
    assert result.reason is None or result.reason in GATE_REASONS


@given(st.text())
def test_adding_words_never_loses_numbers_or_names(text):
    result = check_rephrase(text, text + " Thanks, and please answer carefully.")
    assert result.reason not in ("identical", "empty", "numbers_changed", "names_changed")


def item(item_id, question, paraphrases=()):
    return Item(item_id, "toy", question, "0", paraphrases=tuple(paraphrases))


QUESTION = "Lily has 3 red balls and gets 2 more from Tom. How many balls does Lily have now?"
GOOD = "After Tom gives her 2 more, how many balls does Lily own if she first had 3 red ones?"
GOOD_TOO = "Lily owns 3 red balls; Tom hands her 2 more. What is her total number of balls?"


def test_choose_attached_keeps_the_first_passing_paraphrase_and_records_reasons():
    items = [
        item("a", QUESTION, [QUESTION, GOOD.replace("2", "5"), GOOD, GOOD_TOO]),
        item("b", QUESTION, [QUESTION, GOOD.replace("Tom", "Sam")]),
        item("c", QUESTION),
    ]
    a, b, c = choose_attached(items)
    assert (a.item_id, a.rephrase, a.source, a.attempts, a.reason) == ("a", GOOD, "attached", 3, None)
    assert (b.rephrase, b.source, b.attempts, b.reason) == (None, None, 2, "names_changed")
    assert (c.rephrase, c.source, c.attempts, c.reason) == (None, None, 0, "no_paraphrase")


def test_rephrase_items_without_a_model_falls_back_in_input_order():
    items = [item("x", QUESTION), item("y", QUESTION, [GOOD]), item("z", QUESTION, [QUESTION])]
    x, y, z = rephrase_items(items)
    assert [x.item_id, y.item_id, z.item_id] == ["x", "y", "z"]
    assert (x.reason, y.rephrase, y.source, z.reason) == ("no_paraphrase", GOOD, "attached", "identical")
    with pytest.raises(JaxcontamError, match="without a model"):
        rephrase_items(items, attempts=2)


def test_instruction_asks_for_a_faithful_rephrasing():
    prompt = PACOST_REPHRASE_INSTRUCTION.format(question=QUESTION)
    assert QUESTION in prompt and prompt.endswith("Rephrased question:")
    assert "numbers" in prompt and "meaning" in prompt


@pytest.fixture(scope="module")
def stories(stories_dir):  # noqa: F811
    import jaxcontam

    return jaxcontam.load_model(str(stories_dir))


STORY_ITEMS = [
    item("s/0", "Lily has 3 red balls and gets 2 more. How many balls does Lily have?"),
    item("s/1", "Tom saw a big dog in the park. What color was the dog?"),
    item("s/2", "Sue baked 12 cookies and ate 4. How many are left?"),
]


def test_generation_is_batched_per_round_seeded_and_deterministic(stories, monkeypatch):
    calls = []

    def recording_generate(model, prompts, **kwargs):
        calls.append((len(prompts), kwargs["seed"]))
        return real_generate(model, prompts, **kwargs)

    real_generate = rephrase.generate
    monkeypatch.setattr(rephrase, "generate", recording_generate)
    kwargs = dict(attempts=3, max_new_tokens=16, seed=5, instruction=SHORT_INSTRUCTION)
    first = generate_rephrasings(stories, STORY_ITEMS, **kwargs)
    assert first == generate_rephrasings(stories, STORY_ITEMS, **kwargs)
    assert [c.item_id for c in first] == ["s/0", "s/1", "s/2"]
    rounds = calls[: len(calls) // 2]
    assert rounds[0] == (3, 5) and [seed for _, seed in rounds] == list(range(5, 5 + len(rounds)))
    # Each round generates exactly the items still failing; a kept item stops at its round.
    for k, (n, _) in enumerate(rounds[1:], start=1):
        assert n == sum(c.attempts > k for c in first)
    for choice, it in zip(first, STORY_ITEMS):
        if choice.rephrase is None:
            assert choice.attempts == 3 and choice.source is None and choice.reason in GATE_REASONS
        else:
            assert choice.source == "generated" and choice.reason is None and 1 <= choice.attempts <= 3
            assert check_rephrase(it.question, choice.rephrase).passed


def test_generated_text_is_cut_at_the_first_line(stories):
    kept = generate_rephrasings(
        stories, STORY_ITEMS, LENIENT, attempts=2, max_new_tokens=16, instruction=SHORT_INSTRUCTION
    )
    for choice in kept:
        assert choice.source == "generated" and choice.attempts == 1 and choice.reason is None
        assert choice.rephrase and "\n" not in choice.rephrase and choice.rephrase == choice.rephrase.strip()


def test_rephrase_items_generates_only_for_items_without_a_passing_paraphrase(stories):
    items = [item("a", QUESTION, [GOOD]), item("b", STORY_ITEMS[1].question, [STORY_ITEMS[1].question]), STORY_ITEMS[2]]
    a, b, c = rephrase_items(
        items, LENIENT, model=stories, attempts=2, max_new_tokens=16, instruction=SHORT_INSTRUCTION
    )
    assert (a.rephrase, a.source, a.attempts) == (GOOD, "attached", 1)
    assert (b.source, b.attempts, c.source, c.attempts) == ("generated", 2, "generated", 1)  # b: 1 attached + 1 round


def test_generation_arguments_are_checked(stories):
    with pytest.raises(JaxcontamError, match="attempts must be >= 1"):
        generate_rephrasings(stories, STORY_ITEMS, attempts=0)
    with pytest.raises(JaxcontamError, match="only field is {question}"):
        generate_rephrasings(stories, STORY_ITEMS, instruction="Rephrase {text}: {question}")
    assert generate_rephrasings(stories, []) == []


@pytest.fixture(scope="module")
def gsm8k_with_gpt4_rephrasings(shared_data):
    gsm8k = load_benchmark("gsm8k", path=shared_data)
    return attach_paraphrases(gsm8k, load_paraphrases("gsm8k_rephrase", gsm8k, roots=(shared_data,)))


def test_most_real_gpt4_rephrasings_pass_the_default_gates(gsm8k_with_gpt4_rephrasings):
    choices = choose_attached(gsm8k_with_gpt4_rephrasings.items[:50])
    kept = [c for c in choices if c.source == "attached"]
    assert len(kept) >= 40, [(c.item_id, c.reason) for c in choices if c.reason]
    assert all(c.reason in GATE_REASONS for c in choices if c.rephrase is None)


def test_a_corrupted_real_rephrasing_is_caught(gsm8k_with_gpt4_rephrasings):
    janet = gsm8k_with_gpt4_rephrasings[0]
    good = janet.paraphrases[0]
    assert check_rephrase(janet.question, good).passed
    wrong_eggs = check_rephrase(janet.question, good.replace("16 eggs", "18 eggs"))
    assert wrong_eggs.reason == "numbers_changed" and wrong_eggs.detail.endswith(": 16")
    no_janet = check_rephrase(janet.question, good.replace("Janet's ducks", "The ducks"))
    assert no_janet.passed  # "Janet" opens the original: not a required name
    corrupted = dataclasses.replace(janet, paraphrases=(good.replace("$2", "$3"), janet.question))
    assert choose_attached([corrupted])[0].reason == "identical"  # the last candidate's reason
