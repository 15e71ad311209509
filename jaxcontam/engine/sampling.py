"""Choosing the next token from logits: argmax, or nucleus (top-p) sampling at a temperature."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def sample_next(logits: jax.Array, keys: jax.Array, temperature: jax.Array, top_p: jax.Array) -> jax.Array:
    """One token per row from float32 logits [B, V]: argmax when temperature == 0, else nucleus sampling.

    A runtime branch, so greedy decoding never pays for the sort over the vocabulary that sampling needs.
    """

    def greedy(logits):
        return jnp.argmax(logits, axis=-1).astype(jnp.int32)

    def nucleus(logits):
        scaled = logits / jnp.maximum(temperature, 1e-6)
        probs = jax.nn.softmax(scaled, axis=-1)
        sorted_probs = -jnp.sort(-probs, axis=-1)
        before = jnp.cumsum(sorted_probs, axis=-1) - sorted_probs  # mass of strictly more likely tokens
        kept = jnp.where(before < top_p, sorted_probs, jnp.inf)
        threshold = jnp.min(kept, axis=-1, keepdims=True)  # smallest probability still inside the nucleus
        masked = jnp.where(probs >= threshold, scaled, -jnp.inf)
        return jax.vmap(jax.random.categorical)(keys, masked).astype(jnp.int32)

    return jax.lax.cond(temperature > 0, nucleus, greedy, logits)
