"""Models written here with Flax NNX and Linen, trained a few steps with optax on public text, audited as they are.

These mask attention by positions and segment ids and declare it (`packing=True`), so the engine packs their rows;
tests/test_own_models.py has models that map tokens to logits and nothing more.

Scores (with the Min-K%++ moments), P(True), greedy generation and an in-training audit through the wrappers
equal the same quantities computed directly from the module's own forward on the same params; jaxcontam's
built-in decoder passes the same checks through the same interface.
"""

import dataclasses
from pathlib import Path

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

import jaxcontam
import jaxcontam.flax_models as jflax
from jaxcontam.data import load_benchmark
from jaxcontam.detect.audit_callback import AuditCallback, AuditSettings, AuditTarget
from jaxcontam.engine.chat import encode_chat
from jaxcontam.engine.generation import generate
from jaxcontam.engine.ptrue import KADAVATH, option_token_ids, p_true
from jaxcontam.engine.scoring import score_logprobs
from jaxcontam.errors import ModelError
from jaxcontam.language_model import LanguageModel

MODEL_DIR = Path(jaxcontam.__file__).parent / "examples" / "tiny_contaminated" / "model"
WIDTH, MAX_POSITION, STEPS = 32, 128, 12


def allowed(positions, segment_ids):
    """[B, T, T]: same non-padding segment and a key position <= the query's (the interface's contract)."""
    same = (segment_ids[:, :, None] == segment_ids[:, None, :]) & (segment_ids[:, :, None] > 0)
    return same & (positions[:, None, :] <= positions[:, :, None])


def attend(q, k, v, positions, segment_ids):
    scores = jnp.einsum("btd,bsd->bts", q, k) / jnp.sqrt(q.shape[-1])
    return jax.nn.softmax(jnp.where(allowed(positions, segment_ids), scores, -1e9), axis=-1) @ v


class NNXDecoder(nnx.Module):
    def __init__(self, vocab: int, rngs: nnx.Rngs):
        self.embed = nnx.Embed(vocab, WIDTH, rngs=rngs)
        self.position = nnx.Embed(MAX_POSITION, WIDTH, rngs=rngs)
        self.qkv = nnx.Linear(WIDTH, 3 * WIDTH, rngs=rngs)
        self.mix = nnx.Linear(WIDTH, WIDTH, rngs=rngs)
        self.up = nnx.Linear(WIDTH, 4 * WIDTH, rngs=rngs)
        self.down = nnx.Linear(4 * WIDTH, WIDTH, rngs=rngs)
        self.norm = nnx.RMSNorm(WIDTH, rngs=rngs)

    def hidden_states(self, tokens, positions, segment_ids):
        x = self.embed(tokens) + self.position(jnp.clip(positions, 0, MAX_POSITION - 1))
        x = x + self.mix(attend(*jnp.split(self.qkv(x), 3, axis=-1), positions, segment_ids))
        return self.norm(x + self.down(jax.nn.gelu(self.up(x))))

    def __call__(self, tokens, positions, segment_ids):
        return self.embed.attend(self.hidden_states(tokens, positions, segment_ids))


class LinenDecoder(nn.Module):
    vocab: int

    def setup(self):
        self.embed = nn.Embed(self.vocab, WIDTH)
        self.position = nn.Embed(MAX_POSITION, WIDTH)
        self.qkv, self.mix = nn.Dense(3 * WIDTH), nn.Dense(WIDTH)
        self.up, self.down = nn.Dense(4 * WIDTH), nn.Dense(WIDTH)
        self.norm = nn.RMSNorm()

    def hidden_states(self, tokens, positions, segment_ids):
        x = self.embed(tokens) + self.position(jnp.clip(positions, 0, MAX_POSITION - 1))
        x = x + self.mix(attend(*jnp.split(self.qkv(x), 3, axis=-1), positions, segment_ids))
        return self.norm(x + self.down(jax.nn.gelu(self.up(x))))

    def __call__(self, tokens, positions, segment_ids):
        return self.embed.attend(self.hidden_states(tokens, positions, segment_ids))


def training_batches(shared_data, tokenizer, rows=8, width=64):
    """Consecutive windows of tinyshakespeare (public domain), tokenized with the bundled model's tokenizer."""
    text = (shared_data / "corpus_misc" / "tinyshakespeare" / "input.txt").read_text()[:40_000]
    ids = np.asarray(tokenizer.encode(text), np.int32)
    for step in range(STEPS):
        start = step * rows * width
        yield ids[start : start + rows * width].reshape(rows, width)


def next_token_loss(forward, tokens):
    positions = jnp.broadcast_to(jnp.arange(tokens.shape[1]), tokens.shape)
    logits = forward(tokens, positions, jnp.ones_like(tokens))
    return optax.softmax_cross_entropy_with_integer_labels(logits[:, :-1], tokens[:, 1:]).mean()


def trained_nnx(shared_data, tokenizer):
    module = NNXDecoder(len(tokenizer), nnx.Rngs(0))
    optimizer = nnx.Optimizer(module, optax.adamw(3e-3), wrt=nnx.Param)

    @nnx.jit
    def step(module, optimizer, tokens):
        loss, grads = nnx.value_and_grad(lambda m: next_token_loss(m, tokens))(module)
        optimizer.update(module, grads)
        return loss

    losses = [float(step(module, optimizer, jnp.asarray(b))) for b in training_batches(shared_data, tokenizer)]
    assert losses[-1] < losses[0]  # the few steps really trained it
    return module


def trained_linen(shared_data, tokenizer):
    module = LinenDecoder(len(tokenizer))
    probe = jnp.zeros((1, 8), jnp.int32)
    params = module.init(jax.random.key(0), probe, probe, jnp.ones_like(probe))["params"]
    tx = optax.adamw(3e-3)
    opt_state = tx.init(params)

    @jax.jit
    def step(params, opt_state, tokens):
        loss, grads = jax.value_and_grad(lambda p: next_token_loss(lambda *a: module.apply({"params": p}, *a), tokens))(
            params
        )
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    losses = []
    for batch in training_batches(shared_data, tokenizer):
        params, opt_state, loss = step(params, opt_state, jnp.asarray(batch))
        losses.append(float(loss))
    assert losses[-1] < losses[0]
    return module, params


@pytest.fixture(scope="module")
def tokenizer():
    return jaxcontam.load_model(MODEL_DIR).tokenizer


@pytest.fixture(scope="module", params=["nnx", "linen", "built-in"])
def audited(request, shared_data, tokenizer):
    """(jaxcontam model, direct(tokens [T]) -> float32 [T, V] logits from the module's own forward)."""
    if request.param == "nnx":
        module = trained_nnx(shared_data, tokenizer)
        model = jflax.from_nnx(
            module,
            hidden=lambda m, *a: m.hidden_states(*a),
            head=lambda m: m.embed.embedding[...],
            packing=True,
            max_position=MAX_POSITION,
            tokenizer=tokenizer,
            eos_token_id=[tokenizer.eos_token_id],
        )
        forward = module
    elif request.param == "linen":
        module, params = trained_linen(shared_data, tokenizer)
        model = jflax.from_linen(
            module.apply,
            params,
            hidden="hidden_states",
            head=lambda p: p["embed"]["embedding"],
            packing=True,
            max_position=MAX_POSITION,
            tokenizer=tokenizer,
            eos_token_id=[tokenizer.eos_token_id],
        )

        def forward(*arrays):
            return module.apply({"params": params}, *arrays)
    else:
        model = jaxcontam.load_model(MODEL_DIR)
        spec = model.config

        @jax.jit
        def forward(*arrays):
            return spec.logits_from_hidden(model.params, spec.hidden_states(model.params, *arrays))

    def direct(tokens):
        # right-padded to a multiple of 64 tokens, which a causal forward never attends to from earlier positions:
        # a few shapes, so the module's eager operations compile a few times, not once per length
        length = len(tokens)
        padded = jnp.zeros((1, -(-length // 64) * 64), jnp.int32).at[0, :length].set(jnp.asarray(tokens, jnp.int32))
        positions = jnp.arange(padded.shape[1])[None]
        return np.asarray(forward(padded, positions, jnp.ones_like(padded))[0, :length], np.float64)

    return model, direct


def log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


TEXTS = [
    "First Citizen: Before we proceed any further, hear me speak.",
    "All: Speak, speak.",
    "You are all resolved rather to die than to famish?",
    "We know't, we know't. Let us kill him, and we'll have corn at our own price.",
]


def test_scores_and_minkpp_moments_equal_the_direct_forward(audited, tokenizer):
    model, direct = audited
    seqs = [tokenizer.encode(t) for t in TEXTS]
    scores = score_logprobs(model, seqs, with_stats=True, rows_per_batch=2)
    for seq, got in zip(seqs, scores, strict=True):
        logp = log_softmax(direct(seq))[:-1]
        np.testing.assert_allclose(got.logprobs, logp[np.arange(len(seq) - 1), seq[1:]], atol=1e-5, rtol=0)
        p = np.exp(logp)
        mean = (p * logp).sum(-1)  # Min-K%++'s mu and sigma of log p under the model's own distribution
        np.testing.assert_allclose(got.mean_logprobs, mean, atol=1e-5, rtol=0)
        np.testing.assert_allclose(got.std_logprobs, np.sqrt((p * logp * logp).sum(-1) - mean**2), atol=1e-4, rtol=0)


def test_p_true_equals_the_direct_forward(audited, tokenizer):
    model, direct = audited
    questions, answers = ["Who speaks first?", "What do they lack?"], ["The citizen.", "Corn."]
    got = p_true(model, questions, answers, template=KADAVATH)
    (yes,), (no,) = option_token_ids(tokenizer, KADAVATH)

    def option_logprob(prompt, option):  # log p of the option's tokens after the prompt, one after another
        logp = log_softmax(direct(prompt + list(option)))
        return sum(logp[len(prompt) - 1 + j, token] for j, token in enumerate(option))

    for i, (q, a) in enumerate(zip(questions, answers, strict=True)):
        prompt = encode_chat(tokenizer, KADAVATH.render(q, a), "never")
        np.testing.assert_allclose(got.p_true[i], np.exp(option_logprob(prompt, yes)), rtol=1e-4, atol=1e-9)
        np.testing.assert_allclose(got.p_false[i], np.exp(option_logprob(prompt, no)), rtol=1e-4, atol=1e-9)


def test_greedy_generation_equals_the_direct_forward(audited, tokenizer):
    """The wrappers give no KV cache: each step re-runs the sequence; the built-in decoder uses its cache."""
    model, direct = audited
    prompts = [tokenizer.encode(t)[:n] for t, n in zip(TEXTS, (5, 9, 3, 12), strict=True)]
    got = generate(model, prompts, max_new_tokens=6, stop_token_ids=[], rows_per_batch=2)
    for prompt, generation in zip(prompts, got, strict=True):
        seq = list(prompt)
        for _ in range(6):
            seq.append(int(np.argmax(direct(seq)[-1])))
        assert generation.token_ids == seq[len(prompt) :]


def test_in_training_audit_equals_the_direct_forward(audited, tokenizer, shared_data):
    """`AuditCallback` over the live params, called every step and auditing every other: the likelihood
    detector's mean log-prob of each item's solved text is the direct one."""
    model, direct = audited
    copa = load_benchmark("copa", split="test", roots=(shared_data,))
    benchmark = dataclasses.replace(copa, items=copa.items[:4])
    logs = []
    callback = AuditCallback(
        lambda params: dataclasses.replace(model, params=params),
        [AuditTarget(benchmark, (None,) * 4, (True, False, True, False))],
        AuditSettings(detectors=("likelihood",)),
        log=logs.append,
        every=2,
    )
    for step in (0, 1, 2):
        callback(step, model.params)
    rows = callback.history[-1]["results"][benchmark.name].rows
    assert [h["step"] for h in callback.history] == [0, 2] and logs[-1].startswith("step 2: audit of")
    for row, item in zip(rows, benchmark, strict=True):
        seq = tokenizer.encode(benchmark.solved_text(item))
        logp = log_softmax(direct(seq))[:-1][np.arange(len(seq) - 1), seq[1:]]
        assert row["mean_logprob"] == pytest.approx(float(logp.mean()), abs=1e-5)


def test_a_model_needs_hidden_and_head_or_logits():
    with pytest.raises(ModelError, match="needs hidden= and head=.*or logits= alone"):
        LanguageModel(vocab_size=8, max_position=8, hidden=lambda *a: None)
    with pytest.raises(ModelError, match="decode_fn= and init_cache_fn= together"):
        LanguageModel(vocab_size=8, max_position=8, logits=lambda *a: None, decode_fn=lambda *a: None)
