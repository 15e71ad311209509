# pyright: standard
"""CDD, contamination detection via output distribution (Dong et al. 2024, "Generalization or Memorization: Data
Contamination and Trustworthy Evaluation for Large Language Models", arXiv 2402.15938).

A model that memorised an item answers its prompt the same way however it samples: the sampled outputs crowd
around the greedy one. Per item, as the authors' `CDD.py` (github.com/YihongDong/CDD-TED4LLMs,
`get_edit_distance_distribution_star` and `calculate_ratio`) computes it: `samples` outputs at temperature T and the
greedy output, each cut to its first `compared_tokens` tokens (the authors' `length = 100`); the token-level edit
distance of each sample to the greedy output; the peakedness is the share of the samples (the greedy output is not
one of them) within alpha * l edits of it, l the longest of the cut outputs, the greedy one included; the item is
flagged when the peakedness exceeds xi. The paper gives no test: the share of flagged items and the peakedness's AUC
against known labels are effect sizes (docs/methods.md, "CDD").
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from jaxcontam.dataclass_config import check_ranges, ranged
from jaxcontam.detect.benchmark_results import DetectorSummary
from jaxcontam.detect.item_scores import score_summary
from jaxcontam.detect.json_values import json_float
from jaxcontam.engine.chat import ChatMode, check_chat_mode


@dataclasses.dataclass(frozen=True)
class CddSettings:
    """The [cdd] table: `samples` outputs per item at `temperature` (plus the greedy one), each at most
    `max_new_tokens` long, of which the first `compared_tokens` are compared; a sample within `edit_fraction` * l
    edits of the greedy output counts towards the peakedness, and an item whose peakedness exceeds `xi` is flagged
    (the authors' defaults: 50 samples, T = 0.8, the first 100 tokens, alpha (here `edit_fraction`) = 0.05,
    xi = 0.01). `chat_template`: the item's prompt as a chat turn ("auto": when the tokenizer has a template)."""

    samples: int = ranged(50, at_least=1)  # the authors' 50 (CDD.py; LLMSanitize's default is 20)
    temperature: float = ranged(0.8, at_least=0)  # the authors' 0.8; 0: every sample is the greedy output
    max_new_tokens: int = ranged(128, at_least=1)  # LLMSanitize's max_tokens; generation stops at compared_tokens
    compared_tokens: int = ranged(100, at_least=1)  # the authors' length = 100: each output's first tokens compared
    edit_fraction: float = ranged(0.05, at_least=0, at_most=1)  # the paper's alpha (the audit's level is another)
    xi: float = ranged(0.01, at_least=0, below=1)  # the authors' 0.01
    chat_template: ChatMode = "auto"

    def __post_init__(self):
        check_ranges(self, "[cdd]")
        check_chat_mode(self.chat_template)


def edit_distance(a: Sequence[int], b: Sequence[int]) -> int:
    """Levenshtein distance between two token sequences (insertions, deletions, substitutions, each costing 1).

    One row of the dynamic programme at a time, vectorised: substitutions and deletions from the previous row,
    then insertions along the row as a running minimum of (cost - j) + j.
    """
    first, second = np.asarray(a, np.int64), np.asarray(b, np.int64)
    if first.size == 0 or second.size == 0:
        return int(max(first.size, second.size))
    steps = np.arange(second.size + 1)
    previous = steps.copy()
    for i, token in enumerate(first, start=1):
        current = np.empty_like(previous)
        current[0] = i
        current[1:] = np.minimum(previous[1:] + 1, previous[:-1] + (second != token))
        previous = np.minimum.accumulate(current - steps) + steps
    return int(previous[-1])


def peakedness(
    samples: Sequence[Sequence[int]], greedy: Sequence[int], alpha: float, compared_tokens: int
) -> tuple[float, list[int]]:
    """(the share of `samples` within alpha * l edits of `greedy`, each sample's edit distance to it), every output
    cut to its first `compared_tokens` tokens; l is the longest cut output, the greedy one included, and the bound
    is inclusive: the authors' `calculate_ratio(distances, alpha * max_length)`."""
    if not samples:
        return math.nan, []
    cut = [list(sample[:compared_tokens]) for sample in samples]
    reference = list(greedy[:compared_tokens])
    distances = [edit_distance(sample, reference) for sample in cut]
    bound = alpha * max(len(reference), *(len(sample) for sample in cut))
    return sum(d <= bound for d in distances) / len(samples), distances


@dataclasses.dataclass(frozen=True)
class CddResult:
    """Over a benchmark's items: how many were sampled, the share flagged (peakedness > xi: the paper's
    "contamination level"), and the peakedness summarised (higher = seen; AUC and Mann-Whitney p with labels)."""

    n_items: int
    flagged_share: float
    peakedness: DetectorSummary

    def to_dict(self) -> dict:
        return {"n_items": self.n_items, "flagged_share": self.flagged_share, "peakedness": self.peakedness.to_dict()}

    @classmethod
    def from_dict(cls, entry: dict) -> CddResult:
        return cls(entry["n_items"], json_float(entry["flagged_share"]), DetectorSummary.from_dict(entry["peakedness"]))


def cdd_result(rows: Sequence[dict]) -> CddResult:
    """The benchmark's CDD result from its items' rows (`cdd_peakedness`, `cdd_flagged`)."""
    flags = [bool(r["cdd_flagged"]) for r in rows]
    share = float(np.mean(flags)) if flags else math.nan
    return CddResult(len(rows), share, score_summary(rows, "cdd_peakedness", higher_means_seen=True))
