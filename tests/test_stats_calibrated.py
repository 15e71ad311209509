"""Calibrated PaCoST: p-values equal to scipy or to enumeration from the definition, properties, and the
false-positive rate under a simulated biased null (an item-level rephrasing bias both models share)."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from jaxcontam.stats import calibrated
from jaxcontam.stats.calibrated import fresh_items_test, reference_test, uncalibrated_test
from jaxcontam.stats.simulation import biased_clean_models as _biased_null  # also experiments/stats/levels.py's
from jaxcontam.stats.validation import StatsInputError

ALTERNATIVES = ("greater", "less", "two-sided")


def _confidences(rng, n):
    return rng.uniform(0, 1, (4, n))


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_reference_t_and_wilcoxon_equal_scipy(alternative):
    rng = np.random.default_rng(1)
    for n in (8, 30, 70):
        a_o, a_r, r_o, r_r = _confidences(rng, n)
        gap_a, gap_r = a_o - a_r, r_o - r_r
        t = reference_test(a_o, a_r, r_o, r_r, method="t", alternative=alternative)
        expected = scipy_stats.ttest_rel(gap_a, gap_r, alternative=alternative)
        assert t.pvalue == pytest.approx(expected.pvalue, rel=1e-9)
        assert t.statistic == pytest.approx(expected.statistic, rel=1e-9)
        interval = t.confidence_interval(0.95)
        ci = expected.confidence_interval(0.95)
        assert (interval.low, interval.high) == pytest.approx((ci.low, ci.high), rel=1e-9)
        w = reference_test(a_o, a_r, r_o, r_r, method="wilcoxon", alternative=alternative)
        assert w.pvalue == pytest.approx(scipy_stats.wilcoxon(gap_a - gap_r, alternative=alternative).pvalue, rel=1e-9)


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_reference_permutation_equals_enumeration_and_scipy(alternative):
    rng = np.random.default_rng(2)
    a_o, a_r, r_o, r_r = _confidences(rng, 11)
    d = (a_o - a_r) - (r_o - r_r)
    sums = np.array([np.dot(signs, d) for signs in itertools.product((-1, 1), repeat=len(d))])
    greater, less = np.mean(sums >= d.sum() - 1e-12), np.mean(sums <= d.sum() + 1e-12)
    brute = {"greater": greater, "less": less, "two-sided": min(1, 2 * min(greater, less))}[alternative]
    result = reference_test(a_o, a_r, r_o, r_r, alternative=alternative)
    assert result.pvalue == pytest.approx(brute, rel=1e-12)
    scipy_p = scipy_stats.permutation_test(
        (a_o - a_r, r_o - r_r),
        lambda x, y: np.mean(x - y),
        permutation_type="samples",
        alternative=alternative,
        n_resamples=np.inf,
    ).pvalue
    assert result.pvalue == pytest.approx(scipy_p, rel=1e-9)
    assert result.design == "reference" and result.n == 11 and result.method == "permutation"


def _brute_two_sample(first, second, alternative):
    pooled, n = np.concatenate([first, second]), len(first)
    observed = first.mean() - second.mean()
    diffs = []
    for chosen in itertools.combinations(range(len(pooled)), n):
        mask = np.zeros(len(pooled), bool)
        mask[list(chosen)] = True
        diffs.append(pooled[mask].mean() - pooled[~mask].mean())
    diffs = np.array(diffs)
    greater, less = np.mean(diffs >= observed - 1e-12), np.mean(diffs <= observed + 1e-12)
    return {"greater": greater, "less": less, "two-sided": min(1, 2 * min(greater, less))}[alternative]


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_fresh_permutation_equals_enumeration_and_scipy(alternative):
    rng = np.random.default_rng(3)
    b_o, b_r = rng.uniform(0, 1, (2, 7))
    f_o, f_r = rng.uniform(0, 1, (2, 6))
    result = fresh_items_test(b_o, b_r, f_o, f_r, alternative=alternative)
    assert result.detail == "exact" and (result.n, result.n_fresh) == (7, 6)
    assert result.pvalue == pytest.approx(_brute_two_sample(b_o - b_r, f_o - f_r, alternative), rel=1e-12)
    scipy_p = scipy_stats.permutation_test(
        (b_o - b_r, f_o - f_r),
        lambda x, y: np.mean(x) - np.mean(y),
        permutation_type="independent",
        alternative=alternative,
        n_resamples=np.inf,
    ).pvalue
    assert result.pvalue == pytest.approx(scipy_p, rel=1e-9)


def test_fresh_monte_carlo_agrees_with_exact(monkeypatch):
    rng = np.random.default_rng(4)
    b_o, b_r = rng.uniform(0, 1, (2, 7))
    b_o = b_o + 0.3
    f_o, f_r = rng.uniform(0, 1, (2, 6))
    exact = fresh_items_test(b_o, b_r, f_o, f_r).pvalue
    monkeypatch.setattr(calibrated, "EXACT_SPLITS_MAX", 0)
    approx = fresh_items_test(b_o, b_r, f_o, f_r, resamples=9999)
    assert approx.detail.startswith("monte carlo")
    assert approx.pvalue == pytest.approx(exact, abs=0.015)


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_fresh_mannwhitney_equals_scipy(alternative):
    rng = np.random.default_rng(5)
    b_o, b_r = np.round(rng.uniform(0, 1, (2, 40)), 1)  # ties
    f_o, f_r = np.round(rng.uniform(0, 1, (2, 25)), 1)
    result = fresh_items_test(b_o, b_r, f_o, f_r, method="mannwhitney", alternative=alternative)
    expected = scipy_stats.mannwhitneyu(b_o - b_r, f_o - f_r, alternative=alternative)
    assert result.pvalue == pytest.approx(expected.pvalue, rel=1e-12)
    assert result.statistic == pytest.approx(expected.statistic / (40 * 25))


def test_missing_confidences_are_dropped_and_counted():
    a_o = [0.9, np.nan, 0.7, 0.6, 0.8]
    a_r = [0.5, 0.4, 0.6, None, 0.2]
    r_o = [0.5, 0.5, np.nan, 0.5, 0.5]
    r_r = [0.4, 0.4, 0.4, 0.4, 0.4]
    result = reference_test(a_o, a_r, r_o, r_r)
    assert result.n == 2 and result.n_dropped == 3
    fresh = fresh_items_test(a_o, a_r, r_o, r_r)
    assert (fresh.n, fresh.n_fresh) == (3, 4) and fresh.n_dropped == 3
    with pytest.raises(StatsInputError, match="one entry per item"):
        reference_test([0.1, 0.2], [0.1, 0.2], [0.1], [0.1])
    with pytest.raises(StatsInputError, match="method"):
        fresh_items_test(a_o, a_r, r_o, r_r, method="t")


def test_fresh_bootstrap_interval_brackets_the_mean_difference():
    rng = np.random.default_rng(6)
    result = fresh_items_test(*rng.uniform(0, 1, (2, 30)) + [[0.2], [0]], *rng.uniform(0, 1, (2, 30)))
    interval = result.confidence_interval(0.95, alternative="two-sided")
    assert interval.low < result.mean_difference < interval.high
    assert result.confidence_interval(0.95).high == np.inf


quarters = st.lists(st.integers(-8, 8), min_size=4, max_size=8).map(lambda v: np.array(v, float) / 4)


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_item_bias_cancels_and_roles_swap(data):
    """A per-item bias added to both models' originals leaves the p-value unchanged; swapping the models turns
    "greater" into "less"."""
    n = data.draw(st.integers(4, 12))
    column = st.lists(st.integers(-8, 8), min_size=n, max_size=n).map(lambda v: np.array(v, float) / 4)
    a_o, a_r, r_o, r_r, bias = (data.draw(column) for _ in range(5))
    plain = reference_test(a_o, a_r, r_o, r_r)
    shifted = reference_test(a_o + bias, a_r, r_o + bias, r_r)
    assert shifted.pvalue == pytest.approx(plain.pvalue, rel=1e-12)
    assert reference_test(r_o, r_r, a_o, a_r, alternative="less").pvalue == pytest.approx(plain.pvalue, rel=1e-12)
    assert 0 < plain.pvalue <= 1


@settings(max_examples=30, deadline=None)
@given(quarters, quarters, quarters, quarters, st.integers(-4, 4))
def test_fresh_shift_invariance_and_symmetry(b_o, b_r, f_o, f_r, shift):
    b_r, f_r = b_r[: len(b_o)], f_r[: len(f_o)]
    b_o, f_o = b_o[: len(b_r)], f_o[: len(f_r)]
    plain = fresh_items_test(b_o, b_r, f_o, f_r)
    moved = fresh_items_test(b_o + shift / 4, b_r, f_o + shift / 4, f_r)
    assert moved.pvalue == pytest.approx(plain.pvalue, rel=1e-12)
    swapped = fresh_items_test(f_o, f_r, b_o, b_r, alternative="less")
    assert swapped.pvalue == pytest.approx(plain.pvalue, rel=1e-12)


def _band(datasets, alpha=0.05):
    return scipy_stats.binom.ppf(0.005, datasets, alpha), scipy_stats.binom.ppf(0.995, datasets, alpha)


def test_false_positive_rate_under_the_biased_null():
    """The calibrated designs hold alpha = 0.05 (99% binomial band) where PaCoST's own test rejects almost
    always; both still detect a real contamination effect."""
    rng = np.random.default_rng(7)
    datasets, n, alpha = 300, 40, 0.05
    counts = {"reference": 0, "fresh": 0, "uncalibrated": 0, "reference power": 0, "fresh power": 0}
    for _ in range(datasets):
        (a_o, a_r), (r_o, r_r) = _biased_null(rng, n)
        fresh_o, fresh_r = _biased_null(rng, n)[0]
        counts["reference"] += reference_test(a_o, a_r, r_o, r_r, resamples=999).pvalue < alpha
        counts["fresh"] += fresh_items_test(a_o, a_r, fresh_o, fresh_r, resamples=999).pvalue < alpha
        counts["uncalibrated"] += uncalibrated_test(a_o, a_r, resamples=999).pvalue < alpha
        (c_o, c_r), (s_o, s_r) = _biased_null(rng, n, delta=0.6)
        counts["reference power"] += reference_test(c_o, c_r, s_o, s_r, resamples=999).pvalue < alpha
        counts["fresh power"] += fresh_items_test(c_o, c_r, fresh_o, fresh_r, resamples=999).pvalue < alpha
    low, high = _band(datasets, alpha)
    assert low <= counts["reference"] <= high, counts
    assert low <= counts["fresh"] <= high, counts
    assert counts["uncalibrated"] > 0.9 * datasets, counts
    assert counts["reference power"] > 0.8 * datasets and counts["fresh power"] > 0.8 * datasets, counts
