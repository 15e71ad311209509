"""Simulated power of the four paired tests on contaminated P(True)-shaped data, with the t formula beside it.

    .venv/bin/python -m experiments.stats.power_curves [--per-size 500]

Two contamination models (jaxcontam.stats.simulation): "boost 0.1" moves every
original confidence 10% of the way to 1; "memorised 10%" sets the original
confidence of 10% of the items to exactly 1. For each shape and model: power of
each test at alpha = 0.05 (one-sided) against n, and the noncentral-t power at
the realised effect size d_z (estimated from 200,000 simulated pairs). Writes
experiments/stats/power_curves.csv and power_curves.png.
"""

from __future__ import annotations

import argparse
import csv
import pathlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from jaxcontam.stats import power  # noqa: E402
from jaxcontam.stats.batched import METHODS, paired_pvalues  # noqa: E402
from jaxcontam.stats.multiple import DEFAULT_ALPHA as ALPHA  # noqa: E402
from jaxcontam.stats.simulation import SHAPES, ptrue_pairs  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
SIZES = (20, 35, 60, 100, 200, 350, 500, 1000)
SCENARIOS = {"boost 0.1": dict(boost=0.1), "memorised 10%": dict(contaminated=0.1)}


def realised_effect(shape, scenario, rng) -> float:
    original, rephrased = ptrue_pairs(shape, 2000, 100, rng, **scenario)
    d = (original - rephrased).ravel()
    return float(d.mean() / d.std(ddof=1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-size", type=int, default=500, help="contaminated data sets per (shape, scenario, n)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    rows = []
    for name, shape in SHAPES.items():
        for label, scenario in SCENARIOS.items():
            effect = realised_effect(shape, scenario, rng)
            for n in SIZES:
                original, rephrased = ptrue_pairs(shape, n, args.per_size, rng, **scenario)
                d = original - rephrased
                for method in METHODS:
                    _, p = paired_pvalues(d, method, "greater", resamples=199, seed=n, exact_max=12)
                    rows.append(dict(shape=name, scenario=label, effect_size=round(effect, 4), n=n, method=method,
                                     power=round(float((p <= ALPHA).mean()), 4),
                                     t_formula=round(float(power(effect, n)), 4)))
    with open(HERE / "power_curves.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    plot(rows)
    for name in SHAPES:
        for label in SCENARIOS:
            group = [r for r in rows if r["shape"] == name and r["scenario"] == label]
            print(f"{name:10} {label:14} d_z={group[0]['effect_size']:.3f}  " + "  ".join(
                f"{m}@n=100:{next(r['power'] for r in group if r['method'] == m and r['n'] == 100):.2f}"
                for m in METHODS))


def plot(rows):
    figure, axes = plt.subplots(len(SCENARIOS), len(SHAPES), figsize=(4 * len(SHAPES), 3.3 * len(SCENARIOS)),
                                sharex=True, sharey=True)
    for i, label in enumerate(SCENARIOS):
        for j, name in enumerate(SHAPES):
            axis = axes[i, j]
            group = [r for r in rows if r["shape"] == name and r["scenario"] == label]
            for method in METHODS:
                points = [r for r in group if r["method"] == method]
                axis.plot([r["n"] for r in points], [r["power"] for r in points], marker="o", ms=3, label=method)
            points = [r for r in group if r["method"] == "t"]
            axis.plot([r["n"] for r in points], [r["t_formula"] for r in points], "k--", lw=1,
                      label="t formula at realised d_z")
            axis.set_xscale("log")
            axis.set_title(f"{name}, {label} (d_z={group[0]['effect_size']:.2f})", fontsize=9)
            axis.axhline(ALPHA, color="grey", lw=0.5)
            axis.grid(alpha=0.3)
            if i == len(SCENARIOS) - 1:
                axis.set_xlabel("pairs n")
            if j == 0:
                axis.set_ylabel("power (alpha 0.05)")
    axes[0, 0].legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(HERE / "power_curves.png", dpi=110)


if __name__ == "__main__":
    main()
