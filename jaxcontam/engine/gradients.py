"""Norms of the gradient of a sequence's mean token loss with respect to the model's parameters (GradNorm):
`loss_gradient_norms`.

The loss is -mean_t log p(x_t | x_<t) over the scored tokens (t >= 1, as `score_logprobs` scores them), from the
model's own forward (`hidden_states`, then `logits_from_hidden`: a float32 log-softmax over the vocabulary). Each
sequence sits alone in a row, right-padded to one of a few bucket widths (`engine.packing`, pack=False), so any
causal `ModelInterface` model is exact. One jitted step per (rows, width) lays its rows over the mesh "data" axis
(each process supplies only its own devices' rows, `engine.distributed`, as scoring does) and each device maps over
its own rows with `lax.map` (`jax.shard_map` over "data": a sequential loop over rows cannot be split by the
compiler), so a multi-host run computes each row once; the norms are gathered to every process. One row's gradient
is alive per device at a time, so memory stays at the parameters' size once more (twice in float32 for bfloat16
weights, `upcast`), never once per row; its norms come back per parameter tensor. Under fsdp the step gathers the
weights on every device, as a row's gradient is the parameters' size anyway.

A parameter tensor is one array of the params pytree, except that layer weights stacked on a leading axis (jaxcontam's
own decoders: `params["layers"]`, one slice per layer) count one tensor per layer, as a torch model's
`parameters()` lists them; a tied embedding is one tensor that both uses feed, as in torch.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxcontam.engine.distributed import fetch, global_array, model_mesh, rows_for
from jaxcontam.engine.finite import check_finite
from jaxcontam.engine.packing import SMALLEST_UNPACKED, default_buckets, plan_batches
from jaxcontam.engine.platform import matmul_precision
from jaxcontam.errors import JaxcontamError

NORM_ORDERS = (1.0, 2.0, math.inf)  # entrywise p-norms of each tensor's gradient (torch's `Tensor.norm(p)`)


@dataclasses.dataclass(frozen=True)
class GradientNorms:
    """One sequence's gradient norms: `norms[i]` the p-norm of the loss gradient of parameter tensor `names[i]`."""

    names: tuple[str, ...]
    norms: np.ndarray  # float32 [len(names)]


def _stacked_layers(params, spec) -> bool:
    """Whether `params["layers"]` holds per-layer weights stacked on axis 0 (jaxcontam's decoders)."""
    layers = params.get("layers") if isinstance(params, dict) else None
    count = getattr(spec, "num_layers", None)
    return isinstance(layers, dict) and isinstance(count, int) and count > 0


def _key(entry) -> str:
    for attribute in ("key", "name", "idx"):
        if hasattr(entry, attribute):
            return str(getattr(entry, attribute))
    return str(entry)


def _is_layer(path, stacked: bool) -> bool:
    return stacked and len(path) > 0 and _key(path[0]) == "layers"


def tensor_names(params, spec) -> tuple[str, ...]:
    """The parameter tensors whose gradient norms `loss_gradient_norms` returns, in its order: the floating-point
    leaves of `params` by path, a stacked layer weight once per layer (`layers/wq[0]`, `layers/wq[1]`, ...)."""
    stacked = _stacked_layers(params, spec)
    names = []
    for path, leaf in jax.tree_util.tree_flatten_with_path(params)[0]:
        if not jnp.issubdtype(leaf.dtype, jnp.floating):
            continue
        name = "/".join(_key(entry) for entry in path)
        if _is_layer(path, stacked):
            names += [f"{name}[{layer}]" for layer in range(leaf.shape[0])]
        else:
            names.append(name)
    return tuple(names)


def _entrywise_norm(gradient: jax.Array, order: float, axes: tuple[int, ...]) -> jax.Array:
    magnitude = jnp.abs(gradient.astype(jnp.float32))
    if order == math.inf:
        return jnp.max(magnitude, axis=axes)
    if order == 1.0:
        return jnp.sum(magnitude, axis=axes)
    return jnp.sqrt(jnp.sum(magnitude * magnitude, axis=axes))


@functools.partial(jax.jit, static_argnames=("spec", "order", "upcast"))
def _norms_step(params, spec, tokens, positions, segment_ids, targets, weights, *, order, upcast):
    """float32 [rows, tensors]: each row's per-tensor gradient norms of its weighted token loss, rows over "data",
    each device computing its own rows."""
    stacked = _stacked_layers(params, spec)
    paths_leaves, treedef = jax.tree_util.tree_flatten_with_path(params)
    floating = [i for i, (_, leaf) in enumerate(paths_leaves) if jnp.issubdtype(leaf.dtype, jnp.floating)]

    def device_rows(params, *rows):
        leaves = jax.tree_util.tree_leaves(params)
        wrt = [leaves[i].astype(jnp.float32) if upcast else leaves[i] for i in floating]

        def rebuilt(values):
            filled = list(leaves)
            for i, value in zip(floating, values):
                filled[i] = value
            return jax.tree_util.tree_unflatten(treedef, filled)

        def row_norms(row):
            tok, pos, seg, tgt, weight = (a[None] for a in row)

            def loss(values):
                model_params = rebuilt(values)
                hidden = spec.hidden_states(model_params, tok, pos, seg)
                logp = jax.nn.log_softmax(spec.logits_from_hidden(model_params, hidden), axis=-1)
                picked = jnp.take_along_axis(logp, tgt[..., None], axis=-1)[..., 0]
                return -jnp.sum(picked * weight)

            grads = jax.grad(loss)(wrt)
            norms = []
            for i, gradient in zip(floating, grads):
                if _is_layer(paths_leaves[i][0], stacked):
                    norms.append(_entrywise_norm(gradient, order, tuple(range(1, gradient.ndim))))
                else:
                    norms.append(_entrywise_norm(gradient, order, tuple(range(gradient.ndim)))[None])
            return jnp.concatenate(norms)

        return jax.lax.map(row_norms, rows)

    # check_vma=False: the models' loops start from constants that carry no varying-axes type; each device's
    # gradient is of its own rows' loss alone (nothing is summed over "data")
    by_row = jax.P("data")
    return jax.shard_map(
        device_rows,
        in_specs=(jax.P(), *[by_row] * 5),
        out_specs=by_row,
        axis_names=frozenset({"data"}),
        check_vma=False,
    )(params, tokens, positions, segment_ids, targets, weights)


def loss_gradient_norms(
    model,
    token_ids: Sequence[Sequence[int]],
    *,
    order: float = math.inf,
    upcast: bool = True,
    rows_per_batch: int = 8,
    buckets: Sequence[int] | None = None,
) -> list[GradientNorms]:
    """Per sequence, in input order, the `order`-norm (1, 2 or inf, entrywise) of the gradient of its mean token loss
    with respect to each parameter tensor of `model` (`tensor_names`).

    `upcast=True` takes the gradient in float32 (bfloat16 weights are upcast inside the step: the same numbers as a
    float32 copy of the weights); False in the weights' own dtype (half the extra memory for bfloat16 weights; the
    log-softmax is float32 either way). Every sequence needs at least two tokens (one scored token).
    """
    if order not in NORM_ORDERS:
        raise JaxcontamError(f"gradient norm order {order!r} is not supported: use 1, 2 or inf")
    token_ids = [list(t) for t in token_ids]
    for i, seq in enumerate(token_ids):
        if len(seq) < 2:
            raise JaxcontamError(f"sequence {i} has {len(seq)} token(s): a loss gradient needs at least two")
    if not token_ids:
        return []
    spec = model.config
    longest = max(len(t) for t in token_ids)
    if longest > spec.max_position:
        raise JaxcontamError(
            f"a sequence has {longest} tokens but the model's max_position is {spec.max_position}: truncate it"
        )
    names = tensor_names(model.params, spec)
    buckets = tuple(buckets or default_buckets(longest, SMALLEST_UNPACKED))
    mesh = model_mesh(model)
    batches = plan_batches(token_ids, rows_per_batch=rows_for(mesh, rows_per_batch), buckets=buckets, pack=False)
    found: list[np.ndarray | None] = [None] * len(token_ids)
    with jax.set_mesh(mesh), matmul_precision(model.params):
        for batch in batches:
            weights = np.zeros(batch.tokens.shape, np.float32)
            for p in batch.placements:  # the mean over the sequence's scored tokens: positions offset .. end - 2
                weights[p.row, p.offset : p.offset + p.length - 1] = 1.0 / (p.length - 1)
            arrays = (batch.tokens, batch.positions, batch.segment_ids, batch.targets, weights)
            out = _norms_step(
                model.params, spec, *(global_array(a, mesh) for a in arrays), order=float(order), upcast=upcast
            )
            rows = fetch(out)
            for p in batch.placements:
                found[p.index] = rows[p.row]
    norms = [np.asarray(n, np.float32) for n in found if n is not None]
    check_finite("gradient norms", norms)
    return [GradientNorms(names, n) for n in norms]
