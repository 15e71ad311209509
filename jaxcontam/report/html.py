# pyright: standard
"""report.html: one self-contained page per audit (inline CSS, PNGs as data URIs, no scripts, no links out).

Reads the typed summary (`summary_schema.AuditSummary`) and the per-item rows of `jaxcontam audit`, writes
the plots to out_dir/plots/ and embeds them, so the page can be mailed or
archived on its own. Every piece of text from the inputs is HTML-escaped.
"""

from __future__ import annotations

import base64
import hashlib
import re
from html import escape
from pathlib import Path

from jaxcontam.detect.contam import ContamResult, MetricVerdict
from jaxcontam.detect.exchangeability import ExchangeabilityResult
from jaxcontam.detect.pacost import PacostResult, PairedVerdict
from jaxcontam.detect.status import TestOutcome
from jaxcontam.detect.summaries import Accuracy, DetectorSummary, GroundTruthResult
from jaxcontam.detect.sweep import Sweep
from jaxcontam.report import plots
from jaxcontam.report.formatting import interval, percent, value
from jaxcontam.report.summary_schema import AuditSummary, RunEntry
from jaxcontam.storage import publish

LABELS = {
    "mean_logprob": "mean log-prob",
    "zlib_ratio": "zlib ratio",
    "min_k": "Min-K%",
    "min_k_plus_plus": "Min-K%++",
    "n": "items",
    "pacost_pvalue": "PaCoST p",
    "mean_longest_match": "mean LONGEST_MATCH score",
}

CSS = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #222; background: #f6f7f9;
       margin: 0; }
main { max-width: 1180px; margin: 0 auto; padding: 24px 28px 60px; }
header { border-bottom: 3px solid #2471a3; margin-bottom: 18px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 20px; margin: 34px 0 8px; border-bottom: 1px solid #ccd; padding-bottom: 4px;
     overflow-wrap: anywhere; }
h3 { font-size: 16px; margin: 22px 0 6px; color: #2c3e50; }
section.run { background: #fff; border: 1px solid #dde; border-radius: 6px; padding: 4px 22px 18px;
              margin-top: 26px; }
.muted { color: #777; }
.meta { color: #555; margin: 2px 0 10px; }
table { border-collapse: collapse; margin: 8px 0 14px; font-variant-numeric: tabular-nums; background: #fff; }
th, td { border: 1px solid #dde; padding: 4px 9px; text-align: left; vertical-align: top; }
thead th { background: #eef1f6; font-weight: 600; }
tbody tr:nth-child(even) { background: #fafbfd; }
tr.headline td { font-weight: 600; }
table.facts th { background: #f3f5f9; font-weight: 600; white-space: nowrap; }
td.model { overflow-wrap: anywhere; max-width: 260px; }
.badge { display: inline-block; padding: 0 8px; border-radius: 10px; font-size: 13px; font-weight: 600; }
.badge.bad { background: #f9dcd8; color: #922b21; }
.badge.ok { background: #d8efdf; color: #1e6b3a; }
.badge.none { background: #ececec; color: #444; }
figure { margin: 10px 0; }
figure img { max-width: 100%; border: 1px solid #e3e6ec; background: #fff; }
figcaption { color: #555; font-size: 13px; }
"""


def write_report(summary: AuditSummary, items: list[dict], out_dir) -> Path:
    """Write out_dir/plots/*.png and out_dir/report.html for one audit (its summary as `AuditSummary.from_dict`
    or `read_summary` reads it); returns the path of report.html."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    plots_dir = out_dir / "plots"
    runs, sweep, alpha = summary.runs, summary.sweep, summary.alpha
    stems = _plot_stems(runs)
    figures = [_run_figures(run, _items_of(run, items), plots_dir, stem) for run, stem in zip(runs, stems)]
    sweep_png = (
        plots.sweep_pvalues_png(sweep, alpha, plots_dir / "sweep-pvalues.png") if sweep and sweep.labels else None
    )
    body = [_header(summary), _verdict_section(runs, stems), _models_section(runs, alpha, plots_dir)]
    body.append(_sweep_section(sweep, alpha, sweep_png))
    body += [_run_section(run, stem, figs) for run, stem, figs in zip(runs, stems, figures)]
    path = out_dir / "report.html"
    path.write_text(_page("\n".join(body)), encoding="utf-8")
    publish(path)
    return path


# ---- files -------------------------------------------------------------------------------------------------------


def _slug(text: str, limit: int = 40) -> str:
    return re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-.")[:limit] or "run"


def _plot_stems(runs: tuple[RunEntry, ...]) -> list[str]:
    """A file-name stem per run: readable (model basename, benchmark) and unique (hash of the full names)."""
    stems, seen = [], set()
    for run in runs:
        model, benchmark = str(run.model), str(run.benchmark)
        digest = hashlib.sha1(f"{model}\0{benchmark}\0{run.split}".encode()).hexdigest()[:8]
        stem = f"{_slug(model.rstrip('/').rsplit('/', 1)[-1])}-{_slug(benchmark)}-{digest}"
        unique, copy = stem, 1
        while unique in seen:  # the same model, benchmark and split twice in one summary
            copy += 1
            unique = f"{stem}-{copy}"
        seen.add(unique)
        stems.append(unique)
    return stems


def _items_of(run: RunEntry, items: list[dict]) -> list[dict]:
    """The item rows of one run: same model, benchmark and split (rows without a split match any)."""
    return [
        i
        for i in items
        if i.get("model") == run.model
        and i.get("benchmark") == run.benchmark
        and i.get("split", run.split) == run.split
    ]


def _run_figures(run: RunEntry, items_of_run: list[dict], plots_dir: Path, stem: str) -> dict[str, Path]:
    """The PNGs of one run, by kind; a kind is absent when its detector did not run."""
    figures = {}
    if run.pacost is not None:
        figures["confidence"] = plots.confidence_png(run, items_of_run, plots_dir / f"{stem}-confidence.png")
    if run.contam is not None:
        figures["contam"] = plots.contam_curve_png(run, plots_dir / f"{stem}-contam.png")
    return figures


# ---- HTML building blocks (every input string passes through `_text` or `escape`) -----------------------------------


def _text(x) -> str:
    """Any summary value as escaped text (numbers to 3 significant digits, None/NaN as n/a, inf as ∞)."""
    return escape(value(x))


def _label(key: str) -> str:
    return escape(LABELS.get(key, key.replace("_", " ")))


def _page(body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>jaxcontam audit report</title>\n<style>{CSS}</style>\n</head>\n"
        f"<body>\n<main>\n{body}\n</main>\n</body>\n</html>\n"
    )


def _table(head: str, rows: list[str], css_class: str = "") -> str:
    """A table from a ready <thead> and ready <tr> rows."""
    attribute = f' class="{css_class}"' if css_class else ""
    return f"<table{attribute}>\n{head}\n<tbody>\n" + "\n".join(rows) + "\n</tbody>\n</table>"


def _head(labels: list[str]) -> str:
    """A one-row <thead> from plain-text labels."""
    return "<thead><tr>" + "".join(f"<th>{escape(label)}</th>" for label in labels) + "</tr></thead>"


def _row(cells: list[str], css_class: str = "") -> str:
    """A <tr> of ready HTML cells."""
    attribute = f' class="{css_class}"' if css_class else ""
    return f"<tr{attribute}>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>"


def _facts(pairs: list[tuple[str, str]]) -> str:
    """A two-column table of (plain-text label, ready HTML value)."""
    rows = "\n".join(f"<tr><th>{escape(label)}</th><td>{cell}</td></tr>" for label, cell in pairs)
    return f'<table class="facts">\n<tbody>\n{rows}\n</tbody>\n</table>'


def _test_verdict(outcome: TestOutcome, detected: bool) -> str:
    """A test's verdict badge, or "no test: <reason>" when no test ran (never "not detected")."""
    if not outcome.ran:
        return f'<span class="badge none">{escape(outcome.label)}</span>'
    if detected:
        return '<span class="badge bad">contaminated</span>'
    return '<span class="badge ok">not detected</span>'


def _figure(path: Path, caption: str) -> str:
    """The PNG at `path` embedded as a data URI, with a plain-text caption."""
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return (
        f'<figure><img src="data:image/png;base64,{data}" alt="{escape(caption)}">'
        f"<figcaption>{escape(caption)}</figcaption></figure>"
    )


def _not_run(what: str) -> str:
    return f'<p class="muted">{escape(what)} did not run for this model and benchmark.</p>'


# ---- sections ----------------------------------------------------------------------------------------------------


def _header(summary: AuditSummary) -> str:
    return (
        f"<header><h1>Benchmark contamination audit</h1>"
        f'<p class="meta">jaxcontam {_text(summary.jaxcontam_version)} · '
        f"significance level α = {_text(summary.alpha)} · {len(summary.runs)} model–benchmark runs</p></header>"
    )


VERDICT_HEAD = (
    '<thead><tr><th rowspan="2">Model</th><th rowspan="2">Benchmark</th><th rowspan="2">Items</th>'
    '<th rowspan="2">Accuracy</th><th colspan="4">PaCoST (model evidence)</th>'
    '<th colspan="7">ConTAM (corpus evidence)</th></tr>\n'
    "<tr><th>p</th><th>adjusted p</th><th>effect d<sub>z</sub></th><th>verdict</th>"
    "<th>metric</th><th>threshold</th><th>contaminated items</th><th>EPG [CI]</th><th>z</th><th>p</th>"
    "<th>verdict</th></tr></thead>"
)


def _verdict_section(runs: tuple[RunEntry, ...], stems: list[str]) -> str:
    rows = [_verdict_row(run, stem) for run, stem in zip(runs, stems)]
    return (
        "<h2>Verdicts</h2>\n<p>PaCoST tests, one-sided, whether the model is more confident on the original "
        "items than on their rephrasings (p adjusted across the sweep). ConTAM's EPG is the accuracy on the "
        "full benchmark minus the accuracy on the items below the contamination threshold, at the threshold "
        "with the largest z above 1.645 (the paper's rule). That z is the best of many thresholds, not a test: "
        "ConTAM's p compares the largest z with its permutation distribution (correctness shuffled over "
        "items, the threshold search redone each time), and its verdict is p ≤ α. The EPG interval holds the "
        "selected threshold fixed, so it is conditional on that choice.</p>\n" + _table(VERDICT_HEAD, rows, "verdict")
    )


def _verdict_row(run: RunEntry, stem: str) -> str:
    model = f'<td class="model"><a href="#run-{stem}">{_text(run.model)}</a></td>'
    cells = [_text(run.benchmark), _text(run.n_items), _accuracy(run.accuracy)]
    cells += _pacost_cells(run.pacost) + _contam_cells(run.contam)
    return "<tr>" + model + "".join(_cell(c) for c in cells) + "</tr>"


def _cell(cell: str | tuple[str, int]) -> str:
    """A <td>, or a <td colspan> for a (html, span) pair."""
    if isinstance(cell, tuple):
        return f'<td colspan="{cell[1]}" class="muted">{cell[0]}</td>'
    return f"<td>{cell}</td>"


def _accuracy(accuracy: Accuracy | None) -> str:
    if accuracy is None:
        return _text(None)
    text = _text(accuracy.acc)
    if accuracy.acc_norm is not None:
        text += f' <span class="muted">(norm {_text(accuracy.acc_norm)})</span>'
    return text


def _pacost_verdict(pacost: PacostResult) -> str:
    """PaCoST's final verdict (the sweep's decision where one was made) as a badge."""
    return _test_verdict(pacost.verdict.status, pacost.contaminated)


def _gain_verdict(metric: MetricVerdict) -> str:
    """A ConTAM metric's max-z test as a badge."""
    return _test_verdict(metric.status, metric.significant)


def _pacost_cells(pacost: PacostResult | None) -> list:
    if pacost is None:
        return [("not run", 4)]
    return [
        _text(pacost.verdict.pvalue),
        _text(pacost.pvalue_adjusted),
        _text(pacost.verdict.effect_size),
        _pacost_verdict(pacost),
    ]


def _contam_cells(contam: ContamResult | None) -> list:
    if contam is None:
        return [("not run", 7)]
    headline = contam.headline
    threshold = _threshold(headline)
    if headline.threshold is None:
        threshold = f'<span class="muted" title="{_text(headline.reason)}">{threshold}</span>'
    return [
        _text(contam.metric.upper()),
        threshold,
        escape(percent(headline.frac_contaminated)),
        _epg_with_ci(headline),
        _text(headline.z),
        _text(headline.pvalue),
        _gain_verdict(headline),
    ]


def _threshold(metric: MetricVerdict) -> str:
    """The selected threshold, or "none" when no threshold was significant."""
    return "none" if metric.threshold is None else _text(metric.threshold)


def _epg_with_ci(metric: MetricVerdict) -> str:
    if metric.epg is None:
        return _text(None)
    return f"{_text(metric.epg)} {escape(interval(metric.epg_ci))}"


def _models_section(runs, alpha, plots_dir: Path) -> str:
    """With several models (a family at several sizes, say): the model x benchmark table and heatmaps."""
    models, benchmarks, grids = plots.sweep_grid(runs)
    if len(models) < 2:
        return ""
    png = plots.sweep_heatmap_png(runs, alpha, plots_dir / "sweep-heatmap.png")
    header = "".join(f"<th>{escape(b)}</th>" for b in benchmarks)
    rows = []
    for r, model in enumerate(models):
        cells = []
        for c in range(len(benchmarks)):
            p, epg, acc = (grids[key][r][c] for key in ("pacost_p", "epg", "accuracy"))
            cells.append(f"<td>p {value(p)}<br>EPG {value(epg)}<br>acc {value(acc)}</td>")
        rows.append(f'<tr><td class="model">{escape(model)}</td>{"".join(cells)}</tr>')
    return (
        f"<h2>Models x benchmarks</h2>\n<p>PaCoST's p-value adjusted across the sweep, ConTAM's EPG on the headline "
        f"metric, and accuracy, for each of the {len(models)} models on each benchmark.</p>\n"
        f"<table><thead><tr><th>model</th>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table>\n"
        f"{_figure(png, 'PaCoST p, EPG and accuracy per model and benchmark')}"
    )


def _sweep_section(sweep: Sweep | None, alpha, png: Path | None) -> str:
    if png is None or sweep is None:  # the plot is drawn exactly when there is a sweep
        return ""
    head = _head(["model | benchmark", "p", "Holm-adjusted p", "Holm rejects", "BH-adjusted p", "BH rejects"])
    columns = zip(
        sweep.labels, sweep.pvalues, sweep.holm.adjusted, sweep.holm.reject, sweep.bh.adjusted, sweep.bh.reject
    )
    rows = [_row([_text(x) for x in column]) for column in columns]
    return (
        f"<h2>Multiple testing across the sweep</h2>\n<p>Holm controls the chance of any false contamination call "
        f"(family-wise error) at α = {_text(alpha)}; Benjamini–Hochberg controls the expected share of false "
        f"calls (false discovery rate).</p>\n"
        + _figure(png, "PaCoST p-values per model and benchmark, raw and adjusted")
        + "\n"
        + _table(head, rows)
    )


def _run_section(run: RunEntry, stem: str, figures: dict[str, Path]) -> str:
    parts = [
        f'<section class="run" id="run-{stem}">',
        _run_heading(run),
        "<h3>PaCoST</h3>",
        _pacost_details(run.pacost, figures.get("confidence")),
        "<h3>Likelihood detectors</h3>",
        _likelihood_table(run.likelihood),
        "<h3>ConTAM</h3>",
        _contam_details(run.contam, figures.get("contam")),
    ]
    if run.exchangeability is not None:
        parts += ["<h3>Exchangeability (Oren et al.)</h3>", _exchangeability_details(run.exchangeability)]
    if run.ground_truth is not None:
        parts += ["<h3>Against the ground truth</h3>", _ground_truth_table(run.ground_truth)]
    return "\n".join(parts) + "\n</section>"


def _run_heading(run: RunEntry) -> str:
    split = f" ({_text(run.split)})" if run.split else ""
    title = f'{_text(run.model)} <span class="muted">· {_text(run.benchmark)}{split}</span>'
    accuracy = _accuracy(run.accuracy)
    return f'<h2>{title}</h2>\n<p class="meta">{_text(run.n_items)} items · accuracy {accuracy}</p>'


def _pacost_details(pacost: PacostResult | None, png: Path | None) -> str:
    if pacost is None:
        return _not_run("PaCoST")
    verdict = pacost.verdict
    reasons = verdict.dropped_reasons
    dropped = _text(verdict.n_dropped)
    if reasons:
        dropped += " (" + ", ".join(f"{_text(n)} {_text(reason)}" for reason, n in reasons.items()) + ")"
    facts = _facts(
        [
            ("test", f"{_text(verdict.test)}, alternative {_text(verdict.alternative)}"),
            ("confidence measure", _text(verdict.confidence)),
            ("pairs tested", _text(verdict.n_pairs)),
            ("pairs dropped", dropped),
            ("mean difference (original − rephrased)", _text(verdict.mean_difference)),
            ("effect size (Cohen's dz)", _text(verdict.effect_size)),
            ("confidence interval of the mean difference", escape(interval(verdict.ci))),
            ("p / adjusted p", f"{_text(verdict.pvalue)} / {_text(pacost.pvalue_adjusted)}"),
            ("verdict", _pacost_verdict(pacost)),
            ("power", _text(verdict.power_note)),
        ]
    )
    parts = [facts, _variants_table(pacost)]
    if png is not None:
        parts.append(_figure(png, "Confidence on the original against the rephrased question, one point per kept pair"))
    return "\n".join(part for part in parts if part)


def _variants_table(pacost: PacostResult) -> str:
    """The headline confidence measure beside the others PaCoST also tested (empty when there are none)."""
    if not pacost.variants:
        return ""
    head = _head(
        ["confidence measure", "p", "adjusted p", "mean difference", "effect size dz", "CI", "pairs", "verdict"]
    )
    headline = _measure_row(
        f"{pacost.verdict.confidence} (headline)", pacost.verdict, pacost.pvalue_adjusted, _pacost_verdict(pacost)
    )
    variants = [
        _measure_row(name, variant, None, _test_verdict(variant.status, variant.contaminated))
        for name, variant in pacost.variants.items()
    ]
    rows = [_row(headline, "headline")] + [_row(variant) for variant in variants]
    return "<p>Other confidence measures:</p>\n" + _table(head, rows)


def _measure_row(name: str, verdict: PairedVerdict, adjusted: float | None, badge: str) -> list[str]:
    """One confidence measure's cells (`adjusted`: the sweep's adjusted p, for the headline measure only)."""
    return [
        _text(name),
        _text(verdict.pvalue),
        _text(adjusted),
        _text(verdict.mean_difference),
        _text(verdict.effect_size),
        escape(interval(verdict.ci)),
        _text(verdict.n_pairs),
        badge,
    ]


def _exchangeability_details(result: ExchangeabilityResult) -> str:
    outcome = result.status
    if not outcome.ran:
        return f"<p>{_text(outcome.label)}</p>"
    return (
        "<p>Is the benchmark's canonical item order more likely than shuffled orders (a model that saw the file "
        "prefers it)? One-sided t-test over chunks of contiguous items.</p>\n"
        + _facts(
            [
                ("chunks x permutations", f"{_text(result.chunks)} x {_text(result.permutations)}"),
                ("t statistic", _text(result.statistic)),
                ("p", _text(result.pvalue)),
            ]
        )
    )


def _likelihood_table(likelihood: dict[str, DetectorSummary] | None) -> str:
    if not likelihood:
        return _not_run("The likelihood detectors")
    columns = {name: summary.to_dict() for name, summary in likelihood.items()}  # the statistics each one has
    statistics = list(dict.fromkeys(key for summary in columns.values() for key in summary))
    head = "<thead><tr><th>detector</th>" + "".join(f"<th>{_label(s)}</th>" for s in statistics) + "</tr></thead>"
    rows = [_row([_label(name)] + [_text(summary.get(s)) for s in statistics]) for name, summary in columns.items()]
    return (
        "<p>Per-item scores summarised over the benchmark. Higher means more likely seen in training, except for "
        "the ratios (zlib, lowercase, reference), where lower does.</p>\n" + _table(head, rows)
    )


def _contam_details(contam: ContamResult | None, png: Path | None) -> str:
    if contam is None:
        return _not_run("ConTAM")
    headline = contam.metric
    head = _head(
        [
            "metric",
            "threshold",
            "contaminated items",
            "EPG",
            "EPG CI (given the threshold)",
            "z",
            "how the threshold was chosen",
            "largest z (at threshold)",
            "p",
            "verdict",
        ]
    )
    rows = [
        _row(
            [
                _text(name.upper()),
                _threshold(m),
                escape(percent(m.frac_contaminated)),
                _text(m.epg),
                escape(interval(m.epg_ci)),
                _text(m.z),
                _text(m.reason),
                f"{_text(m.max_z)} ({_text(m.max_z_threshold)})",
                _text(m.pvalue),
                _gain_verdict(m),
            ],
            "headline" if name == headline else "",
        )
        for name, m in contam.metrics.items()
    ]
    test = (
        f"Max-z permutation test ({_text(contam.headline.n_resamples)} permutations, "
        f"α = {_text(contam.alpha)}): p = {_text(contam.headline.pvalue)}, "
        f"{_gain_verdict(contam.headline)}. "
        "p is for the headline metric's search over thresholds; the other metrics are shown for comparison. "
        "The EPG interval is a bootstrap with the threshold held at the selected value: conditional on that "
        "choice, it does not account for the search."
    )
    parts = [
        f"<p>Headline metric <strong>{_text(headline.upper())}</strong>: {_text(contam.headline.reason)}</p>",
        f"<p>{test}</p>",
        _table(head, rows),
    ]
    if png is not None:
        parts.append(
            _figure(
                png,
                "EPG against the contamination threshold per metric, with its bootstrap interval "
                "and z; the vertical line marks the selected threshold",
            )
        )
    return "\n".join(parts)


def _ground_truth_table(ground_truth: GroundTruthResult) -> str:
    groups = {name: group.to_dict() for name, group in ground_truth.groups.items()}  # the columns each group has
    columns = list(dict.fromkeys(key for group in groups.values() for key in group))
    head = "<thead><tr><th>group</th>" + "".join(f"<th>{_label(c)}</th>" for c in columns) + "</tr></thead>"
    rows = [_row([_text(name)] + [_text(group.get(c)) for c in columns]) for name, group in groups.items()]
    return "<p>Items whose contamination is known (planted or documented), split by it.</p>\n" + _table(head, rows)
