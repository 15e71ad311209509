"""A one-layer attention decoder implementing the engine's model interface (`jaxcontam.language_model`).

Engine tests use it to check packing, ordering, spans, compile counts and the
decode loop independently of the real decoders (which are checked against torch
transformers in their own tests and in tests/test_engine_torch_parity.py).
"""

from __future__ import annotations

import dataclasses
import types
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np


@dataclasses.dataclass(frozen=True)
class ToySpec:
    vocab_size: int = 61
    hidden_size: int = 16
    max_position: int = 512
    final_logit_softcap: float | None = None
    eos_token_id: int | None = None
    packing: ClassVar[bool] = True  # masks by positions and segment ids

    def hidden_states(self, params, tokens, positions, segment_ids):
        return hidden_states(params, self, tokens, positions, segment_ids)

    def output_projection(self, params):
        return params["out"], None

    def logits_from_hidden(self, params, hidden):
        return logits_from_hidden(params, self, hidden)

    def split_layers(self, params):
        return params  # one layer: nothing stacked

    def init_cache(self, batch, max_len, dtype):
        return {"x": jnp.zeros((batch, max_len, self.hidden_size), dtype), "pos": jnp.full((batch, max_len), -1)}

    def decode(self, params, tokens, positions, cache, cache_index):
        return decode(params, self, tokens, positions, cache, cache_index)


def init_params(spec: ToySpec, seed: int = 0):
    rng = np.random.default_rng(seed)
    d, v = spec.hidden_size, spec.vocab_size
    shapes = {"embed": (v, d), "pos": (spec.max_position, d), "wq": (d, d), "wk": (d, d), "wv": (d, d), "out": (d, v)}
    return {k: jnp.asarray(rng.normal(scale=0.8, size=s), jnp.float32) for k, s in shapes.items()}


def _attend(params, x, q_pos, keys_x, k_pos, allowed):
    q = x @ params["wq"]
    k = keys_x @ params["wk"]
    v = keys_x @ params["wv"]
    scores = jnp.einsum("btd,bsd->bts", q, k) / np.sqrt(x.shape[-1])
    scores = jnp.where(allowed, scores, -1e30)
    attn = jnp.where(allowed, jax.nn.softmax(scores, axis=-1), 0.0)
    return jnp.tanh(x + jnp.einsum("bts,bsd->btd", attn, v))


def _embed(params, tokens, positions):
    return params["embed"][tokens] + params["pos"][jnp.maximum(positions, 0)]


def hidden_states(params, spec, tokens, positions, segment_ids):
    x = _embed(params, tokens, positions)
    same = segment_ids[:, :, None] == segment_ids[:, None, :]
    causal = positions[:, None, :] <= positions[:, :, None]
    allowed = same & causal & (segment_ids[:, :, None] > 0)
    return _attend(params, x, positions, x, positions, allowed)


def logits_from_hidden(params, spec, hidden):
    z = (hidden @ params["out"]).astype(jnp.float32)
    if spec.final_logit_softcap is not None:
        z = spec.final_logit_softcap * jnp.tanh(z / spec.final_logit_softcap)
    return z


def _write(cache, new, cache_index):
    """new [B, t, ...] into cache [B, S, ...] from slot cache_index (a scalar, or one per row)."""
    index = jnp.broadcast_to(jnp.asarray(cache_index, jnp.int32), cache.shape[:1])
    return jax.vmap(lambda c, n, i: jax.lax.dynamic_update_slice_in_dim(c, n, i, axis=0))(cache, new, index)


def decode(params, spec, tokens, positions, cache, cache_index):
    x = _embed(params, tokens, positions)
    xs = _write(cache["x"], x, cache_index)
    ps = _write(cache["pos"], positions, cache_index)
    allowed = (ps[:, None, :] >= 0) & (ps[:, None, :] <= positions[:, :, None]) & (positions[:, :, None] >= 0)
    return _attend(params, x, positions, xs, ps, allowed), {"x": xs, "pos": ps}


def toy_model(spec: ToySpec = ToySpec(), seed: int = 0, tokenizer=None, mesh=None):
    """A stand-in for `jaxcontam.models.Model` with the attributes the engine reads (weights replicated)."""
    mesh = mesh or jax.make_mesh((jax.device_count(), 1), ("data", "model"), (jax.sharding.AxisType.Auto,) * 2)
    replicated = jax.sharding.NamedSharding(mesh, jax.P())
    params = jax.tree.map(
        lambda x: jax.make_array_from_callback(x.shape, replicated, lambda i: np.asarray(x)[i]), init_params(spec, seed)
    )
    return types.SimpleNamespace(config=spec, params=params, tokenizer=tokenizer, mesh=mesh)


def naive_log_softmax(model, seq):
    """Reference in float64 numpy: [n, V] next-token log-probs of the sequence alone."""
    p = {k: np.asarray(v, np.float64) for k, v in model.params.items()}
    n = len(seq)
    x = p["embed"][np.asarray(seq)] + p["pos"][:n]
    scores = (x @ p["wq"]) @ (x @ p["wk"]).T / np.sqrt(x.shape[-1])
    scores = np.where(np.tril(np.ones((n, n), bool)), scores, -np.inf)
    attn = np.exp(scores - scores.max(-1, keepdims=True))
    h = np.tanh(x + (attn / attn.sum(-1, keepdims=True)) @ (x @ p["wv"]))
    z = h @ p["out"]
    if model.config.final_logit_softcap is not None:
        z = model.config.final_logit_softcap * np.tanh(z / model.config.final_logit_softcap)
    logp = z - z.max(-1, keepdims=True)
    return logp - np.log(np.exp(logp).sum(-1, keepdims=True))


def naive_logprobs(model, seq):
    """Token t scored from tokens < t, for t = 1..n-1."""
    return naive_log_softmax(model, seq)[np.arange(len(seq) - 1), np.asarray(seq[1:])]
