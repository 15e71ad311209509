"""`jaxcontam epg`: ConTAM's estimated performance gain from a per-item table of metrics and correctness."""

from __future__ import annotations

import click

from jaxcontam.commands.config_file import config_file_options
from jaxcontam.dataclass_config import click_type
from jaxcontam.detect.contam import ContamSettings
from jaxcontam.detect.verdict import Level
from jaxcontam.ngram.audit import METRICS


@config_file_options
@click.command("epg")
@click.option(
    "--items",
    "items_path",
    required=True,
    help="items.parquet (local or a bucket URL) with one row per item: the ConTAM metric columns and 'correct' "
    "(0/1 or a score); an audit's items.parquet works as is.",
)
@click.option(
    "--metric",
    type=click.Choice(list(METRICS)),
    default=ContamSettings.metric,
    show_default=True,
    help="Headline metric (all four are computed).",
)
@click.option(
    "--z-crit",
    type=float,
    default=ContamSettings.z_crit,
    show_default=True,
    help="z a threshold must exceed to be selected (the paper's rule; not a test once the best of many "
    "thresholds is taken: see --alpha).",
)
@click.option("--min-clean", type=click.IntRange(min=1), default=ContamSettings.min_clean, show_default=True)
@click.option(
    "--min-contaminated", type=click.IntRange(min=1), default=ContamSettings.min_contaminated, show_default=True
)
@click.option(
    "--alpha",
    type=click_type(Level, "alpha"),
    default=Level.alpha,
    show_default=True,
    help="Level of the max-z permutation test of 'some threshold shows a gain' (summary.json's `alpha`, and the "
    "verdicts at it).",
)
@click.option(
    "--resamples",
    type=click.IntRange(min=1),
    default=ContamSettings.resamples,
    show_default=True,
    help="Permutations of the max-z test (p is at least 1 / (1 + resamples)).",
)
@click.option("--seed", type=int, default=ContamSettings.seed, show_default=True, help="Seed of the permutations.")
@click.option("--out", required=True, help="Output folder: summary.json and plots/.")
def epg(items_path, metric, z_crit, min_clean, min_contaminated, alpha, resamples, seed, out):
    """EPG curve per metric, the selected threshold and EPG with its CI, and the calibrated p-value of the
    threshold search, per (model, benchmark) in ITEMS."""
    import json

    from jaxcontam.data.records import read_parquet, require_file
    from jaxcontam.detect.contam import contam_result
    from jaxcontam.detect.json_values import json_ready
    from jaxcontam.detect.registry import DETECTORS
    from jaxcontam.errors import DataError
    from jaxcontam.report.plots import contam_curve_png
    from jaxcontam.report.summary_schema import RunEntry

    rows = [row for _, row in read_parquet(require_file(items_path, "--items file"))]
    missing = sorted({"correct", "benchmark", *METRICS} - set(rows[0] if rows else {}))
    if missing:
        raise DataError(
            f"{items_path}: no column(s) {', '.join(missing)}; the table needs the four ConTAM metrics "
            "(from `jaxcontam ngram`) and per-item 'correct' (from `jaxcontam audit`) side by side"
        )
    settings = ContamSettings(
        metric=metric,
        z_crit=z_crit,
        min_clean=min_clean,
        min_contaminated=min_contaminated,
        resamples=resamples,
        seed=seed,
    )
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault((row.get("model", "model"), row["benchmark"], row.get("split", "")), []).append(row)
    from jaxcontam.storage import claim_output, output_folder, publish

    claim_output(out, "epg")
    out = output_folder(out)  # a bucket URL: a local mirror whose files are uploaded as they are written
    (out / "plots").mkdir(parents=True, exist_ok=True)
    runs = []
    headline = DETECTORS["contam"].headline
    assert headline is not None  # ConTAM states a verdict
    for index, ((model, benchmark, split), group) in enumerate(groups.items()):
        result = contam_result(group, settings)
        verdict = headline(result, alpha)
        assert verdict is not None
        run = {
            "model": model,
            "benchmark": benchmark,
            "split": split,
            "n_items": len(group),
            "contam": result.to_dict(),
            "verdicts": [verdict.to_dict()],
        }
        entry = RunEntry(model, benchmark, split, len(group), results={"contam": result})
        contam_curve_png(entry, out / "plots" / f"contam-{index}.png")
        runs.append(run)
        c = result.headline
        selected = (
            f"EPG={c.epg:+.3f} z={c.z:.2f} at {metric} >= {c.threshold:.3g}" if c.threshold is not None else c.reason
        )
        if c.status.ran:
            said = ("significant" if verdict.contaminated else "not significant") + f" at alpha={alpha}"
            test = f"max-z test p={c.pvalue:.3g} ({said}, {c.n_resamples} permutations)"
        else:
            test = f"max-z test: {c.status.label}"
        click.echo(f"{model} | {benchmark}: {selected}; {test}")
    (out / "summary.json").write_text(json.dumps(json_ready({"alpha": alpha, "runs": runs}), indent=2) + "\n")
    publish(out / "summary.json")
