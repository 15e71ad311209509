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


def authors_peak(samples, greedy, alpha, length):
    """From Dong et al.'s definition as their CDD.py computes it: every output cut to its first `length` tokens,
    rho(d) the share of the samples at edit distance d from the greedy output, l the longest cut output (the greedy
    one included), Peak = sum of rho(d) over d <= alpha * l."""
    greedy = greedy[:length]
    samples = [s[:length] for s in samples]
    longest = max([len(greedy)] + [len(s) for s in samples])
    distances = [levenshtein(s, greedy) for s in samples]
    rho = {d: distances.count(d) / len(samples) for d in set(distances)}
    return sum(share for d, share in rho.items() if d <= alpha * longest)


@settings(max_examples=100, deadline=None)
@given(st.lists(tokens, min_size=1, max_size=8), tokens, st.floats(0, 1), st.integers(1, 35))
def test_peakedness_is_the_authors_peak(samples, greedy, alpha, length):
    share, distances = peakedness(samples, greedy, alpha, length)
    assert distances == [levenshtein(s[:length], greedy[:length]) for s in samples]
    assert share == pytest.approx(authors_peak(samples, greedy, alpha, length), abs=1e-12)


def test_peakedness_on_fixed_samples():
    greedy = list(range(20))
    samples = [
        list(range(20)),  # 0 edits
        list(range(19)) + [99],  # 1 substitution
        list(range(18)),  # 2 deletions
        [7] * 40,  # far: 39 edits; also the longest output, so the bound is 0.05 * 40 = 2 edits
    ]
    assert peakedness(samples, greedy, 0.05, 100) == (0.75, [0, 1, 2, 39])
    assert peakedness(samples, greedy, 0.0, 100) == (0.25, [0, 1, 2, 39])  # only an exact copy counts


def test_only_the_first_compared_tokens_count_and_the_greedy_output_sets_l():
    """By hand. Cut to 4 tokens: [1,2,3,4,9,9] equals the greedy [1,2,3,4] (0 edits), [1,2,3] is one deletion away,
    [9,9,9,9] four substitutions; l = 4, alpha = 0.25: bound 1, so 2 of the 3 samples (the greedy output is no
    sample). Uncut: 2, 3 and 7 edits from [1..6], l = 7, bound 1.75: none."""
    greedy = [1, 2, 3, 4, 5, 6]
    samples = [[1, 2, 3, 4, 9, 9], [1, 2, 3], [9] * 7]
    assert peakedness(samples, greedy, 0.25, 4) == (2 / 3, [0, 1, 4])
    assert peakedness(samples, greedy, 0.25, 100) == (0.0, [2, 3, 7])
    # the greedy output is the longest: l = 10, bound 2, so [1..8] (2 deletions) counts, [1..5] (5) does not;
    # with l the longest sample (8) the bound would be 1.6 and neither would
    assert peakedness([list(range(1, 6)), list(range(1, 9))], list(range(1, 11)), 0.2, 100) == (0.5, [5, 2])


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
    with pytest.raises(JaxcontamError, match="compared_tokens"):
        CddSettings(compared_tokens=0)


def test_the_compared_length_is_part_of_the_resume_key():
    from jaxcontam.detect.stage import StageInput
    from jaxcontam.detectors.cdd import CDD_STAGE

    stage_input = StageInput(None, None, 0, 0)  # type: ignore[arg-type]  (the key reads neither)
    keys = [CDD_STAGE.per_item.key(stage_input, CddSettings(compared_tokens=n)) for n in (100, 50)]
    assert keys[0]["compared_tokens"] == 100 and keys[0] != keys[1]


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


def test_outputs_are_generated_only_as_far_as_they_are_compared(tiny):
    model, benchmark = tiny
    short = CddSettings(samples=2, max_new_tokens=12, compared_tokens=3, temperature=1.0)
    records = cdd_records(model, benchmark, list(benchmark), short, seed=1)
    assert all(r["cdd_greedy_tokens"] <= 3 and max(r["cdd_distances"]) <= 3 for r in records)


def test_temperature_zero_samples_are_the_greedy_output(tiny):
    model, benchmark = tiny
    settings_ = CddSettings(samples=2, max_new_tokens=12, temperature=0.0)
    records = cdd_records(model, benchmark, list(benchmark), settings_, 0)
    assert all(r["cdd_peakedness"] == 1.0 and r["cdd_distances"] == [0, 0] and r["cdd_flagged"] for r in records)
