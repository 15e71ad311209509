# pyright: standard
"""A text's mean log-prob alone and after a prefix, both passes in one batched `score_logprobs` call (ReCaLL's
non-member prefix, CoDeC's in-context items).

A text's ids are the tokenizer's default encoding (`encode(text)`, special tokens included, as the likelihood
detectors score it); alone, its scored tokens are 1..n-1 (token 0 has no context). After a prefix, the text follows
the prefix's ids without its own leading BOS (one BOS, at the start of the sequence), and the scored tokens are
either every token of the text's own (`same_tokens=False`: ReCaLL as mimir scores it, the first text token now has
a context) or exactly the tokens scored alone (`same_tokens=True`: CoDeC's per-item change compares like with like).

A prefix is cut to fit the model's positions (`fit_prefix`): whole texts dropped from its front (the ones farthest
from the scored text) until prefix and text fit, and a single text that still does not fit keeps its last tokens.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from jaxcontam.engine import score_logprobs
from jaxcontam.errors import JaxcontamError

SEPARATOR = "\n\n"  # between the prefix's texts, and between the prefix and the scored text


@dataclasses.dataclass(frozen=True)
class PrefixedScore:
    """One text: `alone` its mean log-prob per scored token with no prefix, `prefixed` after the prefix (over the
    tokens `prefixed_scores` says), `prefix_tokens` the prefix's length in tokens."""

    alone: float
    prefixed: float
    prefix_tokens: int


@dataclasses.dataclass(frozen=True)
class Prefix:
    """A prefix's token ids and how many of the texts it was made from it holds (whole or, for one text cut to fit,
    its last tokens: `truncated`)."""

    ids: tuple[int, ...]
    texts: int
    truncated: bool


def _bos(tokenizer) -> int | None:
    return getattr(tokenizer, "bos_token_id", None)


def text_body(tokenizer, ids: Sequence[int]) -> list[int]:
    """A text's ids without the leading BOS its tokenizer adds (the ids that follow a prefix)."""
    bos = _bos(tokenizer)
    return list(ids[1:]) if bos is not None and len(ids) > 1 and ids[0] == bos else list(ids)


def fit_prefix(tokenizer, texts: Sequence[str], budget: int, where: str) -> Prefix:
    """The prefix of `texts` (joined by SEPARATOR, one more after the last) in at most `budget` tokens: whole texts
    dropped from the front until it fits, then the last `budget` tokens of the last text alone."""
    if not texts:
        raise JaxcontamError(f"{where}: no prefix texts to condition on; give at least one")
    if budget < 1:
        raise JaxcontamError(
            f"{where}: the scored text leaves no room for a prefix within the model's positions; audit a model with "
            "more positions, or leave this detector out for this benchmark"
        )
    for start in range(len(texts)):
        ids = tokenizer.encode(SEPARATOR.join(texts[start:]) + SEPARATOR)
        if len(ids) <= budget:
            return Prefix(tuple(ids), len(texts) - start, truncated=False)
    ids = tokenizer.encode(texts[-1] + SEPARATOR)
    return Prefix(tuple(ids[-budget:]), 1, truncated=True)


def prefixed_scores(
    model, texts: Sequence[str], prefixes: Sequence[Prefix], *, same_tokens: bool
) -> list[PrefixedScore]:
    """Each text's mean log-prob alone and after its prefix, from one `score_logprobs` call over both passes."""
    if len(prefixes) != len(texts):
        raise JaxcontamError(f"{len(prefixes)} prefixes for {len(texts)} texts: give one prefix per text")
    tokenizer = model.tokenizer
    alone = [list(tokenizer.encode(text)) for text in texts]
    sequences, spans = [], []
    for ids in alone:
        sequences.append(ids)
        spans.append(None)
    for ids, prefix in zip(alone, prefixes):
        body = text_body(tokenizer, ids)
        start = len(prefix.ids) + (1 if same_tokens and len(body) == len(ids) else 0)  # no BOS dropped: skip token 0
        sequences.append(list(prefix.ids) + body)
        spans.append((start, len(prefix.ids) + len(body)))
    scores = score_logprobs(model, sequences, spans)
    n = len(texts)
    return [
        PrefixedScore(float(np.mean(plain.logprobs)), float(np.mean(after.logprobs)), len(prefix.ids))
        for plain, after, prefix in zip(scores[:n], scores[n:], prefixes)
    ]
