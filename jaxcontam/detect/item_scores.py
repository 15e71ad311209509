# pyright: standard
"""A per-item score summarised over a benchmark, as the likelihood detectors are: mean, median and, with known
labels, its AUC and one-sided Mann-Whitney p in the score's direction (`benchmark_results.signal_separation`)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from jaxcontam.detect.benchmark_results import DetectorSummary, finite
from jaxcontam.stats import separation


def score_summary(rows: Sequence[dict], signal: str, higher_means_seen: bool = True) -> DetectorSummary:
    """Mean and median of the finite values of `signal`, and with labels its separation of contaminated from clean
    rows (`higher_means_seen`: its direction)."""
    values = finite(row[signal] for row in rows)
    centre = (float(values.mean()), float(np.median(values))) if values.size else (math.nan, math.nan)
    labelled = [row for row in rows if row.get("ground_truth_contaminated") is not None]
    if not labelled:
        return DetectorSummary(*centre)
    scores = [math.nan if row[signal] is None else row[signal] for row in labelled]
    split = separation(scores, [row["ground_truth_contaminated"] for row in labelled], higher_means_seen)
    return DetectorSummary(*centre, **split)
