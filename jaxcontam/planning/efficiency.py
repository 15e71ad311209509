"""Achieved fractions of a chip's published peaks, from published measurements: `jaxcontam plan`'s estimate.

The roofline (`planning.plan`) assumes a step runs at the chip's peak flops, HBM bandwidth or ICI bandwidth,
whichever bounds it: a lower bound on time, so its tokens/s and MFU are upper bounds. The estimate divides each
resource's time by the fraction of that peak real TPU programs are published to reach:

    seconds_estimate = max(flops / (peak x e_compute), bytes / (HBM bandwidth x e_hbm))
                       + ICI traffic / (ICI bandwidth x e_ici)

- e_compute: MaxText's published training MFU for the model closest in size to those jaxcontam plans (the
  smallest dense model MaxText publishes for the chip; Llama-3.1-8B on v6e). MFU counts useful model flops, so
  it folds in everything that kept the chip below peak: HBM stalls, exposed collectives, non-matmul work.
- e_hbm: JetStream's published Llama-3-8B decode throughput on v5e-8 (bf16, batch 128, 2,048-token cache),
  read as the bytes each decode step moves (every weight but the embedding table, and the whole KV cache, which a
  dense decode attention reads, jaxcontam's too; that JetStream's did so then is assumed, not checked) per
  second over the slice's HBM bandwidth. No other chip has a published decode throughput here: they use v5e's.
- e_ici: the measured AllGather in "How To Scale Your Model" (v5e, 680 us profiled against 560 us from the
  link bandwidth). ICI traffic charges an all-reduce twice its bytes (a reduce-scatter and an all-gather).

Why max, then a sum: XLA's TPU fusions stream their operands from HBM while the MXU works, so a step's compute
and HBM traffic overlap and the slower bounds it (the roofline's assumption; the efficiencies, measured on
whole programs, carry the imperfect overlap). A tensor-parallel forward's all-reduces sit between a layer's
matmul and the next layer's normalization, on the critical path, so their time is added: the pessimistic choice,
and 3-15% of a scoring step's estimated time in docs/tpu.md's table.

Biases, both ways. The compute figures are training MFU on slices of 64-256 chips with large matmuls; a 1B-9B
model's inference on 4-8 chips has narrower ones, so the estimate may be optimistic where compute bounds. The
bytes the plan reads from XLA charge every operand outside a fusion as an HBM round trip, more than a program
moves, so where HBM bounds the estimate leans pessimistic. An estimate above the best published MFU for its chip
is flagged (`above_published`): nothing published supports it, and it usually means the compiled flops
undercount the model's (a counting error to look into).
"""

from __future__ import annotations

import dataclasses

# Where each figure is published: the file, its repository, and the commit it was read at.
MAXTEXT_V5E = "MaxText/configs/v5e/README.md, github.com/AI-Hypercomputer/maxtext (commit 0ed7bd5)"
MAXTEXT_V5P = "MaxText/configs/v5p/README.md, github.com/AI-Hypercomputer/maxtext (commit 0ed7bd5)"
MAXTEXT_V4 = "MaxText/configs/v4/README.md, github.com/AI-Hypercomputer/maxtext (commit 30cd40a)"
MAXTEXT_TIERS = (
    "docs/reference/models/tiering.md, Trillium (v6e) table, github.com/AI-Hypercomputer/maxtext (commit 20a91e1)"
)
JETSTREAM_V5E = (
    'benchmarks/summary.md, "Llama 3 - 8B" 2024-04-24, github.com/AI-Hypercomputer/jetstream-pytorch (JetStream\'s '
    "PyTorch engine, commit 2ba0dd8)"
)
SCALING_BOOK = (
    '"How To Scale Your Model", part 3 "Sharding", Pop Quiz 2, jax-ml.github.io/scaling-book/sharding '
    "(github.com/jax-ml/scaling-book, sharding.md, commit 04d8de5)"
)


@dataclasses.dataclass(frozen=True)
class Figure:
    """One published figure: the fraction it gives, what was measured, and where it is published."""

    value: float
    measured: str
    source: str


@dataclasses.dataclass(frozen=True)
class ChipEfficiency:
    """The fractions of one chip's peaks the estimate uses, and the best MFU published for that chip."""

    compute: Figure  # achieved model flops / peak bf16 flops, matmul-bound work (scoring, prefill)
    hbm: Figure  # achieved bytes/s / peak HBM bandwidth, bandwidth-bound work (decode)
    ici: Figure  # achieved collective bytes/s / ICI bandwidth
    best_mfu: Figure  # the highest MFU published for the chip: estimates above it are flagged


# JetStream (PyTorch), Llama-3-8B bf16 on v5e-8: 8,249 tokens/s at batch 128 = 64.4 decode steps/s. A step
# reads the weights but the embedding table, 7.50e9 x 2 bytes, and the whole 2,048-token KV cache of the 128
# rows, 128 x 2,048 x (32 layers x 2 x 8 heads x 128 x 2 bytes) = 34.4e9 bytes: 49.4e9 bytes x 64.4 / s =
# 3.18e12 B/s of the slice's 8 x 819e9 = 6.55e12 B/s. The throughput counts prefill time too (not subtracted).
V5E_DECODE_HBM = Figure(
    0.49,
    "Llama-3-8B bf16 decode on v5e-8, batch 128, 2,048-token cache: 8,249 tokens/s = 49% of HBM bandwidth",
    JETSTREAM_V5E,
)
# 34e6 bytes gathered over a 4-chip axis of v5e: 560 us from the link bandwidth, 680 us in the profile.
V5E_ALLGATHER_ICI = Figure(
    0.82, "AllGather of bf16[2048, 8192] over 4 v5e chips: 560 us predicted, 680 us profiled", SCALING_BOOK
)


def _transferred(figure: Figure, chip: str) -> Figure:
    return dataclasses.replace(figure, measured=f"{figure.measured} (v5e's figure: none published for {chip})")


EFFICIENCY: dict[str, ChipEfficiency] = {
    "v5e": ChipEfficiency(
        compute=Figure(
            0.611, "16B model trained on 1x v5e-256: 61.10% MFU (the smallest MaxText publishes)", MAXTEXT_V5E
        ),
        hbm=V5E_DECODE_HBM,
        ici=V5E_ALLGATHER_ICI,
        best_mfu=Figure(0.6686, "32B model trained on 1x v5e-256: 66.86% MFU", MAXTEXT_V5E),
    ),
    "v5p": ChipEfficiency(
        compute=Figure(
            0.7147, "32B model trained on 1x v5p-128: 71.47% MFU (the smallest MaxText publishes)", MAXTEXT_V5P
        ),
        hbm=_transferred(V5E_DECODE_HBM, "v5p"),
        ici=_transferred(V5E_ALLGATHER_ICI, "v5p"),
        best_mfu=Figure(0.7147, "32B model trained on 1x v5p-128: 71.47% MFU", MAXTEXT_V5P),
    ),
    "v4": ChipEfficiency(
        compute=Figure(0.567, "22B model trained on 1x v4-128: 56.7% MFU (the smallest MaxText publishes)", MAXTEXT_V4),
        hbm=_transferred(V5E_DECODE_HBM, "v4"),
        ici=_transferred(V5E_ALLGATHER_ICI, "v4"),
        best_mfu=Figure(0.589, "52B model trained on 2x v4-384: 58.9% MFU", MAXTEXT_V4),
    ),
    "v6e": ChipEfficiency(
        compute=Figure(0.4546, "Llama 3.1 8B trained on 256 v6e chips, bf16, 8,192 tokens: 45.46% MFU", MAXTEXT_TIERS),
        hbm=_transferred(V5E_DECODE_HBM, "v6e"),
        ici=_transferred(V5E_ALLGATHER_ICI, "v6e"),
        best_mfu=Figure(
            0.5033, "Llama 3.1 70B trained on 256 v6e chips, bf16, 8,192 tokens: 50.33% MFU", MAXTEXT_TIERS
        ),
    ),
}

MODEL = (
    "estimate = max(flops / (peak x e_compute), bytes / (HBM bandwidth x e_hbm)) + ICI traffic / (ICI bandwidth x "
    "e_ici), an all-reduce's traffic twice its bytes"
)


def ici_traffic(collectives) -> float:
    """Bytes a device moves over ICI per call, by the textbook costs: an all-reduce is a reduce-scatter and an
    all-gather, twice its bytes; every other collective its result's bytes."""
    return sum(c.bytes * c.count * (2 if c.kind == "all-reduce" else 1) for c in collectives)


def efficiency_for(chip) -> ChipEfficiency | None:
    """The published efficiencies of a chip (`tpu_chips.Chip`), or None when none are recorded."""
    return None if chip is None else EFFICIENCY.get(chip.name)


def estimated_seconds(chip, flops: float, bytes_accessed: float, ici_bytes: float) -> float | None:
    """One call's estimated time on one device of `chip` (per-device costs); None without published figures."""
    found = efficiency_for(chip)
    if found is None:
        return None
    seconds = max(
        flops / (chip.peak_flops * found.compute.value),
        bytes_accessed / (chip.hbm_bandwidth * found.hbm.value),
    )
    if chip.ici_bandwidth is not None:
        seconds += ici_bytes / (chip.ici_bandwidth * found.ici.value)
    return seconds


@dataclasses.dataclass(frozen=True)
class Estimate:
    """A step's efficiency-adjusted estimate for the whole slice."""

    seconds: float
    tokens_per_second: float
    mfu: float | None  # None where the step has no model flops (n-gram counting)
    best_published_mfu: float
    above_published: bool


def estimate(
    chip, devices: int, tokens: int, model_flops: float | None, flops: float, bytes_accessed: float, ici_bytes: float
) -> Estimate | None:
    """The estimate of one call over `devices` devices of `chip` from its per-device costs (`ici_bytes`: the
    call's `ici_traffic`); None for a chip without published efficiencies."""
    seconds = estimated_seconds(chip, flops, bytes_accessed, ici_bytes)
    found = efficiency_for(chip)
    if not seconds or found is None:
        return None
    best = found.best_mfu.value
    mfu = None if model_flops is None else model_flops / (seconds * chip.peak_flops * devices)
    return Estimate(seconds, tokens / seconds, mfu, best, mfu is not None and mfu > best)
