# pyright: standard
"""CoDeC (Zawalski et al. 2025, arXiv 2510.27055, "Detecting Data Contamination in LLMs via In-Context Learning"):
the change in a model's confidence on an item when other items of the same benchmark precede it in context. Items
the model has not seen gain from in-context items of their distribution; items it memorised gain less or lose.

As the authors define it: per item, delta = LL(x | c) - LL(x), the mean log-prob per token of the item after a context
c of randomly drawn other items of the same dataset, minus its mean log-prob alone; the dataset's contamination score
is the fraction of items with delta < 0. The paper's text reachable here (abstract, project page) states those two
and not how many items make a context, nor a test; jaxcontam's choices (docs/methods.md, "CoDeC"):
- the item's text and the context items' texts are solved texts (prompt + gold answer); `shots` other items (default
  3), drawn without replacement per item from a generator seeded by the audit's seed and the item's id (the same
  context however items are chunked), joined by blank lines; cut to fit the model's positions
  (`detect.prefixed.fit_prefix`);
- LL(x) and LL(x | c) over the same tokens (1..n-1 of the item's ids), both passes in one `score_logprobs` call;
- the dataset-level test: a one-sided exact sign test (binomial, ties dropped) of H0: P(delta < 0) <= 1/2 against
  more items losing confidence than gaining. The boundary, context hurting as often as it helps, is the paper's own
  reading of an unseen dataset (its unseen datasets lie well below 50%); the items' deltas share context items, so
  they are not independent, and a clean model can lose confidence on most items (the bundled 1M-parameter model,
  trained on short documents, loses it on its clean items too): the verdict carries that note.
- with the audit's reference model (`StageInput.reference`), the calibrated test, then the headline: per item the
  reference model's delta on the same item after the same context items minus the audited model's, under the
  one-sided sign-flip permutation test of calibrated PaCoST (`stats.paired.paired_test`): the audited model gains
  less from context than a clean model does. What makes context hurt any model (a long context, unrelated items)
  cancels in the difference.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Sequence

import numpy as np

from jaxcontam.dataclass_config import check_ranges, ranged
from jaxcontam.detect.benchmark_results import DetectorSummary
from jaxcontam.detect.item_scores import score_summary
from jaxcontam.detect.json_values import json_float
from jaxcontam.detect.prefixed import fit_prefix, prefixed_scores, text_body
from jaxcontam.detect.status import TestOutcome
from jaxcontam.errors import JaxcontamError
from jaxcontam.stats.signflip import DEFAULT_RESAMPLES

SCORE = "codec_delta"  # LL(x | context) - LL(x); lower means more likely seen
REFERENCE_SCORE = "codec_reference_delta"  # the reference model's delta on the same item and context items
COLUMNS = (
    SCORE,
    "codec_logprob",
    "codec_context_logprob",
    "codec_context_items",
    "codec_context_tokens",
    REFERENCE_SCORE,
)
NULL_NOTE = (
    "CoDeC's null is the paper's reading of unseen data (context helps an item at least as often as it hurts), not a "
    "calibrated one: a clean model can lose confidence on most items of a benchmark whose items share little"
)


@dataclasses.dataclass(frozen=True)
class CodecSettings:
    """[codec]: `shots`, how many other items of the benchmark precede each item in its context (before the context
    is cut to fit the model's positions)."""

    shots: int = ranged(3, at_least=1)  # other items of the benchmark in each item's context, before the cut

    def __post_init__(self):
        check_ranges(self, "[codec]")


def context_items(items: Sequence, index: int, shots: int, seed: int) -> list:
    """`shots` items other than items[index] (all others when fewer), in a random order drawn from a generator
    seeded by `seed` and the item's id."""
    others = [item for i, item in enumerate(items) if i != index]
    key = int(hashlib.sha256(str(items[index].id).encode()).hexdigest()[:8], 16)
    rng = np.random.default_rng([seed, key])
    chosen = rng.choice(len(others), size=min(shots, len(others)), replace=False) if others else []
    return [others[i] for i in chosen]


def _deltas(model, benchmark, items, contexts: dict) -> dict:
    """item id -> (its PrefixedScore after its context items, the Prefix) under `model`, in one batched call."""
    tokenizer = model.tokenizer
    texts, prefixes, kept = [], [], []
    for item in items:
        if not contexts[item.id]:
            continue  # a one-item benchmark: no other item to put in context
        text = benchmark.solved_text(item)
        budget = model.config.max_position - len(text_body(tokenizer, tokenizer.encode(text)))
        where = f"CoDeC on {benchmark.name}, item {item.id}"
        context = [benchmark.solved_text(other) for other in contexts[item.id]]
        prefixes.append(fit_prefix(tokenizer, context, budget, where))
        texts.append(text)
        kept.append(item.id)
    scores = prefixed_scores(model, texts, prefixes, same_tokens=True) if texts else []
    return {item_id: (score, prefix) for item_id, score, prefix in zip(kept, scores, prefixes)}


def codec_records(model, benchmark, items, settings: CodecSettings, seed: int, reference=None) -> list[dict]:
    """Per item: LL(x), LL(x | its context), their difference and the context's size, in one batched call; with a
    reference model (`detect.stage.ReferenceModel`) its difference on the same item and context items too."""
    everything = list(benchmark)
    position = {item.id: i for i, item in enumerate(everything)}
    contexts = {item.id: context_items(everything, position[item.id], settings.shots, seed) for item in items}
    audited = _deltas(model, benchmark, items, contexts)
    referred = {} if reference is None else _deltas(reference.model, benchmark, items, contexts)
    records = []
    for item in items:
        if item.id not in audited:
            records.append({"id": item.id, **dict.fromkeys(COLUMNS, math.nan)} | {"codec_context_items": 0})
            continue
        score, prefix = audited[item.id]
        other = referred.get(item.id)
        records.append(
            {
                "id": item.id,
                SCORE: score.prefixed - score.alone,
                "codec_logprob": score.alone,
                "codec_context_logprob": score.prefixed,
                "codec_context_items": prefix.texts,
                "codec_context_tokens": score.prefix_tokens,
                REFERENCE_SCORE: math.nan if other is None else other[0].prefixed - other[0].alone,
            }
        )
    return records


@dataclasses.dataclass(frozen=True)
class CalibratedCodec:
    """CoDeC against a reference model: `difference` the mean over items of (reference's delta - audited delta),
    positive where the audited model gains less from context; its one-sided sign-flip p-value over `n` items with
    both deltas finite."""

    reference: str
    difference: float
    pvalue: float
    n: int
    detail: str
    status: TestOutcome

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)} | {"status": self.status.label}

    @classmethod
    def from_dict(cls, entry: dict) -> CalibratedCodec:
        return cls(
            entry["reference"],
            json_float(entry["difference"]),
            json_float(entry["pvalue"]),
            entry["n"],
            entry["detail"],
            TestOutcome.from_summary(entry),
        )


@dataclasses.dataclass(frozen=True)
class CodecResult:
    """CoDeC over a benchmark: `score` the authors' contamination score (the fraction of items whose confidence
    drops with context), from `n_drops` of `n` items with a finite delta (`n_ties` with delta exactly 0); the sign
    test's one-sided p-value; the deltas' mean, median and, with labels, AUC (`summary`, lower delta = seen)."""

    score: float
    n: int
    n_drops: int
    n_ties: int
    pvalue: float
    summary: DetectorSummary
    status: TestOutcome
    calibrated: CalibratedCodec | None = None

    def to_dict(self) -> dict:
        return {
            "score": self.score,
            "n": self.n,
            "n_drops": self.n_drops,
            "n_ties": self.n_ties,
            "pvalue": self.pvalue,
            "delta": self.summary.to_dict(),
            "status": self.status.label,
            "calibrated": None if self.calibrated is None else self.calibrated.to_dict(),
        }

    @classmethod
    def from_dict(cls, entry: dict) -> CodecResult:
        return cls(
            score=json_float(entry["score"]),
            n=entry["n"],
            n_drops=entry["n_drops"],
            n_ties=entry["n_ties"],
            pvalue=json_float(entry["pvalue"]),
            summary=DetectorSummary.from_dict(entry["delta"]),
            status=TestOutcome.from_summary(entry),
            calibrated=None if entry.get("calibrated") is None else CalibratedCodec.from_dict(entry["calibrated"]),
        )


def sign_test_pvalue(drops: int, trials: int) -> float:
    """One-sided exact binomial p of at least `drops` of `trials` (ties left out) under P(drop) = 1/2."""
    from scipy.stats import binomtest

    return float(binomtest(drops, trials, 0.5, alternative="greater").pvalue)


def calibrated_codec(rows: Sequence[dict], reference: str, seed: int, resamples: int) -> CalibratedCodec:
    """The one-sided sign-flip test of (reference's delta - audited delta) over the items with both finite."""
    from jaxcontam.stats.paired import paired_test

    referred, audited = ([row[key] for row in rows] for key in (REFERENCE_SCORE, SCORE))
    try:
        test = paired_test(referred, audited, "permutation", "greater", seed, resamples=resamples)
    except JaxcontamError:
        reason = "no item has a finite change with context in both models"
        return CalibratedCodec(reference, math.nan, math.nan, 0, "", TestOutcome.no_test(reason))
    return CalibratedCodec(reference, test.mean_difference, test.pvalue, test.n, test.detail, TestOutcome.tested())


def codec_result(
    rows: Sequence[dict], reference: str | None = None, seed: int = 0, resamples: int = DEFAULT_RESAMPLES
) -> CodecResult:
    """The contamination score, the sign test and the deltas' summary; with a reference model's name (its deltas in
    the rows), the calibrated test beside them."""
    calibrated = None if reference is None else calibrated_codec(rows, reference, seed, resamples)
    deltas = np.asarray([math.nan if row[SCORE] is None else row[SCORE] for row in rows], np.float64)
    deltas = deltas[np.isfinite(deltas)]
    drops, ties = int(np.count_nonzero(deltas < 0)), int(np.count_nonzero(deltas == 0))
    summary = score_summary(rows, SCORE, higher_means_seen=False)
    trials = deltas.size - ties
    if trials < 1:
        reason = "no item has a finite, non-zero change with context" if deltas.size else "no item has a context"
        score = drops / deltas.size if deltas.size else math.nan
        untested = TestOutcome.no_test(reason)
        return CodecResult(score, int(deltas.size), drops, ties, math.nan, summary, untested, calibrated)
    pvalue = sign_test_pvalue(drops, trials)
    tested = TestOutcome.tested()
    return CodecResult(drops / deltas.size, int(deltas.size), drops, ties, pvalue, summary, tested, calibrated)
