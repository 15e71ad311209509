"""Device-side table lookup: which windows of a token array are table n-grams, and how often.

`DeviceTable` holds the table's fingerprints as sorted (hi, lo) uint32 words plus two small
accelerators built on the host:
  - a blocked Bloom filter over `lo`: each table n-gram sets 3 bits of one uint32 word, ~12-24 bits
    per n-gram, so one gather rejects ~97% of absent corpus windows while the filter stays in cache
    (2 MiB for 1.4M n-grams; a one-bit-per-key bitmap with that rejection rate needs 16 MiB, and its
    cache misses made it ~2.6x slower: `experiments/perf/ngram_count.py`);
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
    data_fields=["hi", "lo", "ngrams", "directory", "prefilter"],
    meta_fields=["n", "rows", "directory_bits", "prefilter_bits", "search_steps"],
)
@dataclasses.dataclass(frozen=True)
class DeviceTable:
    hi: jax.Array  # uint32 [max(T,1)]
    lo: jax.Array
    ngrams: jax.Array  # int32 [max(T,1), n]
    directory: jax.Array  # int32 [2^directory_bits + 1]: first row of each hi-bucket
    prefilter: jax.Array  # uint32 [2^prefilter_bits]: blocked Bloom filter words
    n: int
    rows: int
    directory_bits: int
    prefilter_bits: int
    search_steps: int


PREFILTER_BITS_PER_NGRAM = 12  # at least; 3 probes -> ~3% of absent windows pass (capacity is 1/16 of a chunk)
_PROBE_MIX = 0x2545F491  # odd: a bijection of uint32, whose top bits depend on every bit of lo


def _prefilter_probe(lo, word_bits: int, xp):
    """(word index, 3-bit mask) of each `lo` fingerprint word; `xp` is numpy (host build) or jax.numpy."""
    word = (lo & xp.uint32((1 << word_bits) - 1)).astype(xp.int32)
    mixed = lo * xp.uint32(_PROBE_MIX)
    one = xp.uint32(1)
    return word, (one << (mixed >> 27)) | (one << ((mixed >> 22) & 31)) | (one << ((mixed >> 17) & 31))


def device_table(table) -> DeviceTable:
    """Upload an `NgramTable` with its bucket directory and prefilter."""
    rows = len(table.keys)
    hi, lo = split_uint64(table.keys)
    log_rows = max(1, int(np.ceil(np.log2(max(rows, 2)))))
    directory_bits = min(log_rows, 24)
    prefilter_bits = min(max(int(np.ceil(np.log2(max(rows, 1) * PREFILTER_BITS_PER_NGRAM / 32))), 0), 25)
    buckets = (hi >> np.uint32(32 - directory_bits)).astype(np.int64)
    directory = np.searchsorted(buckets, np.arange((1 << directory_bits) + 1), side="left").astype(np.int32)
    largest = int(np.diff(directory).max()) if rows else 0
    prefilter = np.zeros(1 << prefilter_bits, np.uint32)
    np.bitwise_or.at(prefilter, *_prefilter_probe(lo, prefilter_bits, np))
    ngrams = table.ngrams if rows else np.full((1, table.n), -1, np.int32)
    if not rows:
        hi, lo = np.zeros(1, np.uint32), np.zeros(1, np.uint32)
    return DeviceTable(  # device_put, not jnp.asarray: that compiles a copy program per array shape
        hi=jax.device_put(hi),
        lo=jax.device_put(lo),
        ngrams=jax.device_put(np.asarray(ngrams, np.int32)),
        directory=jax.device_put(directory),
        prefilter=jax.device_put(prefilter),
        n=table.n,
        rows=rows,
        directory_bits=directory_bits,
        prefilter_bits=prefilter_bits,
        search_steps=max(1, int(np.ceil(np.log2(largest + 1)))),
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


def _may_be_in_table(table: DeviceTable, lo):
    """False for windows surely not in the table (no false negatives)."""
    word, mask = _prefilter_probe(lo, table.prefilter_bits, jnp)
    return (table.prefilter[word] & mask) == mask


def _compact(mask, capacity: int):
    """Indices of the first `capacity` True entries of `mask`, 0-padded.

    The mask is packed into uint32 words of 32 windows and a prefix sum runs over the words'
    popcounts only (1/32 of the length); each output slot then finds its word by binary search and
    its bit by a 5-step popcount search. The work is O(length / 32 + capacity * log): on CPU ~6x
    faster than a prefix sum over the whole mask (jax.lax.associative_scan), which was itself ~2x
    faster than jnp.nonzero(size=).
    """
    length = mask.shape[0]
    grouped = jnp.pad(mask, (0, -length % 32)).reshape(-1, 32)
    bits = jnp.left_shift(jnp.uint32(1), jnp.arange(32, dtype=jnp.uint32))
    words = jnp.where(grouped, bits, jnp.uint32(0)).sum(axis=1, dtype=jnp.uint32)
    ends = jnp.cumsum(jax.lax.population_count(words).astype(jnp.int32))  # entries up to each word, inclusive
    slot = jnp.arange(capacity, dtype=jnp.int32)
    word_index = jnp.minimum(jnp.searchsorted(ends, slot, side="right"), words.shape[0] - 1).astype(jnp.int32)
    word = words[word_index]
    rank = slot - (ends[word_index] - jax.lax.population_count(word).astype(jnp.int32))  # among the word's bits
    bit = jnp.zeros(capacity, jnp.uint32)
    for step in (16, 8, 4, 2, 1):  # the rank-th set bit: the largest position with <= rank set bits below it
        below = jax.lax.population_count(word & ((jnp.uint32(1) << (bit + step)) - 1)).astype(jnp.int32)
        bit = jnp.where(below <= rank, bit + step, bit)
    return jnp.where(slot < ends[-1], word_index * 32 + bit.astype(jnp.int32), 0)


def _windows(tokens, starts, n):
    return tokens[starts[..., None] + jnp.arange(n)]


@functools.partial(jax.jit, static_argnames=("capacity", "verify"), donate_argnames="counts")
def count_chunk(table: DeviceTable, counts, tokens, segments, first, stop, *, capacity: int, verify: bool = True):
    """Add the table-row occurrences of the windows starting in [first, stop) of one chunk to `counts` (int32
    [T+1]; the last slot is a sink).

    `tokens`/`segments` are int32 [C + n - 1]: C window starts plus the n-1 token overlap with
    the next chunk; a window counts iff all its tokens share one segment id >= 0 (one document).
    Windows passing the prefilter are compacted into `capacity` slots; if more pass, nothing is
    added (overflow=True) and the caller reruns the chunk in parts, [first, stop) being a traced range so that
    each part runs this same program. `counts` is donated.
    Returns (counts, overflow, rejected): `rejected` = fingerprint hits whose tokens differ.
    """
    n = table.n
    lo = lo_words(tokens, n)  # the hi word is only computed for windows that pass the prefilter
    starts_total = lo.shape[0]
    start = jnp.arange(starts_total)
    valid = (segments[:starts_total] >= 0) & (segments[:starts_total] == segments[n - 1 :])
    valid &= (start >= first) & (start < stop)
    candidate = valid & _may_be_in_table(table, lo)
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
