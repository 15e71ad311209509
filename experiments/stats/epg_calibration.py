"""Is "some EPG threshold shows a gain" a 5% test? The paper's rule against the max-z permutation test.

    .venv/bin/python -m experiments.stats.epg_calibration [--benchmarks 1000] [--resamples 199]

Null benchmarks (correctness independent of the score; accuracy uniform in 0.1-0.9) for
every score shape x size: LONGEST_MATCH-like scores (`jaxcontam.stats.simulation.epg_benchmark`:
Beta(0.7, 2), 2% of the non-zero ones exactly 1), continuous or rounded to 2 decimals, with
no zeros, half zeros, or 90% zeros (as on real corpora), at 100, 500, 2,000 and 14,042
items (MMLU's test set). Power cells plant a gain on the top-scoring items. For each
benchmark: the paper's rule (`select_threshold` finds a threshold with z > 1.645, >= 10
clean and >= 10 contaminated items) and `max_z_test` over the same search (the default
grid), maximising the paper's z and the finite-population z. Writes
experiments/stats/epg_calibration.csv (one row per benchmark) and prints the tables of
experiments/stats/README.md.
"""

from __future__ import annotations

import argparse
import csv
import pathlib

import numpy as np

from jaxcontam.stats import default_thresholds, epg_curve, max_z_test, select_threshold
from jaxcontam.stats.intervals import binomial_band, clopper_pearson
from jaxcontam.stats.multiple import DEFAULT_ALPHA as ALPHA
from jaxcontam.stats.simulation import epg_benchmark

HERE = pathlib.Path(__file__).resolve().parent
SHAPES = {  # name: (share of items scoring exactly 0, decimals of the other scores; None = continuous)
    "continuous": (0.0, None),
    "2 decimals": (0.0, 2),
    "50% zeros, continuous": (0.5, None),
    "90% zeros, continuous": (0.9, None),
    "90% zeros, 2 decimals": (0.9, 2),
}
SIZES = (100, 500, 2000, 14042)
POWER_CELLS = [dict(n=n, gain=gain, gain_share=share, accuracy=0.5, zero_share=0.7)
               for n in (200, 1000) for share in (0.05, 0.2) for gain in (0.1, 0.2)]


def audit(scores, correct, seed: int, resamples: int) -> dict:
    """The paper's verdict and the two max-z p-values for one benchmark."""
    selected = select_threshold(epg_curve(scores, correct, resamples=1)).row
    tests = {z: max_z_test(scores, correct, z=z, resamples=resamples, seed=seed)
             for z in ("z", "z_finite_population")}
    return {"thresholds": len(default_thresholds(scores)), "paper_rule": selected is not None,
            "max_z": round(tests["z"].statistic, 4), "p_z": tests["z"].pvalue,
            "p_z_finite_population": tests["z_finite_population"].pvalue}


def rate(flags) -> str:
    """The share of True with its 99% Clopper-Pearson interval (the Monte Carlo band)."""
    flags = np.asarray(flags, bool)
    ci = clopper_pearson(int(flags.sum()), len(flags), 0.99)
    low, high = ci.low, ci.high
    return f"{flags.mean():.3f} [{low:.3f}, {high:.3f}]"


def level(pvalues) -> str:
    """The share of p <= ALPHA among the tested benchmarks (p not NaN), marked + above / - below the 99% binomial
    band around ALPHA for that many benchmarks."""
    tested = np.asarray(pvalues, float)
    tested = tested[~np.isnan(tested)]
    low, high = np.array(binomial_band(len(tested), ALPHA, 0.99)) / len(tested)
    share = float(np.mean(tested <= ALPHA))
    return f"{share:.3f}" + ("+" if share > high else "-" if share < low else "")


def power(pvalues) -> str:
    """The share of p <= ALPHA among the tested benchmarks (p not NaN), the untested count beside it (a benchmark
    the max-z test could not test is not a miss)."""
    values = np.asarray(pvalues, float)
    tested = values[~np.isnan(values)]
    share = f"{np.mean(tested <= ALPHA):.2f}" if tested.size else "no test"
    return share + (f" ({values.size - tested.size} no test)" if tested.size < values.size else "")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmarks", type=int, default=1000, help="null benchmarks per shape and size")
    parser.add_argument("--power-benchmarks", type=int, default=200, help="benchmarks per power cell")
    parser.add_argument("--resamples", type=int, default=199, help="permutations per test (alpha * (R + 1) whole)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    rows = []
    for shape, (zero_share, decimals) in SHAPES.items():
        for n in SIZES:
            for index in range(args.benchmarks):
                setting = dict(n=n, gain=0.0, gain_share=0.0, accuracy=round(rng.uniform(0.1, 0.9), 3),
                               zero_share=zero_share)
                scores, correct = epg_benchmark(n, rng, decimals=decimals,
                                                **{k: v for k, v in setting.items() if k != "n"})
                rows.append({"kind": "null", "shape": shape, "benchmark": index, **setting,
                             **audit(scores, correct, index, args.resamples)})
    for cell in POWER_CELLS:
        for index in range(args.power_benchmarks):
            scores, correct = epg_benchmark(cell["n"], rng, **{k: v for k, v in cell.items() if k != "n"})
            rows.append({"kind": "power", "shape": "70% zeros, 2 decimals", "benchmark": index, **cell,
                         **audit(scores, correct, index, args.resamples)})
    with open(HERE / "epg_calibration.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)

    low, high = np.array(binomial_band(args.benchmarks, ALPHA, 0.99)) / args.benchmarks
    print(f"{args.benchmarks} null benchmarks per row, alpha = {ALPHA}, {args.resamples} permutations per test. "
          f"max-z columns: share of p <= {ALPHA} among the tested benchmarks, + above / - below the 99% binomial "
          f"band around {ALPHA} ([{low:.3f}, {high:.3f}] for {args.benchmarks}). No test: no threshold leaves >= 10 "
          "clean and >= 10 contaminated items (the paper's rule flags nothing there either).")
    print("| scores | n | thresholds in the grid (median) | no test | paper's rule flags [99% CI] | "
          "max-z test, paper's z | max-z test, finite-pop. z |")
    print("|---|---|---|---|---|---|---|")
    for shape in SHAPES:
        for n in SIZES:
            part = [r for r in rows if r["kind"] == "null" and r["shape"] == shape and r["n"] == n]
            print(f"| {shape} | {n:,} | {np.median([r['thresholds'] for r in part]):.0f} | "
                  f"{np.mean([np.isnan(r['p_z']) for r in part]):.1%} | {rate([r['paper_rule'] for r in part])} | "
                  f"{level([r['p_z'] for r in part])} | {level([r['p_z_finite_population'] for r in part])} |")
    print(f"\npower at alpha = {ALPHA} ({args.power_benchmarks} benchmarks per cell; accuracy 0.5, 70% zero scores, "
          "2 decimals; gain on the top-scoring share of items)")
    print("| n | gained share | gain | max-z, paper's z | max-z, finite-pop. z | paper's rule (not calibrated) |")
    print("|---|---|---|---|---|---|")
    for cell in POWER_CELLS:
        part = [r for r in rows if r["kind"] == "power" and all(r[k] == v for k, v in cell.items())]
        print(f"| {cell['n']} | {cell['gain_share']:.0%} | +{cell['gain']} | "
              f"{power([r['p_z'] for r in part])} | {power([r['p_z_finite_population'] for r in part])} | "
              f"{np.mean([r['paper_rule'] for r in part]):.2f} |")


if __name__ == "__main__":
    main()
