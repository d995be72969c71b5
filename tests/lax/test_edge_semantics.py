"""JAX's answers at the edges of the elementwise semantics, in every execution mode.

Each record is one program with hard-coded inputs and the outputs JAX 0.10 gives for them (so the test means
something without JAX installed); it runs eagerly, under `fluxion.jit`, and under `jit` in the fused tier's check
mode (`fluxion_check_fusion`: low fusion thresholds, every fused kernel compared with NumPy), and, when JAX is
importable, the same program runs through `jax` itself and must give the hard-coded values too.

Covered: saturating float -> integer casts (NaN -> 0, +-inf and out-of-range values -> the integer bounds),
integer division and remainder by zero (`//`, `%`, `fmod`, `divmod`, `lax.div`, `lax.rem`), CPython-style float
floor division, `lax.round`'s treatment of signed zeros and near-halves, and derivatives at the kinks and ties
(`abs` at 0, integer and float exponents at 0, `logaddexp`, `cumlogsumexp` and `hypot` at ties).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp
from fluxion import config
from fluxion import lax as flax_

inf, nan = np.inf, np.nan
F32 = np.float32


@dataclasses.dataclass(frozen=True)
class Case:
    """One program: `build(jax_module, jnp_module, lax_module)` returns a function of `args`; `want` is JAX's output
    (a tuple of arrays, compared exactly, dtypes included)."""

    name: str
    build: Callable[[Any, Any, Any], Callable]
    args: tuple
    want: tuple


def _cast_case(dtype, want):
    src = np.array([nan, inf, -inf, 1e20, -1e20, 300.7, -300.7, -1.5, 0.5], F32)
    return Case(f"cast_f32_{dtype}", lambda jax, jnp, lax: (lambda x: (x.astype(dtype),)), (src,),
                (np.array(want, dtype),))


_I32 = (0, 2147483647, -2147483648, 2147483647, -2147483648, 300, -300, -1, 0)
CAST_CASES = [
    _cast_case("int8", (0, 127, -128, 127, -128, 127, -128, -1, 0)),
    _cast_case("uint8", (0, 255, 0, 255, 0, 255, 0, 0, 0)),
    _cast_case("int16", (0, 32767, -32768, 32767, -32768, 300, -300, -1, 0)),
    _cast_case("uint16", (0, 65535, 0, 65535, 0, 300, 0, 0, 0)),
    _cast_case("int32", _I32),
    _cast_case("uint32", (0, 4294967295, 0, 4294967295, 0, 300, 0, 0, 0)),
    Case("cast_bf16_int32", lambda jax, jnp, lax: (lambda x: (x.astype(jnp.bfloat16).astype("int32"),)),
         (np.array([nan, inf, -inf, 1e20, -1e20, 300.7, -300.7, -1.5, 0.5], F32),), (np.array(_I32, np.int32),)),
    Case("cast_f32_int32_lax", lambda jax, jnp, lax: (lambda x: (lax.convert_element_type(x, np.int32),)),
         (np.array([2147483520.0, 2147483648.0, -2147483648.0, -2147483904.0], F32),),
         (np.array([2147483520, 2147483647, -2147483648, -2147483648], np.int32),)),
]


def _division(jax, jnp, lax):
    return lambda a, b: (a // b, a % b, jnp.fmod(a, b), *jnp.divmod(a, b), lax.div(a, b), lax.rem(a, b))


def _int_division_case(dtype, want):
    a = np.array([5, 7 if dtype[0] == "u" else -5, 0, 1, 3, 7], dtype)
    b = np.array([0, 0, 0, 0, 2, 3], dtype)
    return Case(f"division_{dtype}", _division, (a, b), tuple(np.array(w, dtype) for w in want))


DIVISION_CASES = [
    # (//, %, fmod, divmod's two, lax.div, lax.rem): x // 0 moves the truncating -1 down where x != 0; x % 0 is 0.
    _int_division_case("int8", ([-2, -2, -1, -2, 1, 2], [0, 0, 0, 0, 1, 1], [0, 0, 0, 0, 1, 1],
                                [-2, -2, -1, -2, 1, 2], [0, 0, 0, 0, 1, 1], [-1, -1, -1, -1, 1, 2],
                                [5, -5, 0, 1, 1, 1])),
    _int_division_case("int32", ([-2, -2, -1, -2, 1, 2], [0, 0, 0, 0, 1, 1], [0, 0, 0, 0, 1, 1],
                                 [-2, -2, -1, -2, 1, 2], [0, 0, 0, 0, 1, 1], [-1, -1, -1, -1, 1, 2],
                                 [5, -5, 0, 1, 1, 1])),
    _int_division_case("uint8", ([255, 255, 255, 255, 1, 2], [0, 0, 0, 0, 1, 1], [0, 0, 0, 0, 1, 1],
                                 [255, 255, 255, 255, 1, 2], [0, 0, 0, 0, 1, 1], [255, 255, 255, 255, 1, 2],
                                 [5, 7, 0, 1, 1, 1])),
    _int_division_case("uint32", ([4294967295] * 4 + [1, 2], [0, 0, 0, 0, 1, 1], [0, 0, 0, 0, 1, 1],
                                  [4294967295] * 4 + [1, 2], [0, 0, 0, 0, 1, 1], [4294967295] * 4 + [1, 2],
                                  [5, 7, 0, 1, 1, 1])),
    Case("division_float32", lambda jax, jnp, lax: (lambda a, b: (a // b, *jnp.divmod(a, b))),
         (np.array([1.0, -1.0, -0.0, 0.0, 3.0, 1.0, -7.5, 7.5], F32),
          np.array([0.1, 0.1, 1.0, -1.0, -0.0, 0.0, 2.0, -2.0], F32)),
         (np.array([9, -10, 0.0, -0.0, -inf, inf, -4, -4], F32),
          np.array([9, -10, 0.0, -0.0, -inf, inf, -4, -4], F32),
          np.array([0.099999987, 1.4901161e-08, -0.0, 0.0, nan, nan, 0.5, -0.5], F32))),
    Case("round", lambda jax, jnp, lax: (lambda x: (lax.round(x), lax.round(x, 1))),
         (np.array([-0.0, 0.49999997, -0.49999997, 0.5, -0.5, 2.5, -0.3, inf, nan], F32),),
         (np.array([-0.0, 0.0, -0.0, 1.0, -1.0, 3.0, -0.0, inf, nan], F32),
          np.array([-0.0, 0.0, -0.0, 0.0, -0.0, 2.0, -0.0, inf, nan], F32))),
]


def _grads(fn, argnums=0):
    """vmap of the gradient of a scalar function of scalars: one derivative per input element."""
    return lambda jax: jax.vmap(jax.grad(fn, argnums=argnums))


GRAD_CASES = [
    Case("grad_abs", lambda jax, jnp, lax: (lambda x: (_grads(jnp.abs)(jax)(x),)),
         (np.array([0.0, -0.0, 2.0, -2.0, nan], F32),), (np.array([1.0, 1.0, 1.0, -1.0, -1.0], F32),)),
    Case("grad_abs_complex", lambda jax, jnp, lax: (lambda z: (jax.vmap(jax.grad(jnp.abs))(z),)),
         (np.array([0, 3 + 4j], np.complex64),), (np.array([0, 0.6 - 0.8j], np.complex64),)),
    Case("grad_pow_exponent_zero", lambda jax, jnp, lax: (lambda x: (
        _grads(lambda v: v ** 0)(jax)(x),
        _grads(lambda v: v ** 0.0)(jax)(x),
        jax.grad(lambda v: jnp.sum(v ** jnp.array([0, 1, 2, 0], np.int32)))(x),
        jax.grad(lambda v: jnp.sum(v ** jnp.array([0.0, 1.0, 2.0, 0.0], F32)))(x))),
         (np.array([0.0, 0.0, 0.0, -1.0], F32),),
         (np.zeros(4, F32), np.array([nan, nan, nan, -0.0], F32), np.array([0.0, 1.0, 0.0, 0.0], F32),
          np.array([nan, 1.0, 0.0, -0.0], F32))),
    Case("grad_relu_maximum_clip_ties", lambda jax, jnp, lax: (lambda x: (
        _grads(jax.nn.relu)(jax)(x),
        _grads(lambda v: jnp.maximum(v, 0.0))(jax)(x),
        _grads(lambda v: jnp.clip(v, 0.0, 1.0))(jax)(x))),
         (np.array([0.0, 1.0, 0.5], F32),),
         (np.array([0.0, 1.0, 1.0], F32), np.array([0.5, 1.0, 1.0], F32), np.array([0.5, 0.5, 1.0], F32))),
    Case("grad_logaddexp_softplus_hypot_ties", lambda jax, jnp, lax: (lambda x, y: (
        *_grads(jnp.logaddexp, (0, 1))(jax)(x, y),
        _grads(jax.nn.softplus)(jax)(x),
        *_grads(jnp.hypot, (0, 1))(jax)(x, y))),
         (np.array([0.0, inf, -inf, 2.0], F32), np.array([0.0, inf, -inf, 2.0], F32)),
         (np.array([0.5, 1.0, nan, 0.5], F32), np.array([0.5, 1.0, nan, 0.5], F32),
          np.array([0.5, 1.0, 0.0, 0.880797], F32),
          np.array([0.5, nan, nan, 0.70710677], F32), np.array([0.5, nan, nan, 0.70710677], F32))),
]

GRAD_CASES.append(Case(
    "grad_cumlogsumexp_ties", lambda jax, jnp, lax: (lambda x: (
        jax.grad(lambda v: jnp.sum(lax.cumlogsumexp(v) * jnp.arange(1.0, 6.0)))(x),)),
    (np.array([1.0, 1.0, 0.0, -inf, 2.0], F32),),
    (np.array([5.939291, 4.939291, 1.4491843, 0.0, 2.6722331], F32),)))

CASES = CAST_CASES + DIVISION_CASES + GRAD_CASES


def _check(got, want, name):
    assert len(got) == len(want), name
    for i, (g, w) in enumerate(zip(got, want)):
        g = np.asarray(g)
        assert g.dtype == w.dtype, (name, i, g.dtype, w.dtype)
        if w.dtype.kind in "fc":
            np.testing.assert_allclose(g, w, rtol=2e-6, atol=0, err_msg=f"{name}[{i}]")
            # Signed zeros are part of the answer (floor division and round keep them).
            zero = np.real(w) == 0
            np.testing.assert_array_equal(np.signbit(np.real(g))[zero], np.signbit(np.real(w))[zero],
                                          err_msg=f"{name}[{i}]")
        else:
            np.testing.assert_array_equal(g, w, err_msg=f"{name}[{i}]")


MODES = ["eager", "jit", "fused"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_fluxion_matches_jax_values(case, mode):
    fn = case.build(fluxion, fnp, flax_)
    args = [np.array(a) for a in case.args]
    if mode == "eager":
        got = fn(*[fnp.asarray(a) for a in args])
    elif mode == "jit":
        got = fluxion.jit(fn)(*args)
    else:
        with config.override("fluxion_check_fusion", True):
            got = fluxion.jit(fn)(*args)
    _check(got, case.want, case.name)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_hard_coded_values_are_jax_values(case):
    jax = pytest.importorskip("jax")
    import jax.numpy as jjnp
    from jax import lax as jlax

    fn = case.build(jax, jjnp, jlax)
    _check(jax.jit(fn)(*case.args), case.want, case.name)
    _check(fn(*[jjnp.asarray(a) for a in case.args]), case.want, case.name)


def test_float_to_int64_casts_saturate_with_x64():
    x = np.array([nan, inf, -inf, 1e19, -1e19, 2.0 ** 62, -(2.0 ** 63)], np.float64)
    want_i64 = np.array([0, 2 ** 63 - 1, -(2 ** 63), 2 ** 63 - 1, -(2 ** 63), 2 ** 62, -(2 ** 63)], np.int64)
    want_u64 = np.array([0, 2 ** 64 - 1, 0, 10 ** 19, 0, 2 ** 62, 0], np.uint64)
    with config.override("jax_enable_x64", True):
        xs = fnp.asarray(x)
        for dtype, want in [(np.int64, want_i64), (np.uint64, want_u64)]:
            np.testing.assert_array_equal(np.asarray(xs.astype(dtype)), want)
            np.testing.assert_array_equal(np.asarray(fluxion.jit(lambda v, d=dtype: v.astype(d))(x)), want)
