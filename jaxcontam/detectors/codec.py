# pyright: standard
"""CoDeC as a detector of the audit (`detect.codec`): per item, the change in mean log-prob when other items of the
benchmark precede it in context; the authors' contamination score (the fraction of items that lose confidence) and
a one-sided sign test of it against one half. Opt-in (`[codec]`, key `shots`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from jaxcontam.detect.codec import COLUMNS, NULL_NOTE, CodecResult, CodecSettings, codec_records, codec_result
from jaxcontam.detect.stage import DetectorStage, DetectorView, PerItemWork, StageInput, fingerprint
from jaxcontam.detect.verdict import Verdict, flagged
from jaxcontam.report.formatting import number, percent
from jaxcontam.report.html_parts import facts, text


def _records(stage_input: StageInput, settings: CodecSettings, items) -> list[dict]:
    benchmark, reference = stage_input.target.benchmark, stage_input.reference
    return codec_records(stage_input.model, benchmark, items, settings, stage_input.seed, reference)


def _resume_key(stage_input: StageInput, settings: CodecSettings) -> dict:
    """The shots, the seed that draws each item's context, the items it draws from (a longer `limit` draws from
    more) and the reference model (None without one)."""
    reference = stage_input.reference
    return {
        "shots": settings.shots,
        "seed": stage_input.seed,
        "pool": fingerprint({"items": [item.id for item in stage_input.target.benchmark]}),
        "reference": None if reference is None else reference.name,
    }


def _result(stage_input: StageInput, settings: CodecSettings, rows: list[dict]) -> CodecResult | None:
    if not rows:
        return None
    reference = stage_input.reference
    name = None if reference is None else reference.name
    return codec_result(rows, name, stage_input.seed, stage_input.resamples)


def _headline(result: CodecResult, alpha: float) -> Verdict:
    """With a reference model the calibrated test, else the sign test with the note on its null; p < alpha,
    uncorrected (outside the sweep's PaCoST family)."""
    calibrated = result.calibrated
    if calibrated is not None:
        return Verdict(
            detector="codec",
            test=f"CoDeC calibrated against {calibrated.reference}: change with context, sign-flip test",
            contaminated=flagged(calibrated.status, calibrated.pvalue, alpha),
            pvalue=calibrated.pvalue,
            reason=calibrated.status.reason,
        )
    return Verdict(
        detector="codec",
        test="CoDeC: items losing confidence with in-context items, one-sided sign test against 1/2",
        contaminated=flagged(result.status, result.pvalue, alpha),
        pvalue=result.pvalue,
        reason=result.status.reason,
        note=NULL_NOTE,
    )


def _console(result: CodecResult) -> str:
    if not result.status.ran:
        line = f"CoDeC {result.status.label}"
    else:
        line = f"CoDeC score={percent(result.score)} ({result.n_drops}/{result.n}) p={number(result.pvalue)}"
    calibrated = result.calibrated
    if calibrated is not None:
        shown = f"p={number(calibrated.pvalue)}" if calibrated.status.ran else calibrated.status.label
        line += f", calibrated {shown}"
    return line


def _section(result: CodecResult, figures: Mapping[str, Path]) -> str:
    summary = result.summary
    rows = [
        (
            "contamination score (items losing confidence)",
            f"{percent(result.score)} ({text(result.n_drops)} of {text(result.n)}; {text(result.n_ties)} unchanged)",
        ),
        (
            "sign test p (one-sided, against 1/2)",
            text(result.pvalue) if result.status.ran else text(result.status.label),
        ),
        ("mean / median change in mean log-prob", f"{text(summary.mean)} / {text(summary.median)}"),
    ]
    if summary.auc is not None:
        rows.append(("AUC, known contaminated vs clean (lower change = seen)", text(summary.auc)))
    calibrated = result.calibrated
    if calibrated is not None:
        rows += [
            ("reference model", text(calibrated.reference)),
            ("mean of (reference's change - audited change)", text(calibrated.difference)),
            (
                "calibrated p (one-sided sign-flip, the headline)",
                text(calibrated.pvalue) if calibrated.status.ran else text(calibrated.status.label),
            ),
        ]
    return (
        "<p>Per item, the mean log-prob of its solved text after other items of the benchmark in context minus its "
        "mean log-prob alone. Unseen items gain from in-context items of their kind; memorised ones gain less or "
        f"lose. {text(NULL_NOTE)}.</p>\n" + facts(rows)
    )


CODEC_STAGE = DetectorStage(
    name="codec",
    settings_type=CodecSettings,
    result_type=CodecResult,
    per_item=PerItemWork(_records, _resume_key, lambda settings: COLUMNS, clock="score"),
    result=_result,
    summary_entry=CodecResult.to_dict,
    read_entry=CodecResult.from_dict,
    title="CoDeC (in-context confidence change)",
    headline=_headline,
    view=DetectorView(_console, _section),
)
