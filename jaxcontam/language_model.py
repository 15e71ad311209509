"""`LanguageModel`: any JAX language model, described by plain functions of (params, arrays), for the engine.

The engine's jitted steps (scoring, P(True), generation) take the model's architecture as a static argument
and its params as an ordinary one, and call only these methods on the architecture:

    hidden_states(params, tokens, positions, segment_ids) -> [B, T, D] final hidden states (or [B, T, V] logits)
    output_projection(params) -> (weight [V, D] or [D, V], bias or None), or None for a logits-only model
    logits_from_hidden(params, hidden [..., D]) -> float32 [..., V]
    init_cache(batch, max_len, dtype) -> cache pytree
    decode(params, tokens [B, t], positions [B, t], cache, cache_index) -> (hidden [B, t, D], cache)
    split_layers(params) -> params laid out for `decode`

and read `vocab_size`, `max_position`, `final_logit_softcap` and `eos_token_id`. jaxcontam's own decoders
(`jaxcontam.models.ModelSpec`) implement them; `LanguageModel` builds them from a user's functions, so a model
written with Flax NNX, Linen, Equinox or as a pure function is audited as it is, without conversion.

Inputs: int32 [B, T] tokens; positions count from 0 within each sequence; segment_ids tell the sequences packed
in one row apart (0 = padding). A query attends to keys of its own segment at positions <= its own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax
import jax.numpy as jnp

from jaxcontam.errors import ModelError


@dataclasses.dataclass(frozen=True, eq=False)
class LanguageModel:
    """A language model from functions; hashed by identity, so the engine compiles its steps once per instance.

    Give either `hidden` (params, tokens, positions, segment_ids) -> [B, T, D] with `head` (params) -> [V, D]
    (the output matrix: scoring then runs a blockwise log-softmax over the vocabulary and never holds [B, T, V]
    logits), or `logits` (params, tokens, positions, segment_ids) -> [B, T, V]. Optional `decode` and
    `init_cache` (the signatures of the module docstring) give KV-cached generation; without them each new
    token re-runs the whole sequence (correct, quadratic in its length). `eos_token_id`: the ids that end
    generation.
    """

    vocab_size: int
    max_position: int
    hidden: Callable | None = None
    head: Callable | None = None
    logits: Callable | None = None
    decode_fn: Callable | None = None
    init_cache_fn: Callable | None = None
    eos_token_id: tuple[int, ...] = ()
    final_logit_softcap: float | None = None

    def __post_init__(self):
        if (self.hidden is None) == (self.logits is None) or (self.hidden is not None) != (self.head is not None):
            raise ModelError("LanguageModel needs hidden= and head= (hidden states and the [V, D] output matrix), "
                             "or logits= alone")
        if (self.decode_fn is None) != (self.init_cache_fn is None):
            raise ModelError("LanguageModel: give decode_fn= and init_cache_fn= together (KV-cached generation), "
                             "or neither (generation re-runs the sequence)")
        object.__setattr__(self, "eos_token_id", tuple(int(i) for i in self.eos_token_id))

    @property
    def hidden_size(self) -> None:
        """Not needed: the output matrix is [V, D] by contract."""
        return None

    @property
    def eos_token_ids(self) -> tuple[int, ...]:
        return self.eos_token_id

    def hidden_states(self, params, tokens, positions, segment_ids) -> jax.Array:
        forward = self.hidden if self.hidden is not None else self.logits
        return forward(params, tokens, positions, segment_ids)

    def output_projection(self, params):
        return None if self.head is None else (self.head(params), None)

    def logits_from_hidden(self, params, hidden) -> jax.Array:
        if self.head is None:  # a logits-only model's "hidden states" are its logits
            logits = hidden.astype(jnp.float32)
        else:
            logits = jnp.einsum("...d,vd->...v", hidden, self.head(params), preferred_element_type=jnp.float32)
        if self.final_logit_softcap is not None:
            logits = self.final_logit_softcap * jnp.tanh(logits / self.final_logit_softcap)
        return logits

    def split_layers(self, params):
        return params

    def init_cache(self, batch: int, max_len: int, dtype):
        if self.init_cache_fn is not None:
            return self.init_cache_fn(batch, max_len, dtype)
        return {"tokens": jnp.zeros((batch, max_len), jnp.int32), "pos": jnp.full((batch, max_len), -1, jnp.int32)}

    def decode(self, params, tokens, positions, cache, cache_index):
        if self.decode_fn is not None:
            return self.decode_fn(params, tokens, positions, cache, cache_index)
        return _recompute_decode(self, params, tokens, positions, cache, cache_index)


def _recompute_decode(model: LanguageModel, params, tokens, positions, cache, cache_index):
    """`decode` without a KV cache: write the new tokens into a token buffer and run the whole buffer again.

    The buffer's slots hold tokens with their positions (-1 = empty or padding); every filled slot is one
    sequence (segment 1), so a query at position p sees exactly the slots at positions <= p.
    """
    from jaxcontam.models.decoder import write_slots

    buffer = write_slots(cache["tokens"], tokens.astype(jnp.int32), cache_index, axis=1)
    slot_pos = write_slots(cache["pos"], positions.astype(jnp.int32), cache_index, axis=1)
    segments = (slot_pos >= 0).astype(jnp.int32)
    hidden = model.hidden_states(params, buffer, jnp.maximum(slot_pos, 0), segments)
    count = tokens.shape[1]
    index = jnp.broadcast_to(jnp.asarray(cache_index, jnp.int32), tokens.shape[:1])
    slots = index[:, None] + jnp.arange(count)[None, :]
    new = jnp.take_along_axis(hidden, slots[:, :, None], axis=1)
    return new, {"tokens": buffer, "pos": slot_pos}
