"""Batched per-token log-probs of many token sequences: `score_logprobs`.

Sequences are packed into a few fixed batch shapes (`engine.packing`), each
batch is laid out over the mesh "data" axis (every process supplies only the
rows of its own devices, so items are split by process and every process runs
the same identically shaped steps), the forward runs under one jit per bucket
shape, and the log-softmax is computed blockwise over the vocabulary
(`kernels.vocab_blocks`, or on request the fused Pallas kernel on TPU), split over the mesh
"model" axis when the output matrix is. Results come back in input order on every process.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from jaxcontam.engine.distributed import fetch, global_array, model_mesh, rows_for
from jaxcontam.engine.finite import check_finite
from jaxcontam.engine.packing import PackedBatch, packs_rows, plan_batches, unpack_rows
from jaxcontam.engine.platform import matmul_precision
from jaxcontam.errors import JaxcontamError
from jaxcontam.kernels.vocab_blocks import TokenStats, logits_logprob_stats, token_logprob_stats

_MAX_IN_FLIGHT = 4


@dataclasses.dataclass(frozen=True)
class SequenceScores:
    """Scores of the scored tokens of one sequence (token t scored from tokens < t).

    logprobs: float32 [n] log p(x_t | x_<t); mean_logprobs / std_logprobs: mu_t and
    sigma_t of log p over the vocabulary at the same positions (None unless
    requested). `start` is the index in the sequence of the first scored token.
    max_logprobs: max over the vocabulary of log p at the same positions (None unless requested):
    token t is the greedy choice where logprobs reach it.
    Every value is finite: `score_logprobs` refuses a model that gives NaN or inf (`engine.finite`).
    """

    logprobs: np.ndarray
    mean_logprobs: np.ndarray | None = None
    std_logprobs: np.ndarray | None = None
    start: int = 1
    max_logprobs: np.ndarray | None = None


def projection_layout(weight: jax.Array, spec) -> str:
    """'vd' for a [V, D] output matrix (tied embeddings), 'dv' for [D, V]; a model that states no hidden_size
    (a `LanguageModel`) gives [V, D]."""
    hidden = spec.hidden_size if spec.hidden_size is not None else weight.shape[-1]
    if weight.shape == (spec.vocab_size, hidden):
        return "vd"
    if weight.shape == (hidden, spec.vocab_size):
        return "dv"
    raise JaxcontamError(
        f"output projection has shape {weight.shape}, expected ({spec.vocab_size}, {spec.hidden_size}) or "
        f"the transpose for vocab_size={spec.vocab_size}, hidden_size={spec.hidden_size}: the checkpoint's "
        "lm_head does not match its config"
    )


@functools.partial(jax.jit, static_argnames=("spec", "vocab_block", "use_kernel"))
def score_step(params, spec, tokens, positions, segment_ids, targets, *, vocab_block, use_kernel):
    """Forward one packed batch and return float32 [B, T] log p(target), mu, sigma and max of log p.

    Always with the statistics: one program per batch shape serves every caller (the plain log-probs of an
    answer and Min-K%++'s statistics alike), where a program with and one without them doubled the compiles;
    the two extra sums per logit cost a few percent of a step (docs/performance.md).

    Under the caller's mesh (`jax.set_mesh`) the vocabulary head stays split over "model" like the output
    matrix (`token_logprob_stats`), so the [V, D] weight is never gathered.
    """
    hidden = spec.hidden_states(params, tokens, positions, segment_ids)
    projection = spec.output_projection(params)
    if projection is None:  # a logits-only model: `hidden` holds its logits
        return logits_logprob_stats(hidden, targets, softcap=spec.final_logit_softcap, with_stats=True)
    weight, bias = projection
    kwargs = {
        "bias": bias,
        "layout": projection_layout(weight, spec),
        "softcap": spec.final_logit_softcap,
        "vocab_block": vocab_block,
        "with_stats": True,
    }
    if use_kernel:
        from jaxcontam.kernels.vocab_logprobs import fused_token_logprob_stats

        return fused_token_logprob_stats(hidden, weight, targets, **kwargs)
    return token_logprob_stats(hidden, weight, targets, **kwargs)


def _check_spans(token_ids, spans) -> list[tuple[int, int]]:
    if spans is None:
        return [(1, len(t)) for t in token_ids]
    if len(spans) != len(token_ids):
        raise JaxcontamError(f"got {len(spans)} spans for {len(token_ids)} sequences: pass one (start, end) each")
    checked = []
    for i, (span, seq) in enumerate(zip(spans, token_ids)):
        start, end = (1, len(seq)) if span is None else span
        if not 1 <= start < end <= len(seq):
            raise JaxcontamError(
                f"span {span} of sequence {i} ({len(seq)} tokens) must satisfy 1 <= start < end <= {len(seq)}: "
                "token 0 has no prefix to be scored from"
            )
        checked.append((start, end))
    return checked


def score_logprobs(
    model,
    token_ids: Sequence[Sequence[int]],
    spans: Sequence[tuple[int, int] | None] | None = None,
    *,
    with_stats: bool = False,
    with_max: bool = False,
    rows_per_batch: int = 16,
    buckets: Sequence[int] | None = None,
    pack: bool = True,
    vocab_block: int = 2048,
    use_kernel: bool = False,
    progress: bool = False,
) -> list[SequenceScores]:
    """Per-token log-probs of each sequence under `model`, in input order.

    `spans[i] = (start, end)` keeps only tokens start..end-1 of sequence i (e.g.
    the answer after a prompt); by default tokens 1..n-1 are scored. `with_max` also returns the greedy
    token's log-prob at each position (`max_logprobs`). Every sequence needs at least two tokens. Rows are
    packed (`pack`) only for a model that declares `packing = True`. `rows_per_batch` is rounded up to a
    multiple of the mesh "data" axis. `use_kernel=True` runs the vocabulary
    log-softmax as the fused Pallas kernel (TPU only; opt-in until it has been
    validated on TPU hardware; `vocab_block` must then be a multiple of 128).
    """
    token_ids = [list(t) for t in token_ids]
    for i, seq in enumerate(token_ids):
        if len(seq) < 2:
            raise JaxcontamError(f"sequence {i} has {len(seq)} token(s): scoring needs at least two")
    spans = _check_spans(token_ids, spans)
    spec = model.config
    mesh = model_mesh(model)
    rows = rows_for(mesh, rows_per_batch)
    max_len = max(len(t) for t in token_ids)
    if max_len > spec.max_position:
        raise JaxcontamError(
            f"a sequence has {max_len} tokens but the model's max_position is {spec.max_position}: truncate it"
        )
    batches = plan_batches(token_ids, rows_per_batch=rows, buckets=buckets, pack=pack and packs_rows(spec))
    if use_kernel:
        from jaxcontam.kernels.vocab_logprobs import kernel_available

        if not kernel_available():
            raise JaxcontamError(
                f"use_kernel=True needs a TPU backend, this is {jax.default_backend()!r}: "
                "leave use_kernel off to use the plain-jnp blockwise path"
            )

    fields = ("logprob", "mean_logprob", "std_logprob") if with_stats else ("logprob",)
    fields += ("max_logprob",) if with_max else ()
    per_field: dict[str, list[Any]] = {f: [None] * len(token_ids) for f in fields}  # filled by unpack_rows

    def collect(batch: PackedBatch, out: TokenStats) -> None:
        for f in fields:
            unpack_rows(batch, fetch(getattr(out, f)), per_field[f])

    in_flight: collections.deque = collections.deque()  # a few batches ahead, so the host never idles the device
    with jax.set_mesh(mesh), matmul_precision(model.params):
        for batch in _progress(batches, progress):
            arrays = [global_array(a, mesh) for a in (batch.tokens, batch.positions, batch.segment_ids, batch.targets)]
            in_flight.append(
                (
                    batch,
                    score_step(
                        model.params,
                        spec,
                        *arrays,
                        vocab_block=vocab_block,
                        use_kernel=use_kernel,
                    ),
                )
            )
            if len(in_flight) > _MAX_IN_FLIGHT:
                collect(*in_flight.popleft())
        while in_flight:
            collect(*in_flight.popleft())
    results = []
    for i, (start, end) in enumerate(spans):
        cut = {f: np.asarray(per_field[f][i][start - 1 : end - 1], np.float32) for f in fields}
        results.append(
            SequenceScores(
                cut["logprob"], cut.get("mean_logprob"), cut.get("std_logprob"), start, cut.get("max_logprob")
            )
        )
    check_finite("log-probs", [np.concatenate([s for s in _fields_of(r) if s is not None]) for r in results])
    return results


def _fields_of(scores: SequenceScores) -> tuple[np.ndarray | None, ...]:
    return (scores.logprobs, scores.mean_logprobs, scores.std_logprobs, scores.max_logprobs)


def _progress(items, enabled: bool):
    if not enabled:
        return items
    from tqdm.auto import tqdm

    return tqdm(items, desc="scoring", unit="batch")
