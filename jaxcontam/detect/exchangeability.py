"""The sharded likelihood comparison test of Oren et al. 2023 ("Proving test set contamination").

A model that saw a benchmark file during training prefers its canonical order:
the examples concatenated in file order are more likely than the same examples
shuffled. The file is cut into contiguous shards; in each shard the log-prob of
the canonical concatenation is compared with the mean over random within-shard
permutations, and a one-sided t-test over shards asks whether the canonical
order is systematically preferred (exchangeability makes the statistic zero-mean
for an uncontaminated model; the t statistic is `jaxcontam.stats.sharded_statistic`). All permutations of all shards are scored
together, in the engine's fixed-shape batches.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from jaxcontam.engine.scoring import score_logprobs
from jaxcontam.errors import JaxcontamError
from jaxcontam.stats import sharded_statistic


@dataclasses.dataclass(frozen=True)
class ShardedTestResult:
    """statistic: t over shards; pvalue: one-sided (canonical order preferred); per-shard details."""

    statistic: float
    pvalue: float
    shard_differences: np.ndarray  # canonical log-prob minus mean permuted log-prob, per shard
    canonical_logprobs: np.ndarray  # [shards]
    permuted_logprobs: np.ndarray  # [shards, permutations]


def shard_bounds(num_examples: int, num_shards: int) -> list[tuple[int, int]]:
    """Contiguous [start, end) shards whose sizes differ by at most one."""
    edges = np.linspace(0, num_examples, num_shards + 1).round().astype(int)
    return list(zip(edges[:-1].tolist(), edges[1:].tolist()))


def shard_sequences(examples, bounds, permutations: int, rng: np.random.Generator, prefix: Sequence[int]):
    """Token sequences to score: per shard the canonical order, then `permutations` shuffled orders."""
    sequences = []
    for start, end in bounds:
        shard = examples[start:end]
        orders = [np.arange(len(shard))] + [rng.permutation(len(shard)) for _ in range(permutations)]
        for order in orders:
            sequences.append(list(prefix) + [t for i in order for t in shard[i]])
    return sequences


def sharded_likelihood_test(
    model,
    example_token_ids: Sequence[Sequence[int]],
    *,
    num_shards: int = 10,
    permutations: int = 25,
    seed: int = 0,
    prefix: Sequence[int] = (),
    rows_per_batch: int = 16,
) -> ShardedTestResult:
    """Run the test on a benchmark given as one token list per example, in canonical (file) order.

    `prefix` (e.g. the BOS id) starts every concatenation and is not scored.
    Each example's tokens should include its separator (e.g. a trailing newline)
    so that every ordering has exactly the same tokens.
    """
    examples = [list(e) for e in example_token_ids]
    if num_shards < 2:
        raise JaxcontamError(f"num_shards must be >= 2 for a t-test over shards, got {num_shards}")
    if len(examples) < 2 * num_shards:
        raise JaxcontamError(
            f"{len(examples)} examples cannot fill {num_shards} shards of at least two: lower num_shards"
        )
    if permutations < 1:
        raise JaxcontamError(f"permutations must be >= 1, got {permutations}")
    if any(len(e) == 0 for e in examples):
        raise JaxcontamError("an example has no tokens: drop empty examples before the test")
    bounds = shard_bounds(len(examples), num_shards)
    sequences = shard_sequences(examples, bounds, permutations, np.random.default_rng(seed), prefix)
    start = max(1, len(prefix))
    scores = score_logprobs(model, sequences, [(start, len(s)) for s in sequences], rows_per_batch=rows_per_batch)
    totals = np.array([s.logprobs.astype(np.float64).sum() for s in scores]).reshape(num_shards, permutations + 1)
    result = sharded_statistic(totals[:, 0], totals[:, 1:], alternative="greater")
    return ShardedTestResult(result.statistic, result.pvalue, result.shard_differences, totals[:, 0], totals[:, 1:])
