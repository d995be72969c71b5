"""Multiply-add contraction (`passes.contract`): jitted multiply-adds have JAX's bits.

XLA's CPU code fuses a product into the add or subtract reading it (one rounding); eager JAX and NumPy round twice.
Each program below is compared with `jax.jit` of the same program bit for bit, in the generated NumPy code and in
fused Numba kernels, for float32 and float64; the contracted forms also check that eager JAX (two roundings)
differs from jitted JAX on the data, so the comparison can tell the roundings apart.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import config, lax
from fluxion._src.backends.compiler import passes
from fluxion._src.backends.eager import kernels, special
from fluxion._src.core import ClosedJaxpr


def _two(m):
    def f(a, b, c, d, s):
        t = a * b
        return t + c, t + d
    return f


def _shared_loop(m):
    def f(a, b, c, d, s):
        t = a * b
        return (t + c) * (t + d)
    return f


def _product_and_sum(m):
    def f(a, b, c, d, s):
        t = a * b
        return (t + c) + t * d
    return f


def _returned(m):
    def f(a, b, c, d, s):
        t = a * b
        return t + c, t
    return f


def _summed(m):
    def f(a, b, c, d, s):
        t = a * b
        return t + c, m.numpy.max(t, axis=0)
    return f


def _elementwise_readers(m):
    def f(a, b, c, d, s):
        t = a * b
        return t + c, m.numpy.abs(t) * d, (t - d) * s
    return f


def _lstm_cell(m):
    def f(a, b, c, d, s):
        def step(cell, x):
            i, g = x
            new = s * cell + i * g
            return new, new
        return m.lax.scan(step, c[0], (a, b))[1]
    return f


# name -> (program of a module namespace m, whether XLA contracts it)
PROGRAMS = {
    "a*b+c": (lambda m: lambda a, b, c, d, s: a * b + c, True),
    "c+a*b": (lambda m: lambda a, b, c, d, s: c + a * b, True),
    "a*b-c": (lambda m: lambda a, b, c, d, s: a * b - c, True),
    "c-a*b": (lambda m: lambda a, b, c, d, s: c - a * b, True),
    "a*b+c*d": (lambda m: lambda a, b, c, d, s: a * b + c * d, True),
    "a*b-c*d": (lambda m: lambda a, b, c, d, s: a * b - c * d, True),
    "a*b+c*d+a*d": (lambda m: lambda a, b, c, d, s: a * b + c * d + a * d, True),
    "-(a*b)+c": (lambda m: lambda a, b, c, d, s: -(a * b) + c, True),
    "c-(-(a*b))": (lambda m: lambda a, b, c, d, s: c - (-(a * b)), True),
    "-(a*b)-c": (lambda m: lambda a, b, c, d, s: -(a * b) - c, True),
    "a**2+c": (lambda m: lambda a, b, c, d, s: a ** 2 + c, True),
    "square(a)-c": (lambda m: lambda a, b, c, d, s: m.numpy.square(a) - c, True),
    "a*2.5+c": (lambda m: lambda a, b, c, d, s: a * 2.5 + c, True),
    "a/3+c": (lambda m: lambda a, b, c, d, s: a / 3.0 + c, True),
    "a*s+c": (lambda m: lambda a, b, c, d, s: a * s + c, True),
    "(a*b)*c+d": (lambda m: lambda a, b, c, d, s: (a * b) * c + d, True),
    "adam_moment": (lambda m: lambda a, b, c, d, s: 0.9 * a + (1 - 0.9) * b, True),
    "sgd": (lambda m: lambda a, b, c, d, s: a - 0.01 * b, True),
    "two_readers": (_two, True),
    "elementwise_readers": (_elementwise_readers, True),
    "also_returned": (_returned, False),
    "also_summed": (_summed, False),
    "lstm_cell_in_scan": (_lstm_cell, True),
    "product_and_sum": (_product_and_sum, True),
    "readers_in_one_loop": (_shared_loop, False),
    "broadcast_product": (lambda m: lambda a, b, c, d, s: (a[0] * b[0])[None, :] + c, False),
}


def _data(dtype):
    rng = np.random.default_rng(3)
    a, b, c, d = (rng.standard_normal((400, 100)).astype(dtype) for _ in range(4))
    return a, b, c, d, np.asarray(rng.standard_normal(), dtype)


def _bits(x):
    x = np.asarray(x)
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


def _assert_same_bits(got, want):
    got, want = list(got) if isinstance(got, tuple) else [got], list(want) if isinstance(want, tuple) else [want]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
        np.testing.assert_array_equal(_bits(g), _bits(w))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_jitted_multiply_adds_match_jax(name, dtype):
    jax = pytest.importorskip("jax")
    make, contracted = PROGRAMS[name]
    x64 = dtype == np.float64
    args = _data(dtype)
    with jax.enable_x64(x64), config.override("jax_enable_x64", x64):
        want = jax.jit(make(jax))(*args)
        eager = make(jax)(*args)
        if contracted:  # the data tells one rounding from two
            assert any(not np.array_equal(_bits(w), _bits(e)) for w, e in zip(*(
                (list(v) if isinstance(v, tuple) else [v]) for v in (want, eager))))
        for tier in ("numpy", "fused"):
            with config.override("fluxion_jit_sync_kernels", tier == "fused"), \
                    config.override("fluxion_jit_fusion", tier == "fused"):
                _assert_same_bits(fluxion.jit(make(fluxion))(*args), want)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_sums_round_the_product_first_as_jax(dtype):
    jax = pytest.importorskip("jax")
    if dtype == "float16" and special.native_float16_fma():
        pytest.skip("this CPU has float16 arithmetic: XLA contracts float16 here")
    args = [np.asarray(v).astype(jnp.dtype(dtype)) for v in _data(np.float32)[:3]]
    want = jax.jit(lambda a, b, c: a * b + c)(*args)
    _assert_same_bits(fluxion.jit(lambda a, b, c: a * b + c)(*args), want)


def test_eager_multiply_adds_round_twice_as_eager_jax():
    jax = pytest.importorskip("jax")
    a, b, c = _data(np.float32)[:3]
    want = jax.numpy.asarray(a) * b + c
    got = jnp.asarray(a) * b + c
    _assert_same_bits(got, want)
    assert not np.array_equal(_bits(got), _bits(special.fma32(a, b, c)))


def _contracted(f, *args) -> int:
    closed = fluxion.make_jaxpr(f)(*args)
    closed = ClosedJaxpr(closed.jaxpr, closed.consts) if not isinstance(closed, ClosedJaxpr) else closed
    opt = passes.optimize(closed)
    return sum(e.primitive.name == "mul_add" for e in opt.jaxpr.eqns), [e.primitive.name for e in opt.jaxpr.eqns]


def test_pass_contracts_only_where_the_product_is_alone_in_its_loop():
    x = np.ones((4, 3), np.float32)
    assert _contracted(lambda a, b, c: a * b + c, x, x, x) == (1, ["mul_add"])
    assert _contracted(lambda a, b, c: (a * b + c) * (a * b + b), x, x, x)[0] == 0
    assert _contracted(lambda a, b, c: (a * b + c, a * b - b), x, x, x) == (2, ["mul_add", "neg", "mul_add"])
    # products XLA computes before a broadcast, of bfloat16 or of integers are left alone
    assert _contracted(lambda a, c: (a[0] * a[1])[None] + c, x, x)[0] == 0
    bf16 = x.astype(jnp.bfloat16)
    assert _contracted(lambda a, c: a * a + c, bf16, bf16)[0] == 0
    assert _contracted(lambda a, c: a * a + c, x.astype(np.int32), x.astype(np.int32))[0] == 0


def test_pass_contracts_inside_loop_bodies():
    x = np.ones((5, 3), np.float32)
    closed = fluxion.make_jaxpr(lambda xs: lax.scan(lambda c, v: (c * 0.5 + v, c), xs[0], xs))(x)
    opt = passes.optimize(closed)
    (scan,) = [e for e in opt.jaxpr.eqns if e.primitive.name == "scan"]
    assert [e.primitive.name for e in scan.params["jaxpr"].jaxpr.eqns] == ["mul_add"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_eager_kernel_and_emulation_are_correctly_rounded(dtype):
    """`special.fma32`/`fma64`, the compiled kernel and `mul_add` give the exactly rounded a * b + c, including
    cancellations near ties and 0-d operands."""
    from fractions import Fraction
    rng = np.random.default_rng(7)
    n = 3000
    a, b = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    c = rng.standard_normal(n).astype(dtype) * np.asarray(10.0, dtype) ** rng.integers(-6, 6, n).astype(dtype)
    c[: n // 2] = -(a[: n // 2] * b[: n // 2]) * (1 + rng.standard_normal(n // 2) * 1e-6).astype(dtype)
    exact = np.array([Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)) for x, y, z in zip(a, b, c)])
    # float(Fraction) is correctly rounded to float64; float32 is rounded from the exact value by hand (rounding
    # the float64 again could round twice)
    want = np.array([float(v) for v in exact]) if dtype == np.float64 else np.array([_round_f32(v) for v in exact])
    emulation = special.fma32 if dtype == np.float32 else special.fma64
    _assert_same_bits(emulation(a, b, c), want)
    kernels.fma(a, b, c)  # starts the compile
    for _ in range(1200):
        if kernels._fma_ready.get(np.dtype(dtype)) is not None:
            break
        time.sleep(0.05)
    got = kernels.fma(a, b, c)
    assert got is not None, "the fused multiply-add kernel did not compile within 60 s"
    _assert_same_bits(got, want)
    _assert_same_bits(kernels.fma(a, np.asarray(b[0]), c), emulation(a, b[0], c))
    _assert_same_bits(special.mul_add(a, b, c), want)


def _round_f32(v) -> np.float32:
    """The float32 nearest the Fraction `v` (ties to even)."""
    from fractions import Fraction
    f = np.float32(float(v))
    near = [f, np.nextafter(f, np.float32(np.inf)), np.nextafter(f, np.float32(-np.inf))]
    return min(near, key=lambda x: (abs(Fraction(float(x)) - v), int(np.asarray(x).view(np.uint32)) & 1))
