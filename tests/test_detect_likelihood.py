"""Likelihood detectors vs straightforward numpy references written from the papers' definitions."""

import math
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from jaxcontam.detect import likelihood
from jaxcontam.errors import JaxcontamError

logprob_arrays = arrays(np.float64, st.integers(1, 60), elements=st.floats(-30.0, -1e-3))
fractions = st.floats(0.01, 1.0)


@given(logprob_arrays, fractions)
def test_min_k_is_mean_of_lowest_fraction(lp, k):
    count = max(1, int(len(lp) * k))
    lowest = sorted(lp.tolist())[:count]  # a plain-python reference: sort, take, average
    assert likelihood.min_k_prob(lp, k) == pytest.approx(sum(lowest) / count, rel=1e-12, abs=1e-12)


@given(logprob_arrays, fractions, st.data())
def test_min_k_plus_plus_standardises_then_takes_lowest(lp, k, data):
    n = len(lp)
    mu = data.draw(arrays(np.float64, n, elements=st.floats(-12.0, -0.1)))
    sigma = data.draw(arrays(np.float64, n, elements=st.floats(0.05, 5.0)))
    scores = [(a - m) / s for a, m, s in zip(lp, mu, sigma)]
    count = max(1, int(n * k))
    expected = sum(sorted(scores)[:count]) / count
    assert likelihood.min_k_plus_plus(lp, mu, sigma, k) == pytest.approx(expected, rel=1e-9, abs=1e-9)


@given(logprob_arrays)
def test_min_k_with_k_one_is_the_mean_and_bounds(lp):
    assert likelihood.min_k_prob(lp, 1.0) == pytest.approx(likelihood.mean_logprob(lp), rel=1e-12)
    assert likelihood.min_k_prob(lp, 0.2) <= likelihood.mean_logprob(lp) + 1e-12
    assert likelihood.perplexity(lp) == pytest.approx(math.exp(-float(np.mean(lp))), rel=1e-12)


@given(logprob_arrays, st.text(min_size=1, max_size=200))
def test_zlib_ratio_is_loss_over_compressed_bytes(lp, text):
    expected = -float(np.mean(lp)) / len(zlib.compress(text.encode("utf-8")))
    assert likelihood.zlib_ratio(lp, text) == pytest.approx(expected, rel=1e-12)


@settings(max_examples=50)
@given(logprob_arrays, logprob_arrays)
def test_loss_ratios(lp, other):
    expected = float(np.mean(lp)) / float(np.mean(other))
    assert likelihood.reference_ratio(lp, other) == pytest.approx(expected, rel=1e-12)
    assert likelihood.lowercase_ratio(lp, other) == pytest.approx(expected, rel=1e-12)


def test_bad_inputs_are_reported():
    with pytest.raises(JaxcontamError, match="k must be a fraction"):
        likelihood.min_k_prob([-1.0, -2.0], 0.0)
    with pytest.raises(JaxcontamError, match="at least two tokens"):
        likelihood.mean_logprob([])
    with pytest.raises(JaxcontamError, match="with_stats=True"):
        likelihood.min_k_plus_plus([-1.0, -2.0], [-1.0], [1.0, 1.0])
