# pyright: standard
"""Synthetic P(True) pairs and ConTAM benchmarks for calibration and power studies.

Real P(True) confidences live in [0, 1], are skewed, and pile up at exactly 0
and 1 (saturated softmax, rounding); many pairs are identical, so many
differences are zero. Each shape draws a per-item mean confidence mu ~ Beta(a, b);
original and rephrased are then drawn independently given mu (so under the null
they are exchangeable, which is PaCoST's null: the model cannot tell the
original from its rephrasing), saturated to 1 or 0 with fixed probabilities
and rounded to `decimals`. Two contamination models: `boost` moves every
original confidence a fraction `boost` of the way to 1 (a mild, benchmark-wide
familiarity), `contaminated` sets the original confidence of that fraction of
items to exactly 1 (memorised items). `epg_benchmark` draws per-item match
scores and correctness for the EPG threshold search.
"""

from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True)
class PTrueShape:
    name: str
    a: float  # per-item mean confidence ~ Beta(a, b)
    b: float
    concentration: float  # within-item spread: value ~ Beta(mu * c, (1 - mu) * c)
    p_one: float  # probability a confidence saturates at exactly 1
    p_zero: float  # ... at exactly 0
    decimals: int  # rounding, which creates ties


SHAPES = {
    "confident": PTrueShape("confident", a=4.0, b=1.0, concentration=20.0, p_one=0.3, p_zero=0.02, decimals=3),
    "bimodal": PTrueShape("bimodal", a=0.3, b=0.3, concentration=8.0, p_one=0.2, p_zero=0.2, decimals=2),
    "saturated": PTrueShape("saturated", a=5.0, b=1.0, concentration=60.0, p_one=0.75, p_zero=0.1, decimals=2),
    "binary": PTrueShape("binary", a=3.0, b=1.0, concentration=30.0, p_one=0.5, p_zero=0.1, decimals=0),
}


def _confidences(shape: PTrueShape, mu: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    values = rng.beta(mu * shape.concentration, (1.0 - mu) * shape.concentration)
    u = rng.random(mu.shape)
    values = np.where(u < shape.p_one, 1.0, np.where(u < shape.p_one + shape.p_zero, 0.0, values))
    return np.round(values, shape.decimals)


def ptrue_pairs(
    shape: PTrueShape, n: int, datasets: int, rng: np.random.Generator, boost: float = 0.0, contaminated: float = 0.0
):
    """(original, rephrased), each [datasets, n], from `shape`; boost = contaminated = 0 is the null."""
    mu = np.clip(rng.beta(shape.a, shape.b, size=(datasets, n)), 1e-3, 1 - 1e-3)
    original = _confidences(shape, mu, rng)
    rephrased = _confidences(shape, mu, rng)
    original = np.round(original + boost * (1.0 - original), shape.decimals)
    original = np.where(rng.random(original.shape) < contaminated, 1.0, original)
    return original, rephrased


def epg_benchmark(
    n: int,
    rng: np.random.Generator,
    *,
    accuracy: float,
    zero_share: float,
    gain: float = 0.0,
    gain_share: float = 0.0,
    decimals: int | None = 2,
):
    """(scores, correct), each [n]: LONGEST_MATCH-like match scores and 0/1 correctness of one benchmark.

    Real LONGEST_MATCH scores lie in [0, 1], are mostly exactly 0 (no n-gram of
    the item is in the corpus), are ratios of token counts (ties) and pile up at
    1 (items found verbatim): a `zero_share` of items score 0, 2% of the others
    1, the rest Beta(0.7, 2) rounded to `decimals` (None: not rounded, so these
    are all distinct, as token-count ratios of long items). Correctness is
    Bernoulli(accuracy), independent of the scores (the null), except that the
    `gain_share` of items with the highest scores (ties broken at random) are
    correct with probability min(1, accuracy + gain): contamination that helps.
    """
    u = rng.random(n)
    matched = rng.beta(0.7, 2.0, n)
    if decimals is not None:
        matched = np.round(matched, decimals)
    scores = np.where(u < zero_share, 0.0, np.where(u < zero_share + 0.02 * (1 - zero_share), 1.0, matched))
    rank = np.lexsort((rng.random(n), scores))  # ascending score, random among ties
    boosted = np.zeros(n, bool)
    boosted[rank[n - int(round(gain_share * n)) :]] = True
    correct = rng.random(n) < np.where(boosted, min(1.0, accuracy + gain), accuracy)
    return scores, correct.astype(np.float64)
