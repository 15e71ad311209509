"""The training loop: next-token cross-entropy on packed rows, AdamW with warmup and cosine decay.

One jitted step for the whole run (every batch has the same shape). `fit` trains any weights pytree that
`to_params` turns into the decoder's params: HF-named tensors (`train`, for models trained from scratch) or
the params of a loaded `Model` as they lie on its mesh (`jaxcontam contaminate`: batches split over "data",
weights as the loader placed them). A `callback(step, weights)` runs every `callback_every` steps on the
current weights without leaving the process: the hook for in-training audits. With `checkpoints` (orbax,
`TrainCheckpoints`) the state is saved every `checkpoints.every` steps and a rerun resumes from the latest one,
skipping the batches already trained on (the batch stream must be deterministic), so an interrupted run ends
with the same weights as an uninterrupted one.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Iterable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcontam.errors import JaxcontamError

try:
    import optax
except ImportError:
    raise JaxcontamError('the training loop needs optax and orbax: pip install "jaxcontam[train]"') from None

from jaxcontam.models.attention import mesh_platform
from jaxcontam.models.config import DecoderConfig
from jaxcontam.models.spec import ModelSpec, from_hf_config
from jaxcontam.training.checkpoints import TrainCheckpoints
from jaxcontam.training.weights import params_from_hf


@dataclasses.dataclass(frozen=True)
class TrainResult:
    tensors: dict[str, np.ndarray]
    losses: list[float]
    tokens_per_second: float


@dataclasses.dataclass(frozen=True)
class FitResult:
    """The trained weights (on their devices), the logged losses and the measured speed.

    `tokens_per_second` counts the steps after the first of this process (the first compiles; 0 when only one
    ran); `steps_run` is the number of steps this process trained (fewer than `steps` after a resume).
    """

    weights: Any  # the pytree trained
    opt_state: Any
    losses: list[float]
    tokens_per_second: float
    steps_run: int


def next_token_loss(params: dict, spec: ModelSpec, batch: dict) -> jax.Array:
    """Mean cross-entropy of each token given its prefix, within segments (padding and boundaries excluded)."""
    tokens, segments = batch["tokens"], batch["segment_ids"]
    hidden = spec.hidden_states(params, tokens, batch["positions"], segments)
    logits = spec.logits_from_hidden(params, hidden[:, :-1]).astype(jnp.float32)
    logp = jax.nn.log_softmax(logits, axis=-1)
    picked = jnp.take_along_axis(logp, tokens[:, 1:, None], axis=-1)[..., 0]
    mask = (segments[:, 1:] == segments[:, :-1]) & (segments[:, 1:] > 0)
    return -jnp.sum(picked * mask) / jnp.maximum(jnp.sum(mask), 1)


def optimizer(learning_rate: float, steps: int, warmup: int, weight_decay: float) -> optax.GradientTransformation:
    schedule = optax.warmup_cosine_decay_schedule(
        0.0, learning_rate, max(1, warmup), max(steps, warmup + 1), end_value=learning_rate * 0.1
    )
    return optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(schedule, weight_decay=weight_decay))


def duration(seconds: float) -> str:
    """ "1h02m", "3m12s", "45s": a progress line's ETA."""
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else (f"{minutes}m{secs:02d}s" if minutes else f"{secs}s")


def _on_weights_mesh(opt_state, weights):
    """The optimizer state with its scalars (step counts) replicated on the weights' mesh, as the jitted step
    returns them, so the second step reuses the first step's program. Moments keep their weight's sharding
    (`tx.init` runs eagerly on the placed weights)."""
    sharding = getattr(jax.tree.leaves(weights)[0], "sharding", None)
    if not isinstance(sharding, jax.sharding.NamedSharding):
        return opt_state
    replicated = jax.sharding.NamedSharding(sharding.mesh, jax.P())
    return jax.tree.map(
        lambda x: (
            jax.device_put(x, replicated)
            if not isinstance(getattr(x, "sharding", None), jax.sharding.NamedSharding)
            else x
        ),
        opt_state,
    )


def params_as_is(weights, spec: ModelSpec):
    """`fit`'s `to_params` for weights that already are the decoder's params (a loaded `Model`'s)."""
    return weights


def hf_params(tensors: dict, spec: ModelSpec):
    """`fit`'s `to_params` for HF-named tensors."""
    return params_from_hf(tensors, spec)


def training_spec(spec, unroll_layers: bool | None = None):
    """The spec the step is traced with. jaxcontam's decoder runs its layers unrolled when `unroll_layers`, by
    default on CPU, where the unrolled backward is faster than the scan's (`experiments/real_contamination/
    train_speed.py --layers scan,unrolled`); on TPU and GPU the scan, which compiles in a fraction of the time.
    Other models (`ModelInterface`) are used as they are."""
    if not isinstance(spec, DecoderConfig):
        return spec
    unroll = mesh_platform() == "cpu" if unroll_layers is None else unroll_layers
    return dataclasses.replace(spec, execution=dataclasses.replace(spec.execution, unroll_layers=unroll))


@functools.partial(jax.jit, static_argnames=("spec", "to_params", "schedule"), donate_argnums=(0, 1))
def _train_step(weights, opt_state, batch, *, spec, to_params, schedule):
    """One AdamW step; compiled once per (spec, to_params, schedule, shapes), so runs with the same settings in
    one process share the program."""
    loss, grads = jax.value_and_grad(lambda w: next_token_loss(to_params(w, spec), spec, batch))(weights)
    updates, opt_state = optimizer(*schedule).update(grads, opt_state, weights)
    return optax.apply_updates(weights, updates), opt_state, loss


def fit(
    spec: ModelSpec,
    weights,
    batches: Iterable[dict],
    *,
    steps: int,
    to_params: Callable = params_as_is,
    learning_rate: float = 3e-3,
    warmup: int = 50,
    weight_decay: float = 0.01,
    log_every: int = 50,
    log: Callable[[str], None] = print,
    on_log: Callable[[int, float], None] | None = None,
    callback: Callable[[int, Any], None] | None = None,
    callback_every: int = 0,
    checkpoints: TrainCheckpoints | None = None,
    batch_sharding=None,
    unroll_layers: bool | None = None,
) -> FitResult:
    """Train `weights` (a pytree; the decoder's params are `to_params(weights, spec)`) for at most `steps` batches.

    `on_log(step, loss)` sees every logged loss (a training curve); `batch_sharding` places each batch (e.g.
    rows over the mesh's "data" axis); `unroll_layers`: see `training_spec` (None: by platform). Progress lines
    give the loss, tokens/s and the time left.
    """
    schedule = (learning_rate, steps, warmup, weight_decay)
    tx = optimizer(*schedule)
    step_fn = functools.partial(
        _train_step, spec=training_spec(spec, unroll_layers), to_params=to_params, schedule=schedule
    )
    opt_state = _on_weights_mesh(tx.init(weights), weights)
    resumed = checkpoints.latest_step() if checkpoints is not None else None
    if resumed and checkpoints is not None:
        weights, opt_state = checkpoints.restore(resumed, weights, opt_state)
        log(f"resumed from the checkpoint of step {resumed}")
    losses, trained = [], resumed or 0
    run, timed_tokens, timed_start = 0, 0, time.perf_counter()
    for step, batch in enumerate(batches, start=1):
        if step > steps:
            break
        if step <= trained:
            continue
        trained = step
        if batch_sharding is not None:
            batch = jax.device_put(batch, batch_sharding)
        weights, opt_state, loss = step_fn(weights, opt_state, batch)
        run += 1
        if run == 1:  # the first step compiles: time the steady state from its end
            jax.block_until_ready(loss)
            timed_start = time.perf_counter()
        else:
            timed_tokens += int(np.size(batch["tokens"]))
        if step % log_every == 0 or step == steps:
            losses.append(float(loss))
            if on_log is not None:
                on_log(step, losses[-1])
            elapsed = time.perf_counter() - timed_start
            rate = timed_tokens / elapsed if timed_tokens else 0.0
            left = (steps - step) * elapsed / (run - 1) if run > 1 else float("nan")
            log(
                f"step {step}/{steps}  loss {losses[-1]:.3f}  {rate:,.0f} tokens/s  "
                f"ETA {duration(left) if run > 1 else '?'}"
            )
        if callback is not None and callback_every and step % callback_every == 0:
            callback(step, weights)
        if checkpoints is not None and step % checkpoints.every == 0:
            checkpoints.save(step, weights, opt_state)
    if checkpoints is not None and trained and checkpoints.latest_step() != trained:
        checkpoints.save(trained, weights, opt_state)
    jax.block_until_ready(weights)
    rate = timed_tokens / max(time.perf_counter() - timed_start, 1e-9)
    return FitResult(weights, opt_state, losses, rate, run)


def train(
    config: dict,
    tensors: dict,
    batches: Iterable[dict],
    *,
    steps: int,
    learning_rate: float = 3e-3,
    warmup: int = 50,
    weight_decay: float = 0.01,
    log_every: int = 50,
    log: Callable[[str], None] = print,
    callback: Callable[[int, dict], None] | None = None,
    callback_every: int = 0,
    checkpoints: TrainCheckpoints | None = None,
) -> TrainResult:
    """Train `tensors` (HF-named float32 arrays) for at most `steps` batches; returns the trained tensors."""
    spec = from_hf_config(config)
    result = fit(
        spec,
        {k: jnp.asarray(v) for k, v in tensors.items()},
        batches,
        steps=steps,
        to_params=hf_params,
        learning_rate=learning_rate,
        warmup=warmup,
        weight_decay=weight_decay,
        log_every=log_every,
        log=log,
        callback=callback,
        callback_every=callback_every,
        checkpoints=checkpoints,
    )
    return TrainResult({k: np.asarray(v) for k, v in result.weights.items()}, result.losses, result.tokens_per_second)
