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
scores and correctness for the EPG threshold search. The nulls of the other
tests (experiments/stats/levels.py): `biased_clean_models` (calibrated PaCoST:
two clean models sharing a rephrasing bias), `constat_family` (ConStat: a family
of models on one accuracy relation), `word_distribution` and `alike_texts` (the
blind baseline: item sets drawn from one word distribution), `context_deltas` and
`context_deltas_two_models` (CoDeC's sign test and its calibrated test) and
`log_ratio_sides` (the reference log-ratio's calibrated test).
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


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def biased_clean_models(rng: np.random.Generator, n: int, delta: float = 0.0):
    """((original, rephrased) of the audited model, (original, rephrased) of a reference model), each [n]: confidences
    of two models on the same items, with a shared item difficulty and rephrasing bias (mean > 0: clean models prefer
    the original wording, so PaCoST's own test flags them) and model-item noise; `delta` is added to the audited
    model's originals (0: the calibrated test's null)."""
    logit = rng.normal(0.5, 1.0, n)
    bias = rng.normal(0.4, 0.3, n)

    def model(extra: float):
        shared = logit + rng.normal(0, 0.3, n)
        return _sigmoid(shared + bias + extra + rng.normal(0, 0.3, n)), _sigmoid(shared + rng.normal(0, 0.3, n))

    return model(delta), model(0.0)


def constat_family(rng: np.random.Generator, models: int, items: int, inflation: float = 0.0):
    """(original, reference), each [models + 1, items] of 0/1 scores: the audited model (row 0, ability 0.5) and
    `models` reference models (abilities spread over 0.25-0.9, around it); ability a answers a reference item right
    with probability a and an original one with a^1.5 (one relation for every model: ConStat's null); `inflation`:
    the audited model also answers that share of the original items right regardless (an expected gain of
    0.65 * inflation)."""
    ability = np.r_[0.5, np.linspace(0.25, 0.9, models) + rng.uniform(-0.03, 0.03, models)]
    original = (rng.random((models + 1, items)) < ability[:, None] ** 1.5).astype(float)
    reference = (rng.random((models + 1, items)) < ability[:, None]).astype(float)
    original[0, : int(inflation * items)] = 1.0
    return original, reference


def word_distribution(rng: np.random.Generator, words: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """(vocabulary, probabilities): `words` synthetic words and a Dirichlet(1) distribution over them."""
    return np.array([f"w{i}" for i in range(words)]), rng.dirichlet(np.ones(words))


def alike_texts(rng: np.random.Generator, vocabulary: np.ndarray, p: np.ndarray, items: int) -> list[str]:
    """`items` texts of 5-29 words each drawn from (vocabulary, p): two calls give sets alike in distribution."""
    return [" ".join(rng.choice(vocabulary, size=rng.integers(5, 30), p=p)) for _ in range(items)]


def context_deltas(rng: np.random.Generator, n: int, centre: float = 0.0) -> np.ndarray:
    """[n] CoDeC deltas, LL(x | context) - LL(x) in nats per token, of a model that never saw the items: heavy-tailed
    (t, 3 degrees of freedom) around `centre` with a per-benchmark spread of 0.05-0.5, rounded to 0.1 so that some
    tie at 0. `centre` 0: context helps as often as it hurts (the sign test's null); below 0: context hurts most
    items of a clean model (a small model's long context), a null the sign test does not claim."""
    return np.round(centre + rng.standard_t(3, n) * rng.uniform(0.05, 0.5), 1)


def context_deltas_two_models(rng: np.random.Generator, n: int, effect: float = 0.0):
    """(audited deltas, reference's deltas), each [n]: both models clean, the context's effect on an item shared by
    both (mean -1 nat: it hurts, spread 0.6 over items) plus each model's own heavy-tailed noise (t, 4 degrees of
    freedom, scale 0.2); `effect` lowers the audited model's deltas only (it gains less from context: membership).
    0: calibrated CoDeC's null."""
    shared = rng.normal(-1.0, 0.6, n)
    return shared + rng.standard_t(4, n) * 0.2 - effect, shared + rng.standard_t(4, n) * 0.2


def log_ratio_sides(rng: np.random.Generator, n: int, effect: float = 0.0):
    """(audited original, audited rephrased, reference original, reference rephrased), each [n] mean log-probs per
    token: a per-item difficulty on every side of both models, a rephrasing penalty every model shares (mean 0.3
    nats), a fluency gap (the audited model 0.4 nats likelier on every text, so the ratio's mean is not 0 under no
    contamination) and independent heavy-tailed noise (t, 5 degrees of freedom, scale 0.1); `effect` raises the
    audited model's originals only (membership). 0: the reference log-ratio's calibrated null."""
    difficulty, penalty = rng.normal(-2.0, 0.5, n), rng.normal(0.3, 0.2, n)
    noise = rng.standard_t(5, size=(4, n)) * 0.1
    return (
        difficulty + 0.4 + noise[0] + effect,
        difficulty - penalty + 0.4 + noise[1],
        difficulty + noise[2],
        difficulty - penalty + noise[3],
    )
