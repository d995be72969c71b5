"""The precompiled eager kernels (`_src/backends/eager/kernels.py`): a large float `select_n` by one compiled pass.

Oracle: NumPy's `where`, bit for bit (the selection moves bits, so NaN payloads, signed zeros and infinities must
come through unchanged), on shapes around the size threshold, transposed and strided views, every dtype
`jnp.where` takes (the kernel serves float32/float64; the others check that their paths are unchanged), eagerly and
under `jit`.
"""

from __future__ import annotations

import time

import ml_dtypes
import numpy as np
import pytest

import fluxion as jax
import fluxion.numpy as jnp
from fluxion._src.backends.eager import elementwise, kernels
from fluxion._src.core import Array

T = elementwise.SELECT_BITS_MIN_ELEMENTS


def _wait_for_kernels():
    pytest.importorskip("numba")
    for itemsize in (4, 8):
        deadline = time.monotonic() + 120
        while kernels.select_kernel(itemsize) is None:
            assert time.monotonic() < deadline, "the select kernel did not compile"
            time.sleep(0.05)


def _special_values(n, dtype, rng):
    v = rng.standard_normal(n).astype(dtype)
    specials = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0], dtype)
    v[rng.integers(0, n, 64)] = specials[rng.integers(0, len(specials), 64)]
    if np.dtype(dtype).itemsize in (4, 8):  # a NaN with a payload
        it = np.int32 if np.dtype(dtype).itemsize == 4 else np.int64
        bits = v.view(it)
        bits[: n // 97] = np.array(0x7FC00123 if it is np.int32 else 0x7FF8000000000123, it)
    return v


def _bits(a):
    a = np.asarray(a)
    return a.view(np.dtype(f"u{a.dtype.itemsize}")) if a.dtype.kind in "fV" or a.dtype == ml_dtypes.bfloat16 else a


@pytest.mark.parametrize("n", [T - 1, T, T + 1, 3 * T + 7, 1 << 20])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kernel_matches_numpy_where_bitwise(n, dtype):
    _wait_for_kernels()
    rng = np.random.default_rng(n)
    t, f = _special_values(n, dtype, rng), _special_values(n, dtype, rng)
    p = rng.random(n) < 0.5
    got = kernels.select(p, f, t)
    np.testing.assert_array_equal(_bits(got), _bits(np.where(p, t, f)))
    np.testing.assert_array_equal(_bits(elementwise.select_bits(p, f, t)), _bits(np.where(p, t, f)))


VIEWS = {
    "contiguous": lambda a: a,
    "transposed": lambda a: a.T,
    "strided": lambda a: a[:, ::2],
    "reversed": lambda a: a[::-1],
}


@pytest.mark.parametrize("view", sorted(VIEWS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int32, np.bool_])
def test_jnp_where_eager_and_jit(view, dtype):
    _wait_for_kernels()
    rng = np.random.default_rng(7)
    shape = (300, 220)
    if np.dtype(dtype) == np.bool_:
        t, f = rng.random(shape) < 0.5, rng.random(shape) < 0.5
    elif np.dtype(dtype).kind == "i":
        t, f = rng.integers(-9, 9, shape).astype(dtype), rng.integers(-9, 9, shape).astype(dtype)
    else:
        t = _special_values(shape[0] * shape[1], dtype, rng).reshape(shape)
        f = _special_values(shape[0] * shape[1], dtype, rng).reshape(shape)
    p = rng.random(shape) < 0.3
    v = VIEWS[view]
    tv, fv, pv = v(t), v(f), v(p)
    want = np.where(pv, tv, fv)
    eager = jnp.where(Array(pv), Array(tv), Array(fv))
    jitted = jax.jit(jnp.where)(Array(pv), Array(tv), Array(fv))
    for got in (eager, jitted):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(_bits(got), _bits(want))


def test_scalar_and_broadcast_operands_keep_their_path():
    _wait_for_kernels()
    x = jnp.asarray(np.random.default_rng(0).standard_normal(T * 2).astype(np.float32))
    np.testing.assert_array_equal(np.asarray(jnp.where(x > 0, x, 0.0)), np.where(np.asarray(x) > 0, np.asarray(x), 0))
    m = jnp.asarray(np.random.default_rng(1).standard_normal((T, 2)).astype(np.float32))
    row = jnp.asarray(np.array([1.0, 2.0], np.float32))
    np.testing.assert_array_equal(np.asarray(jnp.where(m > 0, m, row)),
                                  np.where(np.asarray(m) > 0, np.asarray(m), np.asarray(row)))
