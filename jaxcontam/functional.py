"""Audit a model written as pure functions (MaxText style): `from_fn(apply, params)` wraps it as a `jaxcontam.Model`.

`apply(params, tokens)` -> [B, T, V] logits is all it takes: the vocabulary size is read from the output's shape
(`jax.eval_shape`, nothing runs) and no length limit is imposed unless `max_position` is given. The engine gives
such a model one sequence per row, right-padded, so any causal model is exact. A model that masks attention by
positions and segment ids says so with `packing=True` and is then called `apply(params, tokens, positions,
segment_ids)` on rows holding several sequences (see `jaxcontam.language_model.ModelInterface`).
`jaxcontam.flax_models` builds its wrappers on `wrap_functions` here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
from jax.sharding import Mesh

from jaxcontam.errors import ModelError
from jaxcontam.language_model import NO_LENGTH_LIMIT, LanguageModel
from jaxcontam.mesh import make_mesh
from jaxcontam.models.model import Model


def mesh_of(params, mesh: Mesh | None) -> Mesh:
    """`mesh`, else the mesh the params are placed on, else every device on "data"."""
    if mesh is None:
        shardings = [leaf.sharding for leaf in jax.tree.leaves(params) if isinstance(leaf, jax.Array)]
        named = [
            s.mesh
            for s in shardings
            if isinstance(s, jax.sharding.NamedSharding) and isinstance(s.mesh, Mesh)  # placed arrays: concrete
        ]
        mesh = named[0] if named else None
    if mesh is not None and "data" not in mesh.axis_names:
        raise ModelError(
            f"the params' mesh has axes {tuple(mesh.axis_names)}; jaxcontam splits batches over an axis "
            "named 'data' (and the vocabulary over 'model'): pass mesh= with those axis names"
        )
    return mesh if mesh is not None else make_mesh()


def as_engine_call(fn: Callable, packing: bool) -> Callable:
    """fn(params, tokens[, positions, segment_ids]) as the engine calls it: (params, tokens, positions,
    segment_ids). Without packing the model is given the tokens alone (its rows hold one sequence each)."""
    if packing:
        return fn
    return lambda params, tokens, positions, segment_ids: fn(params, tokens)


def vocab_size_of(forward: Callable, head: Callable | None, params) -> int:
    """V from the shapes of head(params) -> [V, D], or else of forward's logits on a [1, 2] batch."""
    if head is not None:
        shape = jax.eval_shape(head, params).shape
        if len(shape) != 2:
            raise ModelError(f"head(params) gave shape {shape}; it must be the [V, D] output matrix")
        return int(shape[0])
    probe = jax.ShapeDtypeStruct((1, 2), jnp.int32)
    out = jax.eval_shape(forward, params, probe, probe, probe)
    shape = getattr(out, "shape", None)
    if shape is None or len(shape) != 3 or tuple(shape[:2]) != (1, 2):
        found = f"shape {tuple(shape)}" if shape is not None else type(out).__name__
        raise ModelError(
            f"the model gave {found} for tokens of shape (1, 2); it must return [B, T, V] logits "
            "(wrap a model that returns (logits, extras): `lambda p, t: apply(p, t)[0]`)"
        )
    return int(shape[2])


def wrap_functions(
    params,
    *,
    forward: Callable,
    head: Callable | None,
    packing: bool,
    vocab_size: int | None,
    max_position: int | None,
    tokenizer,
    mesh,
    eos_token_id: Sequence[int],
) -> Model:
    """A `Model` from forward(params, tokens, positions, segment_ids) giving hidden states (when head(params)
    -> [V, D] is given) or logits; a `vocab_size` given must be the one the output has."""
    found = vocab_size_of(forward, head, params)
    if vocab_size is not None and vocab_size != found:
        raise ModelError(
            f"vocab_size={vocab_size}, but the model's output has {found} entries per token: leave "
            "vocab_size out (it is read from the output) or fix it"
        )
    is_hidden = head is not None
    config = LanguageModel(
        vocab_size=found,
        max_position=NO_LENGTH_LIMIT if max_position is None else max_position,
        hidden=forward if is_hidden else None,
        head=head,
        logits=None if is_hidden else forward,
        eos_token_id=tuple(eos_token_id),
        packing=packing,
    )
    return Model(config=config, params=params, tokenizer=tokenizer, mesh=mesh_of(params, mesh))


def from_fn(
    apply: Callable,
    params,
    *,
    head: Callable | None = None,
    packing: bool = False,
    vocab_size: int | None = None,
    max_position: int | None = None,
    tokenizer=None,
    mesh=None,
    eos_token_id: Sequence[int] = (),
) -> Model:
    """A language model written as a pure function, `apply(params, tokens) -> [B, T, V]` logits, as a `Model`.

    `head(params) -> [V, D]`: `apply` gives final hidden states [B, T, D] instead, and scoring runs the blockwise
    log-softmax without holding [B, T, V] logits. `packing=True`: `apply(params, tokens, positions, segment_ids)`
    keeps packed sequences apart (see the module docstring). `vocab_size`: read from the output (checked if given);
    `max_position`: no limit when not given. During training, audit the live weights with
    `dataclasses.replace(model, params=params)`: the compiled steps are reused.
    """
    return wrap_functions(
        params,
        forward=as_engine_call(apply, packing),
        head=head,
        packing=packing,
        vocab_size=vocab_size,
        max_position=max_position,
        tokenizer=tokenizer,
        mesh=mesh,
        eos_token_id=eos_token_id,
    )
