"""Quotients have JAX's bits: a divisor that repeats over the quotient (a row, a column, a scalar, a broadcast) or a
constant divisor gives `x * (1 / y)` with the reciprocal rounded to the dtype, because XLA's simplifier rewrites
`A / broadcast(B)` and `A / constant` that way; a full-shape divisor gives the true quotient.

Compared with real JAX bit for bit: eagerly (`jnp.divide`, the `/` operator, `lax.div`), under `jit` in the
generated NumPy code (small arrays) and in fused Numba kernels (large ones), for float16/32/64 and bfloat16, and
through `jnp.mean` and the gradient of a quotient. Each case also checks that the true quotient and the product
with the reciprocal differ somewhere on its data, so the comparison can tell them apart.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import config, lax

jax = pytest.importorskip("jax")
jax_numpy = pytest.importorskip("jax.numpy")

LARGE = 1 << 15  # fused kernels (above fluxion_fuse_min_elements)

# name -> (numerator shape, divisor shape); 64 x 48 elements leave many quotients whose two roundings differ.
SHAPES = {
    "row": ((64, 48), (48,)),
    "column": ((64, 48), (64, 1)),
    "row_of_ones_axis": ((64, 48), (1, 48)),
    "scalar": ((64, 48), ()),
    "outer": ((64, 1), (1, 48)),       # neither operand has the quotient's shape
    "full": ((64, 48), (64, 48)),      # true quotient
    "reshape_only": ((1, 300), (300,)),  # adding an extent-1 axis repeats nothing: true quotient
    "numerator_repeats": ((48,), (64, 48)),  # true quotient
}
DTYPES = [np.float16, np.float32, np.float64, ml_dtypes.bfloat16]


def _data(shape, dtype, seed, offset=0.0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 3 + offset).astype(dtype)


def _bits(a):
    a = np.asarray(a)
    return a.view(np.dtype(f"u{a.dtype.itemsize}"))


def _assert_same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    np.testing.assert_array_equal(_bits(got), _bits(want))


def _roundings_differ(x, y):
    """Whether `x / y` and `x * (1 / y)` (each step rounded to the dtype) differ somewhere."""
    with np.errstate(all="ignore"):
        recip = (np.asarray(1, y.dtype) / y).astype(y.dtype)
        return not np.array_equal(_bits((x / y).astype(x.dtype)), _bits((x * recip).astype(x.dtype)))


@pytest.fixture(params=DTYPES, ids=lambda d: np.dtype(d).name)
def dtype(request):
    dt = request.param
    with jax.enable_x64(dt == np.float64), config.override("jax_enable_x64", dt == np.float64):
        yield dt


@pytest.mark.parametrize("case", SHAPES)
def test_eager_quotients_match_jax(case, dtype):
    xs, ys = SHAPES[case]
    x, y = _data(xs, dtype, 0), _data(ys, dtype, 1, offset=5.0)
    assert _roundings_differ(*np.broadcast_arrays(x, y))
    want = jax_numpy.divide(x, y)
    _assert_same_bits(jnp.divide(x, y), want)
    _assert_same_bits(jnp.asarray(x) / jnp.asarray(y), want)
    _assert_same_bits(jnp.asarray(x).__rtruediv__(jnp.asarray(y)), jax_numpy.asarray(y) / jax_numpy.asarray(x))


@pytest.mark.parametrize("size", ["small", "large"])
@pytest.mark.parametrize("case", SHAPES)
def test_jit_quotients_match_jax(case, size, dtype):
    xs, ys = SHAPES[case]
    if size == "large":  # the same layout, scaled up so the program is fused
        scale = -(-LARGE // int(np.prod(np.broadcast_shapes(xs, ys))))
        xs, ys = ((s[0] * scale,) + s[1:] if len(s) == 2 and s[0] > 1 else s for s in (xs, ys))
        if case == "outer":
            xs = (64 * scale, 1)
    x, y = _data(xs, dtype, 2), _data(ys, dtype, 3, offset=5.0)
    with config.override("fluxion_jit_sync_kernels", True):  # the fused kernels run from the first call
        got = fluxion.jit(lambda a, b: (a / b, a / 3.7, lax.div(a, b) if a.shape == b.shape else a))(x, y)
    want = jax.jit(lambda a, b: (a / b, a / 3.7, jax.lax.div(a, b) if a.shape == b.shape else a))(x, y)
    for g, w in zip(got, want):
        _assert_same_bits(g, w)


def test_constant_divisors_give_products_with_the_reciprocal():
    x = _data((64, 48), np.float32, 4)
    assert _roundings_differ(x, np.full_like(x, 3.7))
    _assert_same_bits(jnp.asarray(x) / 3.7, jax_numpy.asarray(x) / 3.7)
    _assert_same_bits(fluxion.jit(lambda a: a / 3.7)(x), jax.jit(lambda a: a / 3.7)(x))
    # A 0-d quotient: eagerly both operands are arguments (true quotient), under jit the divisor is a constant.
    x0 = np.float32(0.33043706)
    assert x0 / np.float32(3.7) != x0 * (np.float32(1) / np.float32(3.7))
    _assert_same_bits(jnp.asarray(x0) / 3.7, jax_numpy.asarray(x0) / 3.7)
    _assert_same_bits(fluxion.jit(lambda a: a / 3.7)(x0), jax.jit(lambda a: a / 3.7)(x0))
    d = np.float32(3.7)
    _assert_same_bits(fluxion.jit(lambda a, b: a / b)(x0, d), jax.jit(lambda a, b: a / b)(x0, d))


@pytest.mark.parametrize("axis", [0, 1, None, (0, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_means_match_jax(axis, keepdims):
    # Integers: the sums are exact in float32 (so any order gives the same sum) and the division shows.
    x = np.random.default_rng(5).integers(-1000, 1000, (7, 300)).astype(np.float32)
    want = jax_numpy.mean(x, axis=axis, keepdims=keepdims)
    _assert_same_bits(jnp.mean(x, axis=axis, keepdims=keepdims), want)
    _assert_same_bits(fluxion.jit(lambda a: jnp.mean(a, axis=axis, keepdims=keepdims))(x), want)
    if axis == 0:
        s = x.sum(0)
        assert not np.array_equal(s / np.float32(7), s * (np.float32(1) / np.float32(7)))


def test_mean_of_all_elements_matches_jax():
    # JAX divides by the count as a constant of the compiled program: the product with its reciprocal, eagerly too.
    x = np.array([-132.10486, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], np.float32)
    assert x.sum() / np.float32(7) != x.sum() * (np.float32(1) / np.float32(7))
    _assert_same_bits(jnp.mean(x), jax_numpy.mean(x))
    _assert_same_bits(fluxion.jit(jnp.mean)(x), jax.jit(jax_numpy.mean)(x))


def test_gradient_of_a_quotient_by_a_row_matches_jax():
    x, w = _data((64, 48), np.float32, 6), _data((64, 48), np.float32, 7)
    r = _data((48,), np.float32, 8, offset=5.0)

    def loss(m):
        return lambda x, w, r: m.numpy.sum(w * (x / r))
    want = jax.jit(jax.grad(loss(jax)))(x, w, r)
    assert not np.array_equal(want, w / r)  # the cotangent is divided by the row through its reciprocal
    _assert_same_bits(fluxion.jit(fluxion.grad(loss(fluxion)))(x, w, r), want)
    _assert_same_bits(fluxion.grad(loss(fluxion))(x, w, r), jax.grad(loss(jax))(x, w, r))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.complex64])
def test_logarithms_in_other_bases_use_jaxs_formulas(dtype):
    """log2 divides by log(2) (a product with its rounded reciprocal); log10 multiplies by 1 / log(10) rounded once
    from float64. The formulas are checked on each library's own natural logarithm (whose last bits may differ)."""
    x = np.random.default_rng(9).uniform(0.1, 1000, 4096).astype(dtype)
    real = np.dtype(dtype).type(0).real.dtype
    ln2 = np.log(np.asarray(2, real))
    for np_, log in ((jnp, jnp.log(x)), (jax_numpy, jax_numpy.log(x))):
        log = np.asarray(log)
        want2 = log * (np.asarray(1, real) / ln2).astype(real)
        want10 = log * np.asarray(1 / np.log(10), real)
        _assert_same_bits(np_.log2(x), want2.astype(dtype))
        _assert_same_bits(np_.log10(x), want10.astype(dtype))


# name -> program (of a module namespace m) -> the tiers whose bits equal JAX's. XLA rewrites these quotients under
# jit (not eagerly, where each operation runs alone). The NumPy tier's `exp` is NumPy's, whose last bits differ from
# XLA's (and the fused tier's); fluxion's and XLA's `rsqrt` differ too, so `x / sqrt(y)` is checked as a formula.
COMPUTED_DIVISORS = {
    "over_rsqrt": (lambda m: lambda a, b, c, r: a / m.lax.rsqrt(b), ("numpy", "fused")),
    "over_exp": (lambda m: lambda a, b, c, r: a / m.numpy.exp(b), ("fused",)),
    "quotient_over": (lambda m: lambda a, b, c, r: (a / b) / c, ("numpy", "fused")),
    "over_quotient": (lambda m: lambda a, b, c, r: a / (b / c), ("numpy", "fused")),
    "quotient_over_constant": (lambda m: lambda a, b, c, r: (a / b) / 3.0, ("numpy", "fused")),
    "quotient_over_row": (lambda m: lambda a, b, c, r: (a / b) / r, ("numpy", "fused")),
    "over_quotient_by_constant": (lambda m: lambda a, b, c, r: a / (b / 3.0), ("numpy", "fused")),
    "quotient_read_twice": (lambda m: lambda a, b, c, r: (a / b) / c + a / b, ("numpy", "fused")),
    "quotient_over_quotient": (lambda m: lambda a, b, c, r: (a / b) / (c / (a + 1.0)), ("numpy", "fused")),
}


@pytest.mark.parametrize("name", list(COMPUTED_DIVISORS))
def test_jit_rewrites_quotients_by_computed_divisors_as_xla(name):
    make, tiers = COMPUTED_DIVISORS[name]
    rng = np.random.default_rng(10)
    a, b, c = (rng.uniform(0.5, 4, (400, 100)).astype(np.float32) for _ in range(3))
    r = rng.uniform(0.5, 4, 100).astype(np.float32)
    want = jax.jit(make(jax))(a, b, c, r)
    assert not np.array_equal(np.asarray(want), np.asarray(make(jax)(a, b, c, r)))  # eager JAX: not rewritten
    for tier in tiers:
        with config.override("fluxion_jit_sync_kernels", tier == "fused"), \
                config.override("fluxion_jit_fusion", tier == "fused"):
            _assert_same_bits(fluxion.jit(make(fluxion))(a, b, c, r), want)


def test_quotient_by_a_square_root_is_a_product_with_rsqrt():
    rng = np.random.default_rng(11)
    a, b = (rng.uniform(0.5, 4, (400, 100)).astype(np.float32) for _ in range(2))
    r = rng.uniform(0.5, 4, 100).astype(np.float32)
    for m, np_ in ((fluxion, jnp), (jax, jax_numpy)):
        _assert_same_bits(m.jit(lambda a, b: a / np_.sqrt(b))(a, b), np.asarray(a) * np.asarray(m.lax.rsqrt(b)))
        _assert_same_bits(m.jit(lambda a, r: a / np_.sqrt(r))(a, r), np.asarray(a) * np.asarray(m.lax.rsqrt(r)))
