# pyright: standard
"""Per-text membership scores from token log-probs (reference-free and reference-based).

All functions take the per-token log-probs of one text (log p(x_t | x_<t), the
first token excluded) as produced by `jaxcontam.engine.score_logprobs`; Min-K%++ and
Gap-K% also its per-position vocabulary statistics (sigma_t, the top-1 log-prob), DC-PDD
the scored token ids and a reference corpus's token frequencies (`ngram.frequencies`).
Everything comes from the one forward pass (`score_logprobs(..., with_stats=True, with_max=True)`).
Direction: for every score here, a HIGHER value means "more likely seen in
training" except `zlib_ratio`, `lowercase_ratio` and `reference_ratio`, which
are ratios of losses where LOWER means "more likely seen".
The open choices of each method (K, the window, DC-PDD's cap and corpus) are in docs/methods.md.
"""

from __future__ import annotations

import dataclasses
import math
import zlib

import numpy as np

from jaxcontam.dataclass_config import check_ranges, path_field, ranged
from jaxcontam.errors import JaxcontamError

# what `detector_scores` always returns; "dc_pdd" besides with a frequency table (`likelihood_detectors`)
LIKELIHOOD_DETECTORS = ("mean_logprob", "zlib_ratio", "min_k", "min_k_plus_plus", "gap_k")
DC_PDD = "dc_pdd"
LOWER_MEANS_SEEN = frozenset({"zlib_ratio", "lowercase_ratio", "reference_ratio"})  # the rest: higher = seen
GAP_VARIANCE_FLOOR = 1e-8  # Gap-K%'s sigma_t^2 is at least this (the authors' clamp), as in their code


@dataclasses.dataclass(frozen=True)
class LikelihoodSettings:
    """The likelihood detectors' settings. A `frequency_table` is checked when the settings are made (an audit's
    config is read before any model loads), so a bad table stops the audit before its work starts."""

    k: float = ranged(0.2, above=0, at_most=1)  # share of lowest scores kept: Min-K%/Min-K%++ tokens, Gap-K% windows
    gap_window: int = ranged(3, at_least=1)  # Gap-K%'s sliding window: consecutive tokens averaged
    frequency_table: str | None = path_field()  # a `jaxcontam freq` table for the model's tokenizer: turns DC-PDD on
    dc_pdd_cap: float = ranged(0.01, above=0)  # DC-PDD's upper bound `a` on each token's calibrated score

    def __post_init__(self):
        check_ranges(self, "[likelihood]")
        if self.frequency_table is not None:
            from jaxcontam.ngram.frequencies import load_token_frequencies

            load_token_frequencies(self.frequency_table)


def likelihood_detectors(settings: LikelihoodSettings) -> tuple[str, ...]:
    """The scores `detector_scores` returns under `settings`: DC-PDD only with a frequency table."""
    return LIKELIHOOD_DETECTORS + ((DC_PDD,) if settings.frequency_table is not None else ())


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


def gap_k(
    token_logprobs,
    max_logprobs,
    std_logprobs,
    k: float = LikelihoodSettings.k,
    window: int = LikelihoodSettings.gap_window,
) -> float:
    """Gap-K% (Kwak & Kim 2026): mean of the lowest k fraction of the window-averaged normalised top-1 gaps.

    gap_t = (log p(x_t) - max_v log p(v | x_<t)) / sigma_t, 0 where x_t is the model's top-1 token and negative
    elsewhere (a rounding difference between the two float32 paths that makes it positive is cut to 0); sigma_t is
    Min-K%++'s, its square at least `GAP_VARIANCE_FLOOR`. The gaps are averaged over every `window` consecutive
    tokens (a text with fewer scored tokens than the window: the gaps themselves), then the lowest int(n * k)
    (at least one) of those n averages are averaged, as in the authors' code.
    """
    lp = _as_logprobs(token_logprobs)
    top = np.asarray(max_logprobs, np.float64)
    sigma = np.asarray(std_logprobs, np.float64)
    if top.shape != lp.shape or sigma.shape != lp.shape:
        raise JaxcontamError(
            f"Gap-K% needs the top-1 log-prob and std per scored token: got {lp.shape} log-probs, {top.shape} top-1 "
            f"log-probs, {sigma.shape} stds; score with with_stats=True, with_max=True"
        )
    if window < 1:
        raise JaxcontamError(f"Gap-K%'s window must be at least one token, got {window}: pass e.g. gap_window = 3")
    gaps = np.minimum(lp - top, 0.0) / np.sqrt(np.maximum(sigma * sigma, GAP_VARIANCE_FLOOR))
    smoothed = gaps if len(gaps) < window else np.convolve(gaps, np.full(window, 1.0 / window), mode="valid")
    return _lowest_fraction_mean(smoothed, k)


def dc_pdd(token_logprobs, token_ids, reference_probabilities, cap: float = LikelihoodSettings.dc_pdd_cap) -> float:
    """DC-PDD (Zhang et al. 2024): mean over the text's first occurrences of min(p(x_t) * log(1 / f(x_t)), cap).

    p(x_t) is the model's probability of token t, f its (smoothed) frequency in a reference corpus
    (`TokenFrequencies.probabilities`), `cap` the paper's upper bound `a`. Only each distinct token's first
    occurrence among the scored tokens counts, as in the paper and the authors' code. Higher = more likely seen.
    """
    lp = _as_logprobs(token_logprobs)
    ids = np.asarray(token_ids)
    if ids.shape != lp.shape or ids.dtype.kind not in "iu":
        raise JaxcontamError(
            f"DC-PDD needs the id of every scored token: got {lp.shape} log-probs and {ids.dtype} ids of shape "
            f"{ids.shape}; pass the ids of tokens start..end-1 of the scored sequence"
        )
    frequencies = np.asarray(reference_probabilities, np.float64)
    if ids.min() < 0 or ids.max() >= len(frequencies):
        raise JaxcontamError(
            f"DC-PDD: token id {int(ids.max())} is outside the frequency table's {len(frequencies)} ids: the table "
            "was counted for another tokenizer"
        )
    if not cap > 0:
        raise JaxcontamError(f"DC-PDD's cap a must be positive, got {cap}: pass e.g. dc_pdd_cap = 0.01")
    _, first = np.unique(ids, return_index=True)
    first.sort()
    calibrated = np.exp(lp[first]) * -np.log(frequencies[ids[first]])
    return float(np.mean(np.minimum(calibrated, cap)))


def detector_scores(
    scores,
    text: str,
    settings: LikelihoodSettings | None = None,
    token_ids=None,
    reference_probabilities=None,
) -> dict[str, float]:
    """Every reference-free detector of one text from its `SequenceScores` (scored with with_stats=True and
    with_max=True); DC-PDD too when given the scored tokens' ids and a reference distribution
    (`TokenFrequencies.probabilities`): the scores `likelihood_detectors(settings)` names (default settings: None)."""
    settings = settings or LikelihoodSettings()
    k = settings.k
    found = {
        "mean_logprob": mean_logprob(scores.logprobs),
        "zlib_ratio": zlib_ratio(scores.logprobs, text),
        "min_k": min_k_prob(scores.logprobs, k),
        "min_k_plus_plus": min_k_plus_plus(scores.logprobs, scores.mean_logprobs, scores.std_logprobs, k),
        "gap_k": gap_k(scores.logprobs, scores.max_logprobs, scores.std_logprobs, k, settings.gap_window),
    }
    if reference_probabilities is not None:
        found[DC_PDD] = dc_pdd(scores.logprobs, token_ids, reference_probabilities, settings.dc_pdd_cap)
    return found
