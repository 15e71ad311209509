"""Every likelihood detector from one forward pass per text: the engine's per-position statistics (target log-prob,
sigma, the top-1 log-prob over the whole vocabulary, folded block by block on the device) give Gap-K% and DC-PDD
equal to the papers' definitions applied to the full [tokens, vocab] log-softmax, on a toy decoder and on the real
SmolLM2 (whose targets are often its own top-1 token, the case where Gap-K%'s gap must come out 0)."""

import json
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from helpers import (
    SMOLLM2_FOLDER,
    SMOLLM2_GGUF,
    ToySpec,
    dc_pdd_reference,
    gap_k_reference,
    naive_log_softmax,
    toy_model,
)
from jaxcontam.detect.likelihood import LIKELIHOOD_DETECTORS, LikelihoodSettings, detector_scores
from jaxcontam.engine.scoring import score_logprobs, score_step

REPO = pathlib.Path(__file__).resolve().parents[1]
SMOLLM2_TABLE = REPO / "experiments" / "frequency_tables" / "smollm2_135m_instruct_gutenberg.npz"
SETTINGS = LikelihoodSettings(k=0.3, gap_window=3, dc_pdd_cap=0.05)


def references(logp: np.ndarray, ids: list[int], frequencies: np.ndarray, settings: LikelihoodSettings) -> dict:
    """Gap-K% and DC-PDD from the full float64 log-softmax rows `logp` [n-1, V] (row t predicts token t+1)."""
    targets = ids[1:]
    target_logp = [float(logp[t, token]) for t, token in enumerate(targets)]
    top = [float(row.max()) for row in logp]
    sigma = []
    for row in logp:
        p = np.exp(row)
        mean = float(np.sum(p * row))
        sigma.append(float(np.sqrt(max(np.sum(p * row * row) - mean * mean, 0.0))))
    return {
        "gap_k": gap_k_reference(target_logp, top, sigma, settings.k, settings.gap_window),
        "dc_pdd": dc_pdd_reference(target_logp, targets, frequencies, settings.dc_pdd_cap),
    }


def scores_of(model, seqs, frequencies, settings, **kwargs) -> list[dict]:
    scored = score_logprobs(model, seqs, with_stats=True, with_max=True, **kwargs)
    return [detector_scores(s, "text", settings, seq[s.start :], frequencies) for s, seq in zip(scored, seqs)]


def test_toy_decoder_gap_k_and_dc_pdd_equal_the_full_vocabulary_references():
    """A vocabulary of 300 in blocks of 64 (the last one overlapping): the top-1 is merged across blocks."""
    model = toy_model(ToySpec(vocab_size=300))
    rng = np.random.default_rng(0)
    seqs = [rng.integers(0, 300, size=rng.integers(2, 60)).tolist() for _ in range(12)]
    counts = rng.integers(0, 50, size=300)
    frequencies = (counts + 1.0) / (counts.sum() + 300)
    got = scores_of(model, seqs, frequencies, SETTINGS, rows_per_batch=4, buckets=(64,), vocab_block=64)
    for seq, found in zip(seqs, got):
        assert set(found) == set(LIKELIHOOD_DETECTORS) | {"dc_pdd"}
        expected = references(naive_log_softmax(model, seq)[:-1], seq, frequencies, SETTINGS)
        assert found["gap_k"] == pytest.approx(expected["gap_k"], rel=1e-4, abs=1e-5)
        assert found["dc_pdd"] == pytest.approx(expected["dc_pdd"], rel=1e-4, abs=1e-7)


def test_the_scoring_step_hands_the_host_per_position_values_only():
    """What leaves the device per batch is [B, T] per statistic, never [B, T, V] log-probs."""
    model = toy_model(ToySpec(vocab_size=300))
    tokens = jnp.zeros((2, 16), jnp.int32)
    positions = jnp.broadcast_to(jnp.arange(16, dtype=jnp.int32), (2, 16))
    out = jax.eval_shape(
        lambda p, t, q, s: score_step(p, model.config, t, q, s, t, vocab_block=64, use_kernel=False),
        model.params,
        tokens,
        positions,
        jnp.ones_like(tokens),
    )
    shapes = {name: getattr(out, name).shape for name in ("logprob", "mean_logprob", "std_logprob", "max_logprob")}
    assert shapes == dict.fromkeys(shapes, (2, 16))


@pytest.fixture(scope="module")
def smollm2(shared_data):
    import jaxcontam

    return jaxcontam.load_model(str(shared_data / SMOLLM2_FOLDER / SMOLLM2_GGUF))


def full_log_softmax(model, seqs) -> list[np.ndarray]:
    """float64 log-softmax of the model's full [T, V] logits (its own output layer, no blocks) per sequence, from
    one batch (rows padded with segment 0)."""
    width = max(map(len, seqs))
    tokens = np.zeros((len(seqs), width), np.int32)
    segments = np.zeros_like(tokens)
    for row, seq in enumerate(seqs):
        tokens[row, : len(seq)], segments[row, : len(seq)] = seq, 1
    positions = np.broadcast_to(np.arange(width, dtype=np.int32), tokens.shape)
    spec = model.config
    logits = jax.jit(lambda p, t, q, s: spec.logits_from_hidden(p, spec.hidden_states(p, t, q, s)))(
        model.params, tokens, positions, segments
    )
    rows = []
    for row, seq in enumerate(seqs):
        z = np.asarray(logits[row, : len(seq)], np.float64)
        shifted = z - z.max(-1, keepdims=True)
        rows.append(shifted - np.log(np.exp(shifted).sum(-1, keepdims=True)))
    return rows


def test_smollm2_gap_k_and_dc_pdd_equal_the_full_vocabulary_references(smollm2, shared_data):
    from jaxcontam.ngram.frequencies import load_token_frequencies

    table = load_token_frequencies(SMOLLM2_TABLE)
    table.check_tokenizer(smollm2.tokenizer, "SmolLM2")  # the committed table is this tokenizer's
    frequencies = table.probabilities()
    lines = (shared_data / "gsm8k" / "test.jsonl").read_text(encoding="utf-8").splitlines()[:3]
    texts = [json.loads(line)["question"] for line in lines] + ["The quick brown fox jumps over the"]
    seqs = [smollm2.tokenizer.encode(text) for text in texts]
    got = scores_of(smollm2, seqs, frequencies, SETTINGS)
    top1_targets = 0
    for seq, found, full in zip(seqs, got, full_log_softmax(smollm2, seqs)):
        logp = full[:-1]
        top1_targets += int(np.sum(logp.argmax(-1) == np.asarray(seq[1:])))
        expected = references(logp, seq, frequencies, SETTINGS)
        assert found["gap_k"] == pytest.approx(expected["gap_k"], rel=2e-3, abs=2e-4)
        assert found["dc_pdd"] == pytest.approx(expected["dc_pdd"], rel=1e-4, abs=1e-6)
    assert top1_targets >= 0.3 * sum(len(seq) - 1 for seq in seqs)  # the gap-is-zero case is well exercised
