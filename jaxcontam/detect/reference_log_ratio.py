# pyright: standard
"""The reference-model log-likelihood ratio (Carlini et al. 2021; mimir's `ref` attack): per item, the audited
model's mean log-prob per token of the item's solved text minus a reference model's (each with its own tokenizer);
higher means more likely seen by the audited model. mimir returns the reference's minus the target's (lower means
member); the sign here follows the other likelihood scores.

A benchmark-level test of that score against zero is not valid: two clean models differ in fluency on every text,
so the mean difference is not 0 under no contamination. The test is calibrated PaCoST's design (a), the one with
power in experiments/real_contamination round four: per item, the ratio on the original minus the ratio on its
accepted rephrasing, i.e. gap(audited) - gap(reference) with gap = log-prob(original) - log-prob(rephrased), under a
one-sided sign-flip permutation test (`stats.calibrated.reference_test`). Whatever makes a rephrasing less likely
for any model cancels in the difference; what is left is the audited model's own preference for the original
wording. The test needs the reference model and rephrasings (items without one are dropped and counted).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from jaxcontam.detect.benchmark_results import DetectorSummary
from jaxcontam.detect.item_scores import score_summary
from jaxcontam.detect.json_values import json_float
from jaxcontam.detect.stage import NO_REFERENCE_MODEL, ReferenceModel
from jaxcontam.detect.status import TestOutcome
from jaxcontam.engine import score_logprobs
from jaxcontam.errors import JaxcontamError

SCORE = "reference_log_ratio"  # the per-item score: mean log-prob (audited) - mean log-prob (reference)
SIDES = ("original", "rephrased")
MODELS = ("audited", "reference")
COLUMNS = (SCORE, *(f"{SCORE}_{model}_{side}" for model in MODELS for side in SIDES))


@dataclasses.dataclass(frozen=True)
class ReferenceLogRatioSettings:
    """[reference_log_ratio]: the table turns the detector on (it has no keys; the reference model is the audit's,
    `reference_model` or `--reference-model`, and the test is the sign-flip permutation test of calibrated PaCoST)."""


def mean_logprobs(model, texts: Sequence[str | None]) -> list[float]:
    """Mean log-prob per scored token of each text under `model` (NaN for None), in one batched call."""
    present = [i for i, text in enumerate(texts) if text is not None]
    values = [math.nan] * len(texts)
    encoded = [model.tokenizer.encode(texts[i]) for i in present]
    for i, scores in zip(present, score_logprobs(model, encoded) if encoded else []):
        values[i] = float(np.mean(scores.logprobs))
    return values


def reference_log_ratio_records(
    model, reference: ReferenceModel | None, benchmark, items, rephrasings: Sequence[str | None]
) -> list[dict]:
    """Per item: both models' mean log-probs of its solved text and of the solved text with its accepted
    rephrasing in place of the question (NaN without one), and the score. Without a reference model every column
    is NaN and nothing is scored (the detector states "not tested")."""
    if reference is None:
        return [{"id": item.id} | dict.fromkeys(COLUMNS, math.nan) for item in items]
    originals = [benchmark.solved_text(item) for item in items]
    rephrased = [
        None if r is None else benchmark.solved_text(dataclasses.replace(item, question=r))
        for item, r in zip(items, rephrasings)
    ]
    texts = originals + rephrased
    audited, referred = mean_logprobs(model, texts), mean_logprobs(reference.model, texts)
    n = len(items)
    records = []
    for i, item in enumerate(items):
        columns = {
            f"{SCORE}_audited_original": audited[i],
            f"{SCORE}_audited_rephrased": audited[n + i],
            f"{SCORE}_reference_original": referred[i],
            f"{SCORE}_reference_rephrased": referred[n + i],
        }
        records.append({"id": item.id, SCORE: audited[i] - referred[i], **columns})
    return records


@dataclasses.dataclass(frozen=True)
class ReferenceLogRatioResult:
    """The score over a benchmark (`summary`: mean, median, and with labels its AUC), and the calibrated test:
    `statistic` the mean over items of (ratio on the original - ratio on the rephrasing), its one-sided p-value, the
    items tested (`n`) and dropped (no rephrasing or a non-finite score: `n_dropped`), how p was computed (`detail`),
    and the reference model's name (None: there was none, `status` says "not tested")."""

    reference: str | None
    summary: DetectorSummary
    statistic: float
    pvalue: float
    n: int
    n_dropped: int
    detail: str
    status: TestOutcome

    def to_dict(self) -> dict:
        return {
            "reference": self.reference,
            "score": self.summary.to_dict(),
            "statistic": self.statistic,
            "pvalue": self.pvalue,
            "n": self.n,
            "n_dropped": self.n_dropped,
            "detail": self.detail,
            "status": self.status.label,
        }

    @classmethod
    def from_dict(cls, entry: dict) -> ReferenceLogRatioResult:
        return cls(
            reference=entry["reference"],
            summary=DetectorSummary.from_dict(entry["score"]),
            statistic=json_float(entry["statistic"]),
            pvalue=json_float(entry["pvalue"]),
            n=entry["n"],
            n_dropped=entry["n_dropped"],
            detail=entry["detail"],
            status=TestOutcome.from_summary(entry),
        )


def reference_log_ratio_result(
    rows: Sequence[dict], reference: str | None, seed: int, resamples: int
) -> ReferenceLogRatioResult:
    """The score's summary and the calibrated sign-flip test over the items with a rephrasing."""
    from jaxcontam.stats.calibrated import reference_test

    summary = score_summary(rows, SCORE)

    def untested(reason: str, n_dropped: int = 0) -> ReferenceLogRatioResult:
        return ReferenceLogRatioResult(
            reference, summary, math.nan, math.nan, 0, n_dropped, "", TestOutcome.no_test(reason)
        )

    if reference is None:
        return untested(NO_REFERENCE_MODEL)
    columns = [[row[f"{SCORE}_{model}_{side}"] for row in rows] for model in MODELS for side in SIDES]
    try:
        test = reference_test(*columns, method="permutation", alternative="greater", seed=seed, resamples=resamples)
    except JaxcontamError:  # no item with a rephrasing and finite scores in both models
        return untested("no item has a rephrasing scored by both models", len(rows))
    return ReferenceLogRatioResult(
        reference, summary, test.mean_difference, test.pvalue, test.n, test.n_dropped, test.detail, TestOutcome.tested()
    )
