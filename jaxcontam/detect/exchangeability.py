# pyright: standard
"""The exchangeability test of Oren et al. 2023 ("Proving test set contamination in black box language models").

A model that saw a benchmark file during training prefers its canonical order: the examples concatenated in
file order are more likely than the same examples shuffled. The file is cut into contiguous chunks (the
paper's "shards"; jaxcontam keeps "sharded" for device sharding); in each chunk the log-prob of the canonical
concatenation is compared with the mean over random within-chunk permutations, and a one-sided t-test over
chunks asks whether the canonical order is systematically preferred (exchangeability makes the statistic
zero-mean for an uncontaminated model; `jaxcontam.stats.exchangeability_statistic`). All permutations of all
chunks are scored together, in the engine's fixed-shape batches.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from jaxcontam.dataclass_config import check_ranges, ranged
from jaxcontam.detect.json_values import json_float
from jaxcontam.detect.status import TestOutcome
from jaxcontam.engine.scoring import score_logprobs
from jaxcontam.errors import JaxcontamError
from jaxcontam.stats import exchangeability_statistic

ITEM_SEPARATOR = "\n\n"  # between items of a benchmark file written out in order (a leaked test file)


@dataclasses.dataclass(frozen=True)
class ExchangeabilitySettings:
    """The test's settings in an audit: at least `chunks` contiguous chunks (more when needed to fit the model's
    context), `permutations` random orders of each."""

    chunks: int = ranged(10, at_least=2)  # at least this many contiguous chunks (more if needed to fit the context)
    permutations: int = ranged(10, at_least=1)  # random within-chunk orders scored per chunk

    def __post_init__(self):
        check_ranges(self, "[exchangeability]")


@dataclasses.dataclass(frozen=True)
class ExchangeabilityTestResult:
    """statistic: t over chunks; pvalue: one-sided (canonical order preferred); per-chunk details."""

    statistic: float
    pvalue: float
    chunk_differences: np.ndarray  # canonical log-prob minus mean permuted log-prob, per chunk
    canonical_logprobs: np.ndarray  # [chunks]
    permuted_logprobs: np.ndarray  # [chunks, permutations]


def chunk_bounds(num_examples: int, num_chunks: int) -> list[tuple[int, int]]:
    """Contiguous [start, end) chunks whose sizes differ by at most one."""
    edges = np.linspace(0, num_examples, num_chunks + 1).round().astype(int)
    return list(zip(edges[:-1].tolist(), edges[1:].tolist()))


def fitting_chunks(lengths: Sequence[int], max_tokens: int, at_least: int) -> int | None:
    """The fewest contiguous chunks (>= at_least, >= 2 items each) whose summed lengths all fit max_tokens."""
    for chunks in range(at_least, len(lengths) // 2 + 1):
        if all(sum(lengths[a:b]) <= max_tokens for a, b in chunk_bounds(len(lengths), chunks)):
            return chunks
    return None


def chunk_sequences(examples, bounds, permutations: int, rng: np.random.Generator, prefix: Sequence[int]):
    """Token sequences to score: per chunk the canonical order, then `permutations` shuffled orders."""
    sequences = []
    for start, end in bounds:
        chunk = examples[start:end]
        orders = [np.arange(len(chunk))] + [rng.permutation(len(chunk)) for _ in range(permutations)]
        for order in orders:
            sequences.append(list(prefix) + [t for i in order for t in chunk[i]])
    return sequences


def exchangeability_test(
    model,
    example_token_ids: Sequence[Sequence[int]],
    *,
    num_chunks: int = 10,
    permutations: int = 25,
    seed: int = 0,
    prefix: Sequence[int] = (),
    rows_per_batch: int = 16,
    progress: bool = False,
) -> ExchangeabilityTestResult:
    """Run the test on a benchmark given as one token list per example, in canonical (file) order.

    `prefix` (e.g. the BOS id) starts every concatenation and is not scored. `progress`: a bar per scored batch
    on stderr (chunks x (1 + permutations) long sequences take minutes on a real model).
    Each example's tokens should include its separator (e.g. `ITEM_SEPARATOR`)
    so that every ordering has exactly the same tokens.
    """
    examples = [list(e) for e in example_token_ids]
    if num_chunks < 2:
        raise JaxcontamError(f"num_chunks must be >= 2 for a t-test over chunks, got {num_chunks}")
    if len(examples) < 2 * num_chunks:
        raise JaxcontamError(
            f"{len(examples)} examples cannot fill {num_chunks} chunks of at least two: lower num_chunks"
        )
    if permutations < 1:
        raise JaxcontamError(f"permutations must be >= 1, got {permutations}")
    if any(len(e) == 0 for e in examples):
        raise JaxcontamError("an example has no tokens: drop empty examples before the test")
    bounds = chunk_bounds(len(examples), num_chunks)
    sequences = chunk_sequences(examples, bounds, permutations, np.random.default_rng(seed), prefix)
    start = max(1, len(prefix))
    scores = score_logprobs(
        model, sequences, [(start, len(s)) for s in sequences], rows_per_batch=rows_per_batch, progress=progress
    )
    totals = np.array([s.logprobs.astype(np.float64).sum() for s in scores]).reshape(num_chunks, permutations + 1)
    result = exchangeability_statistic(totals[:, 0], totals[:, 1:], alternative="greater")
    return ExchangeabilityTestResult(
        result.statistic, result.pvalue, result.chunk_differences, totals[:, 0], totals[:, 1:]
    )


@dataclasses.dataclass(frozen=True)
class ExchangeabilityResult:
    """The test's t statistic and p-value with the chunking used (what summary.json records of
    `ExchangeabilityTestResult`), or `reason` why it could not run (then `chunks` and `statistic` are None and
    `pvalue` is NaN)."""

    chunks: int | None
    permutations: int
    statistic: float | None
    pvalue: float
    reason: str | None = None

    @property
    def status(self) -> TestOutcome:
        return TestOutcome.tested() if self.reason is None else TestOutcome.no_test(self.reason)

    def to_dict(self) -> dict:
        if self.reason is not None:
            return {"pvalue": math.nan, "status": self.status.label, "permutations": self.permutations}
        return {
            "statistic": self.statistic,
            "pvalue": self.pvalue,
            "status": self.status.label,
            "chunks": self.chunks,
            "permutations": self.permutations,
        }

    @classmethod
    def from_dict(cls, entry: dict) -> ExchangeabilityResult:
        """The result `to_dict` wrote."""
        status = TestOutcome.from_summary(entry)
        if not status.ran:
            return cls(None, entry["permutations"], None, math.nan, status.reason)
        return cls(entry["chunks"], entry["permutations"], json_float(entry["statistic"]), json_float(entry["pvalue"]))


def benchmark_exchangeability(model, benchmark, settings: ExchangeabilitySettings, seed: int) -> ExchangeabilityResult:
    """The test of `benchmark`'s items in benchmark order, in the fewest chunks (>= settings.chunks) that fit the
    model's context."""
    tokenizer = model.tokenizer
    examples = [
        tokenizer.encode(benchmark.solved_text(item) + ITEM_SEPARATOR, add_special_tokens=False) for item in benchmark
    ]
    chunks = fitting_chunks([len(e) for e in examples], model.config.max_position - 1, settings.chunks)
    if chunks is None:
        reason = "no chunking of the items (>= 2 per chunk) fits the model's context"
        return ExchangeabilityResult(None, settings.permutations, None, math.nan, reason)
    prefix = [tokenizer.bos_token_id] if tokenizer.bos_token_id is not None else []
    test = exchangeability_test(
        model,
        examples,
        num_chunks=chunks,
        permutations=settings.permutations,
        seed=seed,
        prefix=prefix,
        progress=True,
    )
    return ExchangeabilityResult(chunks, settings.permutations, test.statistic, test.pvalue)
