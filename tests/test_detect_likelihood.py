"""Likelihood detectors vs straightforward numpy references written from the papers' definitions."""

import math
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from helpers import dc_pdd_reference, gap_k_reference
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


# --- Gap-K% (Kwak & Kim 2026, arXiv 2601.19936) and DC-PDD (Zhang et al. 2024, arXiv 2409.14781) ---------------
# (their references from the papers' definitions: helpers.gap_k_reference, helpers.dc_pdd_reference)


@given(logprob_arrays, fractions, st.integers(1, 8), st.data())
def test_gap_k_is_the_lowest_fraction_of_windowed_normalised_top1_gaps(lp, k, window, data):
    n = len(lp)
    below_top = data.draw(arrays(np.float64, n, elements=st.floats(0.0, 6.0)))  # the top-1 is at least the target
    top = np.minimum(lp + below_top, 0.0)
    top = np.maximum(top, lp)
    sigma = data.draw(arrays(np.float64, n, elements=st.floats(1e-5, 5.0)))  # below 1e-4: the variance floor
    expected = gap_k_reference(lp.tolist(), top.tolist(), sigma.tolist(), k, window)
    assert likelihood.gap_k(lp, top, sigma, k, window) == pytest.approx(expected, rel=1e-9, abs=1e-9)


@given(logprob_arrays, st.data())
def test_gap_k_is_zero_where_every_token_is_the_top1_and_negative_otherwise(lp, data):
    sigma = np.ones_like(lp)
    assert likelihood.gap_k(lp, lp, sigma) == 0.0
    lower = data.draw(st.integers(0, len(lp) - 1))
    top = lp.copy()
    top[lower] += 1.0  # one token is not the model's top-1: with k = 1 its gap shows in the mean
    assert likelihood.gap_k(lp, top, sigma, k=1.0, window=1) == pytest.approx(-1.0 / len(lp))
    # float32 rounding can put the target a hair above the max: cut to 0, never a positive gap
    assert likelihood.gap_k(lp, lp - 1e-7, sigma) == 0.0


@given(
    arrays(np.float64, st.integers(1, 60), elements=st.floats(-12.0, 0.0)),
    st.integers(2, 40),
    st.floats(1e-4, 2.0),
    st.data(),
)
def test_dc_pdd_is_the_capped_calibrated_probability_over_first_occurrences(lp, vocab, cap, data):
    ids = data.draw(arrays(np.int64, len(lp), elements=st.integers(0, vocab - 1)))  # repeats likely
    counts = data.draw(arrays(np.int64, vocab, elements=st.integers(0, 1000)))
    frequencies = (counts + 1.0) / (counts.sum() + vocab)  # Laplace smoothing, as the paper's table
    expected = dc_pdd_reference(lp.tolist(), ids.tolist(), frequencies.tolist(), cap)
    assert likelihood.dc_pdd(lp, ids, frequencies, cap) == pytest.approx(expected, rel=1e-12, abs=1e-15)
    assert 0.0 <= likelihood.dc_pdd(lp, ids, frequencies, cap) <= cap * (1 + 1e-12)  # a mean of caps: rounding


def test_dc_pdd_counts_a_repeated_token_once_at_its_first_occurrence():
    frequencies = np.array([0.5, 0.25, 0.25])
    first = likelihood.dc_pdd([-0.1, -0.2], [1, 2], frequencies, cap=10.0)
    assert likelihood.dc_pdd([-0.1, -0.2, -5.0, -0.01], [1, 2, 1, 2], frequencies, cap=10.0) == first
    assert first == pytest.approx((math.exp(-0.1) + math.exp(-0.2)) * math.log(4) / 2)


def test_gap_k_and_dc_pdd_bad_inputs_are_reported():
    with pytest.raises(JaxcontamError, match="with_max=True"):
        likelihood.gap_k([-1.0, -2.0], None, [1.0, 1.0])
    with pytest.raises(JaxcontamError, match="window must be at least one"):
        likelihood.gap_k([-1.0], [-1.0], [1.0], window=0)
    with pytest.raises(JaxcontamError, match="id of every scored token"):
        likelihood.dc_pdd([-1.0, -2.0], [3], [0.5, 0.5])
    with pytest.raises(JaxcontamError, match="another tokenizer"):
        likelihood.dc_pdd([-1.0], [7], [0.5, 0.5])
    with pytest.raises(JaxcontamError, match="dc_pdd_cap"):
        likelihood.dc_pdd([-1.0], [1], [0.5, 0.5], cap=0.0)
    with pytest.raises(JaxcontamError, match="gap_window"):
        likelihood.LikelihoodSettings(gap_window=0)


def test_directions_and_names():
    """Both new scores read higher = seen; DC-PDD is a score only with a frequency table."""
    assert {"gap_k", "dc_pdd"}.isdisjoint(likelihood.LOWER_MEANS_SEEN)
    assert likelihood.likelihood_detectors(likelihood.LikelihoodSettings()) == likelihood.LIKELIHOOD_DETECTORS
    assert "dc_pdd" not in likelihood.LIKELIHOOD_DETECTORS
