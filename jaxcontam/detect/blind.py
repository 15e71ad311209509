# pyright: standard
"""The blind baseline of a benchmark with known labels (`stats.blind.blind_baseline`): how well a classifier that
never sees the model separates the known-contaminated items' texts from the known-clean ones'.

A detector's AUC between the two sets is membership evidence only if the sets are otherwise alike; the blind
baseline's AUC, shown beside every detector's in the ground-truth comparison
(`detect.benchmark_results.ground_truth_result`), says how far wording alone separates them. Each item's text is
the one the likelihood detectors score (`Benchmark.solved_text`: the prompt and the gold answer). It has no
verdict: it is a check of the item sets, not of the model.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Literal

from jaxcontam.dataclass_config import check_ranges, ranged
from jaxcontam.detect.json_values import json_float
from jaxcontam.detect.status import TestOutcome
from jaxcontam.errors import JaxcontamError
from jaxcontam.stats.blind import blind_baseline

CI_LEVEL = 0.95  # the level of the interval summary.json records


@dataclasses.dataclass(frozen=True)
class BlindBaselineSettings:
    """The [blind_baseline] table (which turns it on): the classifier's n-grams, folds, smoothing and permutations."""

    analyzer: Literal["word", "char"] = "word"  # n-grams of words (runs of word characters) or of characters
    ngram_range: tuple[int, int] = (1, 2)  # the n-gram lengths counted, both ends included
    folds: int = ranged(5, at_least=2)  # stratified cross-validation folds (each set needs as many items)
    smoothing: float = ranged(1.0, above=0)  # Laplace smoothing of the naive Bayes counts
    permutations: int = ranged(999, at_least=1)  # label permutations of the null (p-value and interval)

    def __post_init__(self):
        check_ranges(self, "[blind_baseline]")
        low, high = self.ngram_range
        if not 1 <= low <= high:
            raise JaxcontamError(
                f"[blind_baseline] ngram_range = {list(self.ngram_range)}: expected [low, high] with 1 <= low <= "
                "high, e.g. [1, 2] (words and pairs of words)"
            )


@dataclasses.dataclass(frozen=True)
class BlindBaselineSummary:
    """The blind baseline on one benchmark's labelled items: its cross-validated AUC (contaminated items positive),
    the permutation p of "the sets look alike", the 95% interval (`stats.blind.BlindBaselineResult`) and the set
    sizes; `status` says why it did not run (too few labelled items on a side)."""

    auc: float
    pvalue: float
    ci95: tuple[float, float]
    n_contaminated: int
    n_clean: int
    status: TestOutcome

    def to_dict(self) -> dict:
        return {
            "auc": self.auc,
            "pvalue": self.pvalue,
            "ci95": list(self.ci95),
            "n_contaminated": self.n_contaminated,
            "n_clean": self.n_clean,
            "status": self.status.label,
        }

    @classmethod
    def from_dict(cls, entry: dict) -> BlindBaselineSummary:
        low, high = entry["ci95"]
        return cls(
            json_float(entry["auc"]),
            json_float(entry["pvalue"]),
            (json_float(low), json_float(high)),
            entry["n_contaminated"],
            entry["n_clean"],
            TestOutcome.from_label(entry["status"]),
        )


@functools.lru_cache(maxsize=32)
def blind_summary(
    contaminated: tuple[str, ...], clean: tuple[str, ...], settings: BlindBaselineSettings, seed: int
) -> BlindBaselineSummary:
    """The blind baseline of the two sets of texts; not run (NaN, its reason) when a set has fewer items than folds.
    It depends on the texts alone, so every model of a benchmark gets the same result: it is computed once per
    (texts, settings, seed) in a process (999 permutations of 200 items take seconds), and the rest are reused."""
    sizes = (len(contaminated), len(clean))
    if min(sizes) < settings.folds:
        nan = float("nan")
        reason = (
            f"{sizes[0]} known-contaminated and {sizes[1]} known-clean items; {settings.folds}-fold "
            "cross-validation needs at least as many on each side"
        )
        return BlindBaselineSummary(nan, nan, (nan, nan), *sizes, TestOutcome.no_test(reason))
    result = blind_baseline(
        contaminated,
        clean,
        folds=settings.folds,
        analyzer=settings.analyzer,
        ngram_range=settings.ngram_range,
        smoothing=settings.smoothing,
        seed=seed,
        permutations=settings.permutations,
    )
    interval = result.confidence_interval(CI_LEVEL)
    return BlindBaselineSummary(
        result.statistic, result.pvalue, (interval.low, interval.high), *sizes, TestOutcome.tested()
    )
