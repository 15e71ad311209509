"""Paired tests: equal to scipy where scipy has the test, exact where enumeration is possible."""

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from jaxcontam.errors import JaxcontamError
from jaxcontam.stats import filter_pairs, paired_test
from jaxcontam.stats.signflip import exact_pvalue
from jaxcontam.stats.wilcoxon import signed_rank_counts, wilcoxon_pvalues

ALTERNATIVES = ("greater", "less", "two-sided")


def _difference_sets(seed=0, count=150):
    """Continuous, tied, zero-heavy and P(True)-like differences across every scipy Wilcoxon branch."""
    rng = np.random.default_rng(seed)
    for i in range(count):
        n = 13 if i == 1 else int(rng.choice([3, 8, 10, 14, 30, 50, 51, 120]))  # scipy: n <= 13 permutes
        kind = i % 4
        if kind == 0:
            d = rng.normal(0.1, 1.0, n)
        elif kind == 1:
            d = rng.integers(-3, 4, n) / 4.0  # ties and zeros
        elif kind == 2:
            d = np.round(rng.normal(0.0, 1.0, n), 1)
        else:
            original, rephrased = np.round(rng.beta(0.5, 0.3, (2, n)), 2)
            d = original - rephrased
        if np.any(d != 0):
            yield d


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_t_equals_scipy_ttest_rel(alternative):
    rng = np.random.default_rng(1)
    for d in _difference_sets(1):
        rephrased = rng.random(len(d))
        original = rephrased + d
        if np.std(original - rephrased) == 0:
            continue
        ours = paired_test(original, rephrased, method="t", alternative=alternative)
        ref = scipy_stats.ttest_rel(original, rephrased, alternative=alternative)
        np.testing.assert_allclose(ours.statistic, ref.statistic, rtol=1e-9)
        np.testing.assert_allclose(ours.pvalue, ref.pvalue, rtol=1e-9, atol=1e-300)
        for level in (0.9, 0.95):
            ci, ref_ci = ours.confidence_interval(level), ref.confidence_interval(level)
            np.testing.assert_allclose([ci.low, ci.high], [ref_ci.low, ref_ci.high], rtol=1e-9)


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_wilcoxon_equals_scipy_including_zeros_and_ties(alternative):
    branches = set()
    for d in _difference_sets(2):
        ref = scipy_stats.wilcoxon(d, alternative=alternative)
        r_plus, pvalue, branch = wilcoxon_pvalues(d[None], alternative)
        np.testing.assert_allclose(pvalue[0], ref.pvalue, rtol=1e-10)
        if alternative != "two-sided":  # scipy reports min(R+, R-) for two-sided
            assert r_plus[0] == ref.statistic
        branches.add(branch[0])
    assert branches == {"exact", "permutation", "normal"}


SMALL_TIED = st.lists(st.integers(-5, 5), min_size=2, max_size=9)  # scipy permutes all 2^n signs: keep n small
LARGE_TIED = st.lists(st.integers(-5, 5), min_size=14, max_size=70)  # scipy's normal approximation


@settings(max_examples=60, deadline=None)
@given(st.one_of(SMALL_TIED, LARGE_TIED), st.sampled_from(ALTERNATIVES))
def test_wilcoxon_and_sign_equal_scipy_on_tie_heavy_data(values, alternative):
    d = np.array(values, dtype=np.float64) / 2.0
    if not d.any():
        return
    _, pvalue, _ = wilcoxon_pvalues(d[None], alternative)
    assert pvalue[0] == pytest.approx(scipy_stats.wilcoxon(d, alternative=alternative).pvalue, rel=1e-10)
    sign = paired_test(d, np.zeros_like(d), method="sign", alternative=alternative).pvalue
    reference = scipy_stats.binomtest(int((d > 0).sum()), int((d != 0).sum()), 0.5, alternative=alternative)
    assert sign == pytest.approx(reference.pvalue, rel=1e-10)


def test_wilcoxon_exact_null_distribution_by_enumeration():
    for m in (1, 5, 9):
        sums = [sum(s) for r in range(m + 1) for s in itertools.combinations(range(1, m + 1), r)]
        np.testing.assert_array_equal(signed_rank_counts(m), np.bincount(sums))


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_sign_test_equals_binomtest_on_nonzero_differences(alternative):
    for d in _difference_sets(3):
        ours = paired_test(d, np.zeros_like(d), method="sign", alternative=alternative)
        ref = scipy_stats.binomtest(int((d > 0).sum()), int((d != 0).sum()), 0.5, alternative=alternative)
        np.testing.assert_allclose(ours.pvalue, ref.pvalue, rtol=1e-10)
        assert ours.statistic == (d > 0).sum()


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_exact_permutation_equals_scipy_permutation_test(alternative):
    rng = np.random.default_rng(4)
    for _ in range(20):
        d = rng.integers(-4, 5, int(rng.integers(2, 12))) / 8.0  # dyadic: sums are exact, ties are real ties
        ours = paired_test(d, np.zeros_like(d), method="permutation", alternative=alternative)
        ref = scipy_stats.permutation_test(
            (d,), np.mean, permutation_type="samples", n_resamples=np.inf, alternative=alternative
        )
        assert ours.detail == "exact"
        np.testing.assert_allclose(ours.pvalue, ref.pvalue, rtol=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-6, 6), min_size=1, max_size=10), st.sampled_from(ALTERNATIVES))
def test_exact_permutation_matches_brute_force(values, alternative):
    d = np.array(values, dtype=np.float64) / 4.0
    sums = np.array([np.dot(signs, d) for signs in itertools.product((1.0, -1.0), repeat=len(d))])
    greater, less = np.mean(sums >= d.sum()), np.mean(sums <= d.sum())
    expected = {"greater": greater, "less": less, "two-sided": min(1.0, 2 * min(greater, less))}[alternative]
    assert exact_pvalue(d, alternative) == pytest.approx(expected, rel=1e-12)


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.integers(0, 64), min_size=3, max_size=40),
    st.integers(0, 2**31 - 1),
    st.sampled_from(("t", "wilcoxon", "sign", "permutation")),
    st.sampled_from((0.25, 2.0, 8.0)),
)
def test_pvalue_properties(values, seed, method, scale):
    rng = np.random.default_rng(seed)
    original = np.array(values) / 64.0  # dyadic confidences: shifts and rescalings below are exact
    rephrased = np.clip(original + rng.integers(-12, 13, len(original)) / 64.0, 0, 1)
    d = original - rephrased
    if method == "t" and np.all(d == d[0]):
        return
    kwargs = dict(method=method, seed=seed, resamples=199, exact_max=8)
    greater = paired_test(original, rephrased, alternative="greater", **kwargs)
    assert 0.0 <= greater.pvalue <= 1.0
    if method == "permutation":
        assert greater.pvalue >= 1.0 / 200  # never 0
    # swapping the members of every pair turns "greater" into "less"
    swapped = paired_test(rephrased, original, alternative="less", **kwargs)
    assert swapped.pvalue == pytest.approx(greater.pvalue, rel=1e-9, abs=1e-12)
    # a common shift or a positive rescaling of both confidences changes nothing
    moved = paired_test(original * scale + 3.0, rephrased * scale + 3.0, alternative="greater", **kwargs)
    assert moved.pvalue == pytest.approx(greater.pvalue, rel=1e-6, abs=1e-9)
    # the two-sided p-value is twice the smaller one-sided p-value (capped at 1) for these symmetric nulls
    less = paired_test(original, rephrased, alternative="less", **kwargs)
    two_sided = paired_test(original, rephrased, alternative="two-sided", **kwargs)
    if method != "permutation" or greater.detail == "exact":
        assert two_sided.pvalue == pytest.approx(min(1.0, 2 * min(greater.pvalue, less.pvalue)), rel=1e-6)


def test_monte_carlo_permutation_is_seeded_and_close_to_exact():
    rng = np.random.default_rng(5)
    d = np.round(rng.normal(0.15, 1.0, 18), 2)
    exact = paired_test(d, np.zeros(18), method="permutation").pvalue
    monte_carlo = paired_test(d, np.zeros(18), method="permutation", exact_max=5, resamples=20000, seed=3)
    assert monte_carlo.detail.startswith("monte carlo")
    assert (
        monte_carlo.pvalue
        == paired_test(d, np.zeros(18), method="permutation", exact_max=5, resamples=20000, seed=3).pvalue
    )
    assert abs(monte_carlo.pvalue - exact) < 4 * np.sqrt(exact * (1 - exact) / 20000) + 1e-4


def test_effect_size_and_degenerate_spread():
    result = paired_test([0.9, 0.8, 0.7, 0.6], [0.5, 0.5, 0.5, 0.5], method="t")
    d = np.array([0.4, 0.3, 0.2, 0.1])
    assert result.effect_size == pytest.approx(d.mean() / d.std(ddof=1))
    assert result.mean_difference == pytest.approx(0.25)
    constant = paired_test([0.7, 0.7, 0.7], [0.5, 0.5, 0.5], method="t")
    assert constant.effect_size == np.inf and constant.pvalue == 0.0 and constant.statistic == np.inf
    ties = paired_test([0.5, 0.5, 0.5], [0.5, 0.5, 0.5], method="t")
    assert ties.effect_size == 0.0 and ties.pvalue == 1.0
    for method in ("wilcoxon", "sign", "permutation"):
        assert paired_test([0.5, 0.5], [0.5, 0.5], method=method).pvalue == 1.0


def test_bootstrap_interval_is_seeded_and_near_the_t_interval():
    rng = np.random.default_rng(6)
    rephrased = rng.random(400)
    original = rephrased + rng.normal(0.05, 0.3, 400)
    result = paired_test(original, rephrased, method="permutation", seed=11)
    t_ci = paired_test(original, rephrased, method="t").confidence_interval(0.95, alternative="two-sided")
    ci = result.confidence_interval(0.95, alternative="two-sided")
    assert ci == result.confidence_interval(0.95, alternative="two-sided")
    assert ci.low == pytest.approx(t_ci.low, abs=0.006) and ci.high == pytest.approx(t_ci.high, abs=0.006)
    one_sided = result.confidence_interval(0.95)
    assert one_sided.high == np.inf and ci.low < one_sided.low < result.mean_difference


def test_filtering_records_reasons_and_the_test_counts_them():
    original = [0.9, None, 0.7, float("nan"), 0.8, 0.6, 0.95]
    rephrased = [0.5, 0.4, None, 0.3, 0.2, 0.1, float("inf")]
    answered_original = [True, True, True, True, False, True, True]
    pairs = filter_pairs(original, rephrased, answered_original=answered_original)
    assert pairs.reasons == (
        None,
        "original confidence missing",
        "rephrased confidence missing",
        "original confidence missing",
        "no answer to the original",
        None,
        "rephrased confidence missing",
    )
    assert pairs.n_kept == 2 and pairs.n_dropped == 5
    np.testing.assert_array_equal(pairs.original, [0.9, 0.6])
    result = paired_test(original, rephrased, method="sign", answered_original=answered_original)
    assert result.n == 2 and result.n_dropped == 5
    assert result.drop_reasons == {
        "original confidence missing": 2,
        "rephrased confidence missing": 2,
        "no answer to the original": 1,
    }


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(original=[0.1, 0.2], rephrased=[0.1]), "one entry per item"),
        (dict(original=["high", 0.2], rephrased=[0.1, 0.2]), "original: expected a sequence of numbers"),
        (dict(original=[0.1, 0.2], rephrased=[0.1, 0.2], method="z"), "method='z'"),
        (dict(original=[0.1, 0.2], rephrased=[0.1, 0.2], alternative="bigger"), "alternative='bigger'"),
        (dict(original=[None, 0.2], rephrased=[0.1, None], method="t"), "needs at least 2 usable pairs"),
        (dict(original=[0.1, 0.2], rephrased=[0.1, 0.2], answered_original=[1]), "answered_original"),
    ],
)
def test_bad_input_raises_a_jaxcontam_error(kwargs, message):
    with pytest.raises(JaxcontamError, match=message):
        paired_test(**kwargs)


def test_scipy_reference_is_silent_on_our_inputs():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        paired_test([0.2, 0.3, 0.9], [0.1, 0.1, 0.1], method="wilcoxon")
