"""Audit a Flax model as it is: `from_nnx` and `from_linen` wrap it as a `jaxcontam.Model` the engine runs.

You point jaxcontam at two things of your model: its final hidden states and its output matrix (then scoring
runs the blockwise vocabulary log-softmax and the Min-K%++ statistics without holding [B, T, V] logits), or
only its logits. The accessors get arrays laid out as `jaxcontam.language_model` describes them: tokens,
positions from 0 within each sequence, and segment ids that tell sequences packed in one row apart (0 =
padding), which the model's attention must respect.

The params stay where they are: their own NamedShardings place them, and the mesh they live on (when it has a
"data" axis) splits the batches. During training, audit the live weights with
`dataclasses.replace(model, params=nnx.state(module))` (NNX) or `params=state.params` (Linen): the compiled
steps are reused, since the model's `LanguageModel` stays the same object.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax

from jaxcontam.errors import ModelError
from jaxcontam.language_model import LanguageModel
from jaxcontam.models.model import Model
from jaxcontam.mesh import make_mesh


def _mesh_of(params, mesh):
    """`mesh`, else the mesh the params are placed on, else every device on "data"."""
    if mesh is None:
        shardings = [leaf.sharding for leaf in jax.tree.leaves(params) if isinstance(leaf, jax.Array)]
        named = [s.mesh for s in shardings if isinstance(s, jax.sharding.NamedSharding)]
        mesh = named[0] if named else None
    if mesh is not None and "data" not in mesh.axis_names:
        raise ModelError(f"the params' mesh has axes {tuple(mesh.axis_names)}; jaxcontam splits batches over an axis "
                         "named 'data' (and the vocabulary over 'model'): pass mesh= with those axis names")
    return mesh if mesh is not None else make_mesh()


def from_nnx(module, *, vocab_size: int, max_position: int, hidden: Callable | None = None,
             head: Callable | None = None, logits: Callable | None = None, tokenizer=None, mesh=None,
             eos_token_id: Sequence[int] = ()) -> Model:
    """A `flax.nnx` language model as a `jaxcontam.Model`.

    hidden(module, tokens, positions, segment_ids) -> [B, T, D] and head(module) -> [V, D], e.g.
    `hidden=lambda m, *a: m.hidden_states(*a), head=lambda m: m.embed.embedding[...]`; or
    logits(module, tokens, positions, segment_ids) -> [B, T, V]. The params are `nnx.state(module)`.
    """
    from flax import nnx

    graph, state = nnx.split(module)

    def on_module(accessor):
        if accessor is None:
            return None
        return lambda params, *arrays: accessor(nnx.merge(graph, params), *arrays)

    config = LanguageModel(vocab_size=vocab_size, max_position=max_position, hidden=on_module(hidden),
                           head=on_module(head), logits=on_module(logits), eos_token_id=tuple(eos_token_id))
    return Model(config=config, params=state, tokenizer=tokenizer, mesh=_mesh_of(state, mesh))


def from_linen(apply_fn: Callable, params, *, vocab_size: int, max_position: int, hidden=None,
               head: Callable | None = None, logits=None, tokenizer=None, mesh=None,
               eos_token_id: Sequence[int] = ()) -> Model:
    """A `flax.linen` language model as a `jaxcontam.Model`.

    `apply_fn`: the module's `apply`; `params`: its "params" collection. `hidden` / `logits`: the module method
    (or its name) that `apply_fn({"params": params}, tokens, positions, segment_ids, method=...)` runs, giving
    [B, T, D] hidden states (then `head(params) -> [V, D]`) or [B, T, V] logits (`logits=None` with no
    `hidden`: the module's `__call__`).
    """
    def method(choice):
        return lambda params, *arrays: apply_fn({"params": params}, *arrays, method=choice)

    if hidden is None and logits is None:
        logits = "__call__"
    config = LanguageModel(vocab_size=vocab_size, max_position=max_position,
                           hidden=None if hidden is None else method(hidden), head=head,
                           logits=None if logits is None else method(logits), eos_token_id=tuple(eos_token_id))
    return Model(config=config, params=params, tokenizer=tokenizer, mesh=_mesh_of(params, mesh))
