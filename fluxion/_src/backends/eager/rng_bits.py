"""NumPy implementation of `rng_bit_generator`: Philox-4x32-10 over 128-bit counters (see lax/rng_bits.py for the
stream's layout)."""

from __future__ import annotations

import numpy as np

from ...lax.rng_bits import rng_bit_generator_p
from . import register_impl

# Philox-4x32 constants (Salmon et al., SC 2011): the round multipliers and the Weyl key increments.
_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = np.uint32(0x9E3779B9), np.uint32(0xBB67AE85)
_LOW32 = np.uint64(0xFFFFFFFF)
_32 = np.uint64(32)


def _philox4x32(c, k0, k1):
    """Ten Philox rounds on the counter words c (four uint32 arrays) with per-stream keys k0, k1 (uint32 arrays
    broadcasting against them)."""
    c = [w.astype(np.uint64) for w in c]
    k0, k1 = k0.astype(np.uint32), k1.astype(np.uint32)
    for _ in range(10):
        p0, p1 = _M0 * c[0], _M1 * c[2]
        c = [(p1 >> _32) ^ c[1] ^ k0.astype(np.uint64), p1 & _LOW32, (p0 >> _32) ^ c[3] ^ k1.astype(np.uint64),
             p0 & _LOW32]
        k0, k1 = k0 + _W0, k1 + _W1  # uint32 arithmetic wraps, as the algorithm requires
    return [w.astype(np.uint32) for w in c]


def _words_to_u64(lo, hi):
    return lo.astype(np.uint64) | (hi.astype(np.uint64) << _32)


def _rng_bit_generator(key, *, shape, dtype, algorithm):
    key = np.asarray(key, np.uint32)
    batch = key.shape[:-1]
    n = int(np.prod(shape, dtype=np.int64))
    wide = np.dtype(dtype) == np.uint64
    if wide:  # two consecutive words per 64-bit value, low word first
        n *= 2
    blocks = -(-n // 4)
    low = _words_to_u64(key[..., 2], key[..., 3])[..., None]
    high = _words_to_u64(key[..., 0], key[..., 1])[..., None]
    with np.errstate(over="ignore"):
        counter = low + np.arange(blocks, dtype=np.uint64)
        high = high + (counter < low).astype(np.uint64)  # carry into the high half
        words = [counter & _LOW32, counter >> _32, high & _LOW32, high >> _32]
        out = _philox4x32([np.broadcast_to(w, batch + (blocks,)) for w in words], key[..., :1], key[..., 1:2])
        bits = np.stack(out, axis=-1).reshape(batch + (4 * blocks,))[..., :n]
        new_low = _words_to_u64(key[..., 2], key[..., 3]) + np.uint64(blocks)
    new_key = key.copy()
    new_key[..., 2] = (new_low & _LOW32).astype(np.uint32)
    new_key[..., 3] = (new_low >> _32).astype(np.uint32)
    if wide:
        bits = _words_to_u64(bits[..., 0::2], bits[..., 1::2])
    return [new_key, bits.reshape(batch + tuple(shape)).astype(dtype)]


register_impl(rng_bit_generator_p, _rng_bit_generator)
