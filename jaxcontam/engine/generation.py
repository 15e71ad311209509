"""Batched text generation with a KV cache: greedy, or sampled with temperature and top-p.

`rows_per_batch` rows decode together (by default as many as a KV-cache budget holds, up to `MAX_ROWS` on CPU, where
64 rows give about twice the tokens/s of 16; more on a GPU or TPU, `engine.platform`) and a finished row takes the
next prompt at once (continuous batching, `engine.decode_loop`). Prompts enter longest first, a quarter of the rows
at a time, each group padded on the left (or the right: padding slots get position -1 and are masked by the model,
so both give the same tokens) to one of a few bucket lengths. Sampling keys are derived from (seed, prompt key,
step), the prompt key being its index or the caller's `sample_keys`, so a prompt's sample does not depend on which
other prompts share its batch (nor, with keys of its own, on which call it came in).
"""

from __future__ import annotations

import dataclasses
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Literal

import jax
import numpy as np

from jaxcontam.engine import decode_loop, platform
from jaxcontam.engine.distributed import fetch, global_array, model_mesh, rows_for
from jaxcontam.engine.finite import check_finite
from jaxcontam.engine.packing import default_buckets, plan_batches
from jaxcontam.errors import JaxcontamError

MAX_ROWS = 64  # decode rows per data shard on CPU when the caller does not choose (GPU, TPU: `platform`)
CACHE_BYTES = 2 * 1024**3  # the KV cache's budget per data shard on CPU when the caller does not choose the rows
FEW_ROWS = 8  # a call decoding in at most this many rows prefills at least `FEW_ROWS_WIDTH` wide (`generate`)
FEW_ROWS_WIDTH = 256


@dataclasses.dataclass(frozen=True)
class Generation:
    """Generated token ids (stop token excluded), their text, why generation ended, and each token's log-prob.

    `token_logprobs[j]`: log p(token_ids[j] | prompt, earlier tokens) under the model's own distribution
    (untempered, full-vocabulary float32 softmax), so a generated answer's likelihood needs no second pass;
    `watched_logprobs[j]`: log p(the j-th token is one of `generate`'s `watch_ids`), same distribution (empty
    without watch_ids).
    """

    token_ids: list[int]
    text: str | None
    finish_reason: Literal["stop_token", "stop_string", "length"]
    token_logprobs: list[float] = dataclasses.field(default_factory=list)
    watched_logprobs: list[float] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class Progress:
    """Where a `generate` call stands after a batch: prompts finished, tokens generated, time since the start."""

    items_done: int
    items_total: int
    tokens: int
    seconds: float

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0

    @property
    def eta_seconds(self) -> float:
        """Time left at the rate so far (items per second)."""
        return self.seconds * (self.items_total - self.items_done) / max(self.items_done, 1)


def _progress_bar(total: int) -> Callable[[Progress], None]:
    """A tqdm bar over prompts (its ETA) whose postfix shows generated tokens/s."""
    from tqdm.auto import tqdm

    bar = tqdm(total=total, desc="generating", unit="prompt")

    def report(p: Progress) -> None:
        bar.set_postfix_str(f"{p.tokens_per_second:,.1f} tok/s", refresh=False)
        bar.update(p.items_done - bar.n)
        if p.items_done == p.items_total:
            bar.close()

    return report


_SPLIT_PARAMS: dict[int, tuple] = {}  # id(model) -> (weak reference to it, the params split, their split)


def _decode_params(model):
    """`model.params` split per layer for the decode loop, once per model (redone if its params are replaced).

    Keyed by identity: models are mutable dataclasses, hence unhashable; the entry goes when the model does.
    """
    key = id(model)
    held = _SPLIT_PARAMS.get(key)
    if held is None or held[0]() is not model or held[1] is not model.params:
        try:
            alive = weakref.ref(model, lambda _, key=key: _SPLIT_PARAMS.pop(key, None))
        except TypeError:  # an object without weak references: split on every call
            return model.config.split_layers(model.params)
        held = (alive, model.params, model.config.split_layers(model.params))
        _SPLIT_PARAMS[key] = held
    return held[2]


def _layout(batch, rows: int, padding: str):
    """Re-lay a right-padded batch for decoding: tokens, positions (-1 on padding), last prompt index, lengths."""
    width = batch.tokens.shape[1]
    tokens = np.zeros((rows, width), np.int32)
    positions = np.full((rows, width), -1, np.int32)
    last = np.zeros(rows, np.int32)
    lengths = np.ones(rows, np.int32)
    for p in batch.placements:
        n = p.length
        start = width - n if padding == "left" else 0
        tokens[p.row, start : start + n] = batch.tokens[p.row, :n]
        positions[p.row, start : start + n] = np.arange(n)
        last[p.row] = start + n - 1
        lengths[p.row] = n
    return tokens, positions, last, lengths


def _truncate(
    tokens: list[int], logprobs: list[float], watched: list[float], stop_ids, tokenizer, stop_strings
) -> Generation:
    reason = "length"
    for j, t in enumerate(tokens):
        if t == -1 or t in stop_ids:
            tokens, reason = tokens[:j], "stop_token"
            break
    logprobs, watched = logprobs[: len(tokens)], watched[: len(tokens)]
    text = tokenizer.decode(tokens, skip_special_tokens=True) if tokenizer is not None else None
    if text is not None and stop_strings:
        cuts = [text.find(s) for s in stop_strings if s in text]
        if cuts:
            text, reason = text[: min(cuts)], "stop_string"
    return Generation(tokens, text, reason, logprobs, watched)


def cache_rows(spec, params, capacity: int) -> int:
    """Rows per data shard whose KV caches of `capacity` slots fit `CACHE_BYTES`, between 1 and `MAX_ROWS` on
    CPU (on a GPU or TPU: `platform.accelerator_budget`); the cache's size read from the model's own
    `init_cache`, so any `ModelInterface` model is sized right."""
    dtype = jax.tree.leaves(params)[0].dtype
    cache = jax.eval_shape(lambda: spec.init_cache(1, capacity, dtype))
    per_row = sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(cache))
    on_cpu = platform.weights_platform(params) == "cpu"
    most, budget = (MAX_ROWS, CACHE_BYTES) if on_cpu else platform.accelerator_budget(params, CACHE_BYTES)
    return int(min(most, max(1, budget // max(per_row, 1))))


def needed_rows(prompts: int) -> int:
    """The power of two at or above `prompts`: a few prompts do not decode in rows sized for many (64 rows for 4
    prompts did 16x the work), while the row counts compiled stay few."""
    return 1 << max(0, prompts - 1).bit_length()


def generate(
    model,
    prompts: Sequence[Sequence[int]],
    *,
    max_new_tokens: int = 64,
    temperature: float = 0.0,
    top_p: float = 1.0,
    seed: int = 0,
    stop_token_ids: Sequence[int] | None = None,
    stop_strings: Sequence[str] = (),
    padding: Literal["left", "right"] = "left",
    rows_per_batch: int | None = None,
    buckets: Sequence[int] | None = None,
    progress: bool | Callable[[Progress], None] = False,
    sample_keys: Sequence[int] | None = None,
    watch_ids: Sequence[int] = (),
) -> list[Generation]:
    """Continue each prompt (token ids), in input order.

    Stops a row at any of `stop_token_ids` (default: the model's eos id) or
    after `max_new_tokens`; `stop_strings` cut the decoded text afterwards.
    Deterministic for a given seed. `rows_per_batch`: rows decoding together (None: `cache_rows` per data shard,
    or fewer for fewer prompts: `needed_rows`).
    `progress`: True for a progress bar (prompts done, tokens/s, ETA), or a
    callable given a `Progress` whenever prompts finish. `buckets`: prompt widths of the prefills (default: the
    power of two holding the longest prompt, for every prefill: fewer programs to compile than one per width;
    at least `FEW_ROWS_WIDTH` for a call of at most `FEW_ROWS` rows).
    `sample_keys`: one integer in [0, 2**31) per prompt that, with `seed`, keys its sampling (default: its index
    in `prompts`). `watch_ids`: token ids whose summed probability is recorded at every step
    (`Generation.watched_logprobs`). A model whose picks have NaN or inf log-probs is refused (`engine.finite`):
    its tokens were chosen from NaN logits.
    """
    if padding not in ("left", "right"):
        raise JaxcontamError(f"padding must be 'left' or 'right', got {padding!r}")
    if max_new_tokens < 1:
        raise JaxcontamError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    if temperature < 0 or not 0 < top_p <= 1:
        raise JaxcontamError(f"need temperature >= 0 and 0 < top_p <= 1, got {temperature}, {top_p}")
    if sample_keys is None:
        sample_keys = range(len(prompts))
    elif len(sample_keys) != len(prompts) or not all(0 <= k < 2**31 for k in sample_keys):
        raise JaxcontamError(
            f"sample_keys must hold one integer in [0, 2**31) per prompt ({len(prompts)}), got {len(sample_keys)}"
        )
    spec = model.config
    if stop_token_ids is None:
        eos = spec.eos_token_id
        stop_token_ids = [] if eos is None else ([eos] if isinstance(eos, int) else list(eos))
    stop = np.asarray(list(stop_token_ids) or [-2], np.int32)  # -2 never occurs: no stop token
    longest = max(len(p) for p in prompts) + max_new_tokens
    if longest > spec.max_position:
        raise JaxcontamError(
            f"prompt + max_new_tokens reaches {longest} tokens, beyond the model's "
            f"max_position ({spec.max_position}): shorten the prompts or lower max_new_tokens"
        )
    mesh = model_mesh(model)
    params = _decode_params(model)
    if rows_per_batch is None:
        data = int(mesh.shape["data"])
        rows_per_batch = min(cache_rows(spec, params, longest), needed_rows(-(-len(prompts) // data))) * data
    rows = rows_for(mesh, rows_per_batch)
    group = rows_for(mesh, max(1, rows // 4))  # prompts put into freed rows at a time (one prefill)
    if buckets is None:  # every prefill of a call at the width of its longest prompt: one fill program per call
        # a call of few rows (a stage's last, short chunk) prefills at least FEW_ROWS_WIDTH wide: its few extra
        # slots cost little, and its calls then share their programs (the bundled audit's last chunk compiled
        # fill, decode and empty rows at widths 128 and 256, 3 programs more, several seconds each on a GPU)
        widest = max(len(p) for p in prompts)
        buckets = default_buckets(max(widest, FEW_ROWS_WIDTH) if rows <= FEW_ROWS else widest)[-1:]
    groups = plan_batches([list(p) for p in prompts], rows_per_batch=group, buckets=buckets, pack=False)
    capacity = max(g.tokens.shape[1] for g in groups) + max_new_tokens
    state = decode_loop.empty_rows_on_mesh(
        params, spec, rows=rows, capacity=capacity, max_new_tokens=max_new_tokens, mesh=mesh
    )
    watch = np.asarray(list(watch_ids) or [0], np.int32)  # without watch ids the recorded values are dropped
    sampling = (np.uint32(seed), np.float32(temperature), np.float32(top_p), stop, watch)
    results: dict[int, Generation] = {}  # by position in `prompts`
    decided: dict[int, np.ndarray] = {}  # by position: the log-probs of every token picked, the stop token's too
    report = _progress_bar(len(prompts)) if progress is True else (progress or None)
    start, finished, generated = time.perf_counter(), 0, 0
    free, holder = list(range(rows)), {}  # rows without a prompt; row -> index of the prompt it holds
    while groups or holder:
        while groups and len(free) >= len(groups[0].placements):
            batch = groups.pop(0)
            targets = np.full(group, rows, np.int32)  # row `rows` does not exist: that prompt slot is dropped
            index = np.zeros(group, np.int32)
            for p in batch.placements:
                targets[p.row], index[p.row] = free.pop(0), sample_keys[p.index]
                holder[int(targets[p.row])] = p.index
            arrays = (targets, *_layout(batch, group, padding), index)
            with platform.matmul_precision(params):
                state = decode_loop.fill_rows(
                    params, spec, state, *(global_array(a, mesh) for a in arrays), *sampling, capacity=capacity
                )
        until_done = len(groups[0].placements) if groups else rows
        with platform.matmul_precision(params):
            state = decode_loop.decode_rows(params, spec, state, *sampling, np.int32(until_done))
        done, out, logp, watched = (fetch(state[key]) for key in ("done", "out", "logp", "watched"))
        for row in [r for r in holder if done[r]]:
            index = holder.pop(row)
            results[index] = generation = _truncate(
                out[row].tolist(),
                logp[row].tolist(),
                watched[row].tolist() if watch_ids else [],
                set(stop.tolist()),
                model.tokenizer,
                stop_strings,
            )
            picked = len(generation.token_ids) + 1  # a row that stopped at once still picked its stop token
            decided[index] = np.concatenate([logp[row][:picked], watched[row][:picked] if watch_ids else []])
            generated += len(generation.token_ids)
            finished += 1
            free.append(row)
        if report is not None:
            report(Progress(finished, len(prompts), generated, time.perf_counter() - start))
    check_finite("generated tokens' log-probs", [decided[i] for i in range(len(prompts))])
    return [results[i] for i in range(len(prompts))]
