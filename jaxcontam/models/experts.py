"""The mixture-of-experts block (mixtral, qwen3_moe) that replaces the MLP: a router picks k experts per token.

Experts are stacked on a leading axis ([E, D, F] gate and up, [E, F, D] down) that the mesh's "model" axis
splits, so each device holds and runs its share of the experts.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxcontam.models import layers
from jaxcontam.models.config import DecoderConfig


def router_weights(spec: DecoderConfig, w: dict, h: jax.Array) -> jax.Array:
    """float32 [B, T, E]: each token's weight on every expert; zero outside its top k.

    Softmax over all experts in float32, the top k kept, renormalised to sum to 1 when the family does (mixtral
    always, qwen3_moe with norm_topk_prob).
    """
    probs = jax.nn.softmax(jnp.einsum("btd,de->bte", h, w["router"]).astype(jnp.float32), axis=-1)
    top, chosen = jax.lax.top_k(probs, spec.experts.per_token)
    if spec.experts.norm_topk_prob:
        top = top / jnp.sum(top, axis=-1, keepdims=True)
    return jnp.einsum("btk,btke->bte", top, jax.nn.one_hot(chosen, spec.experts.count, dtype=jnp.float32))


def mixture(spec: DecoderConfig, w: dict, h: jax.Array) -> jax.Array:
    """Exact top-k mixture of gated experts: no capacity limit, so no token is ever dropped.

    Every expert runs on every token and unchosen experts get weight 0: exact routing with static shapes, the
    expert axis split over the mesh's "model" axis. It costs num_experts / k times the flops of the chosen
    experts alone.
    """
    weights = router_weights(spec, w, h).astype(h.dtype)
    gate = jnp.einsum("btd,edf->btef", h, w["w_gate"])
    inner = layers.activation(spec.activation, gate) * jnp.einsum("btd,edf->btef", h, w["w_up"])
    return jnp.einsum("btef,efd->btd", inner * weights[..., None], w["w_down"])
