"""Do two audits of the same model agree? Compares a committed audit folder with a new one (e.g. the same config run
again with today's code): every item matched by (model, benchmark, id), each numeric column's largest absolute
difference, each text column's count of differing items, and every headline verdict's outcome and p-value (read
with experiments/summary_verdicts.py, so a test that could not run is "not tested" in either summary schema; schema 1
had no headline list, and its PaCoST entry stands for it).

    python -m experiments.real_contamination.compare_audits results/arms/verbatim_x4/audit_fresh/part1 /tmp/part1

Exits 1 when an item, a text column or a verdict's outcome differs, or a number differs by more than --tolerance.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from experiments import summary_verdicts as verdicts  # tested, not detected, not tested

KEY = ["model", "benchmark", "id"]


@dataclass(frozen=True)
class Comparison:
    """What differs between two audits: unmatched items, per-column differences, and verdicts."""

    items: tuple[int, int, int]  # first audit's, second's, matched
    numeric: dict[str, float]  # column: largest |difference| over matched items (a missing value on one side: inf)
    text: dict[str, int]  # column: matched items whose values differ (missing on both sides counts as equal)
    verdicts: list[
        tuple[str, str, str, str, float, float]
    ]  # (model/benchmark, detector, outcome a, outcome b, p a, p b)

    def agrees(self, tolerance: float) -> bool:
        """The same items, texts and verdict outcomes, and every number within `tolerance`."""
        first, second, matched = self.items
        return (
            first == second == matched
            and not any(self.text.values())
            and all(difference <= tolerance for difference in self.numeric.values())
            and all(a == b for _, _, a, b, _, _ in self.verdicts)
        )


def _largest_difference(a: pd.Series, b: pd.Series) -> float:
    x, y = a.to_numpy(float), b.to_numpy(float)
    if (np.isnan(x) != np.isnan(y)).any():
        return math.inf
    both = ~np.isnan(x)
    return float(np.abs(x[both] - y[both]).max()) if both.any() else 0.0


def _differing(a: pd.Series, b: pd.Series) -> int:
    missing_a, missing_b = a.isna().to_numpy(), b.isna().to_numpy()
    same = (missing_a & missing_b) | (~missing_a & ~missing_b & (a.astype(str).to_numpy() == b.astype(str).to_numpy()))
    return int((~same).sum())


def _verdicts(summary: dict) -> dict[tuple[str, str, str], dict]:
    """Each headline verdict, keyed by (model/benchmark, detector, test), as {"outcome", "pvalue"}."""
    found = {}
    for run in summary["runs"]:
        entries = run["verdicts"] if "verdicts" in run else [{"detector": "pacost", **run["pacost"]}]
        for entry in entries:
            key = (f"{run['model']}/{run['benchmark']}", entry["detector"], entry.get("test", ""))
            found[key] = {"outcome": verdicts.outcome(entry), "pvalue": entry.get("pvalue")}
    return found


def compare(first: Path, second: Path) -> Comparison:
    """Compare the audits written to folders `first` and `second` (items.parquet and summary.json in each)."""
    a, b = pd.read_parquet(first / "items.parquet"), pd.read_parquet(second / "items.parquet")
    matched = a.merge(b, on=KEY, suffixes=("@a", "@b"))
    numeric, text = {}, {}
    for column in a.columns:
        if column in KEY or f"{column}@b" not in matched:
            continue
        x, y = matched[f"{column}@a"], matched[f"{column}@b"]
        if pd.api.types.is_numeric_dtype(x) and pd.api.types.is_numeric_dtype(y):
            numeric[column] = _largest_difference(x, y)
        else:
            text[column] = _differing(x, y)
    va = _verdicts(json.loads((first / "summary.json").read_text()))
    vb = _verdicts(json.loads((second / "summary.json").read_text()))
    absent = {"outcome": "absent", "pvalue": None}
    verdicts = []
    for key in sorted(set(va) | set(vb)):
        x, y = va.get(key, absent), vb.get(key, absent)
        verdicts.append((key[0], key[1], x["outcome"], y["outcome"], x["pvalue"], y["pvalue"]))
    return Comparison((len(a), len(b), len(matched)), numeric, text, verdicts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("first", type=Path)
    parser.add_argument("second", type=Path)
    parser.add_argument("--tolerance", type=float, default=1e-4, help="largest numeric difference that agrees")
    args = parser.parse_args()
    result = compare(args.first, args.second)
    first, second, matched = result.items
    print(f"items: {first} and {second}, {matched} matched by {', '.join(KEY)}")
    for column, difference in result.numeric.items():
        print(f"  {column:<38} largest |difference| {difference:.3g}")
    for column, count in result.text.items():
        print(f"  {column:<38} {count} of {matched} differ")
    for where, detector, outcome_a, outcome_b, p_a, p_b in result.verdicts:
        print(f"  verdict {where} {detector}: {outcome_a} (p {p_a}) / {outcome_b} (p {p_b})")
    agrees = result.agrees(args.tolerance)
    print(f"agree within {args.tolerance:g}: {'yes' if agrees else 'no'}")
    sys.exit(0 if agrees else 1)


if __name__ == "__main__":
    main()
