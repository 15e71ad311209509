"""ConTAM metrics against a brute-force pure-Python reference written from the paper's definitions."""

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


def reference_metrics(segments, counter, n, mincount, skip_budget):
    """Literal loops over the definitions: no shared code with the library."""
    tokens = [t for s in segments for t in s]
    length = len(tokens)
    starts, offset = [], 0
    for s in segments:
        starts += [offset + i for i in range(len(s) - n + 1)]
        offset += len(s)
    if not starts:
        return dict(token_match=0.0, ngram_match=0.0, token_extend=0.0, longest_match=0.0)
    hot = [p for p in starts if counter[tuple(tokens[p : p + n])] >= mincount]
    matched = [any(p <= t < p + n for p in hot) for t in range(length)]
    extended = list(matched)
    for t in range(length):
        if matched[t]:
            continue
        left = max((j for j in range(t) if matched[j]), default=None)
        right = min((k for k in range(t + 1, length) if matched[k]), default=None)
        if left is not None and right is not None and right - left - 1 <= skip_budget:
            extended[t] = True
    longest = run = 0
    for flag in extended:
        run = run + 1 if flag else 0
        longest = max(longest, run)
    return dict(
        token_match=sum(matched) / length,
        ngram_match=len(hot) / len(starts),
        token_extend=sum(extended) / length,
        longest_match=longest / length,
    )


def make_items(items):
    """ItemUnits from a list of items, each a list of segments (lists of ints)."""
    segments = [s for item in items for s in item]
    lengths = [len(s) for s in segments]
    segment_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    item_segments = np.concatenate([[0], np.cumsum([len(i) for i in items])]).astype(np.int64)
    tokens = np.array([t for s in segments for t in s], np.int32)
    return ItemUnits(tuple(str(i) for i in range(len(items))), tokens, segment_offsets, item_segments)


def table_counts(table, counter):
    return np.array([counter[tuple(row)] for row in table.ngrams.tolist()], np.int64)


small_tokens = st.lists(st.integers(0, 3), min_size=0, max_size=14)
items_strategy = st.lists(st.lists(small_tokens, min_size=1, max_size=3), min_size=1, max_size=6)
corpus_strategy = st.lists(st.lists(st.integers(0, 3), max_size=40), min_size=1, max_size=4)


@settings(max_examples=150, deadline=None)
@given(
    items=items_strategy, corpus=corpus_strategy, n=st.integers(1, 5), mincount=st.integers(1, 3),
    skip_budget=st.integers(0, 4),
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
        if got.longest_match:
            assert (got.longest_span[1] - got.longest_span[0]) / got.num_units == pytest.approx(got.longest_match)


def test_skip_budget_closes_inner_gaps_only():
    # n = 2: contaminated starts at 0 and 4 cover units {0,1} and {4,5}; gap {2,3} has length 2
    contaminated = np.array([1, 0, 0, 0, 1, 0, 0], bool)
    has = np.array([1, 1, 1, 1, 1, 1, 0], bool)
    assert item_scores(contaminated, has, 2, skip_budget=1).token_extend == pytest.approx(4 / 7)
    wide = item_scores(contaminated, has, 2, skip_budget=2)
    assert wide.token_extend == pytest.approx(6 / 7)
    assert wide.longest_span == (0, 6) and wide.longest_match == pytest.approx(6 / 7)
    assert wide.token_match == pytest.approx(4 / 7) and wide.ngram_match == pytest.approx(2 / 6)


def test_bad_metric_options_are_refused():
    table = build_table(make_items([[[1, 2, 3]]]), 2)
    with pytest.raises(DataError, match="mincount"):
        table_scores(table, np.zeros(len(table), np.int64), mincount=0)
