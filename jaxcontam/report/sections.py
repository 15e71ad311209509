# pyright: standard
"""The built-in detectors' report sections (HTML), each shown by its detector (`jaxcontam/detectors/`): PaCoST
(headline test, the authors' test beside a calibrated one, the other confidences as exploratory measures), the
likelihood detectors, ConTAM and the exchangeability test."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from pathlib import Path

from jaxcontam.detect.benchmark_results import DetectorSummary
from jaxcontam.detect.contam import ContamResult, MetricVerdict
from jaxcontam.detect.exchangeability import ExchangeabilityResult
from jaxcontam.detect.pacost.results import INTERVAL_LEVEL, UNCALIBRATED_NOTE, PacostResult, PairedVerdict
from jaxcontam.report.formatting import interval, percent
from jaxcontam.report.html_parts import (
    facts,
    figure,
    head,
    label,
    label_text,
    row,
    table,
    text,
)


def pacost_section(pacost: PacostResult, figures: Mapping[str, Path]) -> str:
    verdict = pacost.verdict
    reasons = verdict.dropped_reasons
    dropped = text(verdict.n_dropped)
    if reasons:
        dropped += " (" + ", ".join(f"{text(n)} {text(reason)}" for reason, n in reasons.items()) + ")"
    headline = [
        ("headline test", text(pacost.headline_test)),
        ("p", text(pacost.headline_pvalue) if pacost.headline_status.ran else escape(pacost.headline_status.label)),
        ("correction", text(pacost.correction)),
    ]
    calibrated = pacost.calibrated
    if calibrated is not None:
        headline += [
            ("calibrated pairs", text(calibrated.n_pairs)),
            ("mean gap difference (audited − reference)", text(calibrated.mean_difference)),
        ]
    parts = [facts(headline)]
    if calibrated is None:
        parts.append(f'<p class="note">{escape(UNCALIBRATED_NOTE)}.</p>')
    else:
        parts.append(
            "<p>The authors' test (original against rephrased in this model alone) is shown below for comparison; "
            "it is not the verdict: a clean model can prefer the original wording.</p>"
        )
    authors = "authors' test" + (" (the headline)" if calibrated is None else " (for comparison)")
    parts.append(f"<h4>{escape(authors)}</h4>")
    parts.append(
        facts(
            [
                ("test", f"{text(verdict.test)}, alternative {text(verdict.alternative)}"),
                ("confidence measure", text(verdict.confidence)),
                ("pairs tested", text(verdict.n_pairs)),
                ("pairs dropped", dropped),
                ("mean difference (original − rephrased)", text(verdict.mean_difference)),
                ("effect size (Cohen's dz)", text(verdict.effect_size)),
                (f"{INTERVAL_LEVEL:.0%} confidence interval of the mean difference", escape(interval(verdict.ci))),
                ("p", text(verdict.pvalue) if verdict.status.ran else escape(verdict.status.label)),
                ("power", text(verdict.power_note)),
            ]
        )
    )
    parts.append(_exploratory_table(pacost))
    png = figures.get("confidence")
    if png is not None:
        parts.append(figure(png, "Confidence on the original against the rephrased question, one point per kept pair"))
    return "\n".join(part for part in parts if part)


def _exploratory_table(pacost: PacostResult) -> str:
    """The other confidence measures PaCoST also tested: p and effect size only, no verdict (they are not
    corrected for being several tests of the same items)."""
    if not pacost.variants:
        return ""
    columns = ["confidence measure", "p (uncorrected)", "mean difference", "effect size dz", "CI", "pairs"]
    rows = [row(_measure_cells(name, variant), labels=columns) for name, variant in pacost.variants.items()]
    return (
        "<p>Other confidence measures, <strong>exploratory</strong>: p-values uncorrected for testing several "
        "measures of the same items, so none is a verdict.</p>\n" + table(head(columns), rows)
    )


def _measure_cells(name: str, verdict: PairedVerdict) -> list[str]:
    p = text(verdict.pvalue) if verdict.status.ran else escape(verdict.status.label)
    return [
        text(name),
        p,
        text(verdict.mean_difference),
        text(verdict.effect_size),
        escape(interval(verdict.ci)),
        text(verdict.n_pairs),
    ]


def likelihood_section(likelihood: dict[str, DetectorSummary], figures: Mapping[str, Path]) -> str:
    columns = {name: summary.to_dict() for name, summary in likelihood.items()}  # the statistics each one has
    statistics = list(dict.fromkeys(key for summary in columns.values() for key in summary))
    heading = "<thead><tr><th>detector</th>" + "".join(f"<th>{label(s)}</th>" for s in statistics) + "</tr></thead>"
    labels = ["detector"] + [label_text(s) for s in statistics]
    rows = [
        row([label(name)] + [text(summary.get(s)) for s in statistics], labels=labels)
        for name, summary in columns.items()
    ]
    return (
        "<p>Per-item scores summarised over the benchmark, with no test and so no verdict. Higher means more likely "
        "seen in training, except for the ratios (zlib, lowercase, reference), where lower does.</p>\n"
        + table(heading, rows)
    )


def exchangeability_section(result: ExchangeabilityResult, figures: Mapping[str, Path]) -> str:
    outcome = result.status
    if not outcome.ran:
        return f"<p>{text(outcome.label)}</p>"
    return (
        "<p>Is the benchmark's canonical item order more likely than shuffled orders (a model that saw the file "
        "prefers it)? One-sided t-test over chunks of contiguous items.</p>\n"
        + facts(
            [
                ("chunks x permutations", f"{text(result.chunks)} x {text(result.permutations)}"),
                ("t statistic", text(result.statistic)),
                ("p", text(result.pvalue)),
            ]
        )
    )


def threshold(metric: MetricVerdict) -> str:
    """The selected threshold, or "none" when no threshold was significant."""
    return "none" if metric.threshold is None else text(metric.threshold)


def epg_with_ci(metric: MetricVerdict) -> str:
    if metric.epg is None:
        return text(None)
    return f"{text(metric.epg)} {escape(interval(metric.epg_ci))}"


def contam_section(contam: ContamResult, figures: Mapping[str, Path]) -> str:
    headline = contam.metric
    columns = [
        "metric",
        "threshold",
        "contaminated items",
        "EPG",
        "EPG CI (given the threshold)",
        "z",
        "how the threshold was chosen",
        "largest z (at threshold)",
        "p",
        "role",
    ]
    rows = [
        row(
            [
                text(name.upper()),
                threshold(m),
                escape(percent(m.frac_contaminated)),
                text(m.epg),
                escape(interval(m.epg_ci)),
                text(m.z),
                text(m.reason),
                f"{text(m.max_z)} ({text(m.max_z_threshold)})",
                text(m.pvalue),
                "headline test" if name == headline else '<span class="muted">exploratory</span>',
            ],
            "headline" if name == headline else "",
            labels=columns,
        )
        for name, m in contam.metrics.items()
    ]
    test = (
        f"Max-z permutation test ({text(contam.headline.n_resamples)} permutations): p = "
        f"{text(contam.headline.pvalue) if contam.headline.status.ran else escape(contam.headline.status.label)} "
        "(its verdict at the audit's α is in the verdicts table). "
        "p is for the headline metric's search over thresholds; the other metrics are exploratory, shown for "
        "comparison without a verdict. The EPG interval is a bootstrap with the threshold held at the selected "
        "value: conditional on that choice, it does not account for the search."
    )
    parts = [
        f"<p>Headline metric <strong>{text(headline.upper())}</strong>: {text(contam.headline.reason)}</p>",
        f"<p>{test}</p>",
        '<div class="wide">' + table(head(columns), rows) + "</div>",
    ]
    png = figures.get("contam")
    if png is not None:
        parts.append(
            figure(
                png,
                "EPG against the contamination threshold per metric, with its bootstrap interval "
                "and z; the vertical line marks the selected threshold",
            )
        )
    return "\n".join(parts)
