"""float32 `tanh`, `exp` and `log` have JAX's bits: XLA's CPU backend computes tanh as Eigen's rational interpolant,
exp and log as Cephes-style polynomials, all with fused multiply-adds (NumPy's differ from them on about 60%, 40%
and 4% of float32 inputs; XLA's log also takes subnormal inputs as zero). Compared with real JAX bit for bit eagerly (float32, and float16/bfloat16 computed in float32),
under `jit` in the generated NumPy code and in fused kernels, and for the NumPy emulation and the compiled eager
kernel separately, special values included. Subnormal results are left out of the comparison: XLA's runtime flushes
them to zero, fluxion does not (a known difference of every operation, not of these functions).
"""

from __future__ import annotations

import time

import ml_dtypes
import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import config
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
