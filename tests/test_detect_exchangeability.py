"""Oren et al.'s exchangeability test: p < 0.01 for a model trained on the file in canonical order, not otherwise."""

import csv

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from helpers import ToySpec, toy_hidden_states, toy_model
from jaxcontam.detect.exchangeability import (
    chunk_bounds,
    chunk_sequences,
    exchangeability_test,
)
from jaxcontam.errors import JaxcontamError
from jaxcontam.kernels.vocab_blocks import token_logprob_stats

SPEC = ToySpec(vocab_size=97, hidden_size=64, max_position=512)
CHUNKS = 8


def byte_tokens(text):
    return [1 + b % 96 for b in (text + "\n").encode("utf-8")]


@pytest.fixture(scope="module")
def truthfulqa_questions(shared_data):
    with open(shared_data / "truthfulqa" / "TruthfulQA.csv", newline="", encoding="utf-8") as f:
        questions = [row["Question"] for row in csv.DictReader(f)]
    return [byte_tokens(q) for q in questions if len(q) < 60]


def train_on_canonical_order(model, examples, steps=250):
    """Fit the toy decoder to the file's chunks in canonical order (the contamination)."""
    seqs = chunk_sequences(examples, chunk_bounds(len(examples), CHUNKS), 0, np.random.default_rng(0), [0])
    width = max(map(len, seqs))
    tokens = np.zeros((len(seqs), width), np.int32)
    segments = np.zeros_like(tokens)
    for i, s in enumerate(seqs):
        tokens[i, : len(s)], segments[i, : len(s)] = s, 1
    tokens, segments = jnp.asarray(tokens), jnp.asarray(segments)
    positions = jnp.broadcast_to(jnp.arange(width, dtype=jnp.int32), tokens.shape)
    targets = jnp.roll(tokens, -1, axis=1)
    mask = (segments * jnp.roll(segments, -1, axis=1)).at[:, -1].set(0)

    def loss(params):
        hidden = toy_hidden_states(params, SPEC, tokens, positions, segments)
        lp = token_logprob_stats(hidden, params["out"], targets, layout="dv").logprob
        return -(lp * mask).sum() / mask.sum()

    opt = optax.adam(1e-2)

    @jax.jit
    def step(params, state):
        value, grads = jax.value_and_grad(loss)(params)
        updates, state = opt.update(grads, state)
        return optax.apply_updates(params, updates), state, value

    params, state = model.params, opt.init(model.params)
    for _ in range(steps):
        params, state, value = step(params, state)
    model.params = params
    return float(value)


def test_contaminated_file_is_detected_and_unseen_files_are_not(truthfulqa_questions):
    model = toy_model(SPEC, seed=1)
    seen = truthfulqa_questions[:32]
    final_loss = train_on_canonical_order(model, seen)
    assert final_loss < 1.5  # well below the ~3 nats/byte of English it would need without memorising
    result = exchangeability_test(model, seen, num_chunks=CHUNKS, permutations=10, prefix=[0], rows_per_batch=8)
    assert result.pvalue < 0.01
    assert np.all(result.chunk_differences > 0)
    unseen_p = []
    for k in range(1, 5):
        unseen = truthfulqa_questions[32 * k : 32 * (k + 1)]
        unseen_p.append(
            exchangeability_test(
                model, unseen, num_chunks=CHUNKS, permutations=10, prefix=[0], seed=k, rows_per_batch=8
            ).pvalue
        )
    assert min(unseen_p) > 0.01, unseen_p


def test_permutations_keep_each_chunks_tokens():
    examples = [[i, i + 100] for i in range(12)]
    seqs = chunk_sequences(examples, chunk_bounds(12, 3), 4, np.random.default_rng(0), [7])
    assert len(seqs) == 3 * 5
    for chunk in range(3):
        canonical = seqs[chunk * 5]
        assert canonical == [7] + [t for e in examples[chunk * 4 : chunk * 4 + 4] for t in e]
        for perm in seqs[chunk * 5 + 1 : chunk * 5 + 5]:
            assert sorted(perm) == sorted(canonical) and perm[0] == 7


def test_too_few_examples_is_reported():
    with pytest.raises(JaxcontamError, match="cannot fill 10 chunks"):
        exchangeability_test(toy_model(), [[1, 2]] * 5)


def test_pvalue_is_the_one_sided_t_over_chunk_differences(truthfulqa_questions):
    """The reported p-value equals scipy's one-sample t-test on the reported chunk differences."""
    from scipy import stats

    result = exchangeability_test(
        toy_model(SPEC, seed=2), truthfulqa_questions[:24], num_chunks=6, permutations=3, prefix=[0]
    )
    want = stats.ttest_1samp(result.chunk_differences, 0.0, alternative="greater")
    assert result.pvalue == pytest.approx(want.pvalue, rel=1e-9)
    np.testing.assert_allclose(
        result.chunk_differences, result.canonical_logprobs - result.permuted_logprobs.mean(axis=1), rtol=1e-12
    )
