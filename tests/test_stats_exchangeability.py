"""Oren et al. exchangeability statistic: mean chunk difference over its standard error, t with r - 1 df."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from jaxcontam.errors import JaxcontamError
from jaxcontam.stats import exchangeability_statistic


@settings(max_examples=50, deadline=None)
@given(st.integers(2, 30), st.integers(1, 8), st.integers(0, 2**31 - 1), st.sampled_from(["greater", "two-sided"]))
def test_equals_one_sample_t_on_chunk_differences(chunks, permutations, seed, alternative):
    rng = np.random.default_rng(seed)
    canonical = rng.normal(-500, 20, chunks)
    permuted = canonical[:, None] + rng.normal(-0.5, 2.0, (chunks, permutations))
    result = exchangeability_statistic(canonical, permuted, alternative=alternative)
    differences = canonical - permuted.mean(axis=1)
    reference = scipy_stats.ttest_1samp(differences, 0.0, alternative=alternative)
    assert result.df == chunks - 1
    np.testing.assert_allclose([result.statistic, result.pvalue], [reference.statistic, reference.pvalue], rtol=1e-9)


def test_hand_computed_example():
    # differences 1, 2, 3: mean 2, sd 1, stderr 1/sqrt(3), t = 2 sqrt(3), 2 df
    result = exchangeability_statistic([-10.0, -20.0, -30.0], [[-11.0, -11.0], [-21.0, -23.0], [-33.0, -33.0]])
    assert result.mean_difference == pytest.approx(2.0)
    assert result.statistic == pytest.approx(2 * np.sqrt(3))
    assert result.pvalue == pytest.approx(scipy_stats.t.sf(2 * np.sqrt(3), 2))


def test_identical_likelihoods_give_no_evidence():
    assert exchangeability_statistic([-5.0, -6.0], [[-5.0], [-6.0]]).pvalue == 1.0


def test_bad_shapes():
    with pytest.raises(JaxcontamError, match="chunks, permutations"):
        exchangeability_statistic([-1.0, -2.0], [-1.0, -2.0])
    with pytest.raises(JaxcontamError, match=">= 2 chunks"):
        exchangeability_statistic([-1.0], [[-1.0]])
