"""64-bit n-gram fingerprints from two independent 32-bit polynomial hashes, in jitted jnp.

JAX disables 64-bit integers by default, so a fingerprint is a pair of uint32 words
`(hi, lo)` computed with wrapping uint32 arithmetic. Each word is a polynomial hash
`sum_j mix_s(t[i+j]) * B_s^(n-1-j) (mod 2^32)` over the window's token ids, with its own
per-token mixer seed `s` and odd base `B_s`, finished by a murmur3 avalanche so that all
32 bits are usable for bucketing. Two independent words make a 64-bit key: among the
~10^7 distinct n-grams of a benchmark table and a corpus slice, a collision has
probability ~10^-5; table builds assert there is none, and exact verification
(comparing tokens) removes any corpus-side false positive.

Host code sees the pair as one numpy uint64 (`hi << 32 | lo`), which orders exactly like
the lexicographic (hi, lo) order the device search uses.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

# (mixer seed, polynomial base) for the hi and lo words; bases are odd so they are units mod 2^32.
_HI = (0x9E3779B9, 0x01000193)
_LO = (0x7F4A7C15, 0x5BD1E995)


def _avalanche(x):
    """murmur3 fmix32: every input bit affects every output bit."""
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x85EBCA6B)
    x = x ^ (x >> 13)
    x = x * jnp.uint32(0xC2B2AE35)
    return x ^ (x >> 16)


def _word(tokens, n: int, seed: int, base: int):
    mixed = _avalanche(tokens.astype(jnp.uint32) ^ jnp.uint32(seed))
    windows = mixed.shape[-1] - n + 1
    h = jnp.zeros(mixed.shape[:-1] + (windows,), jnp.uint32)
    for j in range(n):  # Horner's rule over the n shifted views; XLA fuses this into one loop
        h = h * jnp.uint32(base) + jax.lax.slice_in_dim(mixed, j, j + windows, axis=-1)
    return _avalanche(h ^ jnp.uint32(n))


def hi_words(tokens, n: int):
    """The hi word of every length-`n` window of `tokens` (int [..., L]) -> uint32 [..., L-n+1]."""
    return _word(tokens, n, *_HI)


def lo_words(tokens, n: int):
    """The lo word of every length-`n` window (independent of the hi word)."""
    return _word(tokens, n, *_LO)


@functools.partial(jax.jit, static_argnames="n")
def window_fingerprints(tokens: jax.Array, n: int) -> tuple[jax.Array, jax.Array]:
    """Fingerprints of every length-`n` window of `tokens` (int32 [..., L]) -> (hi, lo) uint32 [..., L-n+1]."""
    return hi_words(tokens, n), lo_words(tokens, n)


def to_uint64(hi, lo) -> np.ndarray:
    """Host-side 64-bit keys from (hi, lo) words; sorts like the device's lexicographic order."""
    return (np.asarray(hi).astype(np.uint64) << np.uint64(32)) | np.asarray(lo).astype(np.uint64)


def split_uint64(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of `to_uint64`."""
    keys = np.asarray(keys, dtype=np.uint64)
    return (keys >> np.uint64(32)).astype(np.uint32), (keys & np.uint64(0xFFFFFFFF)).astype(np.uint32)
