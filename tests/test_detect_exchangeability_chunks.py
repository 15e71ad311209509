"""The exchangeability test's chunk fitting: the fewest contiguous chunks whose concatenations fit the context."""

from hypothesis import given, settings
from hypothesis import strategies as st

from jaxcontam.detect.exchangeability import chunk_bounds, fitting_chunks


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 50), min_size=2, max_size=40), st.integers(40, 200), st.integers(2, 10))
def test_fitting_chunks_is_the_fewest_that_fit(lengths, budget, at_least):
    def fits(chunks):
        return all(sum(lengths[a:b]) <= budget for a, b in chunk_bounds(len(lengths), chunks))

    chunks = fitting_chunks(lengths, budget, at_least)
    candidates = range(at_least, len(lengths) // 2 + 1)
    if chunks is None:
        assert not any(fits(s) for s in candidates)
    else:
        assert fits(chunks) and not any(fits(s) for s in candidates if s < chunks)
