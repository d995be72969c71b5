"""The dimension analysis of `dot_general` (`compiler.contractions`), checked against the backend's implementation."""

from __future__ import annotations

import itertools
import os
import sys

import numpy as np
import pytest

from fluxion import lax
from fluxion._src.backends.compiler import contractions

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # compiler_helpers.py is here
from compiler_helpers import closed_of  # noqa: E402

# (lhs shape, rhs shape, dimension numbers)
CASES = [
    ((4, 3), (3, 5), (((1,), (0,)), ((), ()))),                 # matrix product
    ((3, 4), (3, 5), (((0,), (0,)), ((), ()))),                 # lhs transposed
    ((4, 3), (5, 3), (((1,), (1,)), ((), ()))),                 # rhs transposed
    ((3,), (3,), (((0,), (0,)), ((), ()))),                     # vector dot
    ((4, 3), (3,), (((1,), (0,)), ((), ()))),                   # matrix-vector
    ((3,), (3, 5), (((0,), (0,)), ((), ()))),                   # vector-matrix
    ((2, 4, 3), (2, 3, 5), (((2,), (1,)), ((0,), (0,)))),       # batched
    ((2, 3, 4), (2, 5, 3), (((1,), (2,)), ((0,), (0,)))),       # batched, both transposed
    ((2, 4, 3), (2, 3), (((2,), (1,)), ((0,), (0,)))),          # batched matrix-vector
    ((2, 3), (2, 3, 5), (((1,), (1,)), ((0,), (0,)))),          # batched vector-matrix
    ((4, 2, 3), (3, 5, 2), (((2,), (0,)), ((1,), (2,)))),       # batch dims not leading: no matmul form
    ((4, 3, 2), (2, 3, 5), (((1, 2), (1, 0)), ((), ()))),       # two contracted dims: no matmul form
    ((4, 1), (1, 5), (((1,), (0,)), ((), ()))),                 # a single contracted element (outer product)
    ((2, 3, 4), (5,), (((), ()), ((), ()))),                    # nothing contracted
]


def _eqn(lhs, rhs, dims, dtype=np.float32):
    closed = closed_of(lambda a, b: lax.dot_general(a, b, dims), np.ones(lhs, dtype), np.ones(rhs, dtype))
    (eqn,) = closed.jaxpr.eqns
    return eqn


def _operands(rng, lhs, rhs, dtype=np.float32):
    return rng.standard_normal(lhs).astype(dtype), rng.standard_normal(rhs).astype(dtype)


def _backend(eqn, a, b):
    return np.asarray(eqn.primitive.impl(a, b, **eqn.params))


@pytest.mark.parametrize("lhs, rhs, dims", CASES)
def test_roles_partition_each_operands_dimensions(lhs, rhs, dims):
    c = contractions.Contraction(_eqn(lhs, rhs, dims))
    assert sorted(c.lhs_batch + c.lhs_contract + tuple(c.lhs_free)) == list(range(len(lhs)))
    assert sorted(c.rhs_batch + c.rhs_contract + tuple(c.rhs_free)) == list(range(len(rhs)))
    out = tuple(lhs[d] for d in c.lhs_batch) + tuple(lhs[d] for d in c.lhs_free) + tuple(rhs[d] for d in c.rhs_free)
    assert out == _eqn(lhs, rhs, dims).outvars[0].aval.shape


@pytest.mark.parametrize("lhs, rhs, dims", CASES)
def test_operand_indices_compute_the_backends_product(rng, lhs, rhs, dims):
    eqn = _eqn(lhs, rhs, dims)
    a, b = _operands(rng, lhs, rhs)
    out_shape = eqn.outvars[0].aval.shape
    n_contract = len(dims[0][0])
    k_extents = [lhs[d] for d in dims[0][0]]
    idx = [f"i[{d}]" for d in range(len(out_shape))]
    kidx = [f"k[{d}]" for d in range(n_contract)]
    li, ri = contractions.operand_indices(eqn, idx, kidx)
    got = np.zeros(out_shape, np.float64)
    for i in itertools.product(*map(range, out_shape)):
        for k in itertools.product(*map(range, k_extents)):
            env = {"i": i, "k": k}
            got[i] += float(a[tuple(eval(e, env) for e in li)]) * float(b[tuple(eval(e, env) for e in ri)])
    np.testing.assert_allclose(got, _backend(eqn, a, b), rtol=1e-5, atol=1e-5)
    assert contractions.contracted_size(eqn) == int(np.prod(k_extents, dtype=np.int64))


@pytest.mark.parametrize("lhs, rhs, dims", CASES)
def test_matmul_form_computes_the_backends_product(rng, lhs, rhs, dims):
    eqn = _eqn(lhs, rhs, dims)
    form = contractions.matmul_form(eqn)
    plain = len(dims[0][0]) == 1 and all(d == k for k, d in enumerate(dims[1][0])) and \
        all(d == k for k, d in enumerate(dims[1][1]))
    if not plain or len(lhs) - len(dims[1][0]) > 2 or len(rhs) - len(dims[1][1]) > 2:
        assert form is None
        return
    assert form is not None
    a, b = _operands(rng, lhs, rhs)
    got = eval(form.format(a="a", b="b"), {"a": a, "b": b, "dot": np.dot, "matmul": np.matmul,
                                            "swap": contractions.swap})
    np.testing.assert_array_equal(np.asarray(got), _backend(eqn, a, b))


def test_matmul_form_only_for_float32_and_float64_in_their_own_dtype():
    dims = (((1,), (0,)), ((), ()))
    assert contractions.matmul_form(_eqn((2, 3), (3, 2), dims, np.int32)) is None
    assert contractions.matmul_form(_eqn((2, 3), (3, 2), dims, np.float16)) is None
    assert contractions.computes_in_operand_dtype(_eqn((2, 3), (3, 2), dims, np.float16))
    closed = closed_of(lambda a, b: lax.dot_general(a, b, dims, preferred_element_type=np.float32),
                       np.ones((2, 3), np.float16), np.ones((3, 2), np.float16))
    wide = closed.jaxpr.eqns[0]
    assert wide.outvars[0].aval.dtype == np.float32
    assert not contractions.computes_in_operand_dtype(wide)
    assert contractions.matmul_form(wide) is None


def test_vector_dot_detection():
    vdot = (((0,), (0,)), ((), ()))
    assert contractions.is_vector_dot(_eqn((7,), (7,), vdot))
    assert not contractions.is_vector_dot(_eqn((7,), (7,), vdot, np.int32))
    assert not contractions.is_vector_dot(_eqn((4, 7), (7,), (((1,), (0,)), ((), ()))))
    assert not contractions.is_vector_dot(_eqn((7,), (5,), (((), ()), ((), ()))))  # an outer product


# Batched products run as one `matmul` over operand views (`batched_product`/`batched_matmul`), checked against the
# backend implementation (which copies into contiguous (batch, m, k) and (batch, k, n) arrays).
# (lhs shape, rhs shape, dimension numbers)
BATCHED_CASES = [
    ((2, 4, 3), (2, 3, 5), (((2,), (1,)), ((0,), (0,)))),                # plain batched matrix product
    ((4, 2, 3), (3, 5, 2), (((2,), (0,)), ((1,), (2,)))),                # batch dims not leading
    ((3, 5, 2, 4), (3, 5, 2, 4), (((3,), (3,)), ((0, 2), (0, 2)))),      # attention scores q.k (heads inside)
    ((3, 2, 5, 5), (3, 5, 2, 4), (((3,), (1,)), ((0, 1), (0, 2)))),      # attention output p.v
    ((3, 2, 5, 5), (3, 5, 2, 4), (((2,), (1,)), ((0, 1), (0, 2)))),      # p transposed (its gradient)
    ((2, 3, 4, 5), (5, 2, 3), (((3, 1), (0, 2)), ((0,), (1,)))),         # two contracted dims, batch inside rhs
    ((2, 4, 3, 6), (2, 3), (((2,), (1,)), ((0,), (0,)))),                # two lhs free dims, no rhs free dim
    ((2, 3), (3, 2, 4, 7), (((1,), (0,)), ((0,), (1,)))),                # no lhs free dim, batch inside rhs
    ((2, 3), (2, 3), (((1,), (1,)), ((0,), (0,)))),                      # batched vector dot
    ((2, 4, 3), (2, 5), (((), ()), ((0,), (0,)))),                       # batched outer product (k = 1)
    ((1, 1, 1), (1, 1, 1), (((2,), (1,)), ((0,), (0,)))),                # all ones
    ((0, 4, 3), (0, 3, 5), (((2,), (1,)), ((0,), (0,)))),                # empty batch
    ((2, 4, 0), (2, 0, 5), (((2,), (1,)), ((0,), (0,)))),                # empty contraction: zeros
    ((2, 0, 3), (2, 3, 5), (((2,), (1,)), ((0,), (0,)))),                # empty free dim
]


def _layouts(rng, shape, dtype):
    """The operand as a C array, as a transposed view (the same values) and as a strided slice of a larger array."""
    x = rng.standard_normal(shape).astype(dtype)
    yield "contiguous", x
    perm = tuple(reversed(range(len(shape))))
    yield "transposed", np.ascontiguousarray(np.transpose(x, perm)).transpose(perm)
    big = np.zeros(tuple(2 * d + 1 for d in shape), dtype)
    view = big[tuple(slice(1, None, 2) for _ in shape)]
    view[...] = x
    yield "sliced", view


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("lhs, rhs, dims", BATCHED_CASES)
def test_batched_matmul_computes_the_backends_product(rng, lhs, rhs, dims, dtype):
    eqn = _eqn(lhs, rhs, dims, dtype)
    plan = contractions.batched_product(eqn)
    assert plan is not None
    for (la, a), (lb, b) in itertools.product(_layouts(rng, lhs, dtype), _layouts(rng, rhs, dtype)):
        a = a.copy() if la == "contiguous" else a  # each pair gets fresh values through the generator anyway
        got = contractions.batched_matmul(a, b, plan)
        want = _backend(eqn, np.ascontiguousarray(a), np.ascontiguousarray(b))
        assert got.shape == want.shape and got.dtype == want.dtype and got.flags.c_contiguous, (la, lb)
        tol = 1e-6 if dtype == np.float32 else 1e-13
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=f"{la} x {lb}")


@pytest.mark.parametrize("dtype", [np.int32, np.float16, "bfloat16", np.complex64])
def test_batched_product_leaves_other_dtypes_to_the_backend(dtype):
    import fluxion.numpy as jnp
    dt = jnp.dtype(dtype)
    assert contractions.batched_product(_eqn((2, 4, 3), (2, 3, 5), (((2,), (1,)), ((0,), (0,))), dt)) is None


def test_batched_product_not_for_unbatched_or_widened_products():
    assert contractions.batched_product(_eqn((4, 3), (3, 5), (((1,), (0,)), ((), ())))) is None
    dims = (((2,), (1,)), ((0,), (0,)))
    closed = closed_of(lambda a, b: lax.dot_general(a, b, dims, preferred_element_type=np.float32),
                       np.ones((2, 4, 3), np.float16), np.ones((2, 3, 5), np.float16))
    assert closed.jaxpr.eqns[0].outvars[0].aval.dtype == np.float32
    assert contractions.batched_product(closed.jaxpr.eqns[0]) is None


def test_blas_ready_layouts():
    x = np.zeros((3, 4, 5), np.float32)
    assert contractions.blas_ready(x)
    assert contractions.blas_ready(np.swapaxes(x, 1, 2))           # read with BLAS's transpose flag
    assert contractions.blas_ready(x[:, :, :3])                    # a leading dimension longer than the row
    assert not contractions.blas_ready(x[:, :, ::2])               # no unit-stride axis
    assert not contractions.blas_ready(np.transpose(x, (2, 0, 1)))  # the batch axis has the unit stride


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, "bfloat16"])
@pytest.mark.parametrize("lhs, rhs, dims", BATCHED_CASES[:8])
def test_jitted_batched_products_match_eager(rng, lhs, rhs, dims, dtype):
    import fluxion
    import fluxion.numpy as jnp
    dt = jnp.dtype(dtype)
    a = jnp.asarray((rng.standard_normal(lhs) * 3).astype(dt))
    b = jnp.asarray((rng.standard_normal(rhs) * 3).astype(dt))
    f = lambda a, b: lax.dot_general(a, b, dims)  # noqa: E731
    # Operands that reach the product transposed, as in attention's gradients.
    g = lambda a, b: lax.dot_general(jnp.transpose(jnp.transpose(a)), b * 2, dims)  # noqa: E731
    for fn in (f, g):
        want = np.asarray(fn(a, b))
        got = np.asarray(fluxion.jit(fn)(a, b))
        assert got.dtype == want.dtype and got.shape == want.shape
        tol = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12}.get(np.dtype(dt), 0)
        if np.dtype(dt).name == "bfloat16":
            tol = 1e-2
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)


@pytest.mark.parametrize("lhs, rhs, dims", BATCHED_CASES[:6])
def test_jitted_batched_product_gradients_match_finite_differences(rng, lhs, rhs, dims):
    import fluxion
    from fluxion._src.test_util import check_grads
    a = rng.standard_normal(lhs)
    b = rng.standard_normal(rhs)
    f = fluxion.jit(lambda a, b: fluxion.numpy.sin(lax.dot_general(a, b, dims)))
    check_grads(f, (a, b), order=1, modes=("rev",))


def test_generated_code_runs_attention_products_through_batched_matmul(rng):
    from fluxion._src.backends import compiler
    from compiler_helpers import assert_same_values, reference
    q, k = rng.standard_normal((2, 5, 3, 4)).astype(np.float32), rng.standard_normal((2, 5, 3, 4)).astype(np.float32)

    def f(q, k):
        s = lax.dot_general(q, k, (((3,), (3,)), ((0, 2), (0, 2))))  # (batch, heads, q, k)
        return lax.dot_general(s, k, (((3,), (1,)), ((0, 1), (0, 2))))

    closed = closed_of(f, q, k)
    exe = compiler.compile_closed(closed, fuse=False)
    assert exe.source.count("batched_matmul(") == 2
    assert_same_values(list(exe(q, k)), reference(closed, q, k), exact=False)
