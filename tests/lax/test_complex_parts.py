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
