"""CoDeC (arXiv 2510.27055) against its definition written here in plain torch loops on the bundled model: per item
delta = LL(x | other items in context) - LL(x), the score = the fraction with delta < 0, and the sign test against
the binomial tail summed by hand; the contexts; the sign test's level by simulation under the null (with ties)."""

import math

import numpy as np
import pytest
import scipy.stats

from helpers import TINY_MODEL, bundled_target, torch_token_logprobs
from jaxcontam.detect import prefixed
from jaxcontam.detect.audit_core import AuditSettings, audit_benchmark
from jaxcontam.detect.codec import (
    REFERENCE_SCORE,
    SCORE,
    CodecSettings,
    calibrated_codec,
    codec_records,
    codec_result,
    context_items,
)
from jaxcontam.detect.prefixed import SEPARATOR
from jaxcontam.detect.registry import DETECTORS

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def tiny():
    from transformers import LlamaForCausalLM

    import jaxcontam

    return jaxcontam.load_model(str(TINY_MODEL)), LlamaForCausalLM.from_pretrained(str(TINY_MODEL)).eval()


def binomial_tail(drops: int, trials: int) -> float:
    """P(at least `drops` of `trials` fair coins come up drops)."""
    return sum(math.comb(trials, k) for k in range(drops, trials + 1)) / 2**trials


def test_codec_is_the_papers_delta_and_score_with_an_exact_sign_test(tiny):
    ours, theirs = tiny
    benchmark, target = bundled_target("gsm8k", limit=8)
    tok = ours.tokenizer
    audit = audit_benchmark(ours, target, AuditSettings(detectors=("codec",), seed=3))
    items = list(benchmark)
    deltas = []
    for index, (item, row) in enumerate(zip(items, audit.rows)):
        context = context_items(items, index, 3, 3)
        assert len(context) == 3 and item not in context and len(set(context)) == 3
        ids = tok.encode(benchmark.solved_text(item))
        alone = torch_token_logprobs(theirs, ids)  # tokens 1..n-1
        texts = [benchmark.solved_text(other) for other in context]
        while len(tok.encode(SEPARATOR.join(texts) + SEPARATOR)) + len(ids) - 1 > 512:
            texts = texts[1:]  # the farthest context item goes first
        prefix_ids = tok.encode(SEPARATOR.join(texts) + SEPARATOR)
        joined = torch_token_logprobs(theirs, prefix_ids + ids[1:])  # the text after the context, its BOS dropped
        with_context = joined[len(prefix_ids) - 1 :]  # the same tokens 1..n-1 of the item
        assert len(with_context) == len(alone)
        delta = float(with_context.mean() - alone.mean())
        assert row[SCORE] == pytest.approx(delta, abs=2e-4)
        assert row["codec_context_items"] == len(texts) and row["codec_context_tokens"] == len(prefix_ids)
        deltas.append(delta)
    result = audit.results["codec"]
    drops = sum(d < 0 for d in deltas)
    assert result.score == drops / 8 and result.n == 8 and result.n_drops == drops and result.n_ties == 0
    assert result.pvalue == pytest.approx(binomial_tail(drops, 8), rel=1e-9)
    headline = DETECTORS["codec"].headline
    assert headline is not None
    verdict = headline(result, 0.05)
    assert verdict.contaminated == (result.pvalue < 0.05) and verdict.note and "not" in verdict.note


def test_contexts_do_not_depend_on_the_chunk_and_both_passes_are_one_call(tiny, monkeypatch):
    ours, _ = tiny
    benchmark, _ = bundled_target("gsm8k", limit=8)
    items = list(benchmark)
    draws = [context_items(items, i, 3, 0) for i in range(len(items))]
    assert draws == [context_items(items, i, 3, 0) for i in range(len(items))]
    assert draws != [context_items(items, i, 3, 1) for i in range(len(items))]  # the audit's seed draws them
    assert context_items(items[:1], 0, 3, 0) == [] and len(context_items(items[:3], 0, 5, 0)) == 2
    calls = []
    real = prefixed.score_logprobs

    def counted(model, sequences, spans=None, **kwargs):
        calls.append(len(sequences))
        return real(model, sequences, spans, **kwargs)

    monkeypatch.setattr(prefixed, "score_logprobs", counted)
    whole = codec_records(ours, benchmark, items, CodecSettings(), 0)
    parts = codec_records(ours, benchmark, items[:5], CodecSettings(), 0)
    parts += codec_records(ours, benchmark, items[5:], CodecSettings(), 0)
    assert calls == [16, 10, 6]
    assert [r[SCORE] for r in whole] == pytest.approx([r[SCORE] for r in parts], abs=1e-5)


def rows(deltas) -> list[dict]:
    return [{SCORE: float(d), "ground_truth_contaminated": None} for d in deltas]


def test_the_sign_test_keeps_its_level_under_the_null_and_finds_a_shift():
    """Deltas of the null (context helps as often as it hurts: symmetric about 0, some exactly 0) are flagged at
    most at the level, within a binomial bound; deltas shifted below 0 by two thirds of their spread are found."""
    rng, alpha, runs, n = np.random.default_rng(11), 0.05, 2000, 40
    flagged = 0
    for _ in range(runs):
        deltas = np.round(rng.standard_t(3, n) * rng.uniform(0.05, 0.5), 1)  # rounding makes ties
        result = codec_result(rows(deltas))
        flagged += result.status.ran and result.pvalue < alpha
    assert flagged <= scipy.stats.binom.ppf(0.999, runs, alpha)
    shifted = [codec_result(rows(rng.normal(-0.2, 0.3, n))).pvalue < alpha for _ in range(200)]
    assert np.mean(shifted) > 0.8


def test_ties_are_left_out_of_the_test_and_no_context_is_no_test():
    tied = codec_result(rows([0.0, -0.1, -0.2, 0.3, 0.0]))
    assert (tied.n, tied.n_drops, tied.n_ties, tied.score) == (5, 2, 2, 0.4)
    assert tied.pvalue == pytest.approx(binomial_tail(2, 3))
    none = codec_result([{SCORE: math.nan, "ground_truth_contaminated": None}])
    assert not none.status.ran and none.status.reason == "no item has a context" and math.isnan(none.pvalue)


def paired_rows(rng, n: int, effect: float = 0.0) -> list[dict]:
    """Deltas of the calibrated null: context hurts both models alike on an item (a shared, strongly negative item
    effect: the long context of a small model), plus independent symmetric noise; `effect` lowers the audited
    model's delta only (it gains less from context: membership)."""
    shared = rng.normal(-1.0, 0.6, n)
    audited = shared + rng.standard_t(4, n) * 0.2 - effect
    return [
        {SCORE: a, REFERENCE_SCORE: r, "ground_truth_contaminated": None}
        for a, r in zip(audited, shared + rng.standard_t(4, n) * 0.2)
    ]


def test_the_calibrated_test_keeps_its_level_where_the_sign_test_cannot_and_finds_a_planted_effect():
    rng, alpha, runs = np.random.default_rng(5), 0.05, 400
    calibrated, authors = [], []
    for seed in range(runs):
        result = codec_result(paired_rows(rng, 30), "ref", seed, 199)
        assert result.calibrated is not None
        calibrated.append(result.calibrated.pvalue < alpha)
        authors.append(result.pvalue < alpha)
    assert sum(calibrated) <= scipy.stats.binom.ppf(0.999, runs, alpha)
    assert np.mean(authors) > 0.9  # context hurts every item here, so the sign test against 1/2 flags the null
    planted = [calibrated_codec(paired_rows(rng, 30, 0.25), "ref", s, 199).pvalue < alpha for s in range(100)]
    assert np.mean(planted) > 0.8
    no_reference = calibrated_codec([{SCORE: -0.1, REFERENCE_SCORE: math.nan}], "ref", 0, 199)
    assert not no_reference.status.ran and math.isnan(no_reference.pvalue)


@pytest.mark.parametrize("name", ["codec", "recall"])
def test_stored_chunks_are_keyed_by_the_selection_their_contexts_and_prefixes_come_from(name):
    """A chunk of the same items scored within a larger selection had other context items (CoDeC) or a prefix cut
    beside a longer item (ReCaLL): its key differs, so `jaxcontam audit` with another --limit never resumes it."""
    from jaxcontam.detect.stage import StageInput

    work = DETECTORS[name].per_item
    assert work is not None
    settings = DETECTORS[name].settings_type()
    keys = [work.key(StageInput(None, bundled_target("gsm8k", n)[1], 0, 99), settings) for n in (4, 8)]
    assert keys[0] != keys[1]
    assert keys[0] == work.key(StageInput(None, bundled_target("gsm8k", 4)[1], 0, 99), settings)
