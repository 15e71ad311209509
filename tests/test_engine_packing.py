"""Bucketing and packing: every token lands once, in its own segment, in few shapes."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxcontam.engine.packing import SMALLEST_PACKED, default_buckets, plan_batches, unpack_rows
from jaxcontam.errors import JaxcontamError

sequences = st.lists(st.lists(st.integers(1, 999), min_size=1, max_size=70), min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(sequences, st.sampled_from([1, 2, 4]), st.booleans())
def test_packing_round_trips_in_input_order(seqs, rows, pack):
    batches = plan_batches(seqs, rows_per_batch=rows, buckets=(16, 32, 128), pack=pack)
    assert len({b.tokens.shape for b in batches}) <= 3
    out = [None] * len(seqs)
    seen = []
    for b in batches:
        assert b.tokens.shape[0] == rows
        for p in b.placements:
            span = slice(p.offset, p.offset + p.length)
            np.testing.assert_array_equal(b.tokens[p.row, span], seqs[p.index])
            np.testing.assert_array_equal(b.positions[p.row, span], np.arange(p.length))
            assert len(set(b.segment_ids[p.row, span].tolist())) == 1 and b.segment_ids[p.row, p.offset] > 0
            np.testing.assert_array_equal(b.targets[p.row, p.offset : p.offset + p.length - 1], seqs[p.index][1:])
            seen.append(p.index)
        # padding carries segment 0 and nothing else does
        assert (b.segment_ids > 0).sum() == sum(p.length for p in b.placements)
        unpack_rows(b, b.targets, out)
    assert sorted(seen) == list(range(len(seqs)))
    for i, s in enumerate(seqs):
        np.testing.assert_array_equal(out[i], s[1:])
    if not pack:  # one sequence per row, and no part-empty batch before the last
        assert all(len({p.row for p in b.placements}) == len(b.placements) for b in batches)
        assert all(len(b.placements) == rows for b in batches[:-1])


def test_short_sequences_share_rows():
    seqs = [[1] * 5] * 12
    batches = plan_batches(seqs, rows_per_batch=2, buckets=(32,))
    assert len(batches) == 1  # 12 x 5 tokens fit in two rows of 32
    assert max(np.unique(b.segment_ids).max() for b in batches) == 6


def test_default_buckets_and_errors():
    assert default_buckets(300) == (64, 128, 256, 512)
    assert default_buckets(300, SMALLEST_PACKED) == (256, 512)
    with pytest.raises(JaxcontamError, match="longer than the largest bucket"):
        plan_batches([[1] * 40], rows_per_batch=1, buckets=(16, 32))
    with pytest.raises(JaxcontamError, match="sequence 1 has no tokens"):
        plan_batches([[1], []], rows_per_batch=1)
