"""Token frequency tables: how often each id of a tokenizer's vocabulary occurs in a reference corpus.

DC-PDD (Zhang et al. 2024, `detect.likelihood.dc_pdd`) calibrates a text's token probabilities by these frequencies.
A table is counted by the n-gram engine: a unigram table of the whole vocabulary (`build_table(..., n=1)`) counted
by `count_corpus`, so it gets the same corpus readers, device counting and multi-process split as `jaxcontam ngram`.
It is saved by `ngram.store.write_npz` (npz + JSON header, read with allow_pickle=False, checksummed) and carries
its vocabulary's fingerprint, so a table is never applied to another tokenizer's ids. Every field of a table read
from disk is checked before use: a file from anywhere may be hostile.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from jaxcontam.errors import DataError, IndexMismatchError, JaxcontamError

KIND = "token_frequencies"
_SHA256 = re.compile(r"[0-9a-f]{64}")
_REBUILD = "build one for this tokenizer with `jaxcontam freq --corpus C --tokenizer T --out TABLE.npz`"


def vocabulary_fingerprint(tokenizer, where: str) -> tuple[str, int]:
    """(sha256 of the vocabulary's (token, id) pairs in id order, its size: the largest id + 1).

    Any tokenizer with `get_vocab()` (transformers' fast tokenizers, `tokenizers.Tokenizer`), added tokens included:
    the vocabulary is what the ids mean, so it is what a frequency table must agree on.
    """
    if tokenizer is None or not callable(getattr(tokenizer, "get_vocab", None)):
        raise JaxcontamError(
            f"{where}: a token frequency table needs the model's own tokenizer (one with get_vocab()), got "
            f"{type(tokenizer).__name__}; give the model a tokenizer.json, or a tokenizer folder to --tokenizer"
        )
    vocabulary = tokenizer.get_vocab()
    pairs = sorted((int(index), str(token)) for token, index in vocabulary.items())
    digest = hashlib.sha256(json.dumps(pairs, ensure_ascii=False).encode()).hexdigest()
    return digest, (pairs[-1][0] + 1 if pairs else 0)


@dataclasses.dataclass(frozen=True)
class TokenFrequencies:
    """Occurrences of each token id in a reference corpus, and what they were counted with.

    counts: int64 [vocab_size]; vocabulary_sha256: `vocabulary_fingerprint` of the tokenizer; tokenizer: the
    tokenizer as the builder named it; corpus: the corpora counted, as named; sha256: the arrays' checksum (what a
    resumed audit's stored chunks are keyed by).
    """

    counts: np.ndarray
    vocabulary_sha256: str
    tokenizer: str
    corpus: tuple[str, ...]
    sha256: str = ""

    @property
    def vocab_size(self) -> int:
        return len(self.counts)

    @property
    def tokens(self) -> int:
        return int(self.counts.sum())

    def probabilities(self) -> np.ndarray:
        """Laplace-smoothed p(v) = (count_v + 1) / (tokens + vocab_size), float64: DC-PDD's reference distribution,
        never 0 (a token the corpus lacks still has a finite log 1/p)."""
        return (self.counts.astype(np.float64) + 1.0) / (self.tokens + self.vocab_size)

    def check_tokenizer(self, tokenizer, where: str) -> None:
        """Refuse a tokenizer whose vocabulary is not the one the table was counted for."""
        digest, size = vocabulary_fingerprint(tokenizer, where)
        if digest != self.vocabulary_sha256 or size != self.vocab_size:
            raise JaxcontamError(
                f"{where}: the frequency table was counted for another tokenizer ({self.tokenizer!r}: "
                f"{self.vocab_size} ids, vocabulary sha256 {self.vocabulary_sha256[:12]}...), this model's has "
                f"{size} ids, sha256 {digest[:12]}...; its ids would index the wrong tokens: {_REBUILD}"
            )


def count_token_frequencies(
    corpora: Sequence[tuple[str, object]], units, *, chunk_tokens: int = 1 << 20
) -> TokenFrequencies:
    """Count every vocabulary id of `units` (a `TokenizerUnits`) in each (name, Corpus) of `corpora`.

    Every id is a row of a unigram table, so every corpus window matches one row: the device compacts all of a
    chunk's windows (capacity = the chunk). A corpus token outside the vocabulary (a pre-tokenized corpus from
    another tokenizer) is refused, never silently dropped.
    """
    from jaxcontam.ngram.stream import CountView, count_corpus
    from jaxcontam.ngram.table import ItemUnits, build_table

    tokenizer = getattr(units, "tokenizer", None)
    digest, size = vocabulary_fingerprint(tokenizer, f"--tokenizer {getattr(units, 'name', units)}")
    vocabulary = ItemUnits(
        keys=("vocabulary",),
        tokens=np.arange(size, dtype=np.int32),
        segment_offsets=np.array([0, size], np.int64),
        item_segments=np.array([0, 1], np.int64),
    )
    table = build_table(vocabulary, n=1)
    counts = np.zeros(size, np.int64)
    for name, corpus in corpora:
        counted = count_corpus([CountView(table)], corpus, units, chunk_tokens=chunk_tokens, capacity=chunk_tokens)
        found = counted.counts[0][table.position_ngram]  # row of each id -> count of each id
        outside = counted.units_scanned[0] - int(found.sum())
        if outside:
            raise DataError(
                f"corpus {name!r}: {outside} of its {counted.units_scanned[0]} tokens are not ids of the "
                f"{size}-token vocabulary of {units.name!r}: it was tokenized by another tokenizer; pass its text, "
                "or the tokenizer it was tokenized with"
            )
        counts += found
    return TokenFrequencies(counts, digest, str(units.name), tuple(name for name, _ in corpora))


def save_token_frequencies(table: TokenFrequencies, path: str | Path) -> None:
    """Write `table` atomically as npz + JSON header (`ngram.store`)."""
    from jaxcontam.ngram.store import write_npz

    header = {
        "kind": KIND,
        "vocabulary_sha256": table.vocabulary_sha256,
        "vocab_size": table.vocab_size,
        "tokens": table.tokens,
        "tokenizer": table.tokenizer,
        "corpus": list(table.corpus),
    }
    write_npz(path, {"counts": np.asarray(table.counts, np.int64)}, header)


def _refuse(path: Path, problem: str) -> JaxcontamError:
    return JaxcontamError(f"frequency table {path}: {problem}; {_REBUILD}")


def _checked(path: Path, arrays: dict, header: dict) -> TokenFrequencies:
    """The table a file holds, every field checked against what `save_token_frequencies` writes."""
    if header.get("kind") != KIND:
        raise _refuse(path, f"a jaxcontam n-gram file of kind {header.get('kind')!r}, not a token frequency table")
    if set(arrays) != {"counts"}:
        raise _refuse(path, f"holds the arrays {sorted(arrays)}, expected exactly ['counts']")
    counts = arrays["counts"]
    if counts.ndim != 1 or counts.dtype != np.int64 or counts.size == 0:
        raise _refuse(path, f"counts are {counts.dtype} of shape {counts.shape}, expected a non-empty 1-D int64 array")
    if (counts < 0).any():
        raise _refuse(path, f"{int((counts < 0).sum())} counts are negative")
    digest, size, tokens = header.get("vocabulary_sha256"), header.get("vocab_size"), header.get("tokens")
    if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
        raise _refuse(path, f"vocabulary_sha256 {digest!r} is not a sha256 hex digest")
    if type(size) is not int or size != counts.size:
        raise _refuse(path, f"vocab_size {size!r} disagrees with its {counts.size} counts")
    if type(tokens) is not int or tokens != int(counts.sum(dtype=np.int64)):
        raise _refuse(path, f"tokens {tokens!r} is not the sum of its counts ({int(counts.sum(dtype=np.int64))})")
    tokenizer, corpus = header.get("tokenizer"), header.get("corpus")
    if not isinstance(tokenizer, str) or not isinstance(corpus, list) or not all(isinstance(c, str) for c in corpus):
        raise _refuse(path, "tokenizer must be a string and corpus a list of strings")
    counts.setflags(write=False)  # shared by every reader of this file version (`_load`'s cache)
    return TokenFrequencies(counts, digest, tokenizer, tuple(corpus), str(header["sha256"]))


@functools.lru_cache(maxsize=8)
def _load(path: Path, modified_ns: int, size: int) -> TokenFrequencies:
    from jaxcontam.ngram.store import read_npz

    try:
        arrays, header = read_npz(path)
    except IndexMismatchError as error:
        raise _refuse(path, str(error).removeprefix(f"{path}: ").split("; delete it")[0]) from None
    return _checked(path, arrays, header)


def load_token_frequencies(path: str | Path) -> TokenFrequencies:
    """The table saved at `path`, checked (read once per file version: an audit reads it per chunk)."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise _refuse(path, "no such file")
    stat = path.stat()
    return _load(path.resolve(), stat.st_mtime_ns, stat.st_size)


def table_for(path: str | Path, tokenizer, where: str) -> TokenFrequencies:
    """The table at `path`, refused unless it was counted for `tokenizer`'s vocabulary."""
    table = load_token_frequencies(path)
    table.check_tokenizer(tokenizer, where)
    return table
