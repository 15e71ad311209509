"""ConTAM metrics against brute-force references written from the definitions (one item = one text).

Definitions (ConTAM arXiv 2411.03923; skip budget as in Llama 2 arXiv 2307.09288 A.6): a unit is
matched when some contaminated n-gram covers it; a span is a window starting and ending on a
matched unit with at most `skip_budget` unmatched units in total. The references enumerate every
window; they share no code with the library.
"""

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxcontam.errors import DataError
from jaxcontam.ngram.metrics import item_scores, table_scores
from jaxcontam.ngram.table import ItemUnits, build_table


def corpus_counter(documents, n):
    return Counter(tuple(d[i : i + n]) for d in documents for i in range(len(d) - n + 1))


def spans(matched, skip_budget):
    """Every window [a, b) with matched ends and at most skip_budget unmatched units inside."""
    return [
        (a, b)
        for a in range(len(matched))
        for b in range(a + 1, len(matched) + 1)
        if matched[a] and matched[b - 1] and matched[a:b].count(False) <= skip_budget
    ]


def reference_metrics(tokens, counter, n, mincount, skip_budget):
    length = len(tokens)
    starts = list(range(length - n + 1))
    if not starts:
        return dict(token_match=0.0, ngram_match=0.0, token_extend=0.0, longest_match=0.0)
    hot = [p for p in starts if counter[tuple(tokens[p : p + n])] >= mincount]
    matched = [any(p <= t < p + n for p in hot) for t in range(length)]
    windows = spans(matched, skip_budget)
    inside = {t for a, b in windows for t in range(a, b)}
    return dict(
        token_match=sum(matched) / length,
        ngram_match=len(hot) / len(starts),
        token_extend=len(inside) / length,
        longest_match=max((b - a for a, b in windows), default=0) / length,
    )


def make_items(texts):
    """ItemUnits of items that are one unit sequence each (lists of ints)."""
    offsets = np.concatenate([[0], np.cumsum([len(t) for t in texts])]).astype(np.int64)
    tokens = np.array([u for t in texts for u in t], np.int32)
    return ItemUnits(tuple(str(i) for i in range(len(texts))), tokens, offsets, np.arange(len(texts) + 1))


def table_counts(table, counter):
    return np.array([counter[tuple(row)] for row in table.ngrams.tolist()], np.int64)


items_strategy = st.lists(st.lists(st.integers(0, 3), max_size=24), min_size=1, max_size=6)
corpus_strategy = st.lists(st.lists(st.integers(0, 3), max_size=40), min_size=1, max_size=4)


@settings(max_examples=150, deadline=None)
@given(
    items=items_strategy,
    corpus=corpus_strategy,
    n=st.integers(1, 5),
    mincount=st.integers(1, 3),
    skip_budget=st.integers(0, 6),
)
def test_all_four_metrics_match_the_definitions(items, corpus, n, mincount, skip_budget):
    # tiny vocabularies force repeated n-grams inside items, items shorter than n and counts > 1
    counter = corpus_counter(corpus, n)
    table = build_table(make_items(items), n)
    scores = table_scores(table, table_counts(table, counter), mincount=mincount, skip_budget=skip_budget)
    for item, got in zip(items, scores):
        want = reference_metrics(item, counter, n, mincount, skip_budget)
        for name, value in want.items():
            assert getattr(got, name) == pytest.approx(value), (name, item)
        a, b = got.longest_span
        assert (b - a) / max(got.num_units, 1) == pytest.approx(got.longest_match)


@settings(max_examples=200, deadline=None)
@given(matched=st.lists(st.booleans(), max_size=30), skip_budget=st.integers(0, 8))
def test_longest_span_is_the_first_longest_window_within_budget(matched, skip_budget):
    # n = 1: every contaminated position is exactly one matched unit
    flags = np.array(matched, bool)
    got = item_scores(flags, np.ones(len(flags), bool), 1, skip_budget)
    windows = spans(matched, skip_budget)
    longest = max((b - a for a, b in windows), default=0)
    assert got.longest_span == min(((a, b) for a, b in windows if b - a == longest), default=(0, 0))


def test_skip_budget_is_a_total_per_span_not_per_gap():
    # n = 1; matched runs {0,1}, {4,5}, {8,9}: two gaps of 2 units
    matched = np.array([1, 1, 0, 0, 1, 1, 0, 0, 1, 1], bool)
    has = np.ones(10, bool)
    two = item_scores(matched, has, 1, skip_budget=2)
    assert two.longest_span == (0, 6) and two.longest_match == pytest.approx(0.6)  # one gap fits, not both
    assert two.token_extend == pytest.approx(1.0)  # every gap lies in some span
    assert item_scores(matched, has, 1, skip_budget=4).longest_span == (0, 10)
    assert item_scores(matched, has, 1, skip_budget=1).token_extend == pytest.approx(0.6)


def test_copied_item_scores_one_and_short_item_zero():
    # the item is copied whole: every n-gram is contaminated, whatever n up to its length
    item = list(range(13))
    counter = corpus_counter([[50, 51] + item + [52]], 8)
    table = build_table(make_items([item, item[:7]]), 8)
    whole, short = table_scores(table, table_counts(table, counter))
    assert (whole.token_match, whole.ngram_match, whole.token_extend, whole.longest_match) == (1, 1, 1, 1)
    assert short.num_ngrams == 0 and short.longest_match == 0 and short.num_units == 7


def test_bad_metric_options_are_refused():
    table = build_table(make_items([[1, 2, 3]]), 2)
    with pytest.raises(DataError, match="mincount"):
        table_scores(table, np.zeros(len(table), np.int64), mincount=0)
