"""The precompiled eager kernels (`_src/backends/eager/kernels.py`): a large float `select_n` by one compiled pass,
and `add`/`sub`/`mul`/`div` of a large array and a broadcast row or column.

Oracle: NumPy (`where`; the arithmetic ufuncs with NumPy's broadcasting), bit for bit (the selection moves bits, so
NaN payloads, signed zeros and infinities must come through unchanged; the arithmetic is one IEEE operation per
element either way, so only the sign and payload of a NaN result may differ), on shapes around the size threshold, transposed and strided views, every dtype the operations
take (the kernels serve float32/float64; the others check that their paths are unchanged), eagerly and under `jit`.
"""

from __future__ import annotations

import threading
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


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kernel_takes_read_only_operands(dtype):
    # Read-only arrays (a caller's frozen data, NumPy's broadcast views) convert to the compiled signature; a
    # kernel compiled for writeable inputs only raised TypeError for them, since no other signature is compiled.
    _wait_for_kernels()
    rng = np.random.default_rng(3)
    n = 2 * T
    t, f = _special_values(n, dtype, rng), _special_values(n, dtype, rng)
    p = rng.random(n) < 0.5
    for a in (t, f, p):
        a.setflags(write=False)
    got = kernels.select(p, f, t)
    np.testing.assert_array_equal(_bits(got), _bits(np.where(p, t, f)))
    if dtype == np.float32:  # (float64 arrays become float32 in jnp without 64-bit mode)
        np.testing.assert_array_equal(_bits(jnp.where(p, t, f)), _bits(np.where(p, t, f)))


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


# -- broadcast arithmetic -------------------------------------------------------------------------------------------

B = kernels.BINARY_MIN_ELEMENTS
OPS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide}
LAYOUTS = ("full_row", "row_full", "full_col", "col_full")


def _wait_for_binary(dtypes=(np.float32, np.float64)):
    pytest.importorskip("numba")
    for op in OPS:
        for layout in LAYOUTS:
            for dtype in dtypes:
                deadline = time.monotonic() + 300
                while kernels.binary_kernel(op, layout, np.dtype(dtype)) is None:
                    assert time.monotonic() < deadline, f"the {op} {layout} kernel did not compile"
                    time.sleep(0.05)


# (name, shape of the large operand, shape of the broadcast operand, the layout the kernel should see or None)
BROADCASTS = [
    ("row", (B // 100 + 3, 100), (100,), "row"),
    ("row_keepdims", (B // 100 + 3, 100), (1, 100), "row"),
    ("row_3d", (70, 20, 50), (20, 50), "row"),
    ("row_of_last_axis_3d", (70, 20, 50), (1, 1, 50), "row"),
    ("row_size1_axis", (B // 64 + 1, 1, 64), (64,), "row"),
    ("col", (B // 100 + 3, 100), (B // 100 + 3, 1), "col"),
    ("col_3d", (70, 20, 50), (70, 20, 1), "col"),
    ("col_leading", (70, 20, 50), (70, 1, 1), "col"),
    ("row_one_element_rows", (B + 5, 1), (1,), None),  # a scalar-like operand: NumPy's loop
    ("middle_axis", (70, 20, 50), (1, 20, 1), None),   # neither a row nor a column: NumPy
    ("below_threshold", (B // 100 - 1, 100), (100,), None),
    ("same_shape", (B // 100 + 3, 100), (B // 100 + 3, 100), None),
    ("same_shape_one_column", (B + 5, 1), (B + 5, 1), None),
    ("long_rows", (16, kernels.BINARY_MAX_ROW + 1), (kernels.BINARY_MAX_ROW + 1,), None),  # NumPy is as fast
    ("long_rows_col", (16, kernels.BINARY_MAX_ROW + 1), (16, 1), None),
    ("rows_below_the_limit", (B // 4000 + 1, 4000), (4000,), "row"),
]


def _same_results(got, want):
    """Bit for bit, except that a NaN made by an invalid operation (inf - inf, 0 * inf) or passed on from two NaN
    operands may carry another sign or payload: IEEE 754 leaves that open, and NumPy's loops and the compiled ones
    order their operands differently."""
    got, want = np.asarray(got), np.asarray(want)
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(_bits(got)[~nan], _bits(want)[~nan])


def _values(shape, dtype, rng):
    n = int(np.prod(shape))
    return _special_values(max(n, 1), dtype, rng)[:n].reshape(shape)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("big_first", [True, False], ids=["big_first", "big_second"])
@pytest.mark.parametrize("case", BROADCASTS, ids=[c[0] for c in BROADCASTS])
def test_binary_kernel_matches_numpy_bitwise(case, big_first, op, dtype):
    """`kernels.binary` against the ufunc, and whether it took the kernel where it should."""
    _wait_for_binary()
    _, big_shape, small_shape, layout = case
    rng = np.random.default_rng(len(big_shape) * 100 + small_shape[-1])
    big, small = _values(big_shape, dtype, rng), _values(small_shape, dtype, rng)
    x, y = (big, small) if big_first else (small, big)
    with np.errstate(all="ignore"):
        want = OPS[op](x, y)
    got = kernels.binary(op, x, y)
    if layout is None:
        assert got is None
        return
    assert got is not None, "the kernel was not used"
    assert got.dtype == want.dtype and got.shape == want.shape and got.flags.c_contiguous
    _same_results(got, want)


BINARY_VIEWS = {
    "contiguous": lambda a: a,
    "transposed": lambda a: a.T.copy().T,    # Fortran order: NumPy's path
    "sliced_rows": lambda a: a[1:],          # still C-contiguous: the kernel
    "strided": lambda a: np.repeat(a, 2, axis=1)[:, ::2],  # the same values, not contiguous
}


@pytest.mark.parametrize("view", sorted(BINARY_VIEWS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int32, np.int64])
@pytest.mark.parametrize("op", sorted(OPS))
def test_jnp_arithmetic_eager_and_jit(op, dtype, view):
    """The public operators and `jnp` functions (the Array fast path, the `broadcast_in_dim` path) and `jit`, against
    NumPy on the same values, for every dtype: bit for bit where NumPy computes in the operands' dtype."""
    _wait_for_binary()
    rng = np.random.default_rng(11)
    shape = (B // 100 + 3, 100)
    if np.dtype(dtype).kind == "i":
        big, row = rng.integers(-50, 50, shape).astype(dtype), rng.integers(1, 9, 100).astype(dtype)
    else:
        big = _values(shape, np.float32, rng).astype(dtype)
        row = (rng.standard_normal(100) + 3).astype(dtype)
    big = BINARY_VIEWS[view](big)
    if op == "div" and np.dtype(dtype).kind == "i":
        pytest.skip("integer division has its own rounding (tested with the primitives)")
    operator = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
                "div": lambda a, b: a / b}[op]
    function = {"add": jnp.add, "sub": jnp.subtract, "mul": jnp.multiply, "div": jnp.divide}[op]
    pairs = [(big, row), (row, big), (big, np.ascontiguousarray(big[:, :1]))]  # rows, rows swapped, a column
    with np.errstate(all="ignore"):
        want = [_xla_quotient(a, b) if op == "div" else OPS[op](a, b) for a, b in pairs]
    for fn in (operator, function, jax.jit(operator)):
        for (a, b), w in zip(pairs, want):
            got = fn(Array(a), Array(b))
            assert got.dtype == w.dtype and got.shape == w.shape
            if np.dtype(dtype).itemsize >= 4:
                _same_results(got, w)
            else:  # NumPy rounds float16 per operation too; bfloat16's ufunc loops may differ in the last bit
                np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(w, np.float64), rtol=1e-2)


def _xla_quotient(a, b):
    """`a / b` as XLA computes it: a divisor repeated over the quotient (here a row or a column of it) is a product
    with the reciprocal rounded to the dtype (tests/lax/test_quotients.py compares this with JAX)."""
    if b.size < np.broadcast(a, b).size and b.dtype.kind == "f":
        return a * (b.dtype.type(1) / b)
    return np.true_divide(a, b)


def test_standardize_expression_uses_the_kernels():
    """`(X - X.mean(0)) / X.std(0)` eagerly: both broadcast operations on the kernel path (the quotient by a row as
    a product with its reciprocal, as XLA), values as NumPy's on the same steps."""
    _wait_for_binary((np.float32,))
    x = np.random.default_rng(5).standard_normal((B // 100 + 3, 100)).astype(np.float32)
    X = jnp.asarray(x)
    m, s = np.asarray(X.mean(0)), np.asarray(X.std(0))
    r = np.float32(1) / s
    assert kernels.binary("sub", x, m) is not None and kernels.binary("mul", x, r) is not None
    np.testing.assert_array_equal(np.asarray((X - X.mean(0)) / X.std(0)), (x - m) * r)


def test_binary_kernels_compile_once_across_threads(monkeypatch):
    """Threads asking for a kernel that is not compiled yet all get None (their NumPy path, same results) until one
    background compile has finished; it is started once."""
    pytest.importorskip("numba")
    started = []
    monkeypatch.setattr(kernels, "_binary_ready", {})
    monkeypatch.setattr(kernels, "_binary_started", set())
    real_compile = kernels._compile_binary

    def counting(key):
        started.append(key)
        real_compile(key)

    monkeypatch.setattr(kernels, "_compile_binary", counting)
    x = np.random.default_rng(0).standard_normal((B // 50 + 1, 50)).astype(np.float32)
    row = np.random.default_rng(1).standard_normal(50).astype(np.float32)
    want = _bits(x * row)
    errors = []

    def work():
        try:
            for _ in range(50):
                got = kernels.binary("mul", x, row)
                if got is not None:
                    np.testing.assert_array_equal(_bits(got), want)
                np.testing.assert_array_equal(_bits(np.asarray(Array(x) * Array(row))), want)
        except Exception as e:  # noqa: BLE001 -- reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    deadline = time.monotonic() + 300
    while kernels.binary_kernel("mul", "full_row", np.dtype(np.float32)) is None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert started == [("mul", "full_row", np.dtype(np.float32))]
    np.testing.assert_array_equal(_bits(kernels.binary("mul", x, row)), want)


def test_fma_kernel_on_operands_its_hot_path_does_not_take():
    # `kernels.fma` hands 1-D operands straight to the contiguous kernel and falls back to the general path when
    # the kernel rejects them: strided views, read-only and unaligned arrays must give the exact fused results.
    pytest.importorskip("numba")
    from fluxion._src.backends.eager import special
    rng = np.random.default_rng(5)
    a, b, c = (rng.standard_normal(4001).astype(np.float32) for _ in range(3))
    deadline = time.monotonic() + 120
    while kernels.fma(a, b, c) is None:
        assert time.monotonic() < deadline, "the fma kernel did not compile"
        time.sleep(0.05)
    want = special.fma32(a, b, c)
    np.testing.assert_array_equal(_bits(kernels.fma(a, b, c)), _bits(want))
    np.testing.assert_array_equal(_bits(kernels.fma(a[::2], b[::2], c[::2])), _bits(want[::2]))
    frozen = a.copy()
    frozen.setflags(write=False)
    np.testing.assert_array_equal(_bits(kernels.fma(frozen, b, c)), _bits(want))
    raw = np.zeros(a.nbytes + 1, np.uint8)
    unaligned = raw[1:].view(np.float32)
    unaligned[:] = a
    got = kernels.fma(unaligned, b, c)
    assert got is None or np.array_equal(_bits(got), _bits(want))  # None: the caller's emulation takes over
    np.testing.assert_array_equal(_bits(special.mul_add(unaligned, b, c)), _bits(want))
    assert kernels.fma(a, b.astype(np.float64), c) is None  # mixed dtypes: not the kernel's
