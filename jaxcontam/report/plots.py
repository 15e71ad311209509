# pyright: standard
"""PNG figures of one audit: ConTAM EPG curves, PaCoST confidence pairs, the sweep's p-values, and the model x
benchmark heatmaps of a sweep over several models.

matplotlib is imported inside the functions (Agg canvas, no pyplot state), so
importing the report package stays cheap for the command line. The runs are the
typed results of `summary_schema.RunEntry`; any number may be None, NaN or
infinite: such points are left out of the lines and show as "n/a" in the text.
"""

from __future__ import annotations

import math
from pathlib import Path

from jaxcontam.detect.contam import MetricVerdict
from jaxcontam.detect.pacost.results import PacostResult
from jaxcontam.detect.sweep import Adjusted, Sweep
from jaxcontam.ngram.audit import METRICS
from jaxcontam.report.formatting import number
from jaxcontam.report.summary_schema import RunEntry
from jaxcontam.storage import publish

CONTAMINATED_COLOR, CLEAN_COLOR, UNKNOWN_COLOR = "#c0392b", "#2471a3", "#999999"
EPG_COLOR, Z_COLOR, THRESHOLD_COLOR = "#2471a3", "#7d3c98", "#c0392b"
MAX_LABEL = 60


def _figure(width: float, height: float):
    """A matplotlib Figure drawn by the Agg canvas, outside pyplot (no global state, no display)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _save(figure, path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    publish(path)
    return path


def _float(x) -> float:
    """None -> NaN, so that matplotlib leaves the point out."""
    return math.nan if x is None else float(x)


def _finite(x) -> bool:
    return x is not None and math.isfinite(float(x))


def _plain(text) -> str:
    """`text` with "$" escaped, so that a name like "a$b$" is not read as mathtext."""
    return str(text).replace("$", r"\$")


def _shorten(text: str, limit: int = MAX_LABEL) -> str:
    """Keep the end of a long label: the end of a model path says the most."""
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]


def _run_title(run: RunEntry) -> str:
    return _plain(f"{_shorten(str(run.model))} | {run.benchmark}")


def contam_curve_png(run: RunEntry, path) -> Path:
    """EPG against the match-score threshold for each ConTAM metric, one panel each.

    Each panel: EPG with its bootstrap band (left axis; the threshold held
    fixed), z (dashed, right axis, shared by the panels), the selected threshold
    as a vertical line, and the max-z test's p-value in the title.
    """
    contam = run.contam
    assert contam is not None  # drawn for runs where ConTAM ran
    metrics = contam.metrics
    names = [m for m in METRICS if m in metrics] + sorted(set(metrics) - set(METRICS))
    n_rows = max(1, math.ceil(len(names) / 2))
    figure = _figure(9.5, 1.0 + 3.0 * n_rows)
    axes = figure.subplots(n_rows, 2, squeeze=False, sharex=True, sharey=True).ravel()
    z_axes = [_draw_epg_panel(ax, name, metrics[name], headline=name == contam.metric) for ax, name in zip(axes, names)]
    _share_z(z_axes)
    for index, ax in enumerate(axes):
        ax.label_outer()
        if index >= len(names):
            ax.set_visible(False)
        elif index % 2 == 0 and index + 1 < len(names):  # the panel to the right carries the z scale
            z_axes[index].tick_params(labelright=False)
            z_axes[index].set_ylabel("")
    figure.suptitle(f"ConTAM: estimated performance gain — {_run_title(run)}")
    handles = _legend_handles([*axes[: len(names)], *z_axes])
    figure.legend(
        handles.values(), handles.keys(), loc="outside lower center", ncols=max(1, len(handles)), frameon=False
    )
    return _save(figure, path)


def _legend_handles(axes) -> dict:
    """One legend entry per label across the panels (a threshold line may appear in some panels only)."""
    handles = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    return handles


def _share_z(z_axes: list) -> None:
    """One z scale for all panels, fitted to every panel's z."""
    for z_ax in z_axes[1:]:
        z_ax.sharey(z_axes[0])
    for z_ax in z_axes:
        z_ax.autoscale_view()


def _draw_epg_panel(ax, name: str, metric: MetricVerdict, headline: bool):
    """One metric's curve on `ax`; returns the twin axis that carries z."""
    rows = metric.curve
    x = [row.threshold for row in rows]
    ax.axhline(0.0, color="0.7", lw=0.8)
    ax.fill_between(
        x,
        [row.epg_ci_low for row in rows],
        [row.epg_ci_high for row in rows],
        color=EPG_COLOR,
        alpha=0.2,
        lw=0,
        label="EPG bootstrap CI",
    )
    ax.plot(x, [row.epg for row in rows], color=EPG_COLOR, lw=1.6, label="EPG")
    z_ax = ax.twinx()
    z_ax.plot(x, [row.z for row in rows], color=Z_COLOR, lw=1.0, ls="--", label="z (right axis)")
    threshold = metric.threshold
    if threshold is not None and math.isfinite(threshold):
        ax.axvline(threshold, color=THRESHOLD_COLOR, lw=1.2, label="selected threshold")
        note = f"τ = {number(threshold)} · EPG = {number(metric.epg)} · z = {number(metric.z)}"
    else:
        note = "no threshold selected" if rows else "no curve"
    if metric.status.ran:
        note += f" · max-z p = {number(metric.pvalue)}"
    ax.set_title(
        f"{name.upper()}{'  (headline)' if headline else ''}\n{note}",
        fontsize=9.5,
        fontweight="bold" if headline else "normal",
    )
    ax.set_xlim(0.0, 1.0)
    ax.set_xlabel("threshold (metric score)")
    ax.set_ylabel("EPG")
    z_ax.set_ylabel("z", color=Z_COLOR)
    return z_ax


def confidence_png(run: RunEntry, items_of_run: list[dict], path) -> Path:
    """Confidence on the original against the rephrased question, one point per kept PaCoST pair.

    Points below the diagonal are items the model is more confident on in
    their original wording, the signature of contamination.
    """
    pacost = run.pacost
    assert pacost is not None  # drawn for runs where PaCoST ran
    kept = [
        item
        for item in items_of_run
        if item.get("pacost_kept")
        and _finite(item.get("pacost_conf_original"))
        and _finite(item.get("pacost_conf_rephrased"))
    ]
    figure = _figure(5.6, 5.6)
    ax = figure.subplots()
    for label, color, group in _ground_truth_groups(kept):
        ax.scatter(
            [i["pacost_conf_original"] for i in group],
            [i["pacost_conf_rephrased"] for i in group],
            s=16,
            alpha=0.65,
            color=color,
            edgecolors="none",
            label=f"{label} ({len(group)})",
        )
    _draw_diagonal(ax, kept)
    ax.text(
        0.98,
        0.02,
        "below the diagonal: more confident\non the original wording",
        transform=ax.transAxes,
        ha="right",
        va="bottom",
        fontsize=8,
        color="0.35",
    )
    confidence = _plain(pacost.verdict.confidence)
    ax.set_xlabel(f"original question ({confidence})")
    ax.set_ylabel(f"rephrased question ({confidence})")
    ax.set_title(
        f"{_run_title(run)}\nPaCoST p = {number(pacost.verdict.pvalue)}, "
        f"adjusted p = {number(_adjusted(run))}, {len(kept)} pairs",
        fontsize=10,
    )
    ax.legend(loc="upper left", fontsize=8)
    return _save(figure, path)


def _ground_truth_groups(items: list[dict]) -> list[tuple[str, str, list[dict]]]:
    """(label, color, items) per ground-truth class present; one group when no item has a ground truth."""
    truths = [item.get("ground_truth_contaminated") for item in items]
    if all(t is None for t in truths):
        return [("kept pairs", CLEAN_COLOR, items)]
    groups = [
        ("contaminated", CONTAMINATED_COLOR, True),
        ("clean", CLEAN_COLOR, False),
        ("ground truth unknown", UNKNOWN_COLOR, None),
    ]
    return [
        (label, color, members)
        for label, color, truth in groups
        if (members := [i for i, t in zip(items, truths) if t is truth])
    ]


def _draw_diagonal(ax, items: list[dict]) -> None:
    """The line original = rephrased over the data's range (both axes alike), or [0, 1] without data."""
    values = [float(i[key]) for i in items for key in ("pacost_conf_original", "pacost_conf_rephrased")]
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    pad = 0.03 * (high - low) or 0.05
    low, high = low - pad, high + pad
    ax.plot([low, high], [low, high], color="0.4", lw=1.0, ls=":", label="original = rephrased")
    ax.set_xlim(low, high)
    ax.set_ylim(low, high)
    ax.set_aspect("equal")


def sweep_pvalues_png(sweep: Sweep, alpha: float, path) -> Path:
    """Raw and multiplicity-adjusted PaCoST p-values per (model, benchmark) on a log axis, with the alpha line.

    Adjusted p-values are drawn filled when that correction rejects at alpha, hollow otherwise.
    """
    labels = [_plain(_shorten(label)) for label in sweep.labels]
    raw = list(sweep.pvalues)
    positions = list(range(len(labels)))
    floor = min([p for p in raw if p > 0] + [alpha]) / 10  # where a p-value of 0 is drawn on the log axis
    figure = _figure(8.5, 1.6 + 0.4 * len(labels))
    ax = figure.subplots()
    ax.scatter([_at_least(p, floor) for p in raw], positions, color="black", s=28, zorder=3, label="raw p")
    _draw_adjusted(ax, sweep.holm, positions, floor, offset=-0.22, marker="^", color=CONTAMINATED_COLOR, name="Holm")
    _draw_adjusted(ax, sweep.bh, positions, floor, offset=0.22, marker="s", color=CLEAN_COLOR, name="BH")
    for y, p in zip(positions, raw):
        if math.isnan(p):
            ax.text(1.0, y, "n/a", ha="right", va="center", fontsize=8, color="0.4")
    ax.axvline(alpha, color="0.3", lw=1.0, ls="--", label=f"α = {number(alpha)}")
    ax.set_xscale("log")
    ax.set_xlim(right=1.5)
    ax.set_yticks(positions, labels, fontsize=8)
    ax.set_ylim(len(labels) - 0.5, -0.5)
    ax.set_xlabel("PaCoST p-value (log scale; left of the dashed line is significant)")
    ax.set_title("PaCoST across the sweep (filled markers: rejected after correction)", fontsize=10)
    ax.grid(axis="x", which="major", color="0.9")
    figure.legend(loc="outside lower center", ncols=3, frameon=False, fontsize=8)
    return _save(figure, path)


def _at_least(p: float, floor: float) -> float:
    """A p-value of 0 drawn at `floor` (log axis); NaN stays NaN and is left out."""
    return floor if p <= 0 else p


def _draw_adjusted(
    ax, correction: Adjusted, positions: list[int], floor: float, *, offset: float, marker: str, color: str, name: str
) -> None:
    """One correction's adjusted p-values, filled where it rejects."""
    adjusted = [_at_least(p, floor) for p in correction.adjusted]
    rejected = list(correction.reject)
    ys = [y + offset for y in positions]
    styles = (
        (True, "rejected", {"color": color}),
        (False, "not rejected", {"facecolors": "none", "edgecolors": color}),
    )
    for wanted, state, style in styles:
        chosen = [(p, y) for p, y, r in zip(adjusted, ys, rejected) if r is wanted]
        ax.scatter(
            [p for p, _ in chosen],
            [y for _, y in chosen],
            marker=marker,
            s=34,
            zorder=3,
            label=f"{name}-adjusted, {state}",
            **style,
        )


SWEEP_PANELS = (
    ("pacost_p", "PaCoST p (adjusted)", "Reds_r"),
    ("epg", "ConTAM EPG", "RdBu_r"),
    ("accuracy", "accuracy", "Greens"),
)


def sweep_grid(runs) -> tuple[list[str], list[str], dict[str, list[list[float]]]]:
    """Models (rows) and benchmarks (columns) in audit order, and per panel of `SWEEP_PANELS` the grid of values
    (NaN where a run is missing or its detector did not run): PaCoST's p adjusted across the sweep (raw where
    there is no correction), the headline ConTAM metric's EPG, and accuracy."""
    models = list(dict.fromkeys(str(run.model) for run in runs))
    benchmarks = list(dict.fromkeys(str(run.benchmark) for run in runs))
    grids = {key: [[math.nan] * len(benchmarks) for _ in models] for key, _, _ in SWEEP_PANELS}
    for run in runs:
        row, column = models.index(str(run.model)), benchmarks.index(str(run.benchmark))
        pacost, contam, accuracy = run.pacost, run.contam, run.accuracy
        values = {
            "pacost_p": math.nan if pacost is None else _adjusted_or_raw(run, pacost),
            "epg": math.nan if contam is None else _float(contam.headline.epg),
            "accuracy": math.nan if accuracy is None else accuracy.acc,
        }
        for key, found in values.items():
            grids[key][row][column] = found
    return models, benchmarks, grids


def _adjusted(run: RunEntry) -> float | None:
    """PaCoST's headline p adjusted across the sweep (its verdict's), None where no sweep decided."""
    verdict = run.verdict_of("pacost")
    return None if verdict is None else verdict.pvalue_adjusted


def _adjusted_or_raw(run: RunEntry, pacost: PacostResult) -> float:
    """PaCoST's p adjusted across the sweep, or the raw p where no sweep decided."""
    adjusted = _adjusted(run)
    return pacost.headline_pvalue if adjusted is None else adjusted


def sweep_heatmap_png(runs, alpha: float, path) -> Path:
    """Three heatmaps over model x benchmark: PaCoST's adjusted p (log colour scale, cells at or below alpha
    outlined), ConTAM's EPG (diverging around 0) and accuracy, each cell printed with its value."""
    from matplotlib.colors import LogNorm, Normalize, TwoSlopeNorm

    models, benchmarks, grids = sweep_grid(runs)
    width = 2.2 + 3 * (1.2 + 0.9 * len(benchmarks))
    figure = _figure(width, 1.4 + 0.45 * len(models))
    axes = figure.subplots(1, len(SWEEP_PANELS), sharey=True)
    for ax, (key, title, cmap) in zip(axes, SWEEP_PANELS):
        grid = grids[key]
        finite = [v for row in grid for v in row if math.isfinite(v)]
        if key == "pacost_p":
            floor = min([v for v in finite if v > 0] + [alpha / 10])
            norm = LogNorm(vmin=floor, vmax=1.0)
            shown = [[max(v, floor) if math.isfinite(v) else v for v in row] for row in grid]
        elif key == "epg":
            bound = max([abs(v) for v in finite] + [0.05])
            norm, shown = TwoSlopeNorm(0.0, -bound, bound), grid
        else:
            norm, shown = Normalize(0.0, 1.0), grid
        ax.imshow(shown, cmap=cmap, norm=norm, aspect="auto")
        for r, row in enumerate(grid):
            for c, v in enumerate(row):
                ax.text(c, r, "n/a" if not math.isfinite(v) else number(v), ha="center", va="center", fontsize=8)
                if key == "pacost_p" and math.isfinite(v) and v <= alpha:
                    ax.add_patch(_cell_outline(c, r))
        ax.set_xticks(range(len(benchmarks)), [_plain(_shorten(b, 24)) for b in benchmarks], fontsize=8, rotation=30)
        ax.set_title(title, fontsize=10)
    axes[0].set_yticks(range(len(models)), [_plain(_shorten(m, 40)) for m in models], fontsize=8)
    figure.suptitle(f"Models x benchmarks (outlined: PaCoST p <= {number(alpha)})", fontsize=10)
    return _save(figure, path)


def _cell_outline(column: int, row: int):
    from matplotlib.patches import Rectangle

    return Rectangle((column - 0.5, row - 0.5), 1, 1, fill=False, edgecolor="black", linewidth=2.0)
