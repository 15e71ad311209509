"""Batched KV-cache generation vs a no-cache greedy reference; padding sides; seeded sampling."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats

from helpers import ToySpec, naive_log_softmax, toy_model
from jaxcontam.engine.generation import generate
from jaxcontam.engine.sampling import sample_next


@pytest.fixture
def model():
    return toy_model(ToySpec(eos_token_id=7))


def greedy_reference(model, prompt, max_new, stop):
    seq = list(prompt)
    out = []
    for _ in range(max_new):
        nxt = int(np.argmax(naive_log_softmax(model, seq)[-1]))
        if nxt in stop:
            break
        out.append(nxt)
        seq.append(nxt)
    return out


def prompts(n, seed):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 61, size=rng.integers(1, 20)).tolist() for _ in range(n)]


@pytest.mark.parametrize("padding", ["left", "right"])
def test_greedy_matches_reference_on_both_padding_sides(model, padding):
    ps = prompts(7, 0)
    got = generate(model, ps, max_new_tokens=12, padding=padding, rows_per_batch=4, buckets=(8, 32))
    for p, g in zip(ps, got):
        want = greedy_reference(model, p, 12, {7})
        assert g.token_ids == want
        assert g.finish_reason == ("length" if len(want) == 12 else "stop_token")


def test_sampling_is_seeded_and_independent_of_batching(model):
    ps = prompts(6, 1)
    a = generate(model, ps, max_new_tokens=10, temperature=1.3, top_p=0.9, seed=5, rows_per_batch=2)
    b = generate(model, ps, max_new_tokens=10, temperature=1.3, top_p=0.9, seed=5, rows_per_batch=6)
    c = generate(model, ps, max_new_tokens=10, temperature=1.3, top_p=0.9, seed=6, rows_per_batch=2)
    assert [g.token_ids for g in a] == [g.token_ids for g in b]
    assert [g.token_ids for g in a] != [g.token_ids for g in c]


def test_top_p_keeps_the_nucleus_only():
    logits = jnp.log(jnp.asarray([[0.5, 0.3, 0.15, 0.05]] * 4000, jnp.float32))
    keys = jax.random.split(jax.random.key(0), 4000)
    draws = np.asarray(sample_next(logits, keys, jnp.float32(1.0), jnp.float32(0.7)))
    counts = np.bincount(draws, minlength=4) / len(draws)
    # nucleus {0, 1} (0.5 + 0.3 >= 0.7), renormalised to 0.625 / 0.375
    assert counts[2] == counts[3] == 0
    np.testing.assert_allclose(counts[:2], [0.625, 0.375], atol=0.03)
    greedy = sample_next(logits[:3], keys[:3], jnp.float32(0.0), jnp.float32(1.0))
    assert np.all(np.asarray(greedy) == 0)


@pytest.mark.parametrize("temperature", [1.0, 0.5, 2.0])
def test_plain_sampling_draws_the_tempered_distribution(temperature):
    """top_p = 1 (no nucleus, no sort): draws follow softmax(logits / T), by a chi-square test (scipy)."""
    p = np.asarray([0.4, 0.25, 0.2, 0.1, 0.05])
    logits = jnp.log(jnp.asarray([p] * 20000, jnp.float32))
    keys = jax.random.split(jax.random.key(3), 20000)
    draws = np.asarray(sample_next(logits, keys, jnp.float32(temperature), jnp.float32(1.0)))
    expected = p ** (1 / temperature) / np.sum(p ** (1 / temperature))
    observed = np.bincount(draws, minlength=len(p))
    assert scipy.stats.chisquare(observed, expected * len(draws)).pvalue > 1e-3


def test_stop_strings_cut_the_decoded_text(model):
    class Letters:
        def decode(self, ids, skip_special_tokens=True):
            return "".join(chr(ord("a") + i % 26) for i in ids)

    model.tokenizer = Letters()
    full = generate(model, [[3, 4, 5]], max_new_tokens=8, stop_token_ids=[])[0]
    assert full.finish_reason == "length" and len(full.token_ids) == 8
    stop = full.text[3:5]
    cut = generate(model, [[3, 4, 5]], max_new_tokens=8, stop_token_ids=[], stop_strings=[stop])[0]
    assert cut.finish_reason == "stop_string" and cut.text == full.text[: full.text.find(stop)]


def test_stories260k_greedy_reproduces_the_published_story(shared_data, tmp_path):
    """Real pretrained weights: greedy decoding from BOS + "Once upon a time" gives llama2.c's reference story."""
    import jaxcontam
    from jaxcontam.models.llama2c import convert_llama2c

    folder = shared_data / "tiny_lm_stories260K"
    model = jaxcontam.load_model(str(convert_llama2c(folder / "stories260K.bin", folder / "tok512.bin", tmp_path)))
    prompt = model.tokenizer.encode("Once upon a time")
    (story,) = generate(model, [prompt], max_new_tokens=40)
    assert story.text.startswith(
        ", there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball."
    )


def test_progress_callable_reports_as_prompts_finish(model):
    ps = prompts(5, 2)
    seen = []
    got = generate(model, ps, max_new_tokens=6, rows_per_batch=2, progress=seen.append)
    done = [p.items_done for p in seen]
    assert done == sorted(done) and done[-1] == 5 and len(done) >= 3  # two rows: at least three rounds
    assert all(p.items_total == 5 for p in seen)
    assert seen[-1].tokens == sum(len(g.token_ids) for g in got)
    assert seen[-1].eta_seconds == 0 and seen[-1].tokens_per_second > 0


@pytest.mark.parametrize(("family", "split"), [("llama", False), ("llama", True), ("gemma2", True)])
def test_kv_cached_logits_equal_the_full_forward(tmp_path, family, split):
    """Ragged, left-padded prefill then one token per step through the cache: every step's logits equal those
    of the full (cache-free) forward over the whole sequence, f32, on a tiny grouped-query model; with the
    weights stacked or split per layer (as generation passes them)."""
    import torch
    import transformers as tf

    import jaxcontam
    from jaxcontam import models

    small = {
        "vocab_size": 53,
        "hidden_size": 32,
        "intermediate_size": 48,
        "num_hidden_layers": 3,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 64,
    }
    config = {
        "llama": lambda: tf.LlamaConfig(**small),
        "gemma2": lambda: tf.Gemma2Config(
            **small,
            head_dim=8,
            sliding_window=4,
            query_pre_attn_scalar=8,
            attn_logit_softcapping=2.0,
            final_logit_softcapping=3.0,
        ),
    }[family]()
    torch.manual_seed(0)
    tf.AutoModelForCausalLM.from_config(config).save_pretrained(tmp_path)
    m = jaxcontam.load_model(str(tmp_path))
    spec = m.config
    rng = np.random.default_rng(3)
    seqs = [rng.integers(0, 53, n).tolist() for n in (14, 9, 5)]
    width, steps = 10, 4  # prefill all but the last 4 tokens of each, left-padded to 10; then 4 steps
    cut = [len(s) - steps for s in seqs]
    tokens = np.zeros((3, width), np.int32)
    positions = np.full((3, width), -1, np.int32)
    for r, (s, c) in enumerate(zip(seqs, cut)):
        tokens[r, width - c :], positions[r, width - c :] = s[:c], np.arange(c)
    decode = jax.jit(models.decode, static_argnums=1)
    cache = models.init_cache(spec, 3, width + steps, jnp.float32)
    params = models.split_layers(m.params) if split else m.params
    hidden, cache = decode(params, spec, tokens, positions, cache, 0)
    got = {r: [hidden[r, -1]] for r in range(3)}
    for t in range(steps - 1):
        step_tokens = np.array([[s[c + t]] for s, c in zip(seqs, cut)], np.int32)
        step_pos = np.array([[c + t] for c in cut], np.int32)
        hidden, cache = decode(params, spec, step_tokens, step_pos, cache, width + t)
        for r in range(3):
            got[r].append(hidden[r, 0])
    for r, (s, c) in enumerate(zip(seqs, cut)):
        n = c + steps - 1
        full = models.hidden_states(
            m.params, spec, np.array([s[:n]], np.int32), np.arange(n)[None].astype(np.int32), np.ones((1, n), np.int32)
        )[0, c - 1 :]
        want = models.logits_from_hidden(m.params, spec, full)
        np.testing.assert_allclose(
            models.logits_from_hidden(m.params, spec, jnp.stack(got[r])), want, atol=1e-5, rtol=0, err_msg=f"row {r}"
        )


def test_default_rows_are_what_the_cache_budget_holds(model, monkeypatch):
    from jaxcontam.engine import generation

    params = generation._decode_params(model)
    assert generation.cache_rows(model.config, params, 32) == generation.MAX_ROWS  # a toy's cache is tiny
    cache = model.config.init_cache(1, 32, jax.tree.leaves(params)[0].dtype)
    per_row = sum(leaf.nbytes for leaf in jax.tree.leaves(cache))
    monkeypatch.setattr(generation, "CACHE_BYTES", 3 * per_row + 1)
    assert generation.cache_rows(model.config, params, 32) == 3
    ps = prompts(9, 3)
    chosen = generate(model, ps, max_new_tokens=12, rows_per_batch=4)
    by_budget = generate(model, ps, max_new_tokens=12)  # 3 rows: the longest prompt + 12 tokens fit 32 slots
    assert [g.token_ids for g in by_budget] == [g.token_ids for g in chosen]


def test_few_prompts_decode_in_few_rows(model, monkeypatch):
    """4 prompts decode in 4 rows, not the budget's 64 (16x the work); the texts are those of 64 rows."""
    from jaxcontam.engine import decode_loop, generation

    assert [generation.needed_rows(n) for n in (1, 2, 3, 4, 5, 33, 64)] == [1, 2, 4, 4, 8, 64, 64]
    seen = []
    empty_rows = decode_loop.empty_rows
    monkeypatch.setattr(decode_loop, "empty_rows", lambda *a, **k: seen.append(k["rows"]) or empty_rows(*a, **k))
    ps = prompts(4, 5)
    few = generate(model, ps, max_new_tokens=8)
    assert seen == [4]
    assert [g.token_ids for g in few] == [g.token_ids for g in generate(model, ps, max_new_tokens=8, rows_per_batch=64)]
