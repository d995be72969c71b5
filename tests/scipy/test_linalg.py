"""Tests of `fluxion.scipy.linalg` against `scipy.linalg` and real `jax.scipy.linalg`.

Table-driven: one record per function with an input builder (square, SPD, triangular, rectangular, batched
matrices); values against SciPy (float64, and float32 loosely), values/dtypes against JAX, derivatives against
finite differences where JAX's are defined, eager against jit, and vmap against a loop for some. Factorizations
that are unique only up to signs (qr, svd, eigh) are checked through their defining identities as well.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
import fluxion.scipy.linalg as fla
from fluxion._src import test_util as tu

sla = pytest.importorskip("scipy.linalg")


def _general(rng, n=4):
    return rng.normal(size=(n, n)) + n * np.eye(n) * 0.5


def _spd(rng, n=4):
    a = rng.normal(size=(n, n))
    return a @ a.T + n * np.eye(n)


def _lower(rng, n=4):
    return np.tril(rng.normal(size=(n, n))) + 3 * np.eye(n)


@dataclasses.dataclass(frozen=True)
class Rec:
    name: str
    fn: Callable[[Any], Callable]  # module -> function of the arrays
    make: Callable  # rng -> list of arrays
    order: int = 2
    grad: bool = True
    jax: bool = True
    vmap: bool = False
    scipy_fn: Callable | None = None  # when SciPy's call differs (e.g. batching)

    def __str__(self):
        return self.name


def _sym(f):
    # Functions that read one triangle of a symmetric input are differentiated through a symmetrized argument, so
    # the finite-difference direction stays in their domain.
    return lambda a, *rest: f((a + a.T) / 2, *rest)


RECORDS = [
    Rec("cholesky_upper", lambda m: _sym(m.cholesky), lambda r: [_spd(r)]),
    Rec("cholesky_lower", lambda m: _sym(lambda a: m.cholesky(a, lower=True)), lambda r: [_spd(r)], vmap=True),
    Rec("cho_solve_lower", lambda m: lambda a, b: m.cho_solve(m.cho_factor((a + a.T) / 2, lower=True), b),
        lambda r: [_spd(r), r.normal(size=(4, 2))]),
    Rec("cho_solve_upper", lambda m: lambda a, b: m.cho_solve(m.cho_factor((a + a.T) / 2), b),
        lambda r: [_spd(r), r.normal(size=4)]),
    Rec("solve_triangular", lambda m: lambda a, b: m.solve_triangular(a, b, lower=True),
        lambda r: [_lower(r), r.normal(size=(4, 3))], vmap=True),
    Rec("solve_triangular_T", lambda m: lambda a, b: m.solve_triangular(a, b, trans="T", lower=False),
        lambda r: [_lower(r).T, r.normal(size=4)]),
    Rec("solve_triangular_unit", lambda m: lambda a, b: m.solve_triangular(a, b, trans=1, lower=True,
                                                                           unit_diagonal=True),
        lambda r: [_lower(r), r.normal(size=(4, 2))]),
    Rec("lu", lambda m: m.lu, lambda r: [_general(r)]),
    Rec("lu_rect_tall", lambda m: m.lu, lambda r: [r.normal(size=(5, 3))]),
    Rec("lu_rect_wide", lambda m: m.lu, lambda r: [r.normal(size=(3, 5))]),
    Rec("lu_permute_l", lambda m: lambda a: m.lu(a, permute_l=True), lambda r: [_general(r)]),
    Rec("lu_factor", lambda m: m.lu_factor, lambda r: [_general(r)], vmap=True),
    Rec("lu_solve", lambda m: lambda a, b: m.lu_solve(m.lu_factor(a), b), lambda r: [_general(r), r.normal(size=4)]),
    Rec("lu_solve_T", lambda m: lambda a, b: m.lu_solve(m.lu_factor(a), b, trans=1),
        lambda r: [_general(r), r.normal(size=(4, 2))]),
    Rec("solve", lambda m: m.solve, lambda r: [_general(r), r.normal(size=(4, 2))], vmap=True),
    Rec("solve_pos", lambda m: lambda a, b: m.solve((a + a.T) / 2, b, assume_a="pos"),
        lambda r: [_spd(r), r.normal(size=4)]),
    Rec("inv", lambda m: m.inv, lambda r: [_general(r)]),
    Rec("det", lambda m: m.det, lambda r: [_general(r)]),
    Rec("eigh_values", lambda m: _sym(lambda a: m.eigh(a, eigvals_only=True)), lambda r: [_spd(r)]),
    # Second order fails inside fluxion's svd JVP rule for non-square input (a lax-level bug, reported): order 1.
    Rec("svd_values", lambda m: lambda a: m.svd(a, compute_uv=False), lambda r: [r.normal(size=(5, 3))], order=1),
    Rec("qr_r", lambda m: lambda a: m.qr(a, mode="r")[0], lambda r: [r.normal(size=(5, 3))], grad=False),
    Rec("expm", lambda m: m.expm, lambda r: [r.normal(size=(4, 4))], vmap=True),
    Rec("expm_large_norm", lambda m: m.expm, lambda r: [6 * r.normal(size=(3, 3))], order=1),
    Rec("block_diag", lambda m: lambda a, b, c: m.block_diag(a, b, c),
        lambda r: [r.normal(size=(2, 2)), r.normal(size=3), r.normal(size=(2, 1))]),
]


def _np_tree(x):
    return [np.asarray(v) for v in x] if isinstance(x, (tuple, list)) else np.asarray(x)


@pytest.mark.parametrize("rec", RECORDS, ids=str)
def test_values_against_scipy(rec, rng):
    args = rec.make(rng)
    with tu.enable_x64():
        got = rec.fn(fla)(*args)
    want = rec.fn(sla)(*args)
    tu.assert_allclose(_np_tree(got), _np_tree(want), rtol=1e-9, atol=1e-10)
    got32 = rec.fn(fla)(*[a.astype(np.float32) for a in args])
    for leaf in jax_leaves(got32):
        assert leaf.dtype in (np.float32, np.int32), leaf.dtype
    tu.assert_allclose(_np_tree(got32), _np_tree(want), rtol=2e-3, atol=2e-3, check_dtypes=False)


def jax_leaves(x):
    return fluxion.tree_util.tree_leaves(x)


@pytest.mark.parametrize("rec", [r for r in RECORDS if r.jax], ids=str)
def test_values_and_dtypes_against_jax(rec, rng):
    jax = pytest.importorskip("jax")
    import jax.scipy.linalg as jla
    args = rec.make(rng)
    with tu.enable_x64(jax.config):
        got, want = rec.fn(fla)(*args), rec.fn(jla)(*args)
        tu.assert_allclose(_np_tree(got), _np_tree(want), rtol=1e-9, atol=1e-10)
    args32 = [a.astype(np.float32) for a in args]
    got, want = rec.fn(fla)(*args32), rec.fn(jla)(*args32)
    assert [(x.dtype, x.shape) for x in jax_leaves(got)] == [(x.dtype, x.shape) for x in jax.tree_util.tree_leaves(want)]


@pytest.mark.parametrize("rec", [r for r in RECORDS if r.grad], ids=str)
def test_derivatives_against_finite_differences(rec, rng):
    args = rec.make(rng)
    with tu.enable_x64():
        f = rec.fn(fla)

        def g(*xs):  # drop integer outputs (pivots) from the differentiated result
            return [leaf for leaf in jax_leaves(f(*xs)) if jnp.issubdtype(leaf.dtype, jnp.floating)]
        tu.check_grads(g, args, order=rec.order, atol=1e-5, rtol=1e-5, rng=rng)


@pytest.mark.parametrize("rec", RECORDS, ids=str)
def test_jit_matches_eager(rec, rng):
    args = [a.astype(np.float32) for a in rec.make(rng)]
    tu.check_jit(rec.fn(fla), args, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rec", [r for r in RECORDS if r.vmap], ids=str)
def test_vmap_matches_loop(rec, rng):
    examples = [rec.make(rng) for _ in range(3)]
    args = [np.stack([ex[i] for ex in examples]).astype(np.float32) for i in range(len(examples[0]))]
    tu.check_batching(rec.fn(fla), args, rtol=1e-4, atol=1e-4)


def test_batched_inputs_match_a_loop(rng):
    a = np.stack([_general(rng) for _ in range(3)])
    b = rng.normal(size=(3, 4, 2))
    with tu.enable_x64():
        lu_, piv = fla.lu_factor(a)
        x = fla.lu_solve((lu_, piv), b)
        for i in range(3):
            tu.assert_allclose(x[i], sla.lu_solve(sla.lu_factor(a[i]), b[i]), rtol=1e-10)
        p, lo, up = fla.lu(a)
        tu.assert_allclose(np.asarray(p) @ np.asarray(lo) @ np.asarray(up), a, rtol=1e-10, atol=1e-12)
        tu.assert_allclose(fla.expm(a), np.stack([sla.expm(m) for m in a]), rtol=1e-10)


def test_decompositions_reconstruct(rng):
    a = rng.normal(size=(5, 3))
    with tu.enable_x64():
        for mode in ("full", "economic"):
            q, r = fla.qr(a, mode=mode)
            tu.assert_allclose(np.asarray(q) @ np.asarray(r), a, rtol=1e-10, atol=1e-12)
            want_q, _ = sla.qr(a, mode=mode)
            assert q.shape == want_q.shape
        u, s, vh = fla.svd(a, full_matrices=False)
        tu.assert_allclose((np.asarray(u) * np.asarray(s)) @ np.asarray(vh), a, rtol=1e-10, atol=1e-12)
        spd = _spd(rng)
        w, v = fla.eigh(spd)
        tu.assert_allclose(np.asarray(v) @ np.diag(np.asarray(w)) @ np.asarray(v).T, spd, rtol=1e-10)
        tu.assert_allclose(w, sla.eigh(spd, eigvals_only=True), rtol=1e-10)


def test_singular_lu_matches_scipy():
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    with tu.enable_x64():
        lu_, piv = fla.lu_factor(a)
    want_lu, want_piv = sla.lu_factor(a, check_finite=False)
    tu.assert_allclose(lu_, want_lu, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(np.asarray(piv), want_piv)


def test_block_diag_edge_cases():
    tu.assert_allclose(fla.block_diag(), sla.block_diag(), check_dtypes=False)
    tu.assert_allclose(fla.block_diag(1.0, np.ones((2, 0)), [2, 3]), sla.block_diag(1.0, np.ones((2, 0)), [2, 3]),
                       check_dtypes=False)
    with pytest.raises(ValueError, match="2 or fewer dimensions"):
        fla.block_diag(np.ones((2, 2, 2)))


CONSTRUCTORS = [
    ("toeplitz", lambda r: (r.normal(size=4), r.normal(size=3))),
    ("toeplitz", lambda r: (r.normal(size=4),)),
    ("hankel", lambda r: (r.normal(size=4), r.normal(size=5))),
    ("hankel", lambda r: (r.normal(size=3),)),
    ("circulant", lambda r: (r.normal(size=5),)),
    ("hilbert", lambda r: (5,)),
    ("companion", lambda r: (r.normal(size=5),)),
    ("dft", lambda r: (6,)),
    ("leslie", lambda r: (r.normal(size=4), r.uniform(size=3))),
    ("fiedler", lambda r: (r.normal(size=5),)),
    ("hadamard", lambda r: (8,)),
    ("helmert", lambda r: (5,)),
    ("helmert", lambda r: (5, True)),
    ("pascal", lambda r: (6,)),
    ("pascal", lambda r: (5, "lower")),
    ("invpascal", lambda r: (6,)),
    ("invpascal", lambda r: (5, "upper")),
    ("invhilbert", lambda r: (5,)),
    ("convolution_matrix", lambda r: (r.normal(size=4), 6)),
    ("convolution_matrix", lambda r: (r.normal(size=4), 3, "same")),
    ("convolution_matrix", lambda r: (r.normal(size=4), 6, "valid")),
]


@pytest.mark.parametrize("name,make", CONSTRUCTORS, ids=[c[0] for c in CONSTRUCTORS])
def test_structured_matrices(name, make, rng):
    args = make(rng)
    with tu.enable_x64():
        # (SciPy's pascal/invpascal are integer arrays; JAX's, and ours, are floats.)
        tu.assert_allclose(getattr(fla, name)(*args), getattr(sla, name)(*args), rtol=1e-13, atol=1e-14,
                           check_dtypes=False)
    pytest.importorskip("jax")
    import jax.scipy.linalg as jla
    args32 = [a.astype(np.float32) if isinstance(a, np.ndarray) else a for a in args]
    ours, theirs = getattr(fla, name)(*args32), getattr(jla, name)(*args32)
    assert (ours.dtype, ours.shape) == (theirs.dtype, theirs.shape)
    tu.assert_allclose(ours, np.asarray(theirs), rtol=1e-5, atol=1e-5)  # JAX's pascal goes through gammaln
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    if arrays and name != "convolution_matrix":
        tu.check_jit(getattr(fla, name), args32)
        batched = [np.stack([a, 2 * a]).astype(np.float32) for a in arrays]
        tu.assert_allclose(getattr(fla, name)(*batched), np.asarray(getattr(jla, name)(*batched)), rtol=1e-5,
                           atol=1e-6)
        with tu.enable_x64():
            tu.check_grads(getattr(fla, name), arrays, order=1, rng=rng)


def test_convolution_matrix_reproduces_convolve(rng):
    a, v = rng.normal(size=4), rng.normal(size=6)
    with tu.enable_x64():
        for mode in ("full", "same", "valid"):  # NumPy's modes: "same" has max(len(a), len(v)) entries
            tu.assert_allclose(fla.convolution_matrix(a, 6, mode) @ v, np.convolve(a, v, mode), rtol=1e-12,
                               atol=1e-12)
        tu.check_grads(lambda x: fla.convolution_matrix(x, 6, "same"), [a], order=2, rng=rng)
        tu.check_jit(lambda x: fla.convolution_matrix(x, 6, "valid"), [a])


@pytest.mark.parametrize("side", ["right", "left"])
def test_polar(side, rng):
    a = rng.normal(size=(5, 3)) if side == "right" else rng.normal(size=(3, 5))
    with tu.enable_x64():
        u, p = fla.polar(a, side)
        want_u, want_p = sla.polar(a, side)
        tu.assert_allclose(u, want_u, rtol=1e-10, atol=1e-12)
        tu.assert_allclose(p, want_p, rtol=1e-10, atol=1e-12)
        # (Square input: fluxion's svd JVP fails on rectangular matrices, a lax-level bug reported separately.)
        tu.check_grads(lambda m: fla.polar(m, side), [rng.normal(size=(4, 4))], order=1, rng=rng)
    pytest.importorskip("jax")
    import jax.scipy.linalg as jla
    ours, theirs = fla.polar(a.astype(np.float32), side), jla.polar(a.astype(np.float32), side)
    for x, y in zip(ours, theirs):
        assert (x.dtype, x.shape) == (y.dtype, y.shape)
        tu.assert_allclose(x, np.asarray(y), rtol=1e-4, atol=1e-4)


def test_errors():
    with pytest.raises(ValueError, match="square"):
        fla.inv(np.ones((2, 3)))
    with pytest.raises(ValueError, match="trans"):
        fla.solve_triangular(np.eye(2), np.ones(2), trans=3)
    with pytest.raises(ValueError, match="assume_a"):
        fla.solve(np.eye(2), np.ones(2), assume_a="banded")
    with pytest.raises(NotImplementedError):
        fla.eigh(np.eye(2), np.eye(2))
    with pytest.raises(NotImplementedError):
        fla.qr(np.eye(2), pivoting=True)
    with pytest.raises(ValueError, match="mode"):
        fla.qr(np.eye(2), mode="bogus")
    with pytest.raises(ValueError, match="two coefficients"):
        fla.companion([1.0])
    with pytest.raises(ValueError, match="one entry fewer"):
        fla.leslie([1.0, 2.0], [0.5, 0.5])
    with pytest.raises(ValueError, match="scale"):
        fla.dft(3, scale="bogus")
    with pytest.raises(ValueError, match="power of 2"):
        fla.hadamard(6)
    with pytest.raises(ValueError, match="kind"):
        fla.pascal(3, kind="diagonal")
    with pytest.raises(ValueError, match="mode"):
        fla.convolution_matrix(np.ones(3), 4, mode="bogus")
    with pytest.raises(ValueError, match="side"):
        fla.polar(np.eye(2), side="up")
    with pytest.raises(ValueError, match="lu_solve"):
        fla.lu_solve(fla.lu_factor(np.eye(3)), np.ones(2))


MISSING_WITH_REASON: dict[str, str] = {}


def test_coverage_of_jax_scipy_linalg():
    pytest.importorskip("jax")
    import jax.scipy.linalg as jla
    theirs = {n for n in dir(jla) if not n.startswith("_")}
    ours = {n for n in dir(fla) if not n.startswith("_")}
    assert theirs - ours == set(MISSING_WITH_REASON), sorted((theirs - ours) ^ set(MISSING_WITH_REASON))
