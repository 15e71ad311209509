# pyright: standard
"""A per-item score summarised over a benchmark, in the score's own direction: `score_summary` (mean, median and,
with known labels, the AUC of contaminated vs clean items and the one-sided Mann-Whitney p), for the detectors that
give a score per item beside or instead of a test of their own (GradNorm, CDD, TS-Guessing, the reference
log-ratio, ReCaLL, CoDeC)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from jaxcontam.detect.benchmark_results import DetectorSummary, finite
from jaxcontam.stats import separation


def score_summary(rows: Sequence[dict], column: str, higher_means_seen: bool = True) -> DetectorSummary:
    """`column`'s mean and median over `rows` (None and NaN left out) and, where some rows have a known label
    (`ground_truth_contaminated`), its separation of them with AUC > 0.5 meaning "separates" whichever way the
    score points (`higher_means_seen`)."""
    values = finite(r.get(column) for r in rows)
    centre = (float(values.mean()), float(np.median(values))) if values.size else (math.nan, math.nan)
    labelled = [r for r in rows if r.get("ground_truth_contaminated") is not None]
    if not labelled:
        return DetectorSummary(*centre)
    scores = [math.nan if r.get(column) is None else float(r[column]) for r in labelled]
    split = separation(scores, [r["ground_truth_contaminated"] for r in labelled], higher_means_seen)
    return DetectorSummary(*centre, **split)
