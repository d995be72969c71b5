"""NumPy implementation of `rng_bit_generator`: Philox-4x32-10 over 128-bit counters, or Threefry-2x32 over 64-bit
counters (see lax/rng_bits.py for the streams' layouts)."""

from __future__ import annotations

import numpy as np

from ...lax.options import RandomAlgorithm
from ...lax.rng_bits import rng_bit_generator_p
from . import register_impl
from .threefry import threefry2x32

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


def _threefry_bits(key, shape, wide):
    """Threefry-2x32 keyed by (k0, k1) on the counters (c0, c1) + i. For 32-bit output the shape is halved along
    its first even dimension (else its longest) and the two output words of each counter are interleaved there;
    64-bit output joins the two words of each counter (low first). Returns (bits, counters used)."""
    batch = key.shape[:-1]
    start = _words_to_u64(key[..., 2], key[..., 3])[..., None]
    shape = tuple(shape)
    if wide or not shape:
        split, half = None, (shape if wide else (1,))
    else:
        evens = [i for i, d in enumerate(shape) if d % 2 == 0]
        split = evens[0] if evens else int(np.argmax(shape))
        half = shape[:split] + (-(-shape[split] // 2),) + shape[split + 1:]
    n = int(np.prod(half, dtype=np.int64))
    with np.errstate(over="ignore"):
        counter = start + np.arange(n, dtype=np.uint64)
    y0, y1 = threefry2x32(key[..., :1], key[..., 1:2], (counter & _LOW32).astype(np.uint32),
                          (counter >> _32).astype(np.uint32))
    if wide:
        return _words_to_u64(y0, y1).reshape(batch + shape), n
    if not shape:
        return y0[..., 0].reshape(batch), n
    axis = len(batch) + split
    both = np.stack([y0.reshape(batch + half), y1.reshape(batch + half)], axis=axis + 1)
    both = both.reshape(batch + half[:split] + (2 * half[split],) + half[split + 1:])
    return np.take(both, np.arange(shape[split]), axis=axis), n


def _philox_bits(key, shape, wide):
    """Philox-4x32 (see the module docstring of lax/rng_bits.py). Returns (bits, counters used)."""
    batch = key.shape[:-1]
    batch = key.shape[:-1]
    n = int(np.prod(shape, dtype=np.int64))
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
    if wide:
        bits = _words_to_u64(bits[..., 0::2], bits[..., 1::2])
    return bits.reshape(batch + tuple(shape)), blocks


def _rng_bit_generator(key, *, shape, dtype, algorithm):
    key = np.asarray(key, np.uint32)
    wide = np.dtype(dtype) == np.uint64
    generate = _threefry_bits if algorithm == RandomAlgorithm.RNG_THREE_FRY else _philox_bits
    bits, used = generate(key, shape, wide)
    with np.errstate(over="ignore"):  # the counter's low 64 bits advance by the counters used, wrapping
        new_low = _words_to_u64(key[..., 2], key[..., 3]) + np.uint64(used)
    new_key = key.copy()
    new_key[..., 2] = (new_low & _LOW32).astype(np.uint32)
    new_key[..., 3] = (new_low >> _32).astype(np.uint32)
    return [new_key, bits.astype(dtype)]


register_impl(rng_bit_generator_p, _rng_bit_generator)
