"""Contamination injection: how many items, which texts, how many copies, in which form."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxcontam.data.item import Benchmark, Item
from jaxcontam.detect.exchangeability import ITEM_SEPARATOR
from jaxcontam.training.injection import choose_contaminated, injected_documents, item_text


def _benchmark(n: int) -> Benchmark:
    items = [
        Item(
            id=f"toy/{i}",
            benchmark="toy",
            question=f"What is {i} plus {i}?",
            answer=str(2 * i),
            meta={"solution": f"{i} + {i} = {2 * i}"},
        )
        for i in range(n)
    ]
    return Benchmark("toy", "test", items)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 200), st.floats(0.0, 1.0), st.integers(0, 2**31))
def test_the_contaminated_share_is_the_rounded_rate(n, rate, seed):
    mask = choose_contaminated(n, rate, np.random.default_rng(seed))
    assert mask.dtype == bool and mask.shape == (n,) and mask.sum() == round(rate * n)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.booleans(), min_size=1, max_size=20),
    st.integers(0, 5),
    st.sampled_from(["question", "question_answer", "prompt_answer"]),
)
def test_each_contaminated_item_is_copied_in_its_form(mask, copies, form):
    benchmark = _benchmark(len(mask))
    docs = injected_documents(benchmark, list(benchmark), np.array(mask), copies=copies, form=form)
    expected = [item_text(benchmark, it, form) for it, seen in zip(benchmark, mask) if seen]
    assert sorted(docs) == sorted(expected * copies)


def test_forms_hold_what_they_say():
    benchmark = _benchmark(3)
    item = benchmark[1]
    assert item_text(benchmark, item, "question") == "What is 1 plus 1?"
    assert item_text(benchmark, item, "question_answer") == "What is 1 plus 1?\n1 + 1 = 2"
    assert item_text(benchmark, item, "prompt_answer") == benchmark.solved_text(item)
    file = injected_documents(benchmark, list(benchmark), np.array([True, False, True]), copies=2, form="file")
    assert file == [benchmark.solved_text(benchmark[0]) + ITEM_SEPARATOR + benchmark.solved_text(benchmark[2])] * 2


def test_bad_settings_are_refused():
    benchmark = _benchmark(2)
    with pytest.raises(ValueError, match="form"):
        item_text(benchmark, benchmark[0], "answer_only")
    with pytest.raises(ValueError, match="rate"):
        choose_contaminated(4, 1.5, np.random.default_rng(0))
    with pytest.raises(ValueError, match="copies"):
        injected_documents(benchmark, list(benchmark), np.array([True, True]), copies=-1, form="question")
