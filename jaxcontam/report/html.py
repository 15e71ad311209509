# pyright: standard
"""report.html: one self-contained page per audit (inline CSS, PNGs as data URIs, no scripts, no links out).

Reads the typed summary (`summary_schema.AuditSummary`) and the per-item rows of `jaxcontam audit`, writes
the plots to out_dir/plots/ and embeds them, so the page can be mailed or archived on its own. The verdict table
shows each registered detector's headline verdict (contaminated, not detected, or no test with its reason), then the
evidence the audit's inputs allow with the strongest measured (`report.evidence`); each detector across the models
(`detect.registry.FAMILY_DETECTORS`) has its own section, and each run's section is its detectors' own sections, in
registry order (`detect.registry`): the page names no detector. The ground-truth comparison shows every signal's AUC
with the blind baseline's beside them.
Every piece of text from the inputs is HTML-escaped.
"""

from __future__ import annotations

import hashlib
import re
from html import escape
from pathlib import Path

from jaxcontam.detect.benchmark_results import Accuracy, GroundTruthResult
from jaxcontam.detect.registry import DETECTORS, FAMILY_DETECTORS
from jaxcontam.detect.sweep import Sweep
from jaxcontam.detect.verdict import Verdict
from jaxcontam.report import plots
from jaxcontam.report.evidence import html_section
from jaxcontam.report.formatting import blind_baseline_phrase, value
from jaxcontam.report.html_parts import figure, head, label, label_text, row, table, text, verdict_badge
from jaxcontam.report.summary_schema import AuditSummary, RunEntry
from jaxcontam.storage import publish

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
.note { color: #555; font-size: 14px; border-left: 3px solid #d4ac0d; padding-left: 10px; }
table { border-collapse: collapse; margin: 8px 0 14px; font-variant-numeric: tabular-nums; background: #fff; }
th, td { border: 1px solid #dde; padding: 4px 9px; text-align: left; vertical-align: top; }
thead th { background: #eef1f6; font-weight: 600; }
tbody tr:nth-child(even) { background: #fafbfd; }
tr.headline td { font-weight: 600; }
table.facts th { background: #f3f5f9; font-weight: 600; }
table.verdict { width: 100%; }
td.model { overflow-wrap: anywhere; min-width: 12em; max-width: 18em; }
.wide { max-width: 100%; overflow-x: auto; }
.badge { display: inline-block; padding: 0 8px; border-radius: 10px; font-size: 13px; font-weight: 600; }
.badge.bad { background: #f9dcd8; color: #922b21; }
.badge.ok { background: #d8efdf; color: #1e6b3a; }
.badge.none { background: #ececec; color: #444; }
figure { margin: 10px 0; }
figure img { max-width: 100%; border: 1px solid #e3e6ec; background: #fff; }
figcaption { color: #555; font-size: 13px; }
@media (max-width: 1150px) {  /* narrower windows: tighter margins and tables */
  main { padding: 16px 14px 40px; }
  section.run { padding: 4px 12px 14px; }
  table { font-size: 14px; }
  th, td { padding: 3px 6px; }
  td.model { min-width: 8em; }
}
@media (max-width: 1000px) {
  td:first-child { overflow-wrap: anywhere; }
  /* a table whose cells carry data-label: one block per row, each cell on its own line after its label */
  table:has(td[data-label]), table:has(td[data-label]) > tbody, table:has(td[data-label]) > tbody > tr,
  table:has(td[data-label]) > tbody > tr > td { display: block; width: auto; }
  table:has(td[data-label]) { border: 0; background: none; }
  table:has(td[data-label]) > thead { display: none; }
  table:has(td[data-label]) > tbody > tr { border: 1px solid #dde; margin-top: 10px; background: #fff; }
  table:has(td[data-label]) > tbody > tr > td { border: 0; border-top: 1px solid #eef1f6; max-width: none;
                                                min-width: 0; display: flow-root; padding-left: calc(9.5em + 6px); }
  table:has(td[data-label]) > tbody > tr > td:first-child { border-top: 0; }
  table:has(td[data-label]) > tbody > tr > td:not([data-label]) { padding-left: 6px; }
  td[data-label]::before { content: attr(data-label); float: left; width: 9em; margin-left: -9.5em;
                           font-weight: 600; color: #555; overflow-wrap: normal; }
  /* a verdict row without the run's rowspan cells is another verdict on the run above: it joins that block */
  table.verdict > tbody > tr:not(:has(> td[rowspan])) { margin-top: 0; border-top: 1px dashed #ccd; }
}
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
    body = [_header(summary), _verdict_section(runs, stems, alpha)]
    if summary.evidence is not None:
        body.append(html_section(summary.evidence))
    body.append(_models_section(runs, alpha, plots_dir))
    body.append(_sweep_section(sweep, alpha, sweep_png))
    body += _family_sections(summary)
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
    """The PNGs of one run, by kind, drawn by the detectors that ran and have figures."""
    figures = {}
    for name, stage in DETECTORS.items():
        draw = stage.view.figures
        if name in run.results and draw is not None:
            figures |= draw(run, items_of_run, plots_dir, stem)
    return figures


# ---- the page ----------------------------------------------------------------------------------------------------


def _page(body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>jaxcontam audit report</title>\n<style>{CSS}</style>\n</head>\n"
        f"<body>\n<main>\n{body}\n</main>\n</body>\n</html>\n"
    )


def _header(summary: AuditSummary) -> str:
    return (
        f"<header><h1>Benchmark contamination audit</h1>"
        f'<p class="meta">jaxcontam {text(summary.jaxcontam_version)} · '
        f"significance level α = {text(summary.alpha)} for every verdict · {len(summary.runs)} model–benchmark "
        "runs</p></header>"
    )


MODEL_CLASS = ' class="model"'
RUN_COLUMNS = ("Model", "Benchmark", "Items", "Accuracy")  # one cell per run, spanning its verdicts' rows
VERDICT_COLUMNS = RUN_COLUMNS + ("Headline test", "p", "Adjusted p", "Verdict")


def _verdict_section(runs: tuple[RunEntry, ...], stems: list[str], alpha: float) -> str:
    rows = [line for run, stem in zip(runs, stems) for line in _verdict_rows(run, stem)]
    notes = list(dict.fromkeys(v.note for run in runs for v in run.verdicts if v.note))
    return (
        "<h2>Verdicts</h2>\n<p>Each detector's headline test on each model and benchmark, at α = "
        f"{text(alpha)}: <em>contaminated</em>, <em>not detected</em>, or <em>no test</em> with the reason it "
        "could not run (no verdict either way). PaCoST's p is adjusted across the sweep (its correction named "
        "beside it); with a reference model its headline is the calibrated test. ConTAM's p compares the largest "
        "z over thresholds with its permutation distribution, so the search is in the p-value. A detector across "
        "the models (ConStat) adds its verdict on each model it tests, uncorrected.</p>\n"
        + "".join(f'<p class="note">{escape(note)}.</p>\n' for note in notes)
        + table(head(list(VERDICT_COLUMNS)), rows, "verdict")
    )


def _verdict_rows(run: RunEntry, stem: str) -> list[str]:
    """One row per headline verdict of the run (the run's cells spanning them), or one row saying none ran."""
    verdicts = run.verdicts
    span = max(len(verdicts), 1)
    shared = [
        f'<a href="#run-{stem}">{text(run.model)}</a>',
        text(run.benchmark),
        text(run.n_items),
        _accuracy(run.accuracy),
    ]
    lead = "".join(
        f'<td rowspan="{span}" data-label="{escape(name)}"{MODEL_CLASS if name == "Model" else ""}>{cell}</td>'
        for name, cell in zip(RUN_COLUMNS, shared)
    )
    if not verdicts:
        return [f'<tr>{lead}<td colspan="4" class="muted">no detector states a verdict on this run</td></tr>']
    return [f"<tr>{lead}{_verdict_cells(verdicts[0])}</tr>"] + [f"<tr>{_verdict_cells(v)}</tr>" for v in verdicts[1:]]


def _verdict_cells(verdict: Verdict) -> str:
    adjusted = (
        '<span class="muted">uncorrected</span>'
        if verdict.pvalue_adjusted is None
        else f"{text(verdict.pvalue_adjusted)} ({escape(verdict.correction)})"
    )
    cells = [
        text(verdict.test),
        text(verdict.pvalue),
        adjusted,
        verdict_badge(verdict),
    ]
    columns = VERDICT_COLUMNS[len(RUN_COLUMNS) :]
    return "".join(f'<td data-label="{escape(name)}">{cell}</td>' for name, cell in zip(columns, cells))


def _accuracy(accuracy: Accuracy | None) -> str:
    if accuracy is None:
        return text(None)
    shown = text(accuracy.acc)
    if accuracy.acc_norm is not None:
        shown += f' <span class="muted">(norm {text(accuracy.acc_norm)})</span>'
    return shown


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
        f"<h2>Models x benchmarks</h2>\n<p>PaCoST's headline p-value adjusted across the sweep, ConTAM's EPG on the "
        f"headline metric, and accuracy, for each of the {len(models)} models on each benchmark.</p>\n"
        f'<div class="wide"><table><thead><tr><th>model</th>{header}</tr></thead><tbody>{"".join(rows)}</tbody>'
        f"</table></div>\n{figure(png, 'PaCoST p, EPG and accuracy per model and benchmark')}"
    )


def _sweep_section(sweep: Sweep | None, alpha, png: Path | None) -> str:
    if sweep is None or (png is None and not sweep.untested):
        return ""
    columns = ["model | benchmark", "test", "p", "Holm-adjusted p", "Holm rejects", "BH-adjusted p", "BH rejects"]
    tests = sweep.tests or ("",) * len(sweep.labels)
    lines = zip(
        sweep.labels, tests, sweep.pvalues, sweep.holm.adjusted, sweep.holm.reject, sweep.bh.adjusted, sweep.bh.reject
    )
    rows = [row([text(x) for x in line], labels=columns) for line in lines]
    untested = (
        "<p>Left out of the family (no test could run): "
        + "; ".join(f"{text(name)}: {text(reason)}" for name, reason in sweep.untested.items())
        + ".</p>\n"
        if sweep.untested
        else ""
    )
    return (
        f"<h2>Multiple testing across the sweep</h2>\n<p>Holm controls the chance of any false contamination call "
        f"(family-wise error) at α = {text(alpha)}; Benjamini–Hochberg controls the expected share of false "
        f"calls (false discovery rate). The family is every headline PaCoST test that ran.</p>\n"
        + untested
        + ("" if png is None else figure(png, "PaCoST p-values per model and benchmark, raw and adjusted") + "\n")
        + ('<div class="wide">' + table(head(columns), rows) + "</div>" if rows else "")
    )


def _family_sections(summary: AuditSummary) -> list[str]:
    """Each detector across the models that ran: its heading and its own section."""
    parts = []
    for name, stage in FAMILY_DETECTORS.items():
        section = stage.view.section
        if name in summary.family and section is not None:
            parts.append(f"<h2>{escape(stage.heading)}</h2>\n{section(summary.family[name], summary.alpha)}")
    return parts


def _run_section(run: RunEntry, stem: str, figures: dict[str, Path]) -> str:
    parts = [f'<section class="run" id="run-{stem}">', _run_heading(run)]
    for name, stage in DETECTORS.items():
        section = stage.view.section
        if section is None:
            continue
        parts.append(f"<h3>{escape(stage.heading)}</h3>")
        result = run.results.get(name)
        parts.append(
            section(result, figures)
            if result is not None
            else f'<p class="muted">{escape(stage.heading)} did not run for this model and benchmark.</p>'
        )
    parts.append("<h3>Against the ground truth</h3>")
    if run.ground_truth is not None:
        parts += [_ground_truth_table(run.ground_truth), _auc_table(run.ground_truth)]
    else:
        parts.append(
            '<p class="muted">No item of this benchmark has a known label (a <code>ground_truth</code> file in its '
            "[[benchmark]] entry): no ground-truth comparison, and the blind baseline did not run.</p>"
        )
    return "\n".join(parts) + "\n</section>"


def _run_heading(run: RunEntry) -> str:
    split = f" ({text(run.split)})" if run.split else ""
    title = f'{text(run.model)} <span class="muted">· {text(run.benchmark)}{split}</span>'
    return f'<h2>{title}</h2>\n<p class="meta">{text(run.n_items)} items · accuracy {_accuracy(run.accuracy)}</p>'


def _ground_truth_table(ground_truth: GroundTruthResult) -> str:
    groups = {name: group.to_dict() for name, group in ground_truth.groups.items()}  # the columns each group has
    columns = list(dict.fromkeys(key for group in groups.values() for key in group))
    heading = "<thead><tr><th>group</th>" + "".join(f"<th>{label(c)}</th>" for c in columns) + "</tr></thead>"
    labels = ["group"] + [label_text(c) for c in columns]
    rows = [row([text(name)] + [text(group.get(c)) for c in columns], labels=labels) for name, group in groups.items()]
    return (
        "<p>Items whose contamination is known (planted or documented), split by it.</p>\n"
        + '<div class="wide">'
        + table(heading, rows)
        + "</div>"
    )


def _auc_table(ground_truth: GroundTruthResult) -> str:
    """Every signal's AUC between the known-contaminated and the known-clean items, and the blind baseline's beside
    them: a detector's AUC near the blind baseline's may be the sets' difference in wording, not membership."""
    columns = ["signal", "AUC (contaminated vs clean)"]
    rows = [row([label(signal), text(auc)], labels=columns) for signal, auc in ground_truth.auc.items()]
    blind = ground_truth.blind_baseline
    rows.append(
        row(
            [
                "<strong>blind baseline</strong> (no model: a bag-of-n-grams classifier of the items' texts)",
                text(blind_baseline_phrase(blind)),
            ],
            "headline",
            labels=columns,
        )
    )
    return (
        "<p>AUC of each signal between the two sets (above 1/2: it separates them). The blind baseline never "
        "sees the model: where it separates the sets as well (its interval above 1/2), a detector's AUC may be "
        "distribution shift between the sets rather than membership.</p>\n" + table(head(columns), rows)
    )
