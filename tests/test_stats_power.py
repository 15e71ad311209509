"""Power: exact formulas checked against simulation and published sample sizes; inverses are consistent."""

import numpy as np
import pytest

from jaxcontam.errors import JaxcontamError
from jaxcontam.stats import minimum_detectable_effect, power, sample_size
from jaxcontam.stats.batched import paired_pvalues


@pytest.mark.parametrize(
    "effect, alternative, expected", [(0.5, "two-sided", 34), (0.3, "greater", 71), (0.8, "two-sided", 15)]
)
def test_t_sample_sizes_match_published_tables(effect, alternative, expected):
    """Cohen (1988) / G*Power paired-t sample sizes at alpha 0.05, power 0.8."""
    assert sample_size(effect, alternative=alternative) == expected


@pytest.mark.parametrize("method", ["t", "sign", "wilcoxon", "permutation"])
def test_power_matches_simulation_for_normal_differences(method):
    rng = np.random.default_rng(3)
    n, effect, datasets = 40, 0.35, 1500
    d = rng.normal(effect, 1.0, (datasets, n))
    _, p = paired_pvalues(d, method, "greater", resamples=199, seed=1)
    simulated = (p <= 0.05).mean()
    predicted = power(effect, n, method=method)
    tolerance = 3.5 * np.sqrt(predicted * (1 - predicted) / datasets) + (0.02 if method == "wilcoxon" else 0.0)
    assert abs(simulated - predicted) < tolerance, (simulated, predicted)


@pytest.mark.parametrize("method", ["t", "sign", "wilcoxon"])
@pytest.mark.parametrize("alternative", ["greater", "two-sided"])
def test_sample_size_is_the_smallest_that_reaches_the_power(method, alternative):
    n = sample_size(0.4, method=method, alternative=alternative, power_target=0.9)
    assert power(0.4, n, method=method, alternative=alternative) >= 0.9
    assert np.all(power(0.4, np.arange(2, n), method=method, alternative=alternative) < 0.9)


def test_mean_difference_and_sd_are_an_effect_size():
    assert sample_size(mean_difference=0.06, sd=0.2) == sample_size(0.3)


@pytest.mark.parametrize("method", ["t", "sign", "wilcoxon"])
def test_minimum_detectable_effect_inverts_power(method):
    effect = minimum_detectable_effect(120, method=method)
    assert power(effect, 120, method=method) == pytest.approx(0.8, abs=1e-6)
    assert minimum_detectable_effect(120, method=method, sd=0.25) == pytest.approx(0.25 * effect)
    assert minimum_detectable_effect(480, method=method) < effect  # more pairs, smaller detectable effect
    assert minimum_detectable_effect(120, method=method, alternative="less") == pytest.approx(-effect)


def test_less_is_the_mirror_of_greater():
    assert power(-0.3, 50, alternative="less") == pytest.approx(power(0.3, 50))
    assert power(-0.3, 50, method="sign", alternative="less") == pytest.approx(power(0.3, 50, method="sign"))


def test_impossible_requests_say_why():
    with pytest.raises(JaxcontamError, match="null"):
        sample_size(-0.2)
    with pytest.raises(JaxcontamError, match="cannot reach power"):
        minimum_detectable_effect(4, method="sign")  # 4 signs: smallest p is 1/16 > 0.05
    with pytest.raises(JaxcontamError, match="either effect_size or mean_difference"):
        sample_size(0.3, mean_difference=0.1, sd=0.2)
