# pyright: standard
"""PaCoST's tests: the one-sided paired test of a confidence over the records (pairs dropped with their reasons), the
test calibrated against a reference model's records, and the benchmark's result with every measured confidence:
evidence at no level (the stage's headline applies the audit's, `detectors.pacost`)."""

from __future__ import annotations

import math

import numpy as np

from jaxcontam.detect.pacost.confidences import CONFIDENCES
from jaxcontam.detect.pacost.results import INTERVAL_LEVEL, CalibratedVerdict, PacostResult, PairedVerdict
from jaxcontam.detect.pacost.settings import PacostSettings, needs_answer
from jaxcontam.detect.status import TestOutcome
from jaxcontam.errors import JaxcontamError
from jaxcontam.stats import default_paired_method, minimum_detectable_effect, paired_test
from jaxcontam.stats.paired import DEFAULT_RESAMPLES, PairedTestResult, minimum_pairs

NO_VERDICT = "no yes/no in the judge's reply (confidence 0)"
POWER_LEVEL = 0.05  # the level of the power note's minimum detectable effect (`PairedVerdict.power_note`)


def _answered(records, side: str) -> np.ndarray:
    return np.array([bool(r[f"answer_{side}"]) for r in records])


def calibrated_verdict(
    records,
    reference_records,
    reference: str,
    settings: PacostSettings,
    seed: int = 0,
    resamples: int = DEFAULT_RESAMPLES,
) -> CalibratedVerdict:
    """The calibrated test of the chosen confidence over the items both models answered with a rephrasing (the
    audit's paired test where `stats.calibrated.reference_test` has it, else the sign-flip permutation test)."""
    from jaxcontam.stats.calibrated import REFERENCE_METHODS, reference_test

    confidence = settings.confidence
    assert confidence is not None  # PacostSettings fills it from the preset
    kept = [
        i for i, (a, b) in enumerate(zip(records, reference_records, strict=True)) if a["rephrase"] and b["rephrase"]
    ]
    method = settings.test if settings.test in REFERENCE_METHODS else "permutation"
    values = [
        [float(source[i][f"{confidence}_{side}"]) for i in kept]
        for source in (records, reference_records)
        for side in ("original", "rephrased")
    ]

    def no_test(reason: str, pairs: int) -> CalibratedVerdict:
        return CalibratedVerdict(reference, method, confidence, math.nan, pairs, math.nan, TestOutcome.no_test(reason))

    if len(kept) < 2:
        return no_test(f"only {len(kept)} item(s) have a rephrasing in both models", len(kept))
    try:
        result = reference_test(
            *values, method=method, alternative=settings.alternative, seed=seed, resamples=resamples
        )
    except JaxcontamError as error:  # too few finite pairs: no test
        return no_test(str(error), 0)
    return CalibratedVerdict(
        reference,
        method,
        confidence,
        float(result.pvalue),
        int(result.n),
        float(result.mean_difference),
        statistic=float(result.statistic),
        result=result,
    )


def _no_test(base: dict, reason: str, power_note: str) -> PairedVerdict:
    return PairedVerdict(
        **base,
        status=TestOutcome.no_test(reason),
        statistic=math.nan,
        pvalue=math.nan,
        mean_difference=math.nan,
        effect_size=math.nan,
        ci=(math.nan, math.nan),
        power_note=power_note,
    )


def _silent_judge(usable: int, silent: int, no_rephrase: int, total: int, test_method: str) -> str:
    """Why no test ran when the judge's silence left too few pairs, and the fix."""
    return (
        f"{usable} usable pair(s) of {total}: the judge's reply said neither yes nor no on {silent} of the "
        f"{silent + usable} items with a rephrasing"
        + (f" ({no_rephrase} without one)" if no_rephrase else "")
        + f"; the {test_method!r} test needs {minimum_pairs(test_method)}. Give the judge a longer reply "
        "(pacost.judge_max_new_tokens) or a judge model that answers yes or no"
    )


def _tested(result: PairedTestResult, confidence: str, dropped_before: dict[str, int]) -> PairedVerdict:
    """The verdict of a test that ran: its evidence, the pairs it and the checks before it dropped (reason ->
    count), and its power note."""
    interval = result.confidence_interval(INTERVAL_LEVEL)
    mde = (
        minimum_detectable_effect(result.n, alpha=POWER_LEVEL, alternative=result.alternative)
        if result.n >= 3
        else math.nan
    )
    return PairedVerdict(
        test=result.method,
        confidence=confidence,
        alternative=result.alternative,
        status=TestOutcome.tested(),
        statistic=result.statistic,
        pvalue=result.pvalue,
        n_pairs=result.n,
        n_dropped=result.n_dropped + sum(dropped_before.values()),
        dropped_reasons=dict(result.drop_reasons) | dropped_before,
        mean_difference=result.mean_difference,
        effect_size=result.effect_size,
        ci=(interval.low, interval.high),
        pvalue_detail=result.detail,
        result=result,
        power_note=(
            f"with {result.n} pairs the minimum detectable effect at 80% power and level {POWER_LEVEL:g} is "
            f"d_z = {mde:.2g}"
        ),
    )


def paired_verdict(
    records,
    confidence: str,
    settings: PacostSettings,
    seed: int = 0,
    resamples: int = DEFAULT_RESAMPLES,
) -> PairedVerdict:
    """The paired test of one confidence over `records` (pairs dropped with reasons): its evidence, NaN p-value
    when no test could run (`status` says why).

    A pair is dropped for a missing answer only when the confidence measures the answer (`needs_answer`), and
    for a confidence of 0 where 0 means no verdict (`Confidence.positive`: the authors keep pairs with both > 0).
    `resamples`: Monte Carlo flips when the permutation test cannot enumerate (a sweep sizes it with
    `stats.sweep_resamples`, so the p-value floor 1 / (1 + resamples) never blocks the correction).
    """
    original = [r[f"{confidence}_original"] for r in records]
    rephrased = [r[f"{confidence}_rephrased"] for r in records]
    # no accepted rephrasing: None in the audit's records, NaN where pandas (3+) read them back from items.parquet
    kept = [i for i, r in enumerate(records) if isinstance(r["rephrase"], str)]
    no_rephrase = len(records) - len(kept)
    base = {
        "test": settings.test,
        "confidence": confidence,
        "alternative": settings.alternative,
        "n_pairs": 0,
        "n_dropped": len(records),
        "dropped_reasons": {"no accepted rephrasing": no_rephrase},
    }
    if len(kept) < 2:
        reason = f"only {len(kept)} item(s) have an accepted rephrasing"
        return _no_test(base, reason, f"{reason}: no test")
    # the published judge's confidence is 0 when its reply never says yes or no: such pairs are dropped
    silent = {
        i
        for i in kept
        if CONFIDENCES[confidence].positive and any(math.isfinite(v) and v <= 0 for v in (original[i], rephrased[i]))
    }
    kept = [i for i in kept if i not in silent]
    extra = {"no accepted rephrasing": no_rephrase, NO_VERDICT: len(silent)}
    extra = {reason: count for reason, count in extra.items() if count}
    test_method = default_paired_method() if settings.test is None else settings.test
    if silent and len(kept) < minimum_pairs(test_method):
        reason = _silent_judge(len(kept), len(silent), no_rephrase, len(records), test_method)
        return _no_test(base | {"dropped_reasons": extra}, reason, f"{reason}: no test")
    try:
        with_answers = needs_answer(confidence)
        rows = [records[i] for i in kept]
        result = paired_test(
            [original[i] for i in kept],
            [rephrased[i] for i in kept],
            method=settings.test,
            alternative=settings.alternative,
            seed=seed,
            resamples=resamples,
            answered_original=_answered(rows, "original") if with_answers else None,
            answered_rephrased=_answered(rows, "rephrased") if with_answers else None,
        )
    except JaxcontamError as error:  # too few usable pairs: reported, not fatal for the sweep
        return _no_test(base | {"dropped_reasons": extra}, str(error), str(error))
    return _tested(result, confidence, extra)


def pacost_result(
    records,
    settings: PacostSettings,
    seed: int = 0,
    resamples: int = DEFAULT_RESAMPLES,
) -> PacostResult:
    """The test of the chosen confidence, with every other measured confidence as a variant."""
    # PacostSettings.__post_init__ fills the fields a preset decides
    assert settings.template is not None and settings.confidence is not None
    return PacostResult(
        preset=settings.preset,
        template=settings.template,
        chat_template=settings.chat_template,
        chat_used=any(bool(r.get("chat")) for r in records),
        verdict=paired_verdict(records, settings.confidence, settings, seed, resamples),
        variants={
            c: paired_verdict(records, c, settings, seed, resamples)
            for c in settings.measured()
            if c != settings.confidence
        },
        settings=settings,
    )
