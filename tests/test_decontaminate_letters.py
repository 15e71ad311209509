"""Token mode with a tokenizer that splits digits one by one (SmolLM2's): an n-gram counts only when half its
tokens hold a letter, so `100,000` and `in the 1960s` no longer flag clean text, and a copy of an item is still
found; an item left with no such n-gram is listed as not findable, with the reason."""

from __future__ import annotations

import pytest

from jaxcontam.decontam import DecontIndex, IndexSettings, ItemSides, find
from jaxcontam.decontam.index import not_findable

ITEM = ItemSides(
    "b",
    "0",
    "In the 1960s the town had 100,000 people; by 1990 the mill had closed and half of them had moved to the coast.",
)
NUMBERS = ItemSides("b", "1", "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14")


@pytest.fixture(scope="module")
def smollm2(shared_data) -> str:
    return str(shared_data / "smollm2_135m_instruct" / "SmolLM2-135M-Instruct.Q4_1.gguf")


def test_digit_runs_no_longer_flag_clean_text(smollm2):
    index = DecontIndex.build([ITEM, NUMBERS], IndexSettings(unit="tokens", tokenizer=smollm2))
    every = DecontIndex.build([ITEM, NUMBERS], IndexSettings(unit="tokens", tokenizer=smollm2, letter_share=0))
    assert index.settings.letter_share == 0.5 and IndexSettings().letter_share == 0  # words hold whole numbers
    clean = "My parents grew up in the 1960s, when a house cost about 100,000 dollars. Count 1, 2, 3, 4, 5, 6!"
    assert find(every, clean) and not find(index, clean)
    copy = "From a local history: the mill had closed and half of them had moved to the coast, we read."
    assert [m.item_id for m in find(index, copy)] == ["0"] == [m.item_id for m in find(every, copy)]
    dropped = [index.row_text(r) for r in range(len(index.table.keys)) if index.few_letters[r]]
    assert " 1960s" in "".join(dropped) or "1960" in "".join(dropped)
    (listed,) = not_findable(index)
    assert listed["item"] == "1" and "digits and punctuation only" in listed["reason"]
    assert not_findable(every) == []


def test_the_share_is_checked():
    from jaxcontam.errors import DataError

    with pytest.raises(DataError, match="letter share"):
        IndexSettings(letter_share=1.5)


def test_the_training_filter_applies_the_letter_rule(smollm2):
    """`index.filter()`, the token DecontaminationFilter a training loop uses, leaves out the rows the index does: the
    digit runs flag nothing there either, and a copy of the item is still dropped."""
    index = DecontIndex.build([ITEM, NUMBERS], IndexSettings(unit="tokens", tokenizer=smollm2))
    every = DecontIndex.build([ITEM, NUMBERS], IndexSettings(unit="tokens", tokenizer=smollm2, letter_share=0))
    clean = index.encode(
        ["My parents grew up in the 1960s, when a house cost about 100,000 dollars. Count 1, 2, 3, 4, 5, 6!"]
    )[0]
    copy = index.encode(
        ["From a local history: the mill had closed and half of them had moved to the coast, we read."]
    )[0]
    assert every.filter().contains(clean) and not index.filter().contains(clean)
    assert index.filter().contains(copy) and every.filter().contains(copy)
