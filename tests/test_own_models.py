"""A user's own model, written the usual way (tokens -> logits, no positions, no segment ids), audited exactly.

An NNX module, a Linen module and a pure function, each a small causal attention decoder, go through
`from_nnx(module)`, `from_linen(apply, params)` and `jaxcontam.from_fn(apply, params)` with nothing more. Scores on
ragged batches equal `jax.nn.log_softmax` of the model's own logits on each sequence alone; greedy generation
equals an argmax loop calling the model on the full prefix. Packing such a model (forced with packing=True) gives
other numbers: the check can fail.
"""

import dataclasses
from pathlib import Path

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

import jaxcontam
import jaxcontam.flax_models
from jaxcontam.engine.generation import generate
from jaxcontam.engine.packing import packs_rows, plan_batches
from jaxcontam.engine.scoring import score_logprobs
from jaxcontam.errors import ModelError
from jaxcontam.language_model import NO_LENGTH_LIMIT, ModelInterface

VOCAB, WIDTH, HEADS = 37, 16, 2
RAGGED = (3, 17, 2, 40, 5, 9, 150, 12)  # short ones would share a row if packed


def sinusoid(length: int) -> jax.Array:
    """[T, WIDTH] position encodings computed inside the model from the row's own length, as users write it."""
    angles = jnp.arange(length)[:, None] / 100.0 ** (jnp.arange(0, WIDTH, 2) / WIDTH)[None, :]
    return jnp.concatenate([jnp.sin(angles), jnp.cos(angles)], axis=-1)


class NNXTiny(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.embed = nnx.Embed(VOCAB, WIDTH, rngs=rngs)
        self.attention = nnx.MultiHeadAttention(HEADS, WIDTH, decode=False, rngs=rngs)
        self.out = nnx.Linear(WIDTH, VOCAB, rngs=rngs)

    def __call__(self, tokens):
        x = self.embed(tokens) + sinusoid(tokens.shape[1])
        x = x + self.attention(x, mask=nnx.make_causal_mask(tokens))
        return self.out(x)


class LinenTiny(nn.Module):
    @nn.compact
    def __call__(self, tokens):
        x = nn.Embed(VOCAB, WIDTH)(tokens) + sinusoid(tokens.shape[1])
        x = x + nn.SelfAttention(HEADS)(x, mask=nn.make_causal_mask(tokens))
        return nn.Dense(VOCAB)(x)


def fn_params(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    shapes = {"embed": (VOCAB, WIDTH), "wq": (WIDTH, WIDTH), "wk": (WIDTH, WIDTH), "wv": (WIDTH, WIDTH)}
    return {k: jnp.asarray(rng.normal(scale=0.5, size=s), jnp.float32) for k, s in shapes.items()}


def fn_hidden(params, tokens):
    """A pure-function causal decoder (MaxText style): [B, T] tokens -> [B, T, D] hidden states."""
    x = params["embed"][tokens] + sinusoid(tokens.shape[1])
    q, k, v = (x @ params[w] for w in ("wq", "wk", "wv"))
    scores = jnp.einsum("btd,bsd->bts", q, k) / np.sqrt(WIDTH)
    causal = jnp.tril(jnp.ones((tokens.shape[1], tokens.shape[1]), bool))
    return jnp.tanh(x + jax.nn.softmax(jnp.where(causal, scores, -jnp.inf), axis=-1) @ v)


def fn_logits(params, tokens):
    return fn_hidden(params, tokens) @ params["embed"].T


@pytest.fixture(scope="module", params=["nnx", "linen", "fn"])
def own(request):
    """(jaxcontam model wrapped with nothing but the model, jitted forward(tokens [B, T]) -> logits [B, T, V])."""
    if request.param == "nnx":
        module = NNXTiny(nnx.Rngs(0))
        return jaxcontam.flax_models.from_nnx(module), nnx.jit(lambda tokens: module(tokens))
    if request.param == "linen":
        module = LinenTiny()
        params = module.init(jax.random.key(0), jnp.zeros((1, 4), jnp.int32))["params"]
        return jaxcontam.flax_models.from_linen(module.apply, params), jax.jit(
            lambda t: module.apply({"params": params}, t)
        )
    params = fn_params()
    return jaxcontam.from_fn(fn_logits, params), jax.jit(lambda tokens: fn_logits(params, tokens))


def ragged_sequences(seed: int = 1) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, VOCAB, n).tolist() for n in RAGGED]


def own_log_softmax(forward, seq) -> np.ndarray:
    """[T, V] log-probs from the model's own logits on this sequence alone (no engine involved)."""
    return np.asarray(_log_softmax(forward(jnp.asarray([seq], jnp.int32))[0]))


@jax.jit
def _log_softmax(logits):
    return jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)


def test_the_wrapper_reads_the_vocabulary_and_sets_no_length_limit(own):
    model, _ = own
    assert isinstance(model.config, ModelInterface)
    assert model.config.vocab_size == VOCAB
    assert model.config.max_position == NO_LENGTH_LIMIT and model.config.packing is False


def test_scores_on_ragged_batches_equal_log_softmax_of_the_models_own_logits(own):
    model, forward = own
    seqs = ragged_sequences()
    scores = score_logprobs(model, seqs, with_stats=True, rows_per_batch=2)
    for seq, got in zip(seqs, scores, strict=True):
        logp = own_log_softmax(forward, seq)[:-1]
        np.testing.assert_allclose(got.logprobs, logp[np.arange(len(seq) - 1), seq[1:]], atol=1e-5, rtol=0)
        p = np.exp(logp.astype(np.float64))
        mean = (p * logp).sum(-1)  # Min-K%++'s moments of log p under the model's own distribution
        np.testing.assert_allclose(got.mean_logprobs, mean, atol=1e-5, rtol=0)
        np.testing.assert_allclose(got.std_logprobs, np.sqrt((p * logp * logp).sum(-1) - mean**2), atol=1e-4, rtol=0)


def test_packing_this_model_would_give_wrong_scores(own):
    """Declaring packing=True for a model that ignores segment ids packs short sequences into shared rows: the
    model then attends across them (and counts positions from the row start), and the scores move."""
    model, forward = own
    seqs = ragged_sequences()
    packed = dataclasses.replace(model, config=dataclasses.replace(model.config, packing=True))
    got = score_logprobs(packed, seqs, rows_per_batch=2)
    worst = max(
        np.abs(s.logprobs - own_log_softmax(forward, seq)[np.arange(len(seq) - 1), seq[1:]]).max()
        for seq, s in zip(seqs, got, strict=True)
    )
    assert worst > 1.0  # measured: 2.4 (NNX), 2.5 (Linen), 4.1 (pure function) nats


def test_greedy_generation_equals_an_argmax_loop_on_the_full_prefix(own):
    model, forward = own
    prompts = [seq[:n] for seq, n in zip(ragged_sequences(2), (3, 6, 1), strict=False)]
    expected = []
    for prompt in prompts:
        seq, logps = list(prompt), []
        for _ in range(4):
            logp = own_log_softmax(forward, seq)[-1]
            seq.append(int(np.argmax(logp)))
            logps.append(logp[seq[-1]])
        expected.append((seq[len(prompt) :], logps))
    for padding in ("left", "right"):
        got = generate(model, prompts, max_new_tokens=4, stop_token_ids=[], padding=padding, rows_per_batch=2)
        for generation, (tokens, logps) in zip(got, expected, strict=True):
            assert generation.token_ids == tokens, padding
            np.testing.assert_allclose(generation.token_logprobs, logps, atol=1e-5, rtol=0)


def test_the_built_in_decoders_declare_packing_and_stay_packed():
    """jaxcontam's own decoders mask by segment ids: the engine keeps packing their rows (no slowdown for them)."""
    config = jaxcontam.load_model(Path(jaxcontam.__file__).parent / "examples" / "tiny_contaminated" / "model").config
    assert isinstance(config, ModelInterface) and packs_rows(config)
    batches = plan_batches(ragged_sequences(), rows_per_batch=2, pack=packs_rows(config))
    assert max(len(b.placements) for b in batches) > 2  # more sequences than rows in some batch: rows are shared


def test_from_fn_with_a_head_scores_through_the_blockwise_vocabulary():
    """`apply` giving hidden states and `head` the [V, D] output matrix: the engine's vocabulary-blocked path."""
    params = fn_params()
    model = jaxcontam.from_fn(fn_hidden, params, head=lambda p: p["embed"])
    assert model.config.vocab_size == VOCAB and model.config.output_projection(params) is not None
    seqs = ragged_sequences()[:4]
    forward = jax.jit(lambda tokens: fn_logits(params, tokens))
    for seq, got in zip(seqs, score_logprobs(model, seqs, rows_per_batch=2, vocab_block=8), strict=True):
        logp = own_log_softmax(forward, seq)[:-1]
        np.testing.assert_allclose(got.logprobs, logp[np.arange(len(seq) - 1), seq[1:]], atol=1e-5, rtol=0)


def test_a_model_that_does_not_return_logits_is_refused_with_the_fix():
    params = fn_params()
    with pytest.raises(ModelError, match=r"gave shape \(1, 37\).*must return \[B, T, V\] logits"):
        jaxcontam.from_fn(lambda p, tokens: fn_logits(p, tokens)[:, -1], params)
    with pytest.raises(ModelError, match=r"gave tuple.*\(logits, extras\)"):
        jaxcontam.from_fn(lambda p, tokens: (fn_logits(p, tokens), None), params)
    with pytest.raises(ModelError, match="vocab_size=40, but the model's output has 37 entries"):
        jaxcontam.from_fn(fn_logits, params, vocab_size=40)
    with pytest.raises(ModelError, match="hidden= and head= go together"):
        jaxcontam.flax_models.from_nnx(NNXTiny(nnx.Rngs(0)), hidden=lambda m, tokens: m(tokens))
