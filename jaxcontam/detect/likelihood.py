# pyright: standard
"""Per-text membership scores from token log-probs (reference-free and reference-based).

All functions take the per-token log-probs of one text (log p(x_t | x_<t), the
first token excluded) as produced by `jaxcontam.engine.score_logprobs`.
Direction: for every score here, a HIGHER value means "more likely seen in
training" except `zlib_ratio`, `lowercase_ratio` and `reference_ratio`, which
are ratios of losses where LOWER means "more likely seen".
"""

from __future__ import annotations

import dataclasses
import math
import zlib

import numpy as np

from jaxcontam.dataclass_config import check_ranges, ranged
from jaxcontam.errors import JaxcontamError

LIKELIHOOD_DETECTORS = ("mean_logprob", "zlib_ratio", "min_k", "min_k_plus_plus")  # what `detector_scores` returns
LOWER_MEANS_SEEN = frozenset({"zlib_ratio", "lowercase_ratio", "reference_ratio"})  # the rest: higher = seen


@dataclasses.dataclass(frozen=True)
class LikelihoodSettings:
    """The likelihood detectors' settings; `k` is the fraction of lowest-scoring tokens of Min-K% and Min-K%++."""

    k: float = ranged(0.2, above=0, at_most=1)

    def __post_init__(self):
        check_ranges(self, "[likelihood]")


def _as_logprobs(token_logprobs) -> np.ndarray:
    lp = np.asarray(token_logprobs, dtype=np.float64)
    if lp.ndim != 1 or lp.size == 0:
        raise JaxcontamError(
            f"expected a non-empty 1-D array of token log-probs, got shape {lp.shape}: "
            "a text needs at least two tokens to have a scored token"
        )
    return lp


def mean_logprob(token_logprobs) -> float:
    """Average log-probability per token (the negative of the loss)."""
    return float(np.mean(_as_logprobs(token_logprobs)))


def perplexity(token_logprobs) -> float:
    """exp(-mean log-prob)."""
    return math.exp(-mean_logprob(token_logprobs))


def zlib_entropy(text: str) -> int:
    """Length in bytes of the zlib-compressed UTF-8 text (Carlini et al. 2021's reference entropy)."""
    return len(zlib.compress(text.encode("utf-8")))


def zlib_ratio(token_logprobs, text: str) -> float:
    """Model loss (log-perplexity) over zlib entropy, as in Carlini et al. 2021 and Shi et al. 2023."""
    return -mean_logprob(token_logprobs) / zlib_entropy(text)


def lowercase_ratio(token_logprobs, lowercase_token_logprobs) -> float:
    """log-perplexity of the text over that of its lowercased copy (Carlini et al. 2021)."""
    return mean_logprob(token_logprobs) / mean_logprob(lowercase_token_logprobs)


def reference_ratio(token_logprobs, reference_token_logprobs) -> float:
    """log-perplexity under the target model over that under a reference model (Carlini et al. 2021).

    The two log-prob arrays may come from different tokenizers (different lengths).
    """
    return mean_logprob(token_logprobs) / mean_logprob(reference_token_logprobs)


def _lowest_fraction_mean(values: np.ndarray, k: float) -> float:
    if not 0.0 < k <= 1.0:
        raise JaxcontamError(f"k must be a fraction in (0, 1], got {k}: pass e.g. --k 0.2 for 20%")
    count = max(1, int(len(values) * k))
    return float(np.mean(np.sort(values)[:count]))


def min_k_prob(token_logprobs, k: float = LikelihoodSettings.k) -> float:
    """Min-K% Prob (Shi et al. 2023): mean log-prob of the k fraction of tokens with the lowest log-prob.

    The count is int(n * k) as in the authors' code, but at least one token.
    """
    return _lowest_fraction_mean(_as_logprobs(token_logprobs), k)


def min_k_plus_plus(token_logprobs, mean_logprobs, std_logprobs, k: float = LikelihoodSettings.k) -> float:
    """Min-K%++ (Zhang et al. 2024): mean of the lowest k fraction of (log p(x_t) - mu_t) / sigma_t.

    mu_t and sigma_t are the mean and standard deviation of log p(v | x_<t) over
    the vocabulary under the model's own distribution at position t.
    """
    lp = _as_logprobs(token_logprobs)
    mu = np.asarray(mean_logprobs, np.float64)
    sigma = np.asarray(std_logprobs, np.float64)
    if mu.shape != lp.shape or sigma.shape != lp.shape:
        raise JaxcontamError(
            f"Min-K%++ needs mean and std per scored token: got {lp.shape} log-probs, {mu.shape} means, "
            f"{sigma.shape} stds; score with with_stats=True"
        )
    z = (lp - mu) / np.maximum(sigma, np.finfo(np.float64).tiny)
    return _lowest_fraction_mean(z, k)


def detector_scores(scores, text: str, k: float = LikelihoodSettings.k) -> dict[str, float]:
    """Every reference-free detector of one text from its `SequenceScores` (scored with with_stats=True)."""
    return {
        "mean_logprob": mean_logprob(scores.logprobs),
        "zlib_ratio": zlib_ratio(scores.logprobs, text),
        "min_k": min_k_prob(scores.logprobs, k),
        "min_k_plus_plus": min_k_plus_plus(scores.logprobs, scores.mean_logprobs, scores.std_logprobs, k),
    }
