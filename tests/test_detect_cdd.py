"""CDD (Dong et al. 2024): the token-level edit distance and the peakedness against references written from the
definition, and the sampling on the bundled tiny model (a seeded run reproduces, chunking changes nothing,
temperature 0 gives peakedness 1)."""

import pathlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxcontam.data.registry import load_benchmark
from jaxcontam.detect.cdd import CddSettings, cdd_result, edit_distance, peakedness
from jaxcontam.detectors.cdd import cdd_records, sample_key
from jaxcontam.errors import JaxcontamError

EXAMPLE = pathlib.Path(__file__).resolve().parents[1] / "jaxcontam" / "examples" / "tiny_contaminated"


def levenshtein(a, b) -> int:
    """The definition: the fewest insertions, deletions and substitutions turning a into b (full table)."""
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        for j in range(len(b) + 1):
            if i == 0 or j == 0:
                table[i][j] = i + j
            else:
                table[i][j] = min(
                    table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + (a[i - 1] != b[j - 1])
                )
    return table[len(a)][len(b)]


tokens = st.lists(st.integers(0, 5), max_size=30)


@settings(max_examples=300, deadline=None)
@given(tokens, tokens)
def test_edit_distance_is_levenshtein(a, b):
    assert edit_distance(a, b) == levenshtein(a, b) == edit_distance(b, a)


@settings(max_examples=100, deadline=None)
@given(st.lists(tokens, min_size=1, max_size=8), tokens, st.floats(0, 1))
def test_peakedness_is_the_share_of_samples_within_alpha_times_the_longest_sample(samples, greedy, alpha):
    share, distances = peakedness(samples, greedy, alpha)
    bound = alpha * max(len(s) for s in samples)
    assert distances == [levenshtein(s, greedy) for s in samples]
    assert share == sum(levenshtein(s, greedy) <= bound for s in samples) / len(samples)


def test_peakedness_on_fixed_samples():
    greedy = list(range(20))
    samples = [
        list(range(20)),  # 0 edits
        list(range(19)) + [99],  # 1 substitution
        list(range(18)),  # 2 deletions
        [7] * 40,  # far: 39 edits; also the longest sample, so the bound is 0.05 * 40 = 2 edits
    ]
    assert peakedness(samples, greedy, 0.05) == (0.75, [0, 1, 2, 39])
    assert peakedness(samples, greedy, 0.0) == (0.25, [0, 1, 2, 39])  # only an exact copy counts


def test_flagged_share_counts_items_above_xi():
    rows = [{"cdd_peakedness": p, "cdd_flagged": p > 0.01} for p in (0.0, 0.0, 0.5, 1.0)]
    result = cdd_result(rows)
    assert result.flagged_share == 0.5 and result.peakedness.mean == pytest.approx(0.375)
    assert result.peakedness.auc is None  # no labels, no AUC


def test_bad_settings_are_refused():
    with pytest.raises(JaxcontamError, match="samples"):
        CddSettings(samples=0)
    with pytest.raises(JaxcontamError, match="xi"):
        CddSettings(xi=1.0)


@pytest.fixture(scope="module")
def tiny():
    import jaxcontam

    return jaxcontam.load_model(str(EXAMPLE / "model")), load_benchmark(
        "gsm8k", path=EXAMPLE / "gsm8k_test_sample.jsonl", limit=2
    )


def test_a_seeded_run_reproduces_and_does_not_depend_on_the_chunks(tiny):
    """Two items (4 sampled rows) against each item alone (2 rows, the same shapes for both), and run again."""
    model, benchmark = tiny
    items = list(benchmark)
    drawn = CddSettings(samples=2, max_new_tokens=12, temperature=1.0)
    whole = cdd_records(model, benchmark, items, drawn, seed=1)
    alone = [cdd_records(model, benchmark, [item], drawn, seed=1)[0] for item in items]
    assert whole == alone
    assert whole == cdd_records(model, benchmark, items, drawn, seed=1)
    assert len({sample_key(item.id, j) for item in items for j in range(50)}) == 100  # a key per item and sample
    assert all(len(r["cdd_distances"]) == 2 and r["cdd_greedy_tokens"] >= 1 for r in whole)


def test_temperature_zero_samples_are_the_greedy_output(tiny):
    model, benchmark = tiny
    settings_ = CddSettings(samples=2, max_new_tokens=12, temperature=0.0)
    records = cdd_records(model, benchmark, list(benchmark), settings_, 0)
    assert all(r["cdd_peakedness"] == 1.0 and r["cdd_distances"] == [0, 0] and r["cdd_flagged"] for r in records)
