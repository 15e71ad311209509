"""The in-training audit: the shard fitting of the sharded test."""

from hypothesis import given, settings
from hypothesis import strategies as st

from jaxcontam.detect.sharded_test import shard_bounds
from jaxcontam.training.audit_callback import fitting_shards


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 50), min_size=2, max_size=40), st.integers(40, 200), st.integers(2, 10))
def test_fitting_shards_is_the_fewest_that_fit(lengths, budget, at_least):
    def fits(shards):
        return all(sum(lengths[a:b]) <= budget for a, b in shard_bounds(len(lengths), shards))

    shards = fitting_shards(lengths, budget, at_least)
    candidates = range(at_least, len(lengths) // 2 + 1)
    if shards is None:
        assert not any(fits(s) for s in candidates)
    else:
        assert fits(shards) and not any(fits(s) for s in candidates if s < shards)
