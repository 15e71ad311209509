"""`Model`: a model the engine runs (architecture, sharded weights, tokenizer, mesh) with a reference scoring path."""

from __future__ import annotations

import dataclasses
import functools
import pathlib
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh

from jaxcontam.errors import JaxcontamError
from jaxcontam.language_model import ModelInterface
from jaxcontam.mesh import batch_sharding

_LENGTH_BUCKET = 32  # pad lengths up to a multiple of this, so few shapes get compiled
_LOGIT_BUDGET = 1 << 28  # float32 logits entries per forward chunk (1 GiB)


@functools.partial(jax.jit, static_argnames="spec")
def next_token_logprobs(params: dict, spec: ModelInterface, tokens: jax.Array, segment_ids: jax.Array) -> jax.Array:
    """float32 [B, T-1]: log p(tokens[:, t+1] | tokens[:, :t+1]) for right-padded rows (full-vocab softmax)."""
    positions = jnp.broadcast_to(jnp.arange(tokens.shape[1], dtype=jnp.int32), tokens.shape)
    hidden = spec.hidden_states(params, tokens, positions, segment_ids)
    logp = jax.nn.log_softmax(spec.logits_from_hidden(params, hidden[:, :-1]), axis=-1)
    return jnp.take_along_axis(logp, tokens[:, 1:, None], axis=-1)[..., 0]


@dataclasses.dataclass
class Model:
    """A model the engine runs: `config` (its architecture, a `ModelInterface`: a `ModelSpec` or a `LanguageModel`),
    `params` (weights pytree on `mesh`), `tokenizer` (or None)."""

    config: ModelInterface
    params: dict
    tokenizer: Any  # a Hugging Face tokenizer (encode, decode, ...), or None
    mesh: Mesh
    path: pathlib.Path | None = None

    def logprobs(self, token_ids: list[list[int]]) -> list[np.ndarray]:
        """Per sequence, float32 [len-1] log-probs of each token given its prefix (the first token has none).

        The reference path: right-padded batches, a full-vocabulary float32 softmax. The engine
        (`jaxcontam.engine`) has the fast packed and vocab-blocked path.
        """
        seqs = [self._checked(i, seq) for i, seq in enumerate(token_ids)]
        results: dict[int, np.ndarray] = {}
        data = self.mesh.shape["data"]
        order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
        start = 0
        while start < len(order):
            width = -(-max(len(seqs[order[start]]), 2) // _LENGTH_BUCKET) * _LENGTH_BUCKET
            rows = max(data, _LOGIT_BUDGET // (width * self.config.vocab_size) // data * data)
            chunk = [i for i in order[start : start + rows] if len(seqs[i]) <= width]
            start += len(chunk)
            padded = -(-len(chunk) // data) * data
            tokens = np.zeros((padded, width), np.int32)
            segments = np.zeros((padded, width), np.int32)
            for row, i in enumerate(chunk):
                tokens[row, : len(seqs[i])] = seqs[i]
                segments[row, : len(seqs[i])] = 1
            sharding = batch_sharding(self.mesh)
            out = np.asarray(
                next_token_logprobs(
                    self.params, self.config, jax.device_put(tokens, sharding), jax.device_put(segments, sharding)
                )
            )
            for row, i in enumerate(chunk):
                results[i] = out[row, : len(seqs[i]) - 1]
        return [results[i] for i in range(len(seqs))]

    def _checked(self, i: int, seq) -> np.ndarray:
        arr = np.asarray(seq)
        if arr.ndim != 1 or len(arr) == 0 or not np.issubdtype(arr.dtype, np.integer):
            raise JaxcontamError(f"token_ids[{i}]: expected a non-empty list of ints, got {str(seq)[:60]}")
        if arr.min() < 0 or arr.max() >= self.config.vocab_size:
            raise JaxcontamError(
                f"token_ids[{i}]: ids must lie in [0, {self.config.vocab_size}) for this model; "
                f"found {int(arr.min())}..{int(arr.max())}"
            )
        if len(arr) > self.config.max_position:
            raise JaxcontamError(
                f"token_ids[{i}]: {len(arr)} tokens exceed the model's max_position "
                f"({self.config.max_position}); truncate the sequence"
            )
        return arr.astype(np.int32)
