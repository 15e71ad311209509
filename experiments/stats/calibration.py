"""False-positive rates of the four paired tests on null P(True)-shaped data, per shape and n.

    .venv/bin/python -m experiments.stats.calibration [--per-size 1000]

Writes experiments/stats/calibration.csv (shape, n, method, datasets, rejections, rate,
band_low, band_high: the 99% binomial interval around alpha) and prints a table.
"""

from __future__ import annotations

import argparse
import csv
import pathlib

import numpy as np

from jaxcontam.stats.batched import METHODS, paired_pvalues
from jaxcontam.stats.intervals import binomial_band
from jaxcontam.stats.multiple import DEFAULT_ALPHA as ALPHA
from jaxcontam.stats.simulation import SHAPES, ptrue_pairs

HERE = pathlib.Path(__file__).resolve().parent
SIZES = (20, 35, 60, 100, 200, 500, 1000)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-size", type=int, default=1000, help="null data sets per (shape, n)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--resamples", type=int, default=199, help="Monte Carlo flips of the permutation test")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    band = np.array(binomial_band(args.per_size, ALPHA, 0.99)) / args.per_size
    rows = []
    for name, shape in SHAPES.items():
        for n in SIZES:
            original, rephrased = ptrue_pairs(shape, n, args.per_size, rng)
            d = original - rephrased
            nonzero = float(np.count_nonzero(d, axis=1).mean())
            for method in METHODS:
                _, p = paired_pvalues(d, method, "greater", resamples=args.resamples, seed=n, exact_max=12)
                rejections = int((p <= ALPHA).sum())
                rows.append(dict(shape=name, n=n, mean_nonzero=round(nonzero, 1), method=method,
                                 datasets=args.per_size, rejections=rejections,
                                 rate=round(rejections / args.per_size, 4), band_low=band[0], band_high=band[1]))
    with open(HERE / "calibration.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"false-positive rate at alpha={ALPHA}; 99% band for {args.per_size} data sets: "
          f"[{band[0]:.3f}, {band[1]:.3f}]; * = above the band, - = below")
    print(f"{'shape':10} {'n':>5} {'nonzero':>8} " + " ".join(f"{m:>12}" for m in METHODS))
    for index in range(0, len(rows), len(METHODS)):
        group = rows[index:index + len(METHODS)]
        marks = ["*" if r["rate"] > band[1] else "-" if r["rate"] < band[0] else " " for r in group]
        cells = " ".join(f"{r['rate']:>11.3f}{mark}" for r, mark in zip(group, marks))
        print(f"{group[0]['shape']:10} {group[0]['n']:>5} {group[0]['mean_nonzero']:>8} {cells}")


if __name__ == "__main__":
    main()
