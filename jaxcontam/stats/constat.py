# pyright: standard
"""ConStat's test (Dekoninck et al., NeurIPS 2024, "ConStat: Performance-Based Contamination Detection in Large
Language Models"; eth-sri/ConStat `src/constat/detection.py`, class `ConStat`): contamination as performance that
does not generalise.

A family of reference models, believed uncontaminated, gives the relation between accuracy on a reference benchmark
(here: the rephrasings of the items) and accuracy on the original benchmark. The audited model's original accuracy
is compared with what that relation predicts from its reference accuracy; delta = actual - predicted is the
contamination effect, and the bootstrap gives its p-value and interval:

    result = constat_test(model_original, model_reference, references_original, references_reference)
    result.statistic, result.pvalue, result.confidence_interval(0.95), result.predicted

Each of `resamples` bootstrap replicates (as the authors' `ConStat.return_functions_test`):
1. resamples the original items and the reference items with replacement (the same draw for every model) and, with
   `bootstrap_models` and more than 5 reference models, the reference models (redrawn until 5 are distinct);
2. takes each reference model's mean score on both, adds a random-guessing model at `chance` (each coordinate
   drawn from its binomial sampling error), sorts the two lists independently (a monotone relation) and drops the
   points whose reference accuracy repeats the next one's (redrawing the replicate when fewer than 5 remain);
3. fits a cubic smoothing spline, original accuracy against reference accuracy, its smoothing chosen by generalised
   cross-validation, then refits it with the same smoothing and anchors (0, 0) and (1, 1) of weight 1e-8;
4. delta* = the model's mean original score on the drawn items - the fit at its mean reference score (clipped to
   [0, 1]).
statistic: the mean of delta* (the authors' `delta`); p-value: the smallest p (on the grid k / resamples) with
2 mean - quantile(delta*, 1 - p) >= `min_delta` (the basic bootstrap's lower bound), 1 if none; the interval is the
basic bootstrap's (2 mean - the upper and lower quantiles).

The smoothing spline (`smoothing_spline`, `gcv_smoothing`) is Green & Silverman's natural cubic spline (1994,
ch. 2-3) solved directly, with the GCV criterion and search of scipy's `make_smoothing_spline`, which the authors
copy; `tests/test_stats_constat.py` checks it against scipy's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
from scipy import optimize

from jaxcontam.stats.paired import ConfidenceInterval
from jaxcontam.stats.validation import StatsInputError, check_alternative, check_count, check_probability

MIN_REFERENCE_MODELS = 5  # the authors' minimum (their test raises below it)
ANCHOR_WEIGHT = 1e-8
MAX_REDRAWS = 100  # consecutive degenerate replicates before giving up


def _penalty(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Green & Silverman's Q (n x (n-2)) and R ((n-2) x (n-2)) for knots x: the roughness penalty g' Q R^-1 Q' g."""
    h = np.diff(x)
    n = len(x)
    q = np.zeros((n, n - 2))
    r = np.zeros((n - 2, n - 2))
    for j in range(1, n - 1):
        q[j - 1, j - 1] = 1.0 / h[j - 1]
        q[j, j - 1] = -1.0 / h[j - 1] - 1.0 / h[j]
        q[j + 1, j - 1] = 1.0 / h[j]
        r[j - 1, j - 1] = (h[j - 1] + h[j]) / 3.0
        if j < n - 2:
            r[j - 1, j] = r[j, j - 1] = h[j] / 6.0
    return q, r


def _roughness(x: np.ndarray) -> np.ndarray:
    """K = Q R^-1 Q': the integral of f''^2 of the natural cubic spline through (x, g) is g' K g."""
    q, r = _penalty(x)
    return q @ np.linalg.solve(r, q.T)


def _hat(w: np.ndarray, roughness: np.ndarray, lam: float) -> np.ndarray:
    """A = (W + lam K)^-1 W: the fitted values at the knots are A y."""
    return np.linalg.solve(np.diag(w) + lam * roughness, np.diag(w))


def gcv_smoothing(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    """The smoothing parameter minimising GCV(lam) = |y - A y|^2 / n / (1 - tr A / n)^2 over (0, n), A the hat
    matrix (scipy's `make_smoothing_spline` criterion and bounded search). With M = W^-1/2 K W^-1/2 = U diag(mu) U',
    A = W^-1/2 U diag(1 / (1 + lam mu)) U' W^1/2, so each lam costs O(n)."""
    n = len(x)
    root = np.sqrt(w)
    mu, u = np.linalg.eigh(_roughness(x) / np.outer(root, root))
    coordinates = u.T @ (root * y)

    def gcv(lam: float) -> float:
        shrink = lam * mu / (1.0 + lam * mu)  # 1 - the hat matrix's eigenvalues
        residual = (u @ (shrink * coordinates)) / root
        return float(np.sum(residual**2) / n / (np.sum(shrink) / n) ** 2)

    found = optimize.minimize_scalar(gcv, bounds=(0, n), method="bounded")
    return float(found.x)


def smoothing_spline(x, y, w=None, lam: float | None = None) -> tuple[Callable[[np.ndarray], np.ndarray], float]:
    """The natural cubic smoothing spline of y on x (x strictly increasing, at least 5 points) minimising
    sum w (y - f(x))^2 + lam * integral f''^2, lam by GCV when None; returns (f, lam), f linear beyond the ends."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    w = np.ones(len(x)) if w is None else np.asarray(w, np.float64)
    if x.ndim != 1 or x.shape != y.shape or w.shape != x.shape or len(x) < 5:
        raise StatsInputError(f"smoothing spline: expected x, y, w of one equal length >= 5, got {x.shape}, {y.shape}")
    if np.any(np.diff(x) <= 0) or np.any(w <= 0):
        raise StatsInputError("smoothing spline: x must be strictly increasing and every weight positive")
    lam = gcv_smoothing(x, y, w) if lam is None else float(lam)
    g = _hat(w, _roughness(x), lam) @ y
    q, r = _penalty(x)
    gamma = np.concatenate([[0.0], np.linalg.solve(r, q.T @ g), [0.0]])
    h = np.diff(x)
    slope_low = (g[1] - g[0]) / h[0] - h[0] * gamma[1] / 6.0
    slope_high = (g[-1] - g[-2]) / h[-1] + h[-1] * gamma[-2] / 6.0

    def f(t) -> np.ndarray:
        t = np.asarray(t, np.float64)
        i = np.clip(np.searchsorted(x, t, side="right") - 1, 0, len(x) - 2)
        left, right, width = t - x[i], x[i + 1] - t, h[i]
        inside = (left * g[i + 1] + right * g[i]) / width - left * right / 6.0 * (
            (1.0 + left / width) * gamma[i + 1] + (1.0 + right / width) * gamma[i]
        )
        return np.where(
            t < x[0], g[0] + slope_low * (t - x[0]), np.where(t > x[-1], g[-1] + slope_high * (t - x[-1]), inside)
        )

    return f, lam


@dataclasses.dataclass(frozen=True)
class ConStatResult:
    """ConStat's test (scipy style). statistic: delta, the mean over replicates of the model's original accuracy
    minus the accuracy the reference models predict from its reference accuracy; pvalue: of delta <= min_delta;
    predicted: the mean prediction; actual: the model's original accuracy; n: original items; n_reference: reference
    items; n_models: reference models; `replicates`: delta* per bootstrap replicate."""

    statistic: float
    pvalue: float
    predicted: float
    actual: float
    n: int
    n_reference: int
    n_models: int
    replicates: np.ndarray = dataclasses.field(repr=False, compare=False)

    def confidence_interval(self, level: float = 0.95, alternative: str = "two-sided") -> ConfidenceInterval:
        """The basic bootstrap interval of delta (2 mean - quantiles; "greater": [the authors' min_delta, inf))."""
        level = check_probability("level", level)
        alternative = check_alternative(alternative)
        mean = float(self.replicates.mean())
        if alternative == "greater":
            return ConfidenceInterval(2 * mean - float(np.quantile(self.replicates, level)), float("inf"))
        if alternative == "less":
            return ConfidenceInterval(float("-inf"), 2 * mean - float(np.quantile(self.replicates, 1 - level)))
        high, low = np.quantile(self.replicates, [(1 + level) / 2, (1 - level) / 2])
        return ConfidenceInterval(2 * mean - float(high), 2 * mean - float(low))


def _matrix(name: str, values, columns: int | None) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 2 or (columns is not None and array.shape[1] != columns) or not np.isfinite(array).all():
        raise StatsInputError(
            f"{name}: expected a finite [models, items] array of per-item scores"
            + (f" over the same {columns} items as the audited model" if columns is not None else "")
            + f", got shape {array.shape}"
        )
    return array


def _vector(name: str, values) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1 or len(array) < 1 or not np.isfinite(array).all():
        raise StatsInputError(f"{name}: expected a non-empty 1-D array of finite per-item scores, got {array.shape}")
    return array


def basic_bootstrap_pvalue(replicates: np.ndarray, min_delta: float) -> float:
    """The smallest p = k / R (k = 0..R-1) with 2 mean - quantile(replicates, 1 - p) >= min_delta; 1 if none
    (the authors' rule)."""
    grid = np.arange(len(replicates)) / len(replicates)
    bounds = 2 * replicates.mean() - np.quantile(replicates, 1 - grid)
    passing = np.flatnonzero(bounds >= min_delta)
    return float(grid[passing[0]]) if passing.size else 1.0


def replicate_delta(
    original: np.ndarray,
    reference: np.ndarray,
    refs_original: np.ndarray,
    refs_reference: np.ndarray,
    guess: tuple[float, float] | None,
) -> tuple[float, float] | None:
    """Steps 2-4 of one replicate on its drawn items and models: (delta*, the predicted original accuracy), None
    when fewer than 5 distinct reference accuracies remain. `guess`: the random guesser's point, or None."""
    accuracy1 = list(refs_original.mean(axis=1))
    accuracy2 = list(refs_reference.mean(axis=1))
    if guess is not None:
        accuracy1.insert(0, guess[0])
        accuracy2.insert(0, guess[1])
    y, x = np.sort(accuracy1), np.sort(accuracy2)
    repeated = np.flatnonzero(np.diff(x) == 0)
    y, x = np.delete(y, repeated), np.delete(x, repeated)
    if len(x) < MIN_REFERENCE_MODELS:
        return None
    _, lam = smoothing_spline(x, y)
    weights = np.ones(len(x))
    if x[0] != 0:
        x, y, weights = np.r_[0.0, x], np.r_[0.0, y], np.r_[ANCHOR_WEIGHT, weights]
    if x[-1] != 1:
        x, y, weights = np.r_[x, 1.0], np.r_[y, 1.0], np.r_[weights, ANCHOR_WEIGHT]
    fit, _ = smoothing_spline(x, y, weights, lam)
    predicted = min(max(float(fit(reference.mean())), 0.0), 1.0)
    return float(original.mean()) - predicted, predicted


def constat_test(
    model_original,
    model_reference,
    references_original,
    references_reference,
    *,
    resamples: int = 1000,
    seed: int = 0,
    bootstrap_models: bool = True,
    chance: tuple[float, float] = (0.0, 0.0),
    add_chance_model: bool = True,
    min_delta: float = 0.0,
) -> ConStatResult:
    """ConStat's one-sided test of "delta <= min_delta" (module docstring). `model_original`: the audited model's
    per-item scores (1/0 correct, or any score in [0, 1]) on the original benchmark; `model_reference`: on the
    reference benchmark; `references_*`: [models, items] scores of the reference models on the same items.
    `chance`: a random guesser's accuracy on (original, reference)."""
    original = _vector("model_original", model_original)
    reference = _vector("model_reference", model_reference)
    refs_original = _matrix("references_original", references_original, len(original))
    refs_reference = _matrix("references_reference", references_reference, len(reference))
    resamples = check_count("resamples", resamples, 2)
    models = refs_original.shape[0]
    if models < MIN_REFERENCE_MODELS or refs_reference.shape[0] != models:
        raise StatsInputError(
            f"ConStat needs the same >= {MIN_REFERENCE_MODELS} reference models on both benchmarks, got "
            f"{refs_original.shape[0]} and {refs_reference.shape[0]}; add reference models (e.g. the controls and a "
            "sibling of a sweep)"
        )
    for value in chance:
        check_probability("chance", value, closed=True)
    rng = np.random.default_rng(seed)
    n1, n2 = len(original), len(reference)
    deltas, predictions, redraws = [], [], 0
    while len(deltas) < resamples:
        drawn1, drawn2 = rng.integers(0, n1, n1), rng.integers(0, n2, n2)
        chosen = np.arange(models)
        if bootstrap_models and models > MIN_REFERENCE_MODELS:
            chosen = rng.integers(0, models, models)
            while len(np.unique(chosen)) < MIN_REFERENCE_MODELS:
                chosen = rng.integers(0, models, models)
        guess = None
        if add_chance_model:
            guess = (
                chance[0] + rng.normal(0, np.sqrt(chance[0] * (1 - chance[0]) / n1)),
                chance[1] + rng.normal(0, np.sqrt(chance[1] * (1 - chance[1]) / n2)),
            )
        found = replicate_delta(
            original[drawn1],
            reference[drawn2],
            refs_original[chosen][:, drawn1],
            refs_reference[chosen][:, drawn2],
            guess,
        )
        if found is None:
            redraws += 1
            if redraws > MAX_REDRAWS:
                raise StatsInputError(
                    f"ConStat: {MAX_REDRAWS} bootstrap replicates in a row left fewer than {MIN_REFERENCE_MODELS} "
                    "reference models with distinct reference accuracies; the reference models score too alike"
                )
            continue
        redraws = 0
        deltas.append(found[0])
        predictions.append(found[1])
    replicates = np.asarray(deltas)
    return ConStatResult(
        statistic=float(replicates.mean()),
        pvalue=basic_bootstrap_pvalue(replicates, min_delta),
        predicted=float(np.mean(predictions)),
        actual=float(original.mean()),
        n=n1,
        n_reference=n2,
        n_models=models,
        replicates=replicates,
    )
