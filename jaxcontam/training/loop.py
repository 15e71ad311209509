"""The training loop: next-token cross-entropy on packed rows, AdamW with warmup and cosine decay.

One jitted step for the whole run (every batch has the same shape). A `callback(step, tensors)` runs every
`callback_every` steps on the current weights without leaving the process: the hook for in-training audits.
With `checkpoints` (orbax, `TrainCheckpoints`) the state is saved every `checkpoints.every` steps and a rerun
resumes from the latest one, skipping the batches already trained on (the batch stream must be deterministic).
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Iterable

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxcontam.models import decoder
from jaxcontam.models.spec import ModelSpec, from_hf_config
from jaxcontam.training.checkpoints import TrainCheckpoints
from jaxcontam.training.weights import params_from_hf


@dataclasses.dataclass(frozen=True)
class TrainResult:
    tensors: dict[str, np.ndarray]
    losses: list[float]
    tokens_per_second: float


def loss_fn(tensors: dict, spec: ModelSpec, batch: dict) -> jax.Array:
    """Mean cross-entropy of each token given its prefix, within segments (padding and boundaries excluded)."""
    params = params_from_hf(tensors, spec)
    tokens, segments = batch["tokens"], batch["segment_ids"]
    hidden = decoder.hidden_states(params, spec, tokens, batch["positions"], segments)
    logits = decoder.logits_from_hidden(params, spec, hidden[:, :-1]).astype(jnp.float32)
    logp = jax.nn.log_softmax(logits, axis=-1)
    picked = jnp.take_along_axis(logp, tokens[:, 1:, None], axis=-1)[..., 0]
    mask = (segments[:, 1:] == segments[:, :-1]) & (segments[:, 1:] > 0)
    return -jnp.sum(picked * mask) / jnp.maximum(jnp.sum(mask), 1)


def optimizer(learning_rate: float, steps: int, warmup: int, weight_decay: float) -> optax.GradientTransformation:
    schedule = optax.warmup_cosine_decay_schedule(0.0, learning_rate, max(1, warmup), max(steps, warmup + 1),
                                                  end_value=learning_rate * 0.1)
    return optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(schedule, weight_decay=weight_decay))


def train(config: dict, tensors: dict, batches: Iterable[dict], *, steps: int, learning_rate: float = 3e-3,
          warmup: int = 50, weight_decay: float = 0.01, log_every: int = 50,
          log: Callable[[str], None] = print, callback: Callable[[int, dict], None] | None = None,
          callback_every: int = 0, checkpoints: TrainCheckpoints | None = None) -> TrainResult:
    """Train `tensors` (HF-named float32 arrays) for at most `steps` batches; returns the trained tensors."""
    spec = from_hf_config(config)
    tx = optimizer(learning_rate, steps, warmup, weight_decay)

    @functools.partial(jax.jit, donate_argnums=(0, 1))
    def step_fn(weights, opt_state, batch):
        loss, grads = jax.value_and_grad(loss_fn)(weights, spec, batch)
        updates, opt_state = tx.update(grads, opt_state, weights)
        return optax.apply_updates(weights, updates), opt_state, loss

    weights = {k: jnp.asarray(v) for k, v in tensors.items()}
    opt_state = tx.init(weights)
    resumed = checkpoints.latest_step() if checkpoints is not None else None
    if resumed:
        weights, opt_state = checkpoints.restore(resumed, weights, opt_state)
        log(f"resumed from the checkpoint of step {resumed}")
    losses, seen, start, trained = [], 0, time.perf_counter(), resumed or 0
    for step, batch in enumerate(batches, start=1):
        if step > steps:
            break
        if step <= trained:
            continue
        trained = step
        weights, opt_state, loss = step_fn(weights, opt_state, batch)
        seen += int(batch["tokens"].size)
        if step % log_every == 0 or step == steps:
            losses.append(float(loss))
            log(f"step {step}/{steps}  loss {losses[-1]:.3f}  {seen / (time.perf_counter() - start):,.0f} tokens/s")
        if callback is not None and callback_every and step % callback_every == 0:
            callback(step, weights)
        if checkpoints is not None and step % checkpoints.every == 0:
            checkpoints.save(step, weights, opt_state)
    if checkpoints is not None and trained and checkpoints.latest_step() != trained:
        checkpoints.save(trained, weights, opt_state)
    elapsed = time.perf_counter() - start
    return TrainResult({k: np.asarray(v) for k, v in weights.items()}, losses, seen / max(elapsed, 1e-9))
