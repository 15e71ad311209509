"""Holm and Benjamini-Hochberg: BH equal to scipy, Holm equal to its step-down definition."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from jaxcontam.errors import JaxcontamError
from jaxcontam.stats import adjust

pvalue_lists = st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=1, max_size=30)


def holm_rejections(pvalues, alpha):
    """Holm (1979) as stated: walk up the sorted p-values, reject while p_(i) <= alpha / (m - i + 1)."""
    order = np.argsort(pvalues, kind="stable")
    reject = np.zeros(len(pvalues), bool)
    for i, index in enumerate(order):
        if pvalues[index] > alpha / (len(pvalues) - i):
            break
        reject[index] = True
    return reject


@settings(max_examples=100, deadline=None)
@given(pvalue_lists)
def test_bh_equals_scipy_false_discovery_control(pvalues):
    np.testing.assert_allclose(
        adjust(pvalues, "bh").pvalues, scipy_stats.false_discovery_control(pvalues), rtol=1e-12, atol=1e-15
    )


@settings(max_examples=100, deadline=None)
@given(pvalue_lists, st.sampled_from([0.01, 0.05, 0.1]))
def test_holm_decisions_equal_the_step_down_procedure(pvalues, alpha):
    result = adjust(pvalues, "holm", alpha=alpha)
    np.testing.assert_array_equal(result.reject, holm_rejections(np.array(pvalues), alpha))


@settings(max_examples=100, deadline=None)
@given(pvalue_lists, st.sampled_from(["holm", "bh"]))
def test_adjusted_pvalues_are_monotone_and_bounded(pvalues, method):
    p = np.array(pvalues)
    adjusted = adjust(p, method).pvalues
    assert np.all(adjusted >= p - 1e-15) and np.all(adjusted <= 1.0)
    order = np.argsort(p, kind="stable")
    assert np.all(np.diff(adjusted[order]) >= -1e-15)  # same order as the raw p-values
    assert np.all(adjust(p, "holm").pvalues >= adjust(p, "bh").pvalues - 1e-15)  # FWER is stricter than FDR


def test_known_values():
    # Holm: 0.01*4, 0.02*3, 0.03*2 -> 0.06, 0.04*1 -> max(0.06, 0.04)
    np.testing.assert_allclose(adjust([0.01, 0.04, 0.03, 0.02], "holm").pvalues, [0.04, 0.06, 0.06, 0.06])
    result = adjust([0.01, 0.04, 0.03, 0.02], "bh", alpha=0.04)
    np.testing.assert_allclose(result.pvalues, [0.04, 0.04, 0.04, 0.04])
    assert result.reject.all()


@pytest.mark.parametrize("pvalues, message", [([0.1, 1.5], r"pvalues\[1\] = 1.5"), ([0.1, None], "pvalues")])
def test_bad_pvalues(pvalues, message):
    with pytest.raises(JaxcontamError, match=message):
        adjust(pvalues)
    with pytest.raises(JaxcontamError, match="method='bonferroni'"):
        adjust([0.1], method="bonferroni")


def _holm_flags(num_tests: int, alpha: float, resamples: int) -> int:
    """How many of `num_tests` clearly contaminated runs (25 positive differences: exact p = 2^-25) Holm flags."""
    from jaxcontam.stats import paired_test

    rng = np.random.default_rng(0)
    pvalues = [
        paired_test(
            rng.uniform(0.6, 1.0, 25), rng.uniform(0.0, 0.4, 25), method="permutation", seed=i, resamples=resamples
        ).pvalue
        for i in range(num_tests)
    ]
    return int(adjust(pvalues, "holm", alpha=alpha).reject.sum())


def test_monte_carlo_floor_blocks_holm_without_sizing_and_sized_resamples_restore_it():
    from jaxcontam.stats import sweep_resamples

    num_tests, alpha = 60, 0.005  # alpha / m = 8.3e-5 lies below the 1e-4 floor of 9,999 flips
    assert _holm_flags(num_tests, alpha, 9_999) == 0
    sized = sweep_resamples(num_tests, alpha, minimum=9_999)
    assert 1 / (1 + sized) <= alpha / (10 * num_tests)
    assert _holm_flags(num_tests, alpha, sized) == num_tests


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 10_000), st.sampled_from([0.001, 0.01, 0.05, 0.1]), st.integers(1, 100_000))
def test_sweep_resamples_puts_the_floor_below_the_smallest_threshold(num_tests, alpha, minimum):
    from jaxcontam.stats import sweep_resamples

    resamples = sweep_resamples(num_tests, alpha, minimum)
    assert resamples >= minimum
    assert 1 / (1 + resamples) <= alpha / (10 * num_tests) * (1 + 1e-12)
