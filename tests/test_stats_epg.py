"""EPG (ConTAM): a constructed benchmark with a known gain, hand-computed z, a hand-rolled bootstrap, the
finite-population standard error by enumeration, and the max-z permutation test against the exact permutation
distribution and on simulated null benchmarks."""

import itertools
import json
import pathlib
import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from jaxcontam.cli import cli
from jaxcontam.detect.contam import ContamSettings, contam_result
from jaxcontam.detect.registry import DETECTORS
from jaxcontam.errors import JaxcontamError
from jaxcontam.stats import default_thresholds, epg_curve, max_z_test, select_threshold
from jaxcontam.stats.bootstrap import resample_counts
from jaxcontam.stats.simulation import epg_benchmark


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
    # the default grid: every score that leaves some item clean (contaminated means score >= threshold)
    assert [row.threshold for row in epg_curve(scores, correct, resamples=1)] == sorted(set(scores.tolist()))[1:]
    curve = epg_curve(scores, correct, thresholds=sorted(set(scores.tolist())), resamples=20)
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
    assert curve[0].threshold == np.sort(scores)[1] and curve[-1].threshold == scores.max()


def order_statistic_grid(values: np.ndarray, count: int) -> set[float]:
    """The empirical quantiles at p = j / (count - 1), j = 0..count-1, from the definition: the smallest value v
    with #{values <= v} >= p * m (m values), i.e. the ceil(j m / (count - 1))-th smallest (integer arithmetic)."""
    ordered, m = sorted(values.tolist()), len(values)
    return {ordered[max(-(-j * m // (count - 1)), 1) - 1] for j in range(count)}


def mmlu_shaped_scores(distinct_nonzero: int, seed: int = 0) -> np.ndarray:
    """14,042 items (MMLU's test set), 90% scoring exactly 0, the 1,404 others taking `distinct_nonzero` values."""
    rng = np.random.default_rng(seed)
    values = rng.choice(np.arange(1, 10_001) / 10_000, distinct_nonzero, replace=False)
    nonzero = np.concatenate([values, rng.choice(values, 1404 - distinct_nonzero)])
    scores = np.concatenate([np.zeros(14_042 - 1404), nonzero])
    return rng.permutation(scores)


def test_grid_spreads_over_the_nonzero_scores_of_a_mostly_zero_benchmark():
    """Issue 25: 14,042 items, 90% zeros, 1,364 distinct scores gave 22 thresholds (quantiles over all items,
    the zeros included), 21 of them above 0. The grid is now 200 quantiles of the non-zero scores."""
    scores = mmlu_shaped_scores(1364)
    nonzero = scores[scores > 0]
    assert len(np.unique(nonzero)) == 1364 and np.mean(scores == 0) == pytest.approx(0.9, abs=1e-3)
    assert len({tau for tau in order_statistic_grid(scores, 200) if tau > 0}) == 20  # the old grid: over all items
    grid = default_thresholds(scores)
    assert set(grid.tolist()) == order_statistic_grid(nonzero, 200)
    assert len(grid) == 200 and grid[0] == nonzero.min() and grid[-1] == nonzero.max()
    # the lowest threshold leaves exactly the zero-score items clean: "no match" versus "any match"
    curve = epg_curve(scores, np.arange(14_042) % 2, resamples=1)
    assert curve[0].n_clean == np.sum(scores == 0) and curve[-1].n_contaminated == np.sum(scores == nonzero.max())
    # consecutive thresholds are 1,404 / 199 = 7.06 non-zero items apart, give or take a tie (40 repeated values)
    gaps = -np.diff([row.n_contaminated for row in curve])
    assert gaps.min() >= 6 and gaps.max() <= 8


def test_grid_is_every_nonzero_score_when_there_are_at_most_200():
    scores = mmlu_shaped_scores(200, seed=1)
    assert default_thresholds(scores).tolist() == sorted(set(scores.tolist()) - {0.0})
    assert len(default_thresholds(mmlu_shaped_scores(201, seed=1))) < 201  # one more: quantiles


def test_max_z_test_searches_the_nonzero_grid():
    """The search a permutation redoes is the one on the observed data: the grid comes from the scores (never
    permuted), and the largest z over it, computed here from the definition, is the test's statistic."""
    scores = mmlu_shaped_scores(1364, seed=2)
    rng = np.random.default_rng(3)
    correct = (rng.random(14_042) < np.where(scores >= np.quantile(scores[scores > 0], 0.9), 0.8, 0.5)).astype(float)
    grid = sorted(order_statistic_grid(scores[scores > 0], 200))
    best, searched = -np.inf, 0
    for tau in grid:
        clean = scores < tau
        if clean.sum() >= 10 and (~clean).sum() >= 10:
            searched += 1
            best = max(best, (correct.mean() - correct[clean].mean()) / (correct.std() / np.sqrt(clean.sum())))
    result = max_z_test(scores, correct, resamples=199)
    assert result.n_thresholds == searched >= 190 and result.statistic == pytest.approx(best, rel=1e-9)
    assert result.pvalue <= 0.05 and result.threshold > 0  # the gain planted on the top 1% of items is found


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.just(0), st.integers(0, 400)), min_size=1, max_size=300), st.integers(2, 40))
def test_grid_properties(values, max_thresholds):
    scores = np.array(values, dtype=float)
    grid = default_thresholds(scores, max_thresholds)
    above = np.unique(scores[scores > scores.min()])
    assert np.all(np.diff(grid) > 0) and set(grid.tolist()) <= set(above.tolist())
    assert len(grid) <= max_thresholds
    if len(above) <= max_thresholds:
        assert grid.tolist() == above.tolist()
    else:
        assert grid[0] == above[0] and grid[-1] == above[-1]
    for tau in grid:  # every threshold leaves some item clean and some contaminated
        assert (scores < tau).any() and (scores >= tau).any()

    # a strictly increasing relabelling of the scores (exact on these integers) relabels the grid
    def relabel(x):
        return x**3 + 7 * x - 5

    assert default_thresholds(relabel(scores), max_thresholds).tolist() == relabel(grid).tolist()


@pytest.mark.parametrize(
    "scores, correct, message",
    [
        ([0.1, np.nan], [1, 0], r"scores\[1\] is nan"),
        ([0.1, 0.2], [1], "one entry per item"),
        ([], [], "at least one item"),
    ],
)
def test_bad_input(scores, correct, message):
    with pytest.raises(JaxcontamError, match=message):
        epg_curve(scores, correct)
    with pytest.raises(JaxcontamError, match="thresholds must be finite"):
        epg_curve([0.1, 0.2], [1, 0], thresholds=[0.1, np.nan])


# ---- finite-population standard error and the calibrated max-z test ---------------------------------------------


def test_finite_population_stderr_is_the_exact_spread_of_epg_over_all_clean_sets():
    """Every clean set of the same size equally likely: the variance of EPG over all of them, enumerated."""
    correct = np.array([1.0, 0, 0, 1, 1, 0, 1, 1, 0.5])
    n = len(correct)
    scores = np.arange(n, dtype=float)  # threshold t: the first t items are clean
    curve = epg_curve(scores, correct, thresholds=[2.0, 5.0, 7.0], resamples=1)
    for row in curve:
        epgs = [correct.mean() - correct[list(clean)].mean() for clean in itertools.combinations(range(n), row.n_clean)]
        assert row.stderr_finite_population == pytest.approx(np.sqrt(np.mean(np.square(epgs))), rel=1e-12)
        assert np.mean(epgs) == pytest.approx(0.0, abs=1e-12)
        # the paper's stderr is larger by sqrt((n - 1) / n_contaminated)
        assert row.stderr == pytest.approx(row.stderr_finite_population * np.sqrt((n - 1) / row.n_contaminated))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.booleans()), min_size=3, max_size=50))
def test_finite_population_z_is_the_scaled_correlation_with_the_contaminated_indicator(items):
    scores = np.array([s for s, _ in items], dtype=float)
    correct = np.array([c for _, c in items], dtype=float)
    for row in epg_curve(scores, correct, resamples=1):
        contaminated = (scores >= row.threshold).astype(float)
        if 0 < row.n_clean < len(items) and correct.std() > 0:
            r = scipy_stats.pearsonr(contaminated, correct).statistic
            assert row.z_finite_population == pytest.approx(np.sqrt(len(items) - 1) * r, rel=1e-9, abs=1e-12)


def brute_largest_z(scores, correct, z, min_clean=1, min_contaminated=1):
    """Largest z over the distinct scores, straight from the definitions (loops and masks)."""
    best = -np.inf
    for tau in np.unique(scores):
        clean = scores < tau
        n_clean, n_cont = clean.sum(), (~clean).sum()
        if n_clean < min_clean or n_cont < min_contaminated:
            continue
        epg = correct.mean() - correct[clean].mean()
        if z == "z":
            stderr = correct.std() / np.sqrt(n_clean)
        else:
            stderr = correct.std() * np.sqrt(n_cont / (n_clean * (len(scores) - 1)))
        best = max(best, epg / stderr)
    return best


@pytest.mark.parametrize("z", ["z", "z_finite_population"])
@pytest.mark.parametrize(
    "scores, correct",
    [
        ([0, 0, 0, 1, 1, 2, 3, 3, 4, 5], [1, 1, 0, 1, 0, 0, 0, 1, 1, 1]),  # 0/1: the hypergeometric path
        ([0, 0, 1, 2, 3, 3], [0.9, 0.2, 0.8, 0.1, 0.6, 1.0]),  # graded: the shuffling path
    ],
)
def test_pvalue_matches_the_exact_permutation_distribution(scores, correct, z):
    """Every order of the performance values over the items, enumerated (distinct arrangements for 0/1)."""
    scores, correct = np.array(scores, dtype=float), np.array(correct, dtype=float)
    observed = brute_largest_z(scores, correct, z, min_clean=2, min_contaminated=2)
    if set(correct) <= {0.0, 1.0}:
        arrangements = [
            np.isin(np.arange(len(correct)), ones).astype(float)
            for ones in itertools.combinations(range(len(correct)), int(correct.sum()))
        ]
    else:
        arrangements = [np.array(order) for order in itertools.permutations(correct)]
    null = np.array([brute_largest_z(scores, a, z, min_clean=2, min_contaminated=2) for a in arrangements])
    exact = np.mean(null >= observed - 1e-9)
    result = max_z_test(scores, correct, min_clean=2, min_contaminated=2, z=z, resamples=20_000, seed=1)
    assert result.statistic == pytest.approx(observed)
    assert result.pvalue == pytest.approx(exact, abs=4 * np.sqrt(exact * (1 - exact) / 20_000) + 1e-4)


@pytest.mark.parametrize("z", ["z", "z_finite_population"])
def test_pvalue_matches_the_exact_distribution_with_many_correct_items(z):
    """45 items in three score groups of 15, 32 correct: the ones per group are multivariate hypergeometric (scipy)."""
    scores = np.repeat([0.0, 0.5, 1.0], 15)
    correct = np.concatenate([np.arange(15) < k for k in (9, 10, 13)]).astype(float)
    observed = brute_largest_z(scores, correct, z, min_clean=2, min_contaminated=2)
    exact = 0.0
    for low, middle in itertools.product(range(16), range(16)):
        high = 32 - low - middle
        if 0 <= high <= 15:
            arrangement = np.concatenate([np.arange(15) < k for k in (low, middle, high)]).astype(float)
            if brute_largest_z(scores, arrangement, z, min_clean=2, min_contaminated=2) >= observed - 1e-9:
                exact += scipy_stats.multivariate_hypergeom.pmf([low, middle, high], m=[15, 15, 15], n=32)
    result = max_z_test(scores, correct, min_clean=2, min_contaminated=2, z=z, resamples=20_000, seed=2)
    assert result.pvalue == pytest.approx(exact, abs=4 * np.sqrt(exact * (1 - exact) / 20_000) + 1e-4)


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 8), st.integers(0, 1)), min_size=4, max_size=60),
    st.sampled_from(["z", "z_finite_population"]),
    st.integers(0, 2**16),
)
def test_pvalue_invariants(items, z, seed):
    scores = np.array([s for s, _ in items], dtype=float)
    correct = np.array([c for _, c in items], dtype=float)
    result = max_z_test(scores, correct, min_clean=2, min_contaminated=2, z=z, resamples=99, seed=seed)
    curve = epg_curve(scores, correct, resamples=1)
    sized = [row for row in curve if row.n_clean >= 2 and row.n_contaminated >= 2]
    if not sized:
        assert np.isnan(result.statistic) and np.isnan(result.pvalue) and result.n_thresholds == 0
        return
    assert 1 / 100 <= result.pvalue <= 1.0 and result.n_resamples == 99 and result.n_thresholds == len(sized)
    assert result.statistic == pytest.approx(max(getattr(row, z) for row in sized), rel=1e-9, abs=1e-12)
    # a strictly increasing relabelling of the scores is the same benchmark: same grid positions, same p
    relabelled = max_z_test(
        np.exp(scores / 3) + scores**3, correct, min_clean=2, min_contaminated=2, z=z, resamples=99, seed=seed
    )
    assert relabelled.pvalue == result.pvalue and relabelled.statistic == pytest.approx(result.statistic)
    if correct.std() == 0:  # every item performs the same: no threshold can show a gain
        assert result.pvalue == 1.0


def test_largest_z_threshold_agrees_with_select_threshold():
    scores, correct = constructed_benchmark()
    result = max_z_test(scores, correct, resamples=199)
    assert result.threshold == select_threshold(epg_curve(scores, correct, resamples=1)).row.threshold == 60.0
    assert result.pvalue == pytest.approx(1 / 200)  # the floor: no permutation reaches the planted gain


ALPHA = 0.05


def test_max_z_test_holds_its_level_on_simulated_null_benchmarks():
    """300 benchmarks, 100-2000 items, accuracy 0.1-0.9, 0-95% zero scores, the others continuous (a quantile grid
    beyond 200 distinct ones) or 2 decimals; correctness independent of scores.

    experiments/stats/epg_calibration.py runs 1,000 per shape and size (experiments/stats/README.md: EPG section).
    """
    count, rng = 300, np.random.default_rng(2024)
    rejected = 0
    for index in range(count):
        n = int(np.exp(rng.uniform(np.log(100), np.log(2001))))
        scores, correct = epg_benchmark(
            n, rng, accuracy=rng.uniform(0.1, 0.9), zero_share=rng.uniform(0.0, 0.95), decimals=(None, 2)[index % 2]
        )
        rejected += max_z_test(scores, correct, resamples=99, seed=index).pvalue <= ALPHA
    low, high = scipy_stats.binom.interval(0.99, count, ALPHA)
    assert low <= rejected <= high


def test_planted_gain_is_found():
    rng = np.random.default_rng(7)
    scores, correct = epg_benchmark(1000, rng, accuracy=0.5, zero_share=0.7, gain=0.2, gain_share=0.2)
    assert max_z_test(scores, correct, resamples=999).pvalue <= ALPHA


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"z": "t"}, "z='t': expected one of"),
        ({"resamples": 0}, "resamples=0"),
        ({"min_clean": 0}, "min_clean=0"),
    ],
)
def test_max_z_test_bad_input(kwargs, message):
    with pytest.raises(JaxcontamError, match=message):
        max_z_test([0.1, 0.2, 0.3], [1, 0, 1], **kwargs)


STATS_README = pathlib.Path(__file__).resolve().parents[1] / "experiments" / "stats" / "README.md"


def readme_flag_rate(scores: str, n: int) -> float:
    """The paper's rule's flag rate that experiments/stats/README.md reports for null benchmarks of this shape."""
    pattern = rf"^\| {re.escape(scores)} \| {n:,} \| [^|]+ \| [^|]+ \| ([0-9.]+) \["  # scores | n | grid | no test
    return float(re.search(pattern, STATS_README.read_text(), re.M).group(1))


def paper_rule_by_definition(scores: np.ndarray, correct: np.ndarray) -> bool:
    """ConTAM's rule from the paper's definitions: some threshold of the grid (every score leaving an item clean,
    or 200 quantiles of those items) has >= 10 clean and >= 10 contaminated items and
    z = (Perf(full) - Perf(clean)) / (sigma / sqrt(N_clean)) > 1.645."""
    above = scores[scores > scores.min()]
    grid = set(above.tolist()) if len(set(above.tolist())) <= 200 else order_statistic_grid(above, 200)
    clean = scores[None, :] < np.array(sorted(grid))[:, None]  # [threshold, item]
    n_clean = clean.sum(1)
    sized = (n_clean >= 10) & (len(scores) - n_clean >= 10)
    if correct.std() == 0 or not sized.any():
        return False
    epg = correct.mean() - (clean[sized] @ correct) / n_clean[sized]
    return bool(np.any(epg / (correct.std() / np.sqrt(n_clean[sized])) > 1.645))


@pytest.mark.parametrize(
    "scores, zero_share, decimals",
    [("continuous", 0.0, None), ("2 decimals", 0.0, 2), ("90% zeros, continuous", 0.9, None)],
)
def test_paper_rule_flags_the_share_of_null_benchmarks_the_readme_reports(scores, zero_share, decimals):
    """Issue 25: with continuous scores at 500 items the rule flags about a quarter of null benchmarks, not 12-18%.
    200 fresh null benchmarks per shape (another seed than epg_calibration.py): the share the paper's rule flags,
    computed from its definition, has a 99% interval that holds the README's figure."""
    count, rng, flagged = 200, np.random.default_rng(25), 0
    for _ in range(count):
        s, correct = epg_benchmark(500, rng, accuracy=rng.uniform(0.1, 0.9), zero_share=zero_share, decimals=decimals)
        flag = paper_rule_by_definition(s, correct)
        assert (select_threshold(epg_curve(s, correct, resamples=1)).row is not None) == flag
        flagged += flag
    interval = scipy_stats.binomtest(flagged, count).proportion_ci(0.99, method="exact")
    assert interval.low <= readme_flag_rate(scores, 500) <= interval.high
    if zero_share == 0:  # the rule is no 5% test where most items match somewhere
        assert interval.low > ALPHA


def planted_rows(gain: float, seed: int = 11) -> list[dict]:
    """Item rows as an audit writes them: the four ConTAM metrics (here all the same score) and correctness."""
    scores, correct = epg_benchmark(
        600, np.random.default_rng(seed), accuracy=0.4, zero_share=0.6, gain=gain, gain_share=0.2
    )
    return [
        {
            **dict.fromkeys(("token_match", "ngram_match", "token_extend", "longest_match"), float(s)),
            "correct": float(c),
            "benchmark": "bench",
            "model": "m",
        }
        for s, c in zip(scores, correct)
    ]


def test_contam_summary_reports_the_calibrated_test_and_the_headline_applies_the_level():
    rows = planted_rows(gain=0.3)
    result = contam_result(rows, ContamSettings(resamples=199))
    summary = result.to_dict()
    scores = [r["longest_match"] for r in rows]
    expected = max_z_test(scores, [r["correct"] for r in rows], resamples=199)
    assert summary["pvalue"] == expected.pvalue <= 0.05 and not {"alpha", "significant"} & set(summary)
    assert summary["max_z"] == expected.statistic == result.headline.statistic and summary["n_resamples"] == 199
    assert "conditional" in summary["epg_ci_note"]
    headline = DETECTORS["contam"].headline
    assert headline is not None
    verdict = headline(result, 0.05)
    assert verdict is not None and verdict.contaminated is True and verdict.pvalue == expected.pvalue
    # alpha below the smallest attainable p (1 / 200): nothing can be significant
    strict = headline(result, 0.001)
    assert strict is not None and strict.contaminated is False and strict.pvalue == verdict.pvalue


def test_epg_command_prints_and_writes_the_pvalue(tmp_path):
    items = tmp_path / "items.parquet"
    pq.write_table(pa.Table.from_pylist(planted_rows(gain=0.3)), items)
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["epg", "--items", str(items), "--resamples", "99", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "max-z test p=0.01 (significant at alpha=0.05, 99 permutations)" in result.output
    written = json.loads((out / "summary.json").read_text())
    (run,) = written["runs"]
    assert written["alpha"] == 0.05 and run["contam"]["pvalue"] == 0.01 and run["contam"]["n_resamples"] == 99
    (verdict,) = run["verdicts"]
    assert (verdict["detector"], verdict["contaminated"], verdict["pvalue"]) == ("contam", True, 0.01)
    strict = CliRunner().invoke(
        cli, ["epg", "--items", str(items), "--resamples", "99", "--alpha", "0.001", "--out", str(tmp_path / "s")]
    )
    assert strict.exit_code == 0 and "not significant at alpha=0.001" in strict.output


def test_epg_command_reads_its_items_from_and_writes_its_summary_and_plot_to_a_bucket(tmp_path):
    from experiments.object_stores import s3_server

    items = tmp_path / "items.parquet"
    pq.write_table(pa.Table.from_pylist(planted_rows(gain=0.3)), items)
    with s3_server() as (direct, _):
        direct.mkdir("results")
        direct.put(str(items), "results/audit/items.parquet")
        args = ["epg", "--items", "s3://results/audit/items.parquet", "--resamples", "99"]
        result = CliRunner().invoke(cli, [*args, "--out", "s3://results/epg"])
        assert result.exit_code == 0, result.output
        contam = json.loads(direct.cat("results/epg/summary.json"))["runs"][0]["contam"]
        assert contam["pvalue"] == 0.01 and direct.exists("results/epg/plots/contam-0.png")
