"""`fluxion.numpy.linalg`'s Array API and tensor names against NumPy and `jax.numpy.linalg`, with derivatives."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion.numpy as jnp
from fluxion._src import test_util as tu

RNG = np.random.default_rng(0)
A = (RNG.standard_normal((3, 4, 4)) + 4 * np.eye(4)).astype(np.float32)
B = RNG.standard_normal((3, 4, 4)).astype(np.float32)
V = RNG.standard_normal((5, 3)).astype(np.float32)
W = RNG.standard_normal((5, 3)).astype(np.float32)
T = (RNG.standard_normal((2, 3, 6)) + 0).astype(np.float32)
T4 = (RNG.standard_normal((6, 2, 3)) + 3 * np.eye(6).reshape(6, 2, 3)).astype(np.float32)

# name -> (call(linalg), NumPy reference, args)
CASES = {
    "matmul": (lambda la, a, b: la.matmul(a, b), np.matmul, (A, B)),
    "matrix_transpose": (lambda la, a: la.matrix_transpose(a), lambda a: np.swapaxes(a, -1, -2), (B,)),
    "outer": (lambda la, a, b: la.outer(a, b), np.outer, (V[0], W[1])),
    "tensordot": (lambda la, a, b: la.tensordot(a, b, axes=2), lambda a, b: np.tensordot(a, b, axes=2), (A, B[0])),
    "vecdot": (lambda la, a, b: la.vecdot(a, b), lambda a, b: np.sum(a * b, axis=-1), (V, W)),
    "cross": (lambda la, a, b: la.cross(a, b), lambda a, b: np.cross(a, b), (V, W)),
    "diagonal": (lambda la, a: la.diagonal(a, offset=1), lambda a: np.diagonal(a, 1, -2, -1), (B,)),
    "trace": (lambda la, a: la.trace(a, offset=-1), lambda a: np.trace(a, -1, -2, -1), (B,)),
    "multi_dot": (lambda la, a, b, c: la.multi_dot([a, b, c]), lambda a, b, c: np.linalg.multi_dot([a, b, c]),
                  (V[:, 0], RNG.standard_normal((5, 7)).astype(np.float32), RNG.standard_normal((7, 2)).astype(np.float32))),
    "multi_dot_matrices": (lambda la, a, b, c: la.multi_dot([a, b, c]), lambda a, b, c: a @ b @ c,
                           (RNG.standard_normal((2, 9)).astype(np.float32), RNG.standard_normal((9, 3)).astype(np.float32),
                            RNG.standard_normal((3, 8)).astype(np.float32))),
    "cond": (lambda la, a: la.cond(a), np.linalg.cond, (A,)),
    "cond_fro": (lambda la, a: la.cond(a, "fro"), lambda a: np.linalg.cond(a, "fro"), (A,)),
    "cond_1": (lambda la, a: la.cond(a, 1), lambda a: np.linalg.cond(a, 1), (A,)),
    "tensorinv": (lambda la, a: la.tensorinv(a, ind=1), lambda a: np.linalg.tensorinv(a, ind=1), (T4,)),
    "tensorsolve": (lambda la, a, b: la.tensorsolve(a, b), np.linalg.tensorsolve, (T4, T[0, 0])),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_against_numpy_and_jit(name):
    call, ref, args = CASES[name]
    got = call(jnp.linalg, *args)
    tu.assert_allclose(got, np.asarray(ref(*args), np.float32), atol=1e-4, rtol=1e-4)
    tu.check_jit(lambda *a: call(jnp.linalg, *a), args, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_match_jax(name):
    jax = pytest.importorskip("jax")
    call, _, args = CASES[name]
    tu.assert_allclose(call(jnp.linalg, *args), np.asarray(call(jax.numpy.linalg, *args)), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("name", ["multi_dot", "cond", "tensorinv", "tensorsolve", "cross", "trace"])
def test_derivatives(name):
    call, _, args = CASES[name]
    with tu.enable_x64():
        tu.check_grads(lambda *a: call(jnp.linalg, *a), tuple(a.astype(np.float64) for a in args), order=2,
                       modes=("fwd", "rev"), atol=1e-5, rtol=1e-5)


def test_errors():
    with pytest.raises(ValueError, match="one-dimensional"):
        jnp.linalg.outer(A, B)
    with pytest.raises(ValueError, match="3-dimensional vectors"):
        jnp.linalg.cross(A, B)
    with pytest.raises(ValueError, match="at least two"):
        jnp.linalg.multi_dot([A[0]])
    with pytest.raises(ValueError):
        jnp.linalg.tensorinv(np.ones((2, 3)), ind=1)
