"""The engine's model interface (`ModelInterface`), and `LanguageModel`: any JAX language model built from plain
functions of (params, arrays), so a model written with Flax NNX, Linen or as pure functions is audited as it is.

The engine's jitted steps (scoring, P(True), generation) take a model's architecture (`Model.config`) as a static
argument and its params as an ordinary one; `ModelInterface` lists all they use of it. jaxcontam's own decoders
(`jaxcontam.models.ModelSpec`) and `LanguageModel` implement it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import jax
import jax.numpy as jnp

from jaxcontam.cache_slots import write_slots
from jaxcontam.errors import ModelError

NO_LENGTH_LIMIT = 2**31 - 1  # the max_position of a model that states none


@runtime_checkable
class ModelInterface(Protocol):
    """What the engine calls on a model's architecture (the only place it is written down).

    Hashable (a static argument of jitted steps). Inputs are int32 [B, T] tokens, positions and segment_ids.
    A model with `packing = True` declares that it reads positions (counting from 0 within each sequence) and
    segment ids (1, 2, ... for the sequences packed in one row, 0 = padding), and that a query attends only to
    keys of its own segment at positions <= its own: the engine then packs several sequences into one row. With
    `packing = False` the engine gives each row one sequence from position 0, right-padded (segment 1, then 0),
    so any causal model is exact on the real tokens whether or not it reads positions and segment ids.
    """

    # read-only attributes (properties here, so that frozen dataclasses implement them)
    @property
    def vocab_size(self) -> int: ...

    @property
    def max_position(self) -> int:
        """The longest sequence it takes (`NO_LENGTH_LIMIT` when it states none)."""
        ...

    @property
    def final_logit_softcap(self) -> float | None:
        """Logits become c * tanh(logits / c)."""
        ...

    @property
    def eos_token_id(self) -> int | tuple[int, ...] | None:
        """The ids that end generation."""
        ...

    @property
    def packing(self) -> bool: ...

    @property
    def hidden_size(self) -> int | None:
        """D of the output matrix, or None when it is [V, D]."""
        ...

    def hidden_states(self, params, tokens, positions, segment_ids) -> jax.Array:
        """[B, T, D] final hidden states, or [B, T, V] logits for a model with no output projection."""
        ...

    def output_projection(self, params) -> Any:
        """(weight [V, D] or [D, V], bias [V] or None), or None for a logits-only model."""
        ...

    def logits_from_hidden(self, params, hidden) -> jax.Array:
        """float32 [..., V] logits from hidden [..., D] (softcap included)."""
        ...

    def split_layers(self, params) -> Any:
        """The params laid out for `decode` (e.g. stacked layers split), done once per model."""
        ...

    def init_cache(self, batch: int, max_len: int, dtype) -> Any:
        """An empty cache of `max_len` slots per row; every leaf has the row axis first."""
        ...

    def decode(self, params, tokens, positions, cache, cache_index) -> tuple[jax.Array, Any]:
        """(hidden [B, t, D], cache): run t new tokens written at slots cache_index.. (an int or one per row) of
        the cache; position -1 marks a padding slot, which no query may attend to."""
        ...


@dataclasses.dataclass(frozen=True, eq=False)
class LanguageModel:
    """A `ModelInterface` from functions; hashed by identity, so the engine compiles its steps once per instance.

    Give either `hidden` (params, tokens, positions, segment_ids) -> [B, T, D] with `head` (params) -> [V, D]
    (the output matrix: scoring then runs a blockwise log-softmax over the vocabulary and never holds [B, T, V]
    logits), or `logits` (params, tokens, positions, segment_ids) -> [B, T, V]. `packing=True` declares that
    they mask attention by positions and segment ids (see `ModelInterface`); by default each row holds one
    sequence. Optional `decode_fn` and `init_cache_fn` (the signatures of `ModelInterface.decode` and
    `init_cache`) give KV-cached generation; without them each new token re-runs the whole sequence (correct,
    quadratic in its length). `max_position`: the longest sequence it takes (default `NO_LENGTH_LIMIT`, as is
    None: no limit). `eos_token_id`: the ids that end generation.
    """

    vocab_size: int
    max_position: int = NO_LENGTH_LIMIT
    hidden: Callable | None = None
    head: Callable | None = None
    logits: Callable | None = None
    decode_fn: Callable | None = None
    init_cache_fn: Callable | None = None
    eos_token_id: tuple[int, ...] = ()
    final_logit_softcap: float | None = None
    packing: bool = False

    def __post_init__(self):
        if (self.hidden is None) == (self.logits is None) or (self.hidden is not None) != (self.head is not None):
            raise ModelError(
                "LanguageModel needs hidden= and head= (hidden states and the [V, D] output matrix), or logits= alone"
            )
        if (self.decode_fn is None) != (self.init_cache_fn is None):
            raise ModelError(
                "LanguageModel: give decode_fn= and init_cache_fn= together (KV-cached generation), "
                "or neither (generation re-runs the sequence)"
            )
        object.__setattr__(self, "eos_token_id", tuple(int(i) for i in self.eos_token_id))
        if self.max_position is None:
            object.__setattr__(self, "max_position", NO_LENGTH_LIMIT)

    @property
    def hidden_size(self) -> None:
        """Not needed: the output matrix is [V, D] by contract."""
        return None

    @property
    def eos_token_ids(self) -> tuple[int, ...]:
        return self.eos_token_id

    def hidden_states(self, params, tokens, positions, segment_ids) -> jax.Array:
        forward = self.hidden if self.hidden is not None else self.logits
        assert forward is not None  # __post_init__: hidden= or logits=
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
    """`decode` without a KV cache: write the new tokens into a token buffer and run the whole sequence again.

    The buffer's slots hold tokens with their positions (-1 = empty or padding), in any order (generation pads
    prompts on the left or the right). Each row's tokens are gathered in position order to the front of the
    row, right-padded: one sequence from position 0 (segment 1), so a causal model is exact whether or not it
    reads positions and segment ids. The new tokens' outputs are read back at their positions.
    """
    buffer = write_slots(cache["tokens"], tokens.astype(jnp.int32), cache_index, axis=1)
    slot_pos = write_slots(cache["pos"], positions.astype(jnp.int32), cache_index, axis=1)
    filled = slot_pos >= 0
    order = jnp.argsort(jnp.where(filled, slot_pos, jnp.iinfo(jnp.int32).max), axis=1, stable=True)
    in_order = jnp.take_along_axis(jnp.where(filled, buffer, 0), order, axis=1)
    segments = jnp.take_along_axis(filled, order, axis=1).astype(jnp.int32)
    length = slot_pos.shape[1]
    hidden = model.hidden_states(params, in_order, jnp.broadcast_to(jnp.arange(length), in_order.shape), segments)
    at = jnp.clip(positions.astype(jnp.int32), 0, length - 1)  # padding queries (-1) read slot 0, unused
    return jnp.take_along_axis(hidden, at[:, :, None], axis=1), {"tokens": buffer, "pos": slot_pos}
