"""Tests of the Schur-based and remaining functions of `fluxion.scipy.linalg` (schur, hessenberg, rsf2csf, sqrtm,
funm, solve_sylvester, qr_multiply, expm_frechet, eigh_tridiagonal, fiedler_companion) against `scipy.linalg`
and real `jax.scipy.linalg`.

Table-driven: one record per function and variant with an input builder. Every record is checked for values
against SciPy (float64; float32 loosely) and against JAX (float64 values, float32 dtypes and shapes), eager against
jit and vmap against a loop. Derivatives: the records JAX differentiates are checked against finite differences;
the Schur-based ones must raise the NotImplementedError JAX raises. Eigenvectors, unique up to sign, are compared
after aligning signs.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp
import fluxion.scipy.linalg as fla
from fluxion._src import test_util as tu

sla = pytest.importorskip("scipy.linalg")


def _general(rng, n=4):
    return rng.normal(size=(n, n))


def _spd(rng, n=4):
    a = rng.normal(size=(n, n))
    return a @ a.T + n * np.eye(n)


def _real_schur(rng, n=5):
    # A matrix with complex eigenvalues, so its real Schur form has 2x2 blocks for rsf2csf to split.
    t, z = sla.schur(rng.normal(size=(n, n)))
    return [t, z]


def _numpy_of(module):
    """The elementwise exp/sin of the library `module` belongs to (funm applies it to the eigenvalues)."""
    name = module.__name__
    if name.startswith("fluxion"):
        return fnp
    if name.startswith("jax"):
        import jax.numpy
        return jax.numpy
    return np


@dataclasses.dataclass(frozen=True)
class Rec:
    name: str
    fn: Callable[[Any], Callable]  # module -> function of the arrays
    make: Callable  # rng -> list of float64 arrays
    grad: str = "fd"  # "fd": check against finite differences; "raises": NotImplementedError (as JAX); "": none
    order: int = 2
    scipy: bool = True
    vmap: bool = True
    sign_free: bool = False  # outputs (values, vectors): compare vectors up to the sign of each column
    rtol32: float = 2e-3

    def __str__(self):
        return self.name


RECORDS = [
    Rec("schur_real", lambda m: m.schur, lambda r: [_general(r)], grad="raises"),
    Rec("schur_complex", lambda m: lambda a: m.schur(a, output="complex"), lambda r: [_general(r)], grad="raises"),
    Rec("hessenberg", lambda m: m.hessenberg, lambda r: [_general(r, 5)], grad="raises"),
    Rec("hessenberg_q", lambda m: lambda a: m.hessenberg(a, calc_q=True), lambda r: [_general(r, 5)],
        grad="raises"),
    Rec("rsf2csf", lambda m: m.rsf2csf, _real_schur, grad="", vmap=False),
    # Differentiated within the quasi-triangular pattern: a perturbation of T's zeros would decide anew which
    # subdiagonal entries count as 2x2 blocks, a discontinuity.
    Rec("rsf2csf_in_pattern", lambda m: lambda t, z: m.rsf2csf(t * (_real_schur(np.random.default_rng(3))[0] != 0),
                                                              z),
        lambda r: _real_schur(np.random.default_rng(3)), order=2, vmap=False),
    Rec("sqrtm_spd", lambda m: m.sqrtm, lambda r: [_spd(r)], grad="raises"),
    Rec("sqrtm_general", lambda m: m.sqrtm, lambda r: [_general(r) + 4 * np.eye(4)], grad="raises"),
    Rec("funm_exp", lambda m: lambda a: m.funm(a, _numpy_of(m).exp), lambda r: [_general(r)], grad="raises",
        vmap=False),
    Rec("funm_sin", lambda m: lambda a: m.funm(a, _numpy_of(m).sin), lambda r: [_general(r, 3)], grad="raises",
        vmap=False),
    Rec("solve_sylvester", lambda m: m.solve_sylvester,
        lambda r: [_general(r), _general(r, 3) + 3 * np.eye(3), r.normal(size=(4, 3))], grad="raises"),
    Rec("qr_multiply_left", lambda m: lambda a, c: m.qr_multiply(a, c, mode="left"),
        lambda r: [r.normal(size=(5, 3)), r.normal(size=(3, 2))]),
    Rec("qr_multiply_right", lambda m: lambda a, c: m.qr_multiply(a, c),
        lambda r: [r.normal(size=(5, 3)), r.normal(size=(2, 5))]),
    # QR's derivative needs M >= N (as JAX's qr): the wide case is checked for values only.
    Rec("qr_multiply_wide", lambda m: lambda a, c: m.qr_multiply(a, c),
        lambda r: [r.normal(size=(3, 5)), r.normal(size=(2, 3))], grad=""),
    Rec("qr_multiply_vector_conj", lambda m: lambda a, c: m.qr_multiply(a, c, mode="right", conjugate=True),
        lambda r: [r.normal(size=(4, 4)), r.normal(size=4)]),
    Rec("expm_frechet", lambda m: m.expm_frechet, lambda r: [r.normal(size=(4, 4)), r.normal(size=(4, 4))]),
    Rec("expm_frechet_only", lambda m: lambda a, e: m.expm_frechet(a, e, compute_expm=False),
        lambda r: [2 * r.normal(size=(3, 3)), r.normal(size=(3, 3))], order=1),
    Rec("eigh_tridiagonal_values", lambda m: lambda d, e: m.eigh_tridiagonal(d, e, eigvals_only=True),
        lambda r: [r.normal(size=6), r.normal(size=5)], vmap=False),
    Rec("eigh_tridiagonal", lambda m: m.eigh_tridiagonal, lambda r: [r.normal(size=5), r.normal(size=4)],
        sign_free=True, grad="", vmap=False),
    Rec("eigh_tridiagonal_select", lambda m: lambda d, e: m.eigh_tridiagonal(d, e, eigvals_only=True, select="i",
                                                                             select_range=(1, 3)),
        lambda r: [r.normal(size=6), r.normal(size=5)], vmap=False),
    Rec("fiedler_companion", lambda m: m.fiedler_companion, lambda r: [r.normal(size=6)]),
    Rec("fiedler_companion_odd", lambda m: m.fiedler_companion, lambda r: [r.normal(size=5)]),
]


def _leaves(x):
    return [np.asarray(v) for v in (x if isinstance(x, (tuple, list)) else (x,))]


def _align_signs(got, want):
    """(values, vectors) with each column of `got`'s vectors flipped to match `want`'s sign."""
    gv, wv = np.asarray(got[1]), np.asarray(want[1])
    signs = np.sign(np.sum(gv * wv, axis=0))
    return [np.asarray(got[0]), gv * signs]


def _compare(rec, got, want, **tol):
    if rec.sign_free:
        got = _align_signs(got, want)
    for g, w in zip(_leaves(got), _leaves(want)):
        assert g.shape == w.shape, (g.shape, w.shape)
        tu.assert_allclose(g, w.astype(g.dtype) if g.dtype.kind == "c" else w, check_dtypes=False, **tol)


@pytest.mark.parametrize("rec", [r for r in RECORDS if r.scipy], ids=str)
def test_values_against_scipy(rec, rng):
    args = rec.make(rng)
    with tu.enable_x64():
        got = rec.fn(fla)(*args)
    want = rec.fn(sla)(*args)
    _compare(rec, got, want, rtol=1e-9, atol=1e-10)
    got32 = rec.fn(fla)(*[a.astype(np.float32) for a in args])
    for leaf in _leaves(got32):
        assert leaf.dtype in (np.float32, np.complex64), leaf.dtype
    if not rec.name.startswith(("schur", "hessenberg")):  # the factors of a float32 matrix may legitimately differ
        _compare(rec, got32, want, rtol=rec.rtol32, atol=rec.rtol32)


@pytest.mark.parametrize("rec", RECORDS, ids=str)
def test_values_and_dtypes_against_jax(rec, rng):
    jax = pytest.importorskip("jax")
    import jax.scipy.linalg as jla
    args = rec.make(rng)
    with tu.enable_x64(jax.config):
        got, want = rec.fn(fla)(*args), rec.fn(jla)(*args)
        _compare(rec, got, jax.tree_util.tree_map(np.asarray, want), rtol=1e-9, atol=1e-10)
    args32 = [a.astype(np.float32) for a in args]
    got, want = rec.fn(fla)(*args32), rec.fn(jla)(*args32)
    assert [(x.dtype, x.shape) for x in fluxion.tree_util.tree_leaves(got)] == \
        [(x.dtype, x.shape) for x in jax.tree_util.tree_leaves(want)]


def _real_parts(f):
    """f with its complex outputs split into (real, imag), so finite differences compare real numbers."""
    def g(*xs):
        out = []
        for leaf in fluxion.tree_util.tree_leaves(f(*xs)):
            out += [fnp.real(leaf), fnp.imag(leaf)] if fnp.iscomplexobj(leaf) else [leaf]
        return out
    return g


@pytest.mark.parametrize("rec", [r for r in RECORDS if r.grad == "fd"], ids=str)
def test_derivatives_against_finite_differences(rec, rng):
    args = rec.make(rng)
    with tu.enable_x64():
        tu.check_grads(_real_parts(rec.fn(fla)), args, order=rec.order, atol=1e-5, rtol=1e-5, rng=rng)


@pytest.mark.parametrize("rec", [r for r in RECORDS if r.grad == "raises"], ids=str)
def test_schur_based_functions_are_not_differentiable_like_jax(rec, rng):
    jax = pytest.importorskip("jax")
    import jax.scipy.linalg as jla
    args = [a.astype(np.float32) for a in rec.make(rng)]

    def total(m, grad):
        return grad(lambda *xs: sum(abs(leaf).sum() for leaf in jax.tree_util.tree_leaves(rec.fn(m)(*xs))))

    with pytest.raises(NotImplementedError, match="Differentiation rule for '(schur|hessenberg)'"):
        total(jla, jax.grad)(*args)
    with pytest.raises(NotImplementedError, match="Differentiation rule for '(schur|hessenberg)'"):
        total(fla, fluxion.grad)(*args)


@pytest.mark.parametrize("rec", RECORDS, ids=str)
def test_jit_matches_eager(rec, rng):
    args = [a.astype(np.float32) for a in rec.make(rng)]
    tu.check_jit(rec.fn(fla), args, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rec", [r for r in RECORDS if r.vmap], ids=str)
def test_vmap_matches_loop(rec, rng):
    examples = [rec.make(rng) for _ in range(3)]
    args = [np.stack([ex[i] for ex in examples]).astype(np.float32) for i in range(len(examples[0]))]
    tu.check_batching(rec.fn(fla), args, rtol=1e-4, atol=1e-4)


# --------------------------------------------------------------------------------------------------------------
# Identities, batches and errors
# --------------------------------------------------------------------------------------------------------------

def test_decompositions_reconstruct_and_batch(rng):
    a = rng.normal(size=(3, 5, 5))
    with tu.enable_x64():
        t, z = fla.schur(a)
        tu.assert_allclose(np.asarray(z) @ np.asarray(t) @ np.swapaxes(np.asarray(z), -1, -2), a, rtol=1e-10,
                           atol=1e-12)
        tc, zc = fla.rsf2csf(t, z)
        np.testing.assert_array_equal(np.tril(np.asarray(tc), -1), 0)
        tu.assert_allclose(np.asarray(zc) @ np.asarray(tc) @ np.conj(np.swapaxes(np.asarray(zc), -1, -2)), a,
                           rtol=1e-10, atol=1e-12, check_dtypes=False)
        h, q = fla.hessenberg(a, calc_q=True)
        np.testing.assert_array_equal(np.tril(np.asarray(h), -2), 0)
        tu.assert_allclose(np.asarray(q) @ np.asarray(h) @ np.swapaxes(np.asarray(q), -1, -2), a, rtol=1e-10,
                           atol=1e-12)
        x = fla.sqrtm(a + 6 * np.eye(5))
        tu.assert_allclose(np.asarray(x) @ np.asarray(x), a + 6 * np.eye(5), rtol=1e-10, atol=1e-10,
                           check_dtypes=False)
        b, c = rng.normal(size=(3, 2, 2)) + 3 * np.eye(2), rng.normal(size=(3, 5, 2))
        x = np.asarray(fla.solve_sylvester(a, b, c))
        tu.assert_allclose(a @ x + x @ b, c, rtol=1e-9, atol=1e-10)


def test_funm_error_estimate_and_sylvester_singular_like_jax(rng):
    jax = pytest.importorskip("jax")
    import jax.numpy as jjnp
    import jax.scipy.linalg as jla
    a = rng.normal(size=(4, 4))
    with tu.enable_x64(jax.config):
        f, err = fla.funm(a, fnp.exp, disp=False)
        jf, jerr = jla.funm(a, jjnp.exp, disp=False)
        tu.assert_allclose(f, np.asarray(jf), rtol=1e-10, atol=1e-12)
        tu.assert_allclose(err, np.asarray(jerr), rtol=1e-6)
        # A and -A share eigenvalues that sum to zero: the equation is singular and the result NaN.
        assert np.all(np.isnan(np.asarray(fla.solve_sylvester(a, -a, np.eye(4)))))
        assert np.all(np.isnan(np.asarray(jla.solve_sylvester(a, -a, np.eye(4)))))


def test_small_and_empty_sizes():
    with tu.enable_x64():
        tu.assert_allclose(fla.fiedler_companion(np.array([2.0, 4.0])), np.array([[-2.0]]))
        assert fla.fiedler_companion(np.array([3.0])).shape == (0, 0)
        w, v = fla.eigh_tridiagonal(np.array([1.5]), np.zeros(0))
        tu.assert_allclose(w, np.array([1.5]))
        tu.assert_allclose(v, np.ones((1, 1)))
        assert fla.hessenberg(np.zeros((0, 0))).shape == (0, 0)
        tc, zc = fla.rsf2csf(np.array([[2.0]]), np.array([[1.0]]))
        tu.assert_allclose(tc, np.array([[2.0 + 0j]]))


def test_errors():
    with pytest.raises(ValueError, match="output"):
        fla.schur(np.eye(2), output="bogus")
    with pytest.raises(ValueError, match="square"):
        fla.schur(np.ones((2, 3)))
    with pytest.raises(ValueError, match="square"):
        fla.hessenberg(np.ones((2, 3)))
    with pytest.raises(ValueError, match="must match"):
        fla.rsf2csf(np.eye(2), np.eye(3))
    with pytest.raises(NotImplementedError, match="blocksize"):
        fla.sqrtm(np.eye(2), blocksize=2)
    with pytest.raises(ValueError, match="square"):
        fla.funm(np.ones((2, 3)), fnp.exp)
    with pytest.raises(ValueError, match="incompatible shapes"):
        fla.solve_sylvester(np.eye(2), np.eye(3), np.ones((2, 2)))
    with pytest.raises(NotImplementedError, match="eigen"):
        fla.solve_sylvester(np.eye(2), np.eye(2), np.ones((2, 2)), method="eigen")
    with pytest.raises(ValueError, match="method"):
        fla.solve_sylvester(np.eye(2), np.eye(2), np.ones((2, 2)), method="bogus")
    with pytest.raises(ValueError, match="mode"):
        fla.qr_multiply(np.eye(2), np.eye(2), mode="middle")
    with pytest.raises(ValueError, match="compatible"):
        fla.qr_multiply(np.ones((4, 3)), np.ones((4, 2)), mode="left")
    with pytest.raises(NotImplementedError, match="pivoting"):
        fla.qr_multiply(np.eye(2), np.eye(2), pivoting=True)
    with pytest.raises(ValueError, match="same shape"):
        fla.expm_frechet(np.eye(2), np.eye(3))
    with pytest.raises(TypeError, match="same dtype"):
        fla.eigh_tridiagonal(np.ones(3, np.float32), np.ones(2, np.complex64))
    with pytest.raises(TypeError, match="float32"):
        fla.eigh_tridiagonal(np.ones(3, np.int32), np.ones(2, np.int32))
    with pytest.raises(NotImplementedError, match="select='v'"):
        fla.eigh_tridiagonal(np.ones(3, np.float32), np.ones(2, np.float32), select="v")
    with pytest.raises(ValueError, match="select_range"):
        fla.eigh_tridiagonal(np.ones(3, np.float32), np.ones(2, np.float32), select="i")
    with pytest.raises(ValueError, match="non-empty"):
        fla.fiedler_companion(np.zeros(0))
