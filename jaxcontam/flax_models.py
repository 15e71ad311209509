"""Audit a Flax model as it is: `from_nnx(module)` and `from_linen(apply_fn, params)` wrap it as a `jaxcontam.Model`.

A module whose `__call__(tokens)` gives [B, T, V] logits needs nothing more: the vocabulary size is read from the
output's shape and no length limit is imposed unless `max_position` is given. The engine gives such a model one
sequence per row, right-padded, so any causal model is exact. Optionally point jaxcontam at the final hidden
states and the output matrix instead (scoring then runs the blockwise vocabulary log-softmax and the Min-K%++
statistics without holding [B, T, V] logits). A model that masks attention by positions and segment ids declares
it with `packing=True`: it is then called with (tokens, positions, segment_ids) on rows holding several sequences
(`jaxcontam.language_model.ModelInterface` says what they hold).

The params stay where they are: their own NamedShardings place them, and the mesh they live on (when it has a
"data" axis) splits the batches. During training, audit the live weights with
`dataclasses.replace(model, params=nnx.state(module))` (NNX) or `params=state.params` (Linen): the compiled
steps are reused, since the model's `LanguageModel` stays the same object.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from jaxcontam.errors import ModelError
from jaxcontam.functional import as_engine_call, wrap_functions
from jaxcontam.models.model import Model


def _one_forward(hidden, head, logits):
    """The accessor to run (hidden states when `head` is given, else logits); None: the module's `__call__`."""
    if hidden is not None and logits is not None:
        raise ModelError("give hidden= (with head=) or logits=, not both")
    if (hidden is None) != (head is None):
        raise ModelError(
            "hidden= and head= go together: the final hidden states [B, T, D] and the [V, D] output "
            "matrix (e.g. head=lambda m: m.embed.embedding[...]); or give neither"
        )
    return hidden if hidden is not None else logits


def from_nnx(
    module,
    *,
    hidden: Callable | None = None,
    head: Callable | None = None,
    logits: Callable | None = None,
    packing: bool = False,
    vocab_size: int | None = None,
    max_position: int | None = None,
    tokenizer=None,
    mesh=None,
    eos_token_id: Sequence[int] = (),
) -> Model:
    """A `flax.nnx` language model as a `jaxcontam.Model`; by default `module(tokens) -> [B, T, V]` logits.

    Or hidden(module, tokens) -> [B, T, D] with head(module) -> [V, D], e.g. `hidden=lambda m, t:
    m.hidden_states(t), head=lambda m: m.embed.embedding[...]`; or logits(module, tokens) -> [B, T, V].
    `packing=True`: the module (or accessor) takes (tokens, positions, segment_ids) and masks by them. The params
    are `nnx.state(module)`.
    """
    from flax import nnx

    graph, state = nnx.split(module)
    accessor = _one_forward(hidden, head, logits)
    if accessor is None:
        accessor = lambda m, *arrays: m(*arrays)  # noqa: E731

    def forward(params, *arrays):
        return accessor(nnx.merge(graph, params), *arrays)

    on_params = None if head is None else (lambda params: head(nnx.merge(graph, params)))
    return wrap_functions(
        state,
        forward=as_engine_call(forward, packing),
        head=on_params,
        packing=packing,
        vocab_size=vocab_size,
        max_position=max_position,
        tokenizer=tokenizer,
        mesh=mesh,
        eos_token_id=eos_token_id,
    )


def from_linen(
    apply_fn: Callable,
    params,
    *,
    hidden=None,
    head: Callable | None = None,
    logits=None,
    packing: bool = False,
    vocab_size: int | None = None,
    max_position: int | None = None,
    tokenizer=None,
    mesh=None,
    eos_token_id: Sequence[int] = (),
) -> Model:
    """A `flax.linen` language model as a `jaxcontam.Model`; by default its `__call__(tokens) -> [B, T, V]` logits.

    `apply_fn`: the module's `apply`; `params`: its "params" collection. `hidden` / `logits`: the module method
    (or its name) that `apply_fn({"params": params}, tokens, method=...)` runs, giving [B, T, D] hidden states
    (then `head(params) -> [V, D]`) or [B, T, V] logits. `packing=True`: it takes (tokens, positions,
    segment_ids) and masks by them.
    """
    method = _one_forward(hidden, head, logits)
    method = "__call__" if method is None else method

    def forward(params, *arrays):
        return apply_fn({"params": params}, *arrays, method=method)

    return wrap_functions(
        params,
        forward=as_engine_call(forward, packing),
        head=head,
        packing=packing,
        vocab_size=vocab_size,
        max_position=max_position,
        tokenizer=tokenizer,
        mesh=mesh,
        eos_token_id=eos_token_id,
    )
