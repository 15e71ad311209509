"""The reference-model log-likelihood ratio (mimir's `ref` attack, Carlini et al. 2021) against a plain torch
reference on the bundled model and a perturbed copy of it; its calibrated sign-flip test against every sign pattern
enumerated by hand, its level by simulation under the null and its power under a planted effect."""

import dataclasses
import itertools
import math

import numpy as np
import pytest
import scipy.stats

from helpers import TINY_MODEL, bundled_target, perturbed_copy, torch_token_logprobs
from jaxcontam.detect.audit_core import AuditSettings, audit_benchmark
from jaxcontam.detect.reference_log_ratio import COLUMNS, SCORE, reference_log_ratio_result
from jaxcontam.detect.registry import DETECTORS
from jaxcontam.detect.stage import NO_REFERENCE_MODEL, ReferenceModel

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """(audited, reference) as jaxcontam models and as torch models of the same files."""
    from transformers import LlamaForCausalLM

    import jaxcontam

    folder = perturbed_copy(tmp_path_factory.mktemp("reference") / "model", scale=0.2)
    ours = jaxcontam.load_model(str(TINY_MODEL)), jaxcontam.load_model(str(folder))
    theirs = tuple(LlamaForCausalLM.from_pretrained(str(p), dtype=torch.float32).eval() for p in (TINY_MODEL, folder))
    return ours, theirs


def mimir_ll(model, tokenizer, text: str) -> float:
    """mimir's `get_ll`: minus the model's mean loss over the text's tokens (token 0 has no context)."""
    return float(np.mean(torch_token_logprobs(model, tokenizer.encode(text))))


def test_the_ratio_and_its_test_match_mimir_and_every_sign_pattern(models):
    (audited, reference), (torch_audited, torch_reference) = models
    benchmark, target = bundled_target("gsm8k", limit=8)
    settings = AuditSettings(detectors=("reference_log_ratio",))
    audit = audit_benchmark(audited, target, settings, reference=ReferenceModel("perturbed", reference))
    tok = audited.tokenizer
    gaps = []
    for item, rephrasing, row in zip(benchmark, target.rephrasings, audit.rows):
        original = benchmark.solved_text(item)
        rephrased = benchmark.solved_text(dataclasses.replace(item, question=rephrasing))
        mine = mimir_ll(torch_audited, tok, original) - mimir_ll(torch_reference, tok, original)
        assert row[SCORE] == pytest.approx(mine, abs=2e-4)  # mimir returns minus this: lower there means member
        ratio_rephrased = mimir_ll(torch_audited, tok, rephrased) - mimir_ll(torch_reference, tok, rephrased)
        gaps.append(mine - ratio_rephrased)
    result = audit.results["reference_log_ratio"]
    assert result.reference == "perturbed" and result.status.ran and result.n == 8 and result.n_dropped == 0
    assert result.statistic == pytest.approx(np.mean(gaps), abs=2e-4)
    gaps = np.asarray(gaps)
    flips = [np.dot(signs, np.abs(gaps)) for signs in itertools.product((-1, 1), repeat=len(gaps))]
    exact = np.mean([total >= gaps.sum() - 1e-9 for total in flips])  # every sign pattern, as the null has them
    assert result.pvalue == pytest.approx(exact, abs=1e-9)
    assert result.summary.auc is not None and 0 <= result.summary.auc <= 1  # the known labels are summarised


def test_without_a_reference_model_nothing_is_scored_and_the_test_says_why(models):
    (audited, _), _ = models
    _, target = bundled_target("gsm8k", limit=4)
    audit = audit_benchmark(audited, target, AuditSettings(detectors=("reference_log_ratio",)))
    assert all(math.isnan(row[column]) for row in audit.rows for column in COLUMNS)
    result = audit.results["reference_log_ratio"]
    assert result.reference is None and not result.status.ran and result.status.reason == NO_REFERENCE_MODEL
    headline = DETECTORS["reference_log_ratio"].headline
    assert headline is not None
    verdict = headline(result, 0.05)
    assert verdict.contaminated is None and verdict.reason == NO_REFERENCE_MODEL and verdict.label.startswith("no test")


def null_rows(rng, n: int, effect: float = 0.0) -> list[dict]:
    """Rows of the null: per item a difficulty (both models, both sides), a rephrasing penalty every model shares,
    a constant fluency gap between the models, and independent symmetric noise; `effect` raises the audited model's
    log-prob of the originals only (membership)."""
    difficulty, penalty = rng.normal(-2.0, 0.5, n), rng.normal(0.3, 0.2, n)
    noise = rng.standard_t(5, size=(4, n)) * 0.1
    audited_original = difficulty + 0.4 + noise[0] + effect
    audited_rephrased = difficulty - penalty + 0.4 + noise[1]
    reference_original, reference_rephrased = difficulty + noise[2], difficulty - penalty + noise[3]
    return [
        {
            SCORE: a - r,
            f"{SCORE}_audited_original": a,
            f"{SCORE}_audited_rephrased": b,
            f"{SCORE}_reference_original": r,
            f"{SCORE}_reference_rephrased": s,
            "ground_truth_contaminated": None,
        }
        for a, b, r, s in zip(audited_original, audited_rephrased, reference_original, reference_rephrased)
    ]


def test_the_calibrated_test_keeps_its_level_and_finds_a_planted_effect():
    """Under the null (two models that differ in fluency, rephrasings that every model finds less likely) the test
    flags at most its level within a binomial bound; with the audited model 0.15 nats likelier on the originals it
    flags most benchmarks of 30 items."""
    rng, alpha, runs = np.random.default_rng(7), 0.05, 400
    null = [reference_log_ratio_result(null_rows(rng, 30), "ref", seed, 199).pvalue for seed in range(runs)]
    bound = scipy.stats.binom.ppf(0.999, runs, alpha)
    assert sum(p < alpha for p in null) <= bound
    planted = [reference_log_ratio_result(null_rows(rng, 30, 0.15), "ref", s, 199).pvalue for s in range(100)]
    assert sum(p < alpha for p in planted) >= 80
    # the ratio against zero would not be a test: its mean is the fluency gap, 0.4, in every null benchmark
    assert np.mean([row[SCORE] for row in null_rows(rng, 30)]) > 0.3
