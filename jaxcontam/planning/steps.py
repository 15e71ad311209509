"""The hot steps `jaxcontam plan` compiles, each the engine's own jitted function on abstract inputs.

    score     engine.scoring.score_step with full-vocabulary statistics (mu, sigma of log p), B x T tokens
    generate  engine.decode_loop's programs as generate runs a batch: prefill B x P prompt tokens into the rows,
              then N decode steps against the KV cache (the loop's trip count is read as N from its condition)
    p_true    engine.ptrue's judge step: forward B x T, full softmax at each row's last position
    ngram     ngram.lookup.count_chunk as ngram.stream calls it: one chunk of C corpus windows against a table
              of R n-grams on one device (every device counts its own chunks)

Model flops count the useful work: 2 x weights x tokens for the matmuls (the output head where a step needs
logits) plus causal attention, 4 x heads x head_dim per (query, visible key) pair, within sliding windows.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxcontam.engine import decode_loop
from jaxcontam.models.spec import ModelSpec
from jaxcontam.planning.plan import (
    StepPlan,
    abstract_params,
    compile_step,
    on_device,
    replicated,
    rows,
)
from jaxcontam.planning.tpu_chips import Chip


@dataclasses.dataclass(frozen=True)
class Workload:
    """What one call of each step processes."""

    batch: int = 8
    seq: int = 2048
    prompt_len: int = 512
    new_tokens: int = 64
    chunk_tokens: int = 1 << 20
    table_rows: int = 1 << 20
    ngram_n: int = 8


def layer_weights(spec: ModelSpec) -> int:
    """Matmul weights one token goes through in a decoder layer: attention projections and the MLP (for a
    mixture of experts: the router and the k chosen experts, the model flops MFU counts)."""
    d, dh = spec.hidden_size, spec.head_dim
    attention = d * dh * (2 * spec.num_heads + 2 * spec.num_kv_heads)
    if spec.experts.count:
        return attention + d * spec.experts.count + spec.experts.per_token * 3 * d * spec.intermediate_size
    return attention + (3 if spec.gated_mlp else 2) * d * spec.intermediate_size


def attention_flops(spec: ModelSpec, length: int) -> float:
    """Causal attention flops of one sequence of `length` tokens over all layers (QK^T and PV)."""
    positions = np.arange(1, length + 1, dtype=np.float64)
    pairs = sum(float(np.minimum(positions, w).sum()) if w else float(positions.sum()) for w in spec.layer_windows)
    return 4.0 * spec.num_heads * spec.head_dim * pairs


def model_flops(spec: ModelSpec, step: str, w: Workload) -> float:
    body = spec.num_layers * layer_weights(spec)
    head = spec.vocab_size * spec.hidden_size
    if step == "score":
        return w.batch * (2.0 * (body + head) * w.seq + attention_flops(spec, w.seq))
    if step == "p_true":
        return w.batch * (2.0 * body * w.seq + 2.0 * head + attention_flops(spec, w.seq))
    length = w.prompt_len + w.new_tokens
    return w.batch * (2.0 * body * length + 2.0 * head * w.new_tokens + attention_flops(spec, length))


@functools.partial(jax.jit, static_argnames=("spec", "capacity"))
def _generation_round(
    params,
    spec,
    state,
    targets,
    tokens,
    positions,
    last,
    lengths,
    index,
    seed,
    temperature,
    top_p,
    stop_ids,
    watch_ids,
    until_done,
    *,
    capacity,
):
    """A batch of prompts as `generate` runs them: put into the rows (prefill), then decoded until all are done."""
    state = decode_loop.fill_rows(
        params,
        spec,
        state,
        targets,
        tokens,
        positions,
        last,
        lengths,
        index,
        seed,
        temperature,
        top_p,
        stop_ids,
        watch_ids,
        capacity=capacity,
    )
    return decode_loop.decode_rows(params, spec, state, seed, temperature, top_p, stop_ids, watch_ids, until_done)


def plan_model_steps(
    spec: ModelSpec, mesh, dtype, chip: Chip | None, steps, w: Workload, fsdp: bool = False
) -> list[StepPlan]:
    """Compile the model steps named in `steps` (score, generate, p_true) for `mesh` (`fsdp`: weights also split
    over "data", gathered layer by layer inside the step)."""
    from jaxcontam.engine import ptrue, scoring

    params = abstract_params(spec, dtype, mesh, fsdp)
    common = {"weights": params, "mesh": mesh, "chip": chip}
    plans = []
    if "score" in steps:
        batch = [rows(mesh, (w.batch, w.seq)) for _ in range(4)]
        plans.append(
            compile_step(
                "score",
                f"{w.batch} x {w.seq}",
                w.batch * w.seq,
                scoring.score_step,
                (params, spec, *batch),
                {"vocab_block": 2048, "use_kernel": False},
                model_flops=model_flops(spec, "score", w),
                **common,
            )
        )
    if "generate" in steps:
        capacity = w.prompt_len + w.new_tokens
        state = jax.tree.map(
            lambda x: rows(mesh, x.shape, x.dtype),
            jax.eval_shape(
                functools.partial(
                    decode_loop.empty_rows, spec=spec, rows=w.batch, capacity=capacity, max_new_tokens=w.new_tokens
                ),
                params,
            ),
        )
        prompts = [rows(mesh, (w.batch, w.prompt_len)) for _ in range(2)]
        per_row = [rows(mesh, (w.batch,)) for _ in range(4)]
        scalars = [
            replicated(mesh, (), jnp.uint32),
            replicated(mesh, (), jnp.float32),
            replicated(mesh, (), jnp.float32),
            replicated(mesh, (1,), jnp.int32),
            replicated(mesh, (1,), jnp.int32),
            replicated(mesh, (), jnp.int32),
        ]
        plans.append(
            compile_step(
                "generate",
                f"{w.batch} x ({w.prompt_len} + {w.new_tokens})",
                w.batch * w.new_tokens,
                _generation_round,
                (params, spec, state, per_row[0], *prompts, *per_row[1:], *scalars),
                {"capacity": capacity},
                model_flops=model_flops(spec, "generate", w),
                **common,
            )
        )
    if "p_true" in steps:
        batch = [rows(mesh, (w.batch, w.seq)) for _ in range(3)]
        candidates = [replicated(mesh, (2,), jnp.int32), replicated(mesh, (2, 2), jnp.bool_)]
        plans.append(
            compile_step(
                "p_true",
                f"{w.batch} x {w.seq}",
                w.batch * w.seq,
                ptrue._last_position_logprobs,
                (params, spec, *batch, rows(mesh, (w.batch,)), *candidates),
                {},
                model_flops=model_flops(spec, "p_true", w),
                **common,
            )
        )
    return plans


class _RandomTable:
    """An n-gram table of `rows` random fingerprints: the shapes and bucket sizes of a real one."""

    def __init__(self, rows: int, n: int, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.keys = np.unique(rng.integers(0, np.iinfo(np.uint64).max, size=rows, dtype=np.uint64))
        self.ngrams = np.zeros((len(self.keys), n), np.int32)
        self.n = n


def plan_ngram_step(devices, chip: Chip | None, w: Workload) -> StepPlan:
    """Compile one corpus chunk's count against the table, on one device; tokens/s scale with the devices."""
    import jax

    from jaxcontam.ngram.lookup import count_chunk, device_table

    device = devices[0]
    table = jax.tree.map(
        lambda a: on_device(device, a.shape, a.dtype), device_table(_RandomTable(w.table_rows, w.ngram_n))
    )
    width = w.chunk_tokens + w.ngram_n - 1
    args = (
        table,
        on_device(device, (table.rows + 1,), jnp.int32),
        on_device(device, (width,), jnp.int32),
        on_device(device, (width,), jnp.int32),
        on_device(device, (), jnp.int32),
        on_device(device, (), jnp.int32),
    )
    mesh = jax.sharding.Mesh(np.array([device]), ("one",))
    plan = compile_step(
        "ngram",
        f"{w.chunk_tokens} windows, {table.rows} rows",
        w.chunk_tokens,
        count_chunk,
        args,
        {"capacity": max(1, w.chunk_tokens // 16), "verify": True},
        weights=table,
        mesh=mesh,
        chip=chip,
        model_flops=None,
    )
    return dataclasses.replace(plan, tokens=w.chunk_tokens * len(devices))
