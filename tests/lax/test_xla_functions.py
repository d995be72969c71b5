"""float32 `tanh`, `exp` and `log` have JAX's bits: XLA's CPU backend computes tanh as Eigen's rational interpolant,
exp and log as Cephes-style polynomials, all with fused multiply-adds (NumPy's differ from them on about 60%, 40%
and 4% of float32 inputs; XLA's log also takes subnormal inputs as zero). Compared with real JAX bit for bit eagerly (float32, and float16/bfloat16 computed in float32),
under `jit` in the generated NumPy code and in fused kernels, and for the NumPy emulation and the compiled eager
kernel separately, special values included. Subnormal results are left out of the comparison: XLA's runtime flushes
them to zero, fluxion does not (a known difference of every operation, not of these functions).
"""

from __future__ import annotations

import contextlib
import time

import ml_dtypes
import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import config
from fluxion._src import test_util as tu
from fluxion._src.backends.compiler.fusion import check as fusion_check
from fluxion._src.backends.eager import kernels, special

jax = pytest.importorskip("jax")


FUNCTIONS = ["tanh", "exp", "log"]


def _inputs(name: str) -> np.ndarray:
    rng = np.random.default_rng(5)
    special_values = [0.0, -0.0, np.inf, -np.inf, np.nan, 0.0004, -0.0004, 0.00039999, 7.99881172, 8.0, -9.0, 1e-40,
                      3.4e38, -3.4e38, 1e-30, 88.72, 88.73, 89.0, -87.3, -103.9, -104.0, -150.0]
    x = np.concatenate([rng.uniform(-10, 10, 40000), rng.uniform(-1e-3, 1e-3, 10000), rng.standard_normal(10000),
                        rng.uniform(-87, 89, 10000), special_values]).astype(np.float32)
    if name == "exp":  # (inputs whose exp is subnormal: see the module docstring)
        x = x[~((x < -87.33) & (x > -np.inf))]
    if name == "log":  # positive inputs over the whole range, and the special ones
        mags = (np.float32(10.0) ** rng.uniform(-37.9, 38.5, 60000)).astype(np.float32)
        x = np.concatenate([mags, np.abs(x[:20000]), np.float32(special_values), [1e-45, -1e-45]]).astype(np.float32)
    return x


def _subnormal_free(x: np.ndarray) -> np.ndarray:
    return x[~((np.abs(x) < np.finfo(np.float32).tiny) & (x != 0))]


def _bits(x):
    x = np.asarray(x)
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


def _assert_same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(_bits(got[~nan]), _bits(want[~nan]))


@pytest.mark.parametrize("name", FUNCTIONS)
def test_eager_functions_match_jax(name):
    x = _inputs(name)
    ours, theirs = getattr(jnp, name), getattr(jax.numpy, name)
    want = theirs(x)
    with np.errstate(all="ignore"):
        assert not np.array_equal(getattr(np, name)(x), np.asarray(want))  # NumPy's function is not XLA's
    _assert_same(ours(x), want)
    _assert_same(ours(x[7]), theirs(x[7]))  # 0-d
    _assert_same(ours(x[::3]), theirs(x[::3]))  # strided
    if name == "exp":  # rounding to 16 bits moves some inputs below -87.33 (subnormal results)
        x = x[~(x < -80)]
    for dt in (np.float16, ml_dtypes.bfloat16):
        with np.errstate(over="ignore"):  # 3.4e38 is inf in float16
            small = x.astype(dt)
        _assert_same(ours(small), theirs(small))


@pytest.mark.parametrize("tier", ["numpy", "fused"])
@pytest.mark.parametrize("name", FUNCTIONS)
def test_jitted_functions_match_jax(name, tier):
    x = _subnormal_free(_inputs(name))
    x = x[: x.size // 2 * 2].reshape(-1, 2)
    f = lambda m: lambda v: getattr(m.numpy, name)(v) * 2.0  # noqa: E731  (two operations: fused above the threshold)
    with config.override("fluxion_jit_sync_kernels", tier == "fused"), \
            config.override("fluxion_jit_fusion", tier == "fused"):
        g = fluxion.jit(f(fluxion))
        want = np.asarray(jax.jit(f(jax))(x))
        got = np.asarray(g(x))
        kept = ~((np.abs(want) < np.finfo(np.float32).tiny) & (want != 0)) & np.isfinite(want) | np.isnan(want)
        _assert_same(got[kept], want[kept])
        if not fusion_check.enabled():  # (check mode builds kernels in every tier)
            assert (f"_{name}f" in g.lower(x).compile().as_text()) == (tier == "fused")


@pytest.mark.parametrize("name", FUNCTIONS)
def test_emulation_and_kernel_agree(name):
    x = _inputs(name)
    kernels.unary(name, x)  # starts the compile
    for _ in range(1200):
        if kernels._unary_ready.get(name) is not None:
            break
        time.sleep(0.05)
    got = kernels.unary(name, x)
    assert got is not None, f"the {name} kernel did not compile within 60 s"
    saved = kernels._unary_ready.pop(name)
    try:
        emulated = getattr(special, f"{name}_f32")(x)
    finally:
        kernels._unary_ready[name] = saved
    _assert_same(got, emulated)
    _assert_same(got, getattr(jax.numpy, name)(x))


# -- pow: the C library's powf/pow, as XLA calls it -------------------------------------------------------------
def _pow_inputs(dtype) -> tuple:
    rng = np.random.default_rng(11)
    x = np.concatenate([rng.uniform(0, 3, 30000), rng.uniform(-3, 3, 2000), [0.0, -0.0, 1.0, np.inf, np.nan, 2.0, 0.5]])
    y = np.concatenate([rng.uniform(-20, 20, 30000), np.round(rng.uniform(-9, 9, 2000)),
                        [2.0, -1.0, np.nan, 0.5, 1.0, np.inf, -np.inf]])
    return x.astype(dtype), y.astype(dtype)


def _assert_same_normal(got, want):
    """Bits equal, except where fluxion's result is subnormal, or twice that (XLA's runtime flushes subnormal values,
    results and intermediates, to zero)."""
    got, want = np.asarray(got), np.asarray(want)
    keep = ~((np.abs(got.astype(np.float64)) < 2 * float(ml_dtypes.finfo(got.dtype).tiny)) & (got != 0))
    _assert_same(got[keep], want[keep])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16])
def test_eager_pow_matches_jax(dtype):
    x, y = _pow_inputs(np.float32 if dtype in (np.float16, ml_dtypes.bfloat16) else dtype)
    if dtype in (np.float16, ml_dtypes.bfloat16):
        x, y = x.astype(dtype), (y / 4).astype(dtype)
    with tu.enable_x64(jax.config) if dtype == np.float64 else contextlib.nullcontext():
        want = np.asarray(jax.numpy.power(x, y))
        if dtype in (np.float32, np.float64):
            with np.errstate(all="ignore"):
                assert not np.array_equal(np.power(x, y), want, equal_nan=True)  # NumPy's power is not XLA's
        _assert_same_normal(jnp.power(x, y), want)
        _assert_same_normal(jnp.power(x[:50], y[:50]), want[:50])  # small: element by element until compiled
        _assert_same_normal(jnp.power(x[3], y[3]), want[3])  # 0-d
        _assert_same_normal(jnp.power(x, y[5]), jax.numpy.power(x, y[5]))  # a scalar exponent


def test_pow_with_integer_exponent_matches_jax():
    # Adam's bias correction, 1 - b ** count with an int32 count: XLA converts the exponent and calls powf.
    count = np.arange(1, 3000, dtype=np.int32)
    for f in (lambda m: lambda c: 1 - 0.9 ** c, lambda m: lambda c: m.numpy.power(np.float32(0.999), c)):
        want = np.asarray(jax.jit(f(jax))(count))
        _assert_same_normal(f(fluxion)(jnp.asarray(count)), want)
        _assert_same_normal(fluxion.jit(f(fluxion))(count), want)


def test_pow_kernel_and_c_library_agree():
    x, y = _pow_inputs(np.float32)
    got = special.power(x, y)  # waits for the compiled loop
    assert kernels._pow_ready.get(np.dtype(np.float32)) is not None or special._c_library_pow() == {}
    c_pow = special._c_library_pow().get(np.dtype(np.float32))
    if c_pow is None:
        pytest.skip("no C library reachable through ctypes")
    _assert_same(special._power_each(x[:3000], y[:3000], c_pow), got[:3000])


@pytest.mark.parametrize("tier", ["numpy", "fused"])
def test_jitted_pow_matches_jax(tier):
    x, y = _pow_inputs(np.float32)
    f = lambda m: lambda a, b: m.numpy.power(a, b) * 2.0  # noqa: E731
    with config.override("fluxion_jit_sync_kernels", tier == "fused"), \
            config.override("fluxion_jit_fusion", tier == "fused"):
        _assert_same_normal(fluxion.jit(f(fluxion))(x, y), jax.jit(f(jax))(x, y))


# -- logistic: XLA's expansion 1 / (1 + exp(-x)) ------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_eager_logistic_matches_jax(dtype):
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.standard_normal(40000) * 8, rng.uniform(-90, 90, 10000),
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 88.0, -88.0, -87.0, 1e-30]]).astype(dtype)
    want = jax.nn.sigmoid(x)
    _assert_same_normal(fluxion.nn.sigmoid(x), want)
    _assert_same_normal(fluxion.lax.logistic(x[4]), jax.lax.logistic(x[4]))


@pytest.mark.parametrize("tier", ["numpy", "fused"])
def test_jitted_logistic_matches_jax(tier):
    rng = np.random.default_rng(4)
    x = np.concatenate([rng.standard_normal(40000) * 8, [0.0, np.inf, -np.inf, np.nan, -88.0, 87.0]]).astype(np.float32)
    f = lambda m: lambda v: m.nn.sigmoid(v) * 2.0  # noqa: E731
    with config.override("fluxion_jit_sync_kernels", tier == "fused"), \
            config.override("fluxion_jit_fusion", tier == "fused"):
        g = fluxion.jit(f(fluxion))
        _assert_same_normal(g(x), jax.jit(f(jax))(x))
        if not fusion_check.enabled():
            assert ("_logisticf" in g.lower(x).compile().as_text()) == (tier == "fused")
