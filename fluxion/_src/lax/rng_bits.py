"""`lax.rng_bit_generator`: XLA's stateless bit generators, with the streams JAX's CPU backend produces.

The key is four uint32 words k0 k1 c0 c1. Philox-4x32-10 (J. K. Salmon, M. A. Moraes, R. O. Dror and D. E. Shaw,
"Parallel random numbers: as easy as 1, 2, 3", SC 2011) is keyed with (k0, k1) and run on the 128-bit counters
C + i, i = 0, 1, ..., where C has (c0, c1) as its low 64 bits and (k0, k1) as its high 64 bits; each counter gives
four uint32 words, emitted in order, and the first prod(shape) of them are the bits (truncated for uint8 and
uint16; a uint64 value takes two consecutive words, low first, and uint64 means uint32 unless 64-bit mode is on,
as in JAX). The new key advances the low 64 bits of the
counter by the number of blocks used. This is RNG_PHILOX, and RNG_DEFAULT (Philox on CPU).

RNG_THREE_FRY runs Threefry-2x32 (same paper) keyed by (k0, k1) on the 64-bit counters C + i, C = (c0, c1): for
32-bit output the shape is halved along its first even dimension (its longest if none is even) and the two words
of counter i fill positions 2i and 2i + 1 there; 64-bit output joins the two words of each counter. The new key
advances C by the counters used. Both streams are XLA's, checked bit for bit against JAX 0.10.2 in the tests.

Difference from JAX: under vmap every key of the batch gets its own stream (vmap equals a loop), where JAX's
batching rule draws the whole batch from the first key.
"""

from __future__ import annotations

import numpy as np

from .. import core, dtypes
from ..core import ShapedArray, abstract_eval_rules
from ..interpreters import ad, batching
from .options import RandomAlgorithm
from .utils import standard_primitive

_BIT_DTYPES = tuple(np.dtype(d) for d in ("uint8", "uint16", "uint32", "uint64"))

rng_bit_generator_p = standard_primitive("rng_bit_generator", multiple_results=True, weak_type="never")


def rng_bit_generator(key, shape, dtype=np.uint32, algorithm=RandomAlgorithm.RNG_DEFAULT, *, out_sharding=None):
    """Random bits from a uint32 key of shape (4,): returns (new_key, bits), bits of `shape` and the unsigned
    `dtype` (uint8, uint16, uint32 or uint64). See the module docstring for the stream.

    Raises:
      TypeError: for a key that is not uint32 of shape (4,), or a dtype that is not unsigned.
    """
    del out_sharding
    key = core.to_array(key) if not isinstance(key, (core.Array, core.Tracer)) else key
    aval = core.get_aval(key)
    if aval.shape != (4,) or aval.dtype != np.uint32:
        raise TypeError(f"rng_bit_generator: key must be uint32 of shape (4,), got {aval.str_short()}")
    dtype = dtypes.canonicalize_dtype(dtype)
    if dtype not in _BIT_DTYPES:
        raise TypeError(f"rng_bit_generator: dtype must be uint8, uint16, uint32 or uint64, got {dtype}")
    algorithm = RandomAlgorithm(algorithm)
    shape = tuple(int(d) for d in shape)
    return tuple(rng_bit_generator_p.bind(key, shape=shape, dtype=dtype, algorithm=algorithm))


def _rng_bit_generator_abstract_eval(key, *, shape, dtype, algorithm):
    # Leading key dimensions are a batch (the batching rule binds them); the public wrapper allows only (4,).
    if key.dtype != np.uint32 or key.ndim < 1 or key.shape[-1] != 4:
        raise TypeError(f"rng_bit_generator: key must be uint32 of shape (..., 4), got {key.str_short()}")
    if np.dtype(dtype) not in _BIT_DTYPES or not dtypes.is_integer(np.dtype(dtype)):
        raise TypeError(f"rng_bit_generator: unsupported dtype {dtype}")
    return [ShapedArray(key.shape, key.dtype), ShapedArray(key.shape[:-1] + tuple(shape), np.dtype(dtype))]


abstract_eval_rules[rng_bit_generator_p] = _rng_bit_generator_abstract_eval
ad.defnondifferentiable(rng_bit_generator_p)  # integer outputs of an integer key


def _rng_bit_generator_batch_rule(vals, dims, *, shape, dtype, algorithm):
    (key,), (d,) = vals, dims
    key = batching.moveaxis(key, d, 0, core.get_aval(key).shape[d])
    return rng_bit_generator_p.bind(key, shape=shape, dtype=dtype, algorithm=algorithm), [0, 0]


batching.primitive_batchers[rng_bit_generator_p] = _rng_bit_generator_batch_rule
