"""Maximum and minimum order -0 below +0, as XLA's `max`/`min` do: `max(-0., +0.)` is +0 and `min(+0., -0.)` is -0
in either operand order, eagerly, in generated NumPy code (small arrays) and in fused Numba kernels (large ones),
for the elementwise primitives, `jnp.maximum/minimum/clip`, `nn.relu`, reductions, cumulative maxima and minima,
scatters and windowed reductions. `jnp.fmax/fmin` return their second operand on ties, as JAX's do.

Elementwise results are compared with real JAX sign bit for sign bit. Reductions are compared with the IEEE 754-2019
rule instead (a zero maximum is +0 if any element is +0): XLA itself answers a -0/+0 tie in a reduction
differently eagerly and under jit, so JAX is no oracle there.
"""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import config, lax

F32 = np.float32
SMALL = 8                 # generated NumPy code
LARGE = 1 << 15           # fused kernels (above fluxion_fuse_min_elements)

# Every ordered pair of the values around zero (ties, zero against nonzero, NaN).
_VALUES = np.array([0.0, -0.0, 1.0, -1.0, np.nan], F32)
_X = np.repeat(_VALUES, len(_VALUES))
_Y = np.tile(_VALUES, len(_VALUES))


def _tile(a, n):
    return np.resize(a, n).astype(a.dtype)


def _same_bits(got, want):
    """Equal values, equal dtypes, and equal sign bits except on NaN (whose sign XLA leaves open)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    g64, w64 = got.astype(np.float64), want.astype(np.float64)
    nan = np.isnan(w64)
    np.testing.assert_array_equal(np.isnan(g64), nan)
    np.testing.assert_array_equal(g64[~nan], w64[~nan])
    np.testing.assert_array_equal(np.signbit(g64[~nan]), np.signbit(w64[~nan]))


# name -> m -> function of (x, y): every record's results are compared with JAX's, both operand orders.
ELEMENTWISE = {
    "lax.max": lambda m: m.lax.max,
    "lax.min": lambda m: m.lax.min,
    "maximum": lambda m: m.numpy.maximum,
    "minimum": lambda m: m.numpy.minimum,
    "fmax": lambda m: m.numpy.fmax,
    "fmin": lambda m: m.numpy.fmin,
    "clip_lower": lambda m: lambda x, y: m.numpy.clip(x, y, None),
    "clip_upper": lambda m: lambda x, y: m.numpy.clip(x, None, y),
    "clamp": lambda m: lambda x, y: m.lax.clamp(y, x, y),
    "relu": lambda m: lambda x, y: m.nn.relu(x) + 0.0 * y,
    "max_with_0": lambda m: lambda x, y: m.numpy.maximum(x, 0.0),
    "max_with_neg0": lambda m: lambda x, y: m.numpy.maximum(x, -0.0),
    "min_with_0": lambda m: lambda x, y: m.numpy.minimum(x, 0.0),
    "min_with_neg0": lambda m: lambda x, y: m.numpy.minimum(x, -0.0),
    "max_in_chain": lambda m: lambda x, y: m.numpy.maximum(x * 1.0, y) * 2.0,
    "cummax": lambda m: lambda x, y: m.lax.cummax(m.numpy.stack([x, y, x]), axis=0),
    "cummin": lambda m: lambda x, y: m.lax.cummin(m.numpy.stack([x, y, x]), axis=0),
    "cummax_reverse": lambda m: lambda x, y: m.lax.cummax(m.numpy.stack([x, y, x]), axis=0, reverse=True),
    "scatter_max": lambda m: lambda x, y: x.at[m.numpy.arange(x.shape[0]) // 2].max(y),
    "scatter_min": lambda m: lambda x, y: x.at[m.numpy.arange(x.shape[0]) // 2].min(y),
}


def _run(fn, x, y, mode):
    if mode == "eager":
        return fn(x, y)
    with config.override("fluxion_jit_sync_kernels", True):  # the fused kernels run from the first call
        return fluxion.jit(fn)(x, y)


@pytest.mark.parametrize("name", list(ELEMENTWISE))
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_elementwise_max_min_signed_zeros_match_jax(name, dtype):
    jax = pytest.importorskip("jax")
    pytest.importorskip("jax.numpy")
    for size in (SMALL * len(_X), LARGE):
        x, y = _tile(_X, size).astype(dtype), _tile(_Y, size).astype(dtype)
        for a, b in ((x, y), (y, x)):
            want = np.asarray(jax.jit(ELEMENTWISE[name](jax))(a, b))
            for mode in ("eager", "jit"):
                got = _run(ELEMENTWISE[name](fluxion), jnp.asarray(a), jnp.asarray(b), mode)
                _same_bits(got, want)


def _reference_reduce(x, axis, is_max):
    """IEEE 754-2019 maximum/minimum over `axis`: NaN if any is NaN, and a zero result is +0 (max) if any element
    is +0, -0 (min) if any is -0."""
    x64 = x.astype(np.float64)
    out = np.max(x64, axis=axis) if is_max else np.min(x64, axis=axis)
    pos_zero = np.any((x64 == 0) & ~np.signbit(x64), axis=axis)
    neg_zero = np.any((x64 == 0) & np.signbit(x64), axis=axis)
    zero = out == 0
    out = np.where(zero & (pos_zero if is_max else ~neg_zero), 0.0, np.where(zero, -0.0, out))
    return out.astype(x.dtype)


REDUCTIONS = {
    "max": (lambda x: jnp.max(x, axis=0), True),
    "min": (lambda x: jnp.min(x, axis=0), False),
    "lax.reduce_max": (lambda x: lax.reduce_max(x, (0,)), True),
    "amax_all_rows": (lambda x: jnp.max(x, axis=1), True),
}


@pytest.mark.parametrize("name", list(REDUCTIONS))
@pytest.mark.parametrize("order", ["neg_first", "pos_first"])
def test_max_min_reductions_order_negative_zero_below_positive_zero(name, order):
    fn, is_max = REDUCTIONS[name]
    pair = [-0.0, 0.0] if order == "neg_first" else [0.0, -0.0]
    for n in (SMALL, LARGE):
        cols = [np.array(pair, F32), np.array([-0.0, -0.0], F32), np.array([0.0, 0.0], F32),
                np.array([-0.0, -1.0], F32), np.array([0.0, 1.0], F32), np.array([np.nan, 0.0], F32)]
        x = np.stack([cols[i % len(cols)] for i in range(n)], axis=1)  # (2, n): each column one case
        if name == "amax_all_rows":
            x = x.T.copy()
            want = _reference_reduce(x, 1, is_max)
        else:
            want = _reference_reduce(x, 0, is_max)
        for mode in ("eager", "jit"):
            got = fn(jnp.asarray(x)) if mode == "eager" else _run(lambda a, _: fn(a), jnp.asarray(x), None, "jit")
            _same_bits(got, want)


@pytest.mark.parametrize("is_max", [True, False], ids=["max", "min"])
def test_windowed_max_min_eager_order_negative_zero_below_positive_zero(is_max):
    x = np.array([[0.0, -0.0, -0.0, 0.0, -0.0, -0.0, 0.0, 1.0]], F32)
    op, init = (lax.max, -np.inf) if is_max else (lax.min, np.inf)
    got = lax.reduce_window(jnp.asarray(x), F32(init), op, (1, 2), (1, 1), "VALID")
    windows = np.stack([x[:, :-1], x[:, 1:]])
    _same_bits(got, _reference_reduce(windows, 0, is_max))


# (window, strides, padding) of reduce_window cases over a zero-heavy (1, 4, 8, 1) operand; one case pads explicitly
# with lax.pad first (the compiler absorbs that pad into the reduction).
_WINDOW_CASES = {
    "valid_2x2": ((1, 2, 2, 1), (1, 1, 1, 1), "VALID", None),
    "strided_padded": ((1, 2, 2, 1), (1, 1, 2, 1), ((0, 0), (1, 0), (0, 1), (0, 0)), None),
    "pad_then_reduce": ((1, 2, 2, 1), (1, 1, 1, 1), "VALID", ((0, 0, 0), (1, 0, 1), (0, 1, 0), (0, 0, 0))),
    "dilated_3": ((1, 3, 1, 1), (1, 1, 1, 1), "SAME", None),
}


@pytest.mark.parametrize("name", sorted(_WINDOW_CASES))
@pytest.mark.parametrize("is_max", [True, False], ids=["max", "min"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_windowed_max_min_signed_zeros_match_jax_eager_and_jit(name, is_max, dtype):
    jax = pytest.importorskip("jax")
    window, strides, padding, pad_cfg = _WINDOW_CASES[name]
    x = np.array([0.0, -0.0, -0.0, 0.0, -0.0, -0.0, -2.0, -0.0, 3.0, -0.0, 0.0, 0.0] * 3, dtype)[:32]
    x = x.reshape(1, 4, 8, 1)
    init = dtype(-np.inf if is_max else np.inf)

    def program(lx):
        def f(a):
            if pad_cfg is not None:
                a = lx.pad(a, init, pad_cfg)
            return lx.reduce_window(a, init, lx.max if is_max else lx.min, window, strides, padding)
        return f
    want = np.asarray(jax.jit(program(jax.lax))(x))
    _same_bits(program(lax)(jnp.asarray(x)), want)
    _same_bits(fluxion.jit(program(lax))(jnp.asarray(x)), want)
    with config.override("fluxion_jit_sync_kernels", True):  # the compiled Numba kernels
        _same_bits(fluxion.jit(program(lax))(jnp.asarray(x)), want)


@pytest.mark.parametrize("transform", ["pmap", "vmap"])
def test_pmax_pmin_across_replicas_order_negative_zero_below_positive_zero(transform):
    x = np.array([[-0.0, 0.0, -0.0, 0.0], [0.0, -0.0, -0.0, 1.0]], F32)  # one row per replica

    def f(v):
        return lax.pmax(v, "i"), lax.pmin(v, "i")

    with config.override("jax_num_cpu_devices", 2):
        mapped = fluxion.pmap(f, axis_name="i") if transform == "pmap" else fluxion.vmap(f, axis_name="i")
        hi, lo = mapped(jnp.asarray(x))
    for row in range(2):
        _same_bits(hi[row], _reference_reduce(x, 0, True))
        _same_bits(lo[row], _reference_reduce(x, 0, False))


# (shape, axis) of sums of negative zeros: over axes of extent 1 only XLA reshapes (the result keeps -0.0); over more
# elements it adds from +0.0.
_ONE_ELEMENT_SUMS = [((1,), None), ((3, 1), 1), ((1, 3), 0), ((2, 1, 4), (1,)), ((2,), None), ((3, 1), (0, 1)),
                     ((1, 1), None)]


@pytest.mark.parametrize("shape,axis", _ONE_ELEMENT_SUMS, ids=[f"{s}-{a}" for s, a in _ONE_ELEMENT_SUMS])
@pytest.mark.parametrize("how", ["eager", "jit", "jit_large"])
def test_sums_of_negative_zero_keep_the_sign_as_jax(shape, axis, how):
    jax = pytest.importorskip("jax")
    jjnp = pytest.importorskip("jax.numpy")
    if how == "jit_large":   # a fused reduction (the compiled program of a large operand)
        shape = (LARGE,) + shape
        axis = None if axis is None else tuple(a + 1 for a in np.atleast_1d(axis))
    x = -np.zeros(shape, F32)
    want = jax.jit(jjnp.sum, static_argnums=1)(x, axis)
    f = jnp.sum if how == "eager" else fluxion.jit(jnp.sum, static_argnums=1)
    _same_bits(f(x, axis), want)
    np.testing.assert_array_equal(np.signbit(np.asarray(jjnp.sum(x, axis))), np.signbit(np.asarray(want)))
