# pyright: standard
"""How well a per-item score separates known-contaminated from clean items: AUC and Mann-Whitney p."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def separation(scores: Sequence[float], labels: Sequence[bool], higher_means_seen: bool = True) -> dict:
    """AUC of `scores` for contaminated vs clean items (ties count half) and the one-sided Mann-Whitney p.

    Non-finite scores are left out; with no contaminated or no clean item left, AUC and p are NaN.
    """
    from scipy.stats import mannwhitneyu

    values = np.asarray(scores, np.float64) * (1.0 if higher_means_seen else -1.0)
    contaminated = np.asarray(labels, bool)
    finite = np.isfinite(values)
    seen, clean = values[finite & contaminated], values[finite & ~contaminated]
    if seen.size == 0 or clean.size == 0:
        return {"auc": math.nan, "pvalue": math.nan, "n_contaminated": int(seen.size), "n_clean": int(clean.size)}
    test = mannwhitneyu(seen, clean, alternative="greater")
    return {
        "auc": float(test.statistic / (seen.size * clean.size)),
        "pvalue": float(test.pvalue),
        "n_contaminated": int(seen.size),
        "n_clean": int(clean.size),
    }
