"""Decontamination for training pipelines: flag or drop documents / token windows holding benchmark n-grams.

`DecontaminationFilter(table)` works on numpy or JAX int token arrays:
  - `flags(batch, lengths)`: bool [B], row b holds at least `min_hits` table n-grams among its
    first lengths[b] tokens (one jitted call per batch shape; pad batches to a few fixed shapes);
  - `contains(tokens)`: the same for one 1-D document;
  - `filter_documents(stream)`: yields only clean documents (a filter step for grain / tf.data
    style pipelines, e.g. `grain.MapDataset.filter(lambda d: not f.contains(d))`);
  - `drop_windows(batch, lengths)`: the batch with contaminated rows removed.
Matches are exact (fingerprint hit + token comparison), so clean data is never dropped by a
hash collision. `left_out` (bool per table row) names n-grams that are no evidence (a decontamination index's
rows with too few letters, or common in the corpus): a window matching one is not a hit.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import jax.numpy as jnp
import numpy as np

from jaxcontam.errors import DataError
from jaxcontam.ngram.lookup import device_table, window_rows


class DecontaminationFilter:
    def __init__(self, table, *, min_hits: int = 1, left_out=None):
        self.n = table.n
        self.min_hits = min_hits
        self._table = device_table(table)
        if left_out is not None and len(left_out) != len(table.keys):
            raise DataError(f"decontamination filter: left_out has {len(left_out)} rows, the table {len(table.keys)}")
        self._left_out = None if left_out is None or not np.any(left_out) else jnp.asarray(left_out, bool)

    def flags(self, batch, lengths=None) -> np.ndarray:
        """bool [B]: rows of an int [B, L] batch that hold >= min_hits table n-grams."""
        batch = jnp.asarray(batch, jnp.int32)
        if batch.ndim != 2:
            raise DataError(f"decontamination filter: expected a [batch, length] token array, got shape {batch.shape}")
        if batch.shape[1] < self.n:
            return np.zeros(batch.shape[0], bool)
        lengths = jnp.full(batch.shape[0], batch.shape[1], jnp.int32) if lengths is None else jnp.asarray(lengths)
        rows = window_rows(self._table, batch, lengths.astype(jnp.int32))
        hits = rows >= 0
        if self._left_out is not None:
            hits &= ~self._left_out[jnp.maximum(rows, 0)]
        return np.asarray(hits.sum(axis=1) >= self.min_hits)

    def contains(self, tokens) -> bool:
        """Whether one 1-D document holds >= min_hits table n-grams (padded to a power of two to limit compiles)."""
        tokens = np.asarray(tokens).ravel()
        size = 1 << max(int(np.ceil(np.log2(max(len(tokens), 1)))), 4)
        padded = np.zeros((1, size), np.int32)
        padded[0, : len(tokens)] = tokens
        return bool(self.flags(padded, np.array([len(tokens)], np.int32))[0])

    def filter_documents(self, documents: Iterable) -> Iterator:
        """Yield the documents (1-D token arrays) that are clean."""
        for document in documents:
            if not self.contains(document):
                yield document

    def drop_windows(self, batch, lengths=None):
        """The rows of `batch` (and `lengths`) that are clean."""
        keep = ~self.flags(batch, lengths)
        kept = np.asarray(batch)[keep]
        return kept if lengths is None else (kept, np.asarray(lengths)[keep])
