# pyright: standard
"""ConStat as a detector across the audit's models (`detect.constat`): after every model's audit, each audited
model's accuracy on the original questions against the accuracy its rephrased accuracy predicts by the reference
models' relation; a verdict per audited (model, benchmark), outside the sweep's Holm/BH family (docs/methods.md,
"ConStat in an audit"); its console lines and report section."""

from __future__ import annotations

from jaxcontam.detect.constat import (
    READS,
    ConStatEntry,
    ConStatFamilyResult,
    ConStatSettings,
    check_references,
    constat_result,
)
from jaxcontam.detect.family_stage import FamilyStage, FamilyView, RunKey
from jaxcontam.detect.verdict import Verdict, flagged
from jaxcontam.report.formatting import interval, number
from jaxcontam.report.html_parts import badge, facts, head, row, table, text

TEST = "ConStat: original vs rephrased accuracy against the reference models"


def _contaminated(entry: ConStatEntry, alpha: float) -> bool | None:
    return flagged(entry.status, entry.pvalue, alpha)


def headlines(result: ConStatFamilyResult, alpha: float) -> dict[RunKey, Verdict]:
    """Each audited run's verdict: p < alpha, uncorrected (not tested, with the reason, where no test ran)."""
    return {
        entry.key: Verdict(
            detector="constat",
            test=TEST,
            contaminated=_contaminated(entry, alpha),
            pvalue=entry.pvalue,
            reason=entry.status.reason,
        )
        for entry in result.entries
    }


def _word(entry: ConStatEntry, alpha: float) -> str:
    contaminated = _contaminated(entry, alpha)
    return entry.status.label if contaminated is None else ("CONTAMINATED" if contaminated else "not detected")


def console_lines(result: ConStatFamilyResult, alpha: float) -> list[str]:
    """A line naming the reference models, then one per audited run: delta, its interval, p, the accuracies, the
    verdict at `alpha`."""
    references = ", ".join(result.reference_models) or "none"
    lines = [
        f"ConStat ({len(result.reference_models)} reference models: {references}; {result.resamples} bootstrap "
        "replicates; uncorrected across the sweep):"
    ]
    if not result.entries:
        lines.append("  every model of the audit is a reference model: none to test")
    for entry in result.entries:
        label = f"  {entry.model} | {entry.benchmark}:{entry.split}"
        if not entry.status.ran:
            lines.append(f"{label}  {entry.status.label}")
            continue
        lines.append(
            f"{label}  delta={entry.statistic:+.3f} {interval(entry.ci95)} p={number(entry.pvalue)} "
            f"(accuracy {number(entry.accuracy_original)}, predicted {number(entry.predicted)} from rephrased "
            f"{number(entry.accuracy_rephrased)}; {entry.n} items)  {_word(entry, alpha)}"
        )
    return lines


COLUMNS = [
    "model",
    "benchmark",
    "items",
    "accuracy (original)",
    "accuracy (rephrased)",
    "predicted original accuracy",
    "delta",
    "95% CI of delta",
    "p",
    "verdict",
]


def section(result: ConStatFamilyResult, alpha: float) -> str:
    """The reference models, then a row per audited (model, benchmark)."""
    rows = [
        row(
            [
                text(entry.model),
                text(entry.benchmark if entry.split is None else f"{entry.benchmark}:{entry.split}"),
                text(entry.n),
                text(entry.accuracy_original),
                text(entry.accuracy_rephrased),
                text(entry.predicted),
                text(entry.statistic),
                text(interval(entry.ci95)),
                text(entry.pvalue),
                badge(_contaminated(entry, alpha), entry.status.reason),
            ],
            labels=COLUMNS,
        )
        for entry in result.entries
    ]
    intro = (
        "<p>Performance that does not generalise (Dekoninck et al., 2024): each audited model's accuracy on the "
        "original questions against the accuracy the reference models (believed clean) predict from its accuracy "
        "on the rephrased questions, a smoothing spline through theirs and a random guesser's. delta = actual − "
        f"predicted; p of delta ≤ 0 by the authors' bootstrap rule, at α = {text(alpha)}, uncorrected across the "
        "sweep. The reference models themselves are not tested.</p>"
    )
    details = facts(
        [
            ("reference models", text(", ".join(result.reference_models) or "none")),
            ("bootstrap replicates", text(result.resamples)),
        ]
    )
    body = (
        table(head(COLUMNS), rows)
        if rows
        else '<p class="muted">Every model of the audit is a reference model: none to test.</p>'
    )
    return "\n".join([intro, details, '<div class="wide">' + body + "</div>"])


CONSTAT_STAGE = FamilyStage(
    name="constat",
    settings_type=ConStatSettings,
    result_type=ConStatFamilyResult,
    result=constat_result,
    summary_entry=ConStatFamilyResult.to_dict,
    read_entry=ConStatFamilyResult.from_dict,
    reads=READS,
    headlines=headlines,
    check=check_references,
    title="ConStat across the models",
    view=FamilyView(console_lines, section),
)
