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
