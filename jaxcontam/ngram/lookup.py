"""Device-side table lookup: which windows of a token array are table n-grams, and how often.

`DeviceTable` holds the table's fingerprints as sorted (hi, lo) uint32 words plus two small
accelerators built on the host:
  - a bitmap over the low `bitmap_bits` bits of `lo` (one gather rejects most corpus windows);
  - a bucket directory over the top `directory_bits` bits of `hi`, so the sorted search of a
    surviving window runs inside one bucket: ceil(log2(largest bucket + 1)) steps instead of log2(T).
`count_chunk` counts the windows of one fixed-size corpus chunk into a per-row counter (the
sorted search + scatter-add); `window_rows` returns the row (or -1) of every window of a batch
(used by the decontamination filter). With `verify`, a fingerprint hit counts only if the
window's tokens equal the row's tokens, so counts have zero false positives.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxcontam.ngram.hashing import hi_words, lo_words, split_uint64, window_fingerprints


@functools.partial(
    jax.tree_util.register_dataclass,
    data_fields=["hi", "lo", "ngrams", "directory", "bitmap"],
    meta_fields=["n", "rows", "directory_bits", "bitmap_bits", "search_steps"],
)
@dataclasses.dataclass(frozen=True)
class DeviceTable:
    hi: jax.Array  # uint32 [max(T,1)]
    lo: jax.Array
    ngrams: jax.Array  # int32 [max(T,1), n]
    directory: jax.Array  # int32 [2^directory_bits + 1]: first row of each hi-bucket
    bitmap: jax.Array  # uint32 [2^bitmap_bits / 32]
    n: int
    rows: int
    directory_bits: int
    bitmap_bits: int
    search_steps: int


def device_table(table) -> DeviceTable:
    """Upload an `NgramTable` with its bucket directory and prefilter bitmap."""
    rows = len(table.keys)
    hi, lo = split_uint64(table.keys)
    log_rows = max(1, int(np.ceil(np.log2(max(rows, 2)))))
    directory_bits = min(log_rows, 24)
    bitmap_bits = min(max(log_rows + 6, 10), 30)  # ~1.5% of absent windows pass
    buckets = (hi >> np.uint32(32 - directory_bits)).astype(np.int64)
    directory = np.searchsorted(buckets, np.arange((1 << directory_bits) + 1), side="left").astype(np.int32)
    largest = int(np.diff(directory).max()) if rows else 0
    bitmap = np.zeros(1 << max(bitmap_bits - 5, 0), np.uint32)
    bit = lo & np.uint32((1 << bitmap_bits) - 1)
    np.bitwise_or.at(bitmap, bit >> np.uint32(5), np.uint32(1) << (bit & np.uint32(31)))
    ngrams = table.ngrams if rows else np.full((1, table.n), -1, np.int32)
    if not rows:
        hi, lo = np.zeros(1, np.uint32), np.zeros(1, np.uint32)
    return DeviceTable(
        hi=jnp.asarray(hi), lo=jnp.asarray(lo), ngrams=jnp.asarray(ngrams), directory=jnp.asarray(directory),
        bitmap=jnp.asarray(bitmap), n=table.n, rows=rows, directory_bits=directory_bits,
        bitmap_bits=bitmap_bits, search_steps=max(1, int(np.ceil(np.log2(largest + 1)))),
    )


def _find(table: DeviceTable, hi, lo):
    """Row of each (hi, lo) fingerprint in the table and whether it is there."""
    bucket = (hi >> (32 - table.directory_bits)).astype(jnp.int32)
    start, end = table.directory[bucket], table.directory[bucket + 1]
    low, high = start, end
    last = table.hi.shape[0] - 1
    for _ in range(table.search_steps):  # lower bound of (hi, lo) inside [start, end)
        mid = (low + high) // 2
        probe = jnp.minimum(mid, last)
        below = (table.hi[probe] < hi) | ((table.hi[probe] == hi) & (table.lo[probe] < lo))
        active = low < high
        low = jnp.where(active & below, mid + 1, low)
        high = jnp.where(active & ~below, mid, high)
    row = jnp.minimum(low, last)
    found = (low < end) & (table.hi[row] == hi) & (table.lo[row] == lo)
    return row, found


def _in_bitmap(table: DeviceTable, lo):
    bit = lo & jnp.uint32((1 << table.bitmap_bits) - 1)
    word = table.bitmap[(bit >> 5).astype(jnp.int32)]
    return ((word >> (bit & 31)) & 1).astype(bool)


def _compact(mask, capacity: int):
    """Indices of the first `capacity` True entries of `mask`, 0-padded (jnp.nonzero(size=) with
    a parallel prefix sum: about twice as fast on CPU)."""
    slot = jax.lax.associative_scan(jnp.add, mask.astype(jnp.int32)) - 1
    slot = jnp.where(mask, slot, capacity)  # out of range -> dropped
    positions = jnp.arange(mask.shape[0], dtype=jnp.int32)
    return jnp.zeros(capacity, jnp.int32).at[slot].set(positions, mode="drop")


def _windows(tokens, starts, n):
    return tokens[starts[..., None] + jnp.arange(n)]


@functools.partial(jax.jit, static_argnames=("capacity", "verify"), donate_argnames="counts")
def count_chunk(table: DeviceTable, counts, tokens, segments, *, capacity: int, verify: bool = True):
    """Add the table-row occurrences of one chunk to `counts` (int32 [T+1]; the last slot is a sink).

    `tokens`/`segments` are int32 [C + n - 1]: C window starts plus the n-1 token overlap with
    the next chunk; a window counts iff all its tokens share one segment id >= 0 (one document).
    Windows passing the bitmap are compacted into `capacity` slots; if more pass, nothing is
    added (overflow=True) and the caller reruns the chunk with capacity C. `counts` is donated.
    Returns (counts, overflow, rejected): `rejected` = fingerprint hits whose tokens differ.
    """
    n = table.n
    lo = lo_words(tokens, n)  # the hi word is only computed for windows that pass the bitmap
    starts_total = lo.shape[0]
    valid = (segments[:starts_total] >= 0) & (segments[:starts_total] == segments[n - 1 :])
    candidate = valid & _in_bitmap(table, lo)
    num_candidates = candidate.sum()
    starts = _compact(candidate, capacity)
    windows = _windows(tokens, starts, n)
    row, found = _find(table, hi_words(windows, n)[:, 0], lo[starts])
    found &= jnp.arange(capacity) < num_candidates
    rejected = jnp.zeros((), jnp.int32)
    if verify:
        same = (windows == table.ngrams[row]).all(axis=-1)
        rejected = (found & ~same).sum()
        found &= same
    overflow = num_candidates > capacity
    found &= ~overflow  # an overflowed chunk adds nothing; the caller reruns it
    counts = counts.at[jnp.where(found, row, table.rows)].add(1)
    return counts, overflow, jnp.where(overflow, 0, rejected)


@functools.partial(jax.jit, static_argnames=("verify",))
def window_rows(table: DeviceTable, tokens, lengths, *, verify: bool = True):
    """Row of every window of a batch (int32 [B, L-n+1]; -1 = not a table n-gram or past `lengths`)."""
    n = table.n
    hi, lo = window_fingerprints(tokens, n)
    starts = jnp.arange(hi.shape[-1])
    valid = starts[None, :] + n <= lengths[:, None]
    row, found = _find(table, hi, lo)
    if verify:
        windows = jax.vmap(lambda t: _windows(t, starts, n))(tokens)
        found &= (windows == table.ngrams[row]).all(axis=-1)
    return jnp.where(valid & found, row, -1)
