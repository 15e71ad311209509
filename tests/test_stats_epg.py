"""EPG (ConTAM): a constructed benchmark with a known gain, hand-computed z, and a hand-rolled bootstrap."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxcontam.errors import JaxcontamError
from jaxcontam.stats import epg_curve, select_threshold
from jaxcontam.stats.bootstrap import resample_counts


def constructed_benchmark():
    """Scores 0..99, ten items each; below 60 half are correct, from 60 up eight in ten (+0.3)."""
    scores = np.repeat(np.arange(100.0), 10)
    correct = np.concatenate([np.arange(10) < (8 if s >= 60 else 5) for s in range(100)]).astype(float)
    return scores, correct


def test_constructed_case_recovers_threshold_and_gain():
    scores, correct = constructed_benchmark()
    curve = epg_curve(scores, correct, resamples=200)
    chosen = select_threshold(curve).row
    assert chosen.threshold == 60.0
    assert chosen.frac_contaminated == pytest.approx(0.4)
    assert chosen.accuracy_difference == pytest.approx(0.3)
    assert chosen.perf_clean == pytest.approx(0.5) and chosen.perf_contaminated == pytest.approx(0.8)
    # hand calculation: Perf(full) = 0.6 * 0.5 + 0.4 * 0.8 = 0.62, EPG = 0.12,
    # sigma = sqrt(0.62 * 0.38) (0/1 scores, ddof 0), stderr = sigma / sqrt(600)
    sigma = np.sqrt(0.62 * 0.38)
    assert curve.sigma == pytest.approx(sigma)
    assert chosen.epg == pytest.approx(0.12)
    assert chosen.stderr == pytest.approx(sigma / np.sqrt(600))
    assert chosen.z == pytest.approx(0.12 / (sigma / np.sqrt(600)))
    assert chosen.epg_ci_low < 0.12 < chosen.epg_ci_high


def test_noisy_case_recovers_threshold_and_gain_approximately():
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 100, 3000).astype(float)
    correct = (rng.random(3000) < np.where(scores >= 60, 0.8, 0.5)).astype(float)
    chosen = select_threshold(epg_curve(scores, correct, resamples=300)).row
    assert 52 <= chosen.threshold <= 68
    assert chosen.accuracy_difference == pytest.approx(0.3, abs=0.06)
    assert chosen.epg_ci_low < 0.12 < chosen.epg_ci_high


def test_bootstrap_interval_equals_a_hand_rolled_bootstrap():
    rng = np.random.default_rng(1)
    scores = rng.integers(0, 8, 60).astype(float)
    correct = (rng.random(60) < 0.4 + 0.05 * scores).astype(float)
    curve = epg_curve(scores, correct, thresholds=[3.0, 6.0], resamples=300, seed=9, level=0.9)
    draws = np.concatenate(list(resample_counts(60, 300, 9)))
    for row in curve:
        epgs = []
        for counts in draws:
            s, c = np.repeat(scores, counts), np.repeat(correct, counts)
            clean = s < row.threshold
            if clean.any():
                epgs.append(c.mean() - c[clean].mean())
        np.testing.assert_allclose([row.epg_ci_low, row.epg_ci_high], np.quantile(epgs, [0.05, 0.95]), rtol=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.booleans()), min_size=2, max_size=40))
def test_rows_match_the_definitions(items):
    scores = np.array([s for s, _ in items], dtype=float)
    correct = np.array([c for _, c in items], dtype=float)
    curve = epg_curve(scores, correct, resamples=20)
    assert [row.threshold for row in curve] == sorted(set(scores.tolist()))
    for row in curve:
        contaminated = scores >= row.threshold
        assert row.n_contaminated == contaminated.sum() and row.n_clean == (~contaminated).sum()
        assert row.frac_contaminated == pytest.approx(contaminated.mean())
        if row.n_clean:
            assert row.epg == pytest.approx(correct.mean() - correct[~contaminated].mean())
            if correct.std() > 0:
                assert row.z == pytest.approx(row.epg / (correct.std() / np.sqrt(row.n_clean)))
        else:
            assert np.isnan(row.epg) and np.isnan(row.z)


def test_no_threshold_qualifies_says_why():
    scores = np.repeat(np.arange(50.0), 4)
    correct = np.tile([1.0, 0.0], 100)  # performance unrelated to contamination
    selection = select_threshold(epg_curve(scores, correct, resamples=50))
    assert selection.row is None and "no threshold has z > 1.645" in selection.reason
    small = select_threshold(epg_curve(scores[:12], correct[:12], resamples=50), min_clean=10, min_contaminated=10)
    assert small.row is None and "12 items" in small.reason


def test_default_grid_is_capped():
    scores = np.random.default_rng(2).random(5000)
    curve = epg_curve(scores, scores > 0.5, resamples=20, max_thresholds=50)
    assert len(curve) == 50
    assert curve[0].threshold == scores.min() and curve[-1].threshold == scores.max()


@pytest.mark.parametrize("scores, correct, message", [
    ([0.1, np.nan], [1, 0], r"scores\[1\] is nan"),
    ([0.1, 0.2], [1], "one entry per item"),
    ([], [], "at least one item"),
])
def test_bad_input(scores, correct, message):
    with pytest.raises(JaxcontamError, match=message):
        epg_curve(scores, correct)
    with pytest.raises(JaxcontamError, match="thresholds must be finite"):
        epg_curve([0.1, 0.2], [1, 0], thresholds=[0.1, np.nan])
