import pytest

from jaxcontam.data import Benchmark, Item
from jaxcontam.errors import DataError


def test_multiple_choice_item_scores_chosen_index():
    item = Item(id="q1", benchmark="toy", question="2+2?", choices=("3", "4"), answer=1)
    bench = Benchmark(name="toy", split="test", items=[item])
    assert item.kind == "multiple_choice" and item.answer_text == "4"
    assert bench.score(item, 1) == 1.0 and bench.score(item, 0) == 0.0
    assert "B. 4" in bench.prompt(item)


def test_generative_item_normalises_before_exact_match():
    item = Item(id="q1", benchmark="toy", question="Capital of France?", answer="Paris")
    bench = Benchmark(name="toy", split="test", items=[item])
    assert bench.score(item, "  the paris. ") == 1.0
    assert bench.score(item, "Lyon") == 0.0


def test_bad_items_are_refused_with_the_reason():
    with pytest.raises(DataError, match="empty question"):
        Item(id="x", benchmark="toy", question="  ", answer="a")
    with pytest.raises(DataError, match="out of range"):
        Item(id="x", benchmark="toy", question="q", choices=("a", "b"), answer=2)
    item = Item(id="x", benchmark="toy", question="q", answer="a")
    with pytest.raises(DataError, match="duplicate item id 'x'"):
        Benchmark(name="toy", split="test", items=[item, item])


def test_item_is_frozen_and_meta_read_only():
    item = Item(id="x", benchmark="toy", question="q", answer="a", meta={"k": 1})
    with pytest.raises(AttributeError):
        item.question = "other"
    with pytest.raises(TypeError):
        item.meta["k"] = 2


def test_item_round_trips_to_dict_and_hashes_by_id():
    item = Item(id="x", benchmark="toy", question="q", choices=["a", "b"], answer=0, meta={"k": 1})
    d = item.to_dict()
    assert d["choices"] == ["a", "b"] and d["meta"] == {"k": 1}
    assert Item(**{**d, "choices": tuple(d["choices"])}) == item
    assert len({item, Item(**d)}) == 1
