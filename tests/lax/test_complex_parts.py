"""Complex numbers with infinite, NaN and signed-zero parts, compared with real JAX part by part (sign bits
included), eagerly and under `jit`: `lax.complex` stores its operands as the parts (`complex(0., inf)` is inf j, not
nan + inf j; `complex(-0., y)` keeps the -0), and `abs` of a value with a NaN part is NaN even beside an infinite
part, as XLA computes it; so are `log`, `log1p` and `sqrt` (log1p, sqrt and log2 are compared on the inputs with a
NaN part only: on finite ones they may differ from XLA's in the last bit)."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp

_VALUES = np.array([0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan], np.float32)
RE = np.repeat(_VALUES, len(_VALUES))
IM = np.tile(_VALUES, len(_VALUES))
Z = np.empty(RE.shape, np.complex64)
Z.real, Z.imag = RE, IM


def _parts(a):
    a = np.asarray(a)
    if a.dtype.kind != "c":
        return [(np.isnan(v), None if np.isnan(v) else (float(v), bool(np.signbit(v)))) for v in a.ravel()]
    return list(zip(_parts(a.real), _parts(a.imag)))


# name -> (m -> function, args)
CASES = {
    "complex": (lambda m: m.lax.complex, (RE, IM)),
    "complex_scalar_imag": (lambda m: lambda x: m.lax.complex(x, np.float32(np.inf)), (RE,)),
    "complex_scalar_real": (lambda m: lambda y: m.lax.complex(np.float32(-0.0), y), (IM,)),
    "complex_then_parts": (lambda m: lambda x, y: (m.lax.real(m.lax.complex(x, y)), m.lax.imag(m.lax.complex(x, y))),
                           (RE, IM)),
    "conj": (lambda m: m.lax.conj, (Z,)),
    "neg": (lambda m: m.lax.neg, (Z,)),
    "abs": (lambda m: m.lax.abs, (Z,)),
    "jnp.abs": (lambda m: m.numpy.abs, (Z,)),
    "real_to_complex": (lambda m: lambda x: m.lax.convert_element_type(x, np.complex64), (RE,)),
    # A NaN part gives NaN + NaN j, even beside an infinite part (NumPy's C99 functions keep the infinity).
    "log": (lambda m: m.lax.log, (Z,)),
    "log1p": (lambda m: lambda z: m.numpy.where(m.numpy.isnan(z), m.lax.log1p(z), 0), (Z,)),
    "sqrt": (lambda m: lambda z: m.numpy.where(m.numpy.isnan(z), m.lax.sqrt(z), 0), (Z,)),
    "log2": (lambda m: lambda z: m.numpy.where(m.numpy.isnan(z), m.numpy.log2(z), 0), (Z,)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_complex_parts_match_jax(name):
    jax = pytest.importorskip("jax")
    pytest.importorskip("jax.numpy")
    build, args = CASES[name]
    want = jax.tree_util.tree_map(_parts, jax.jit(build(jax))(*args))
    fn = build(fluxion)
    fargs = [jnp.asarray(a) for a in args]
    assert fluxion.tree_util.tree_map(_parts, fn(*fargs)) == want
    assert fluxion.tree_util.tree_map(_parts, fluxion.jit(fn)(*fargs)) == want


def test_complex_is_still_linear_in_its_parts_under_grad():
    jax = pytest.importorskip("jax")
    pytest.importorskip("jax.numpy")
    for m in (fluxion, jax):
        def f(x, y, m=m):
            z = m.lax.complex(x, y)
            return m.numpy.real(z * m.numpy.conj(z)).sum()
        x, y = np.array([1.0, -2.0], np.float32), np.array([0.5, 3.0], np.float32)
        gx, gy = m.grad(f, argnums=(0, 1))(x, y)
        np.testing.assert_allclose(np.asarray(gx), 2 * x, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(gy), 2 * y, rtol=1e-6)


# -- XLA's formulas at special parts: exp, expm1, sin, cos, tan, sinh, cosh, tanh, sign, rsqrt, division ------

_SPECIAL = np.array([0.0, -0.0, 1.0, -2.5, 0.5, 1e30, -1e30, 3e38, np.inf, -np.inf, np.nan])


def _grid(dtype):
    """Every (real, imag) pair of _SPECIAL as a complex array of `dtype`, and all ordered pairs of a smaller set
    (numerator, denominator) for division."""
    rdt = np.finfo(dtype).dtype
    re, im = np.meshgrid(_SPECIAL.astype(rdt), _SPECIAL.astype(rdt), indexing="ij")
    z = np.empty(re.size, dtype)
    z.real, z.imag = re.ravel(), im.ravel()
    num, den = np.meshgrid(z[::2], z, indexing="ij")
    return z, num.ravel(), den.ravel()


def _close_parts(got, want, cancelling=None):
    """Part by part: NaN where XLA has NaN, equal infinities, equal signs of exact zeros, and finite values within
    float rounding of XLA's relative to the result's magnitude (XLA contracts some products into fused multiply-adds
    and flushes subnormal results to zero, which moves a cancelling part by a few ulps of the magnitude, and can
    give its zero the other sign: `cancelling` marks the entries where that can happen)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    eps = np.finfo(want.dtype).eps
    mag = np.maximum(np.abs(np.nan_to_num(want.real, posinf=0, neginf=0)),
                     np.abs(np.nan_to_num(want.imag, posinf=0, neginf=0)))
    for g, w in ((got.real, want.real), (got.imag, want.imag)):
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        np.testing.assert_array_equal(np.isinf(g) & (g > 0), np.isinf(w) & (w > 0))
        np.testing.assert_array_equal(np.isinf(g) & (g < 0), np.isinf(w) & (w < 0))
        fin = np.isfinite(w) & np.isfinite(g)
        tol = 16 * eps * mag + np.finfo(want.dtype).tiny  # a flushed subnormal is within `tiny` of it
        assert np.all(np.abs(g[fin] - w[fin]) <= tol[fin]), np.flatnonzero(fin)[np.abs(g[fin] - w[fin]) > tol[fin]]
        zeros = (g == 0) & (w == 0) & (True if cancelling is None else ~cancelling)
        np.testing.assert_array_equal(np.signbit(g[zeros]), np.signbit(w[zeros]))


# name -> (m -> function of one complex array), or of (numerator, denominator) for "divide"
SPECIAL_CASES = {
    "exp": lambda m: m.numpy.exp,
    "expm1": lambda m: m.numpy.expm1,
    "sinh": lambda m: m.numpy.sinh,
    "cosh": lambda m: m.numpy.cosh,
    "sin": lambda m: m.numpy.sin,
    "cos": lambda m: m.numpy.cos,
    "tan": lambda m: m.numpy.tan,
    "tanh": lambda m: m.numpy.tanh,
    "sign": lambda m: m.numpy.sign,
    "rsqrt": lambda m: m.lax.rsqrt,
    "divide": lambda m: lambda a, b: a / b,
}


@pytest.mark.parametrize("name", list(SPECIAL_CASES))
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_special_values_match_jax(name, dtype):
    jax = pytest.importorskip("jax")
    z, num, den = _grid(dtype)
    args = (num, den) if name == "divide" else (z,)
    with jax.enable_x64(dtype == np.complex128), fluxion.config.override("jax_enable_x64", dtype == np.complex128):
        want = np.asarray(jax.jit(SPECIAL_CASES[name](jax))(*args))
        fn = SPECIAL_CASES[name](fluxion)
        fargs = [jnp.asarray(a) for a in args]
        # Division of operands whose parts are all finite and nonzero can cancel (a + b * (d / c) == 0).
        parts = np.stack([num.real, num.imag, den.real, den.imag]) if name == "divide" else None
        cancelling = None if parts is None else np.all(np.isfinite(parts) & (parts != 0), axis=0)
        _close_parts(fn(*fargs), want, cancelling)
        _close_parts(fluxion.jit(fn)(*fargs), want, cancelling)
