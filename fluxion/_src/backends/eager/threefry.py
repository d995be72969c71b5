"""NumPy implementation of the Threefry-2x32 block cipher (the `threefry2x32` primitive).

Threefry-2x32 with 20 rounds, as specified in J. K. Salmon, M. A. Moraes, R. O. Dror and D. E. Shaw,
"Parallel random numbers: as easy as 1, 2, 3", SC'11 (2011): rotation constants 13, 15, 26, 6 / 17, 29, 16, 24,
a key schedule extended with the parity word 0x1BD11BDA, and a key injection after every four rounds.
"""

from __future__ import annotations

import numpy as np

from ...random.threefry import threefry2x32_p
from . import register_impl

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = np.uint32(0x1BD11BDA)


def _rotl_inplace(x: np.ndarray, r: int, scratch: np.ndarray) -> None:
    """x <- x rotated left by `r` bits (uint32), using `scratch` as temporary storage."""
    np.right_shift(x, np.uint32(32 - r), out=scratch)
    np.left_shift(x, np.uint32(r), out=x)
    np.bitwise_or(x, scratch, out=x)


def threefry2x32(k1, k2, x1, x2) -> list:
    """Encrypts the counter pairs (x1, x2) under the key (k1, k2).

    Args:
      k1, k2: uint32 key words (scalars or arrays broadcastable with the counters).
      x1, x2: uint32 counter words.

    Returns:
      [y1, y2]: two uint32 arrays of the broadcast shape of the operands.
    """
    shape = np.broadcast_shapes(np.shape(k1), np.shape(k2), np.shape(x1), np.shape(x2))
    k1 = np.asarray(k1, np.uint32)
    k2 = np.asarray(k2, np.uint32)
    ks = (k1, k2, k1 ^ k2 ^ _PARITY)
    # Work on 1-d copies so uint32 arithmetic wraps silently (NumPy warns on scalar overflow only).
    a = np.array(np.broadcast_to(x1, shape), np.uint32).reshape(-1)
    b = np.array(np.broadcast_to(x2, shape), np.uint32).reshape(-1)
    ks = [np.broadcast_to(k, shape).reshape(-1) for k in ks]
    scratch = np.empty_like(a)
    a += ks[0]
    b += ks[1]
    for group in range(5):
        for r in _ROTATIONS[group % 2]:
            a += b
            _rotl_inplace(b, r, scratch)
            b ^= a
        a += ks[(group + 1) % 3]
        b += ks[(group + 2) % 3]
        b += np.uint32(group + 1)
    return [a.reshape(shape), b.reshape(shape)]


register_impl(threefry2x32_p, threefry2x32)
