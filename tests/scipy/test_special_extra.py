"""Table-driven tests of the error-function relatives, oscillatory integrals, hypergeometric functions and
spherical harmonics of `fluxion.scipy.special` (`wofz`, `dawsn`, `fresnel`, `sici`, `spence`, `owens_t`, `hyp1f1`, `hyp2f1`,
`sph_harm_y`) against SciPy and real `jax.scipy.special`.

One record per function and domain (see scipy_testing.py): values in float64 and float32 against SciPy, values,
dtypes and weak types against JAX, derivatives (JAX's closed forms) against finite differences to second order,
eager against jit, and vmap against a Python loop. The domains reach past every switch between a series and an
asymptotic form. Edge values and errors have their own tests.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import fluxion
import fluxion.scipy.special as fsp
from fluxion._src import test_util as tu

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # scipy_testing.py is here
from scipy_testing import DOMAINS, Rec, differentiated, draw  # noqa: E402

sp = pytest.importorskip("scipy.special")

# Domains reaching the far branches of these functions (registered here: only these records use them).
DOMAINS.update({
    "far": lambda rng, s: rng.uniform(-30.0, 30.0, s),        # sici beyond 4, fresnel beyond 1.6
    "dilog": lambda rng, s: rng.uniform(0.02, 9.0, s),        # spence on all three of its reductions
    "owen_h": lambda rng, s: rng.uniform(-4.0, 4.0, s),
    "owen_a": lambda rng, s: rng.uniform(-4.0, 4.0, s),       # |a| <= 1 (quadrature) and > 1 (Owen's identity)
    "hyp_x": lambda rng, s: rng.uniform(0.0, 25.0, s),        # hyp1f1's power series
    "hyp_neg": lambda rng, s: rng.uniform(-40.0, 0.0, s),     # Kummer's transformation
    "hyp_far": lambda rng, s: rng.uniform(100.0, 200.0, s),   # the asymptotic expansion
    "polar": lambda rng, s: rng.uniform(0.05, 3.09, s),       # a colatitude in (0, pi)
    "gauss_x": lambda rng, s: rng.uniform(-0.5, 0.85, s),     # hyp2f1 where JAX's plain series converges
    "gauss_wide": lambda rng, s: rng.uniform(-5.0, 0.99, s),  # Pfaff's transformation and the connection formulas
    "gauss_near_one": lambda rng, s: rng.uniform(0.7, 0.99, s),
})


def _f(name):
    return lambda m: getattr(m, name)


def R(name, *domains, **kw):  # noqa: N802
    return Rec(name, kw.pop("fn", _f(name)), domains, **kw)


def _wofz_complex(m):
    return lambda x, y: m.wofz(x + 1j * y)


_DEGREES, _ORDERS = np.array([0, 1, 2, 3, 5]), np.array([0, -1, 2, -3, 4])


RECORDS = [
    R("wofz", "real", rtol=1e-12, rtol32=2e-5, vmap=True),
    R("wofz_complex", "real", "real", fn=_wofz_complex, rtol=1e-12, rtol32=2e-5, vmap=True),
    R("dawsn", "real", rtol=1e-12, vmap=True),
    R("dawsn_far", "far", fn=_f("dawsn"), rtol=1e-12),
    R("dawsn_small", "loc", fn=_f("dawsn"), rtol=1e-13),
    R("fresnel", "real", rtol=1e-12, vmap=True),
    R("fresnel_far", "far", fn=_f("fresnel"), rtol=1e-9, rtol32=1e-4, grad_tol=1e-4),
    R("sici", "real", rtol=1e-12, vmap=True),
    R("sici_far", "far", fn=_f("sici"), rtol=1e-12, grad_tol=1e-4),
    R("spence", "dilog", rtol=1e-13, vmap=True),
    R("owens_t", "owen_h", "owen_a", rtol=1e-12, vmap=True),
    # hyp1f1's derivative series are while loops: first order, as JAX's.
    R("hyp1f1", "small_pos", "pos", "hyp_x", rtol=1e-12, rtol32=1e-4, order=1, vmap=True),
    # JAX sums the cancelling series for x < 0 (fluxion uses Kummer's transformation): SciPy only.
    R("hyp1f1_negative", "small_pos", "pos", "hyp_neg", fn=_f("hyp1f1"), rtol=1e-12, rtol32=1e-4, order=0,
      jax=False),
    R("hyp1f1_far", "small_pos", "pos", "hyp_far", fn=_f("hyp1f1"), rtol=1e-11, rtol32=1e-4, order=0),
    R("hyp2f1", "small_pos", "small_pos", "pos", "gauss_x", rtol=1e-11, rtol32=1e-4, order=1, vmap=True),
    # Beyond JAX's accurate range (it sums the plain series): SciPy only, values only (the parameter derivatives
    # are, as JAX's, series in x that converge slowly near |x| = 1).
    R("hyp2f1_wide", "small_pos", "small_pos", "pos", "gauss_wide", fn=_f("hyp2f1"), rtol=1e-10, rtol32=1e-4,
      order=0, jax=False),
    # Integer c - a - b (2 and -1) near x = 1: the limiting connection formula, directly and after Euler's.
    R("hyp2f1_integer_d", "small_pos", "small_pos", "gauss_near_one", rtol=1e-10, rtol32=1e-3, order=0, jax=False,
      fn=lambda m: (lambda a, b, x: m.hyp2f1(a, b, a + b + 2.0, x))),
    R("hyp2f1_negative_integer_d", "small_pos", "small_pos", "gauss_near_one", rtol=1e-10, rtol32=1e-3, order=0,
      jax=False, fn=lambda m: (lambda a, b, x: m.hyp2f1(a + 1.0, b + 1.0, a + b + 1.0, x))),
    # The degree bound n_max is given so that n may be traced (vmap); SciPy has no such argument.
    R("sph_harm_y", "count", "count", "polar", "angle_pos", fixed={0: _DEGREES, 1: _ORDERS},
      fn=lambda m: (lambda n, o, t, p: m.sph_harm_y(n, o, t, p) if m.__name__.startswith("scipy")
                    else m.sph_harm_y(n, o, t, p, n_max=5)), rtol=1e-12, vmap=True),
]
BY_NAME = {r.name: r for r in RECORDS}


def _scipy(rec):
    if rec.name == "sici" or rec.name == "sici_far":
        # SciPy's real sici gives Ci(x) + i pi for x < 0 as a NaN; JAX (and fluxion) return Ci(|x|).
        return lambda x: (sp.sici(x)[0], sp.sici(np.abs(x))[1])
    return rec.fn(sp)


@pytest.mark.parametrize("rec", RECORDS, ids=str)
def test_values_float64_against_scipy(rec, rng):
    args = draw(rec, rng)
    with tu.enable_x64():
        got = rec.fn(fsp)(*args)
    want = _scipy(rec)(*args)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        assert np.asarray(g).dtype in (np.float64, np.complex128)
        tu.assert_allclose(np.asarray(g), np.asarray(w), rtol=rec.rtol, atol=1e-14, check_dtypes=False)


@pytest.mark.parametrize("rec", RECORDS, ids=str)
def test_values_float32_against_scipy(rec, rng):
    args = draw(rec, rng, np.float32)
    got = rec.fn(fsp)(*args)
    want = _scipy(rec)(*[np.asarray(a, np.float64) if a.dtype.kind == "f" else a for a in args])
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        assert np.asarray(g).dtype in (np.float32, np.complex64)
        tu.assert_allclose(np.asarray(g), np.asarray(w).astype(np.asarray(g).dtype), rtol=rec.rtol32, atol=1e-6,
                           check_dtypes=False)


def _jax_special():
    jax = pytest.importorskip("jax")
    import jax.scipy.special as jsp
    return jax, jsp


@pytest.mark.parametrize("rec", [r for r in RECORDS if r.jax], ids=str)
def test_values_and_dtypes_against_jax(rec, rng):
    jax, jsp = _jax_special()
    args = draw(rec, rng)
    with tu.enable_x64(jax.config):
        got = rec.fn(fsp)(*args)
        want = rec.fn(jsp)(*args)
        tu.assert_allclose(got, jax.tree_util.tree_map(np.asarray, want), rtol=max(rec.rtol, 1e-12), atol=1e-14)
    args32 = draw(rec, rng, np.float32)
    got, want = rec.fn(fsp)(*args32), rec.fn(jsp)(*args32)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        assert (g.dtype, g.weak_type) == (w.dtype, w.weak_type)


def test_sph_harm_y_static_degree_and_clipping_like_jax(rng):
    jax, jsp = _jax_special()
    n = rng.integers(0, 8, 40)
    m = np.array([rng.integers(-k, k + 1) for k in n])
    theta, phi = rng.uniform(0, np.pi, 40), rng.uniform(0, 2 * np.pi, 40)
    with tu.enable_x64(jax.config):
        for kw in ({}, {"n_max": 4}):  # n_max below max(n) clips degree and order in the Legendre factor, as JAX
            tu.assert_allclose(fsp.sph_harm_y(n, m, theta, phi, **kw), np.asarray(jsp.sph_harm_y(n, m, theta, phi,
                                                                                                   **kw)),
                               rtol=1e-12, atol=1e-14)
        tu.assert_allclose(fsp.sph_harm_y(n, m, 0.3, phi), np.asarray(jsp.sph_harm_y(n, m, 0.3, phi)), rtol=1e-12,
                           atol=1e-14)
    with pytest.raises(fluxion.errors.ConcretizationTypeError):
        fluxion.jit(lambda k: fsp.sph_harm_y(k, 0 * k, np.ones(3), np.ones(3)))(np.arange(3))
    with pytest.raises(NotImplementedError, match="diff_n"):
        fsp.sph_harm_y(n, m, theta, phi, diff_n=1)


@pytest.mark.parametrize("name", ["wofz", "dawsn", "fresnel", "sici", "spence", "owens_t", "hyp1f1", "hyp2f1"])
def test_python_scalars_like_jax(name):
    jax, jsp = _jax_special()
    nargs = {"owens_t": 2, "hyp1f1": 3, "hyp2f1": 4}.get(name, 1)
    args = [1.5, 0.5, 2.5, 0.25][:nargs] if nargs > 1 else [1.5]
    got, want = getattr(fsp, name)(*args), getattr(jsp, name)(*args)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        assert (g.dtype, g.weak_type) == (w.dtype, w.weak_type)
        tu.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, check_dtypes=False)


@pytest.mark.parametrize("rec", [r for r in RECORDS if r.order], ids=str)
def test_derivatives_against_finite_differences(rec, rng):
    args = draw(rec, rng)
    with tu.enable_x64():
        build, dyn = differentiated(rec, args)
        tu.check_grads(build(fsp), dyn, order=rec.order, atol=rec.grad_tol, rtol=rec.grad_tol, rng=rng)


@pytest.mark.parametrize("name", ["dawsn", "fresnel", "sici", "owens_t", "hyp1f1", "hyp2f1"])
def test_derivatives_match_jax(name, rng):
    jax, jsp = _jax_special()
    rec = BY_NAME[name]
    args = draw(rec, rng)
    with tu.enable_x64(jax.config):
        def total(m, grad):
            f = rec.fn(m)
            return grad(lambda *a: sum(v.sum() for v in jax.tree_util.tree_leaves(f(*a))),
                        argnums=tuple(range(len(args))))
        got = total(fsp, fluxion.grad)(*args)
        want = total(jsp, jax.grad)(*args)
        tu.assert_allclose(got, tuple(np.asarray(w) for w in want), rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("rec", RECORDS, ids=str)
def test_jit_matches_eager(rec, rng):
    args = draw(rec, rng, np.float32)
    build, dyn = differentiated(rec, args)
    tu.check_jit(build(fsp), dyn, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("rec", [r for r in RECORDS if r.vmap], ids=str)
def test_vmap_matches_loop(rec, rng):
    args = [np.stack([a, a[::-1]]) for a in draw(rec, rng, np.float32)]
    tu.check_batching(rec.fn(fsp), args, rtol=1e-6, atol=1e-6)


# --------------------------------------------------------------------------------------------------------------
# Edges, tails and errors
# --------------------------------------------------------------------------------------------------------------

EDGES = {
    "dawsn": ([0.0, -0.0, 1e-12, 0.19999, 0.2, 1e3, -1e8, np.nan],),
    "fresnel": ([0.0, 1e-8, 1.5999, 1.6, 1e4, -1e4, np.inf, -np.inf, np.nan],),
    "sici": ([0.0, 1e-10, 3.9999, 4.0, 4.0001, 1e3, -1e3, np.inf, np.nan],),
    "spence": ([0.0, 1e-300, 0.5, 1.0, 2.0, 2.0001, 1e10, -1.0, np.inf, np.nan],),
    "owens_t": ([0.0, 0.0, 1.0, 2.0, -3.0, 5.0, 0.5, np.nan], [0.0, 1.0, 1.0, 1.0, -2.5, 0.1, np.inf, 1.0]),
    "wofz": ([0.0, 1e-10, 5.0, -5.0, 1e4],),
}


@pytest.mark.parametrize("name", sorted(EDGES))
def test_edges_against_scipy(name):
    args = [np.asarray(a, np.float64) for a in EDGES[name]]
    with tu.enable_x64():
        got = getattr(fsp, name)(*args)
    want = getattr(sp, name)(*args)
    if name == "sici":
        want = (want[0], sp.sici(np.abs(args[0]))[1])
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        tu.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12, atol=1e-300, check_dtypes=False)


def test_where_jax_and_scipy_differ():
    with tu.enable_x64():
        si, ci = fsp.sici(np.array([-2.0, -np.inf, 0.0]))
        # Ci of a negative argument is Ci(|x|) (JAX's real part); Ci(-inf) is NaN, Ci(0) = -inf.
        tu.assert_allclose(ci, np.array([sp.sici(2.0)[1], np.nan, -np.inf]))
        tu.assert_allclose(si, np.array([-sp.sici(2.0)[0], -np.pi / 2, 0.0]))
        assert np.isnan(np.asarray(fsp.spence(-0.5)))  # SciPy continues spence to negative x; JAX gives NaN


def test_hyp1f1_special_cases_follow_jax():
    jax, jsp = _jax_special()
    a, b, x = np.array([0.0, 0.0, 2.0, 1.5, 3.0]), np.array([0.0, 2.0, 0.0, 1.5, 4.0]), np.array([1.0, 5.0, 1.0,
                                                                                                  2.0, 0.0])
    with tu.enable_x64(jax.config):
        got, want = fsp.hyp1f1(a, b, x), jsp.hyp1f1(a, b, x)
        tu.assert_allclose(got, np.asarray(want), rtol=1e-14)
    tu.assert_allclose(np.asarray(got), np.array([1.0, 1.0, np.inf, np.exp(2.0), 1.0]), rtol=1e-14)


def test_hyp2f1_special_cases_follow_jax():
    jax, jsp = _jax_special()
    # x = 0; x = 1 with c - a - b > 0 (Gauss's sum), = 0 and < 0 (inf); a = b = c = 0; c a negative integer;
    # b = c and a = c (closed forms); x > 1 (inf); a terminating series.
    cases = np.array([[1.0, 2, 3, 0], [1, 2, 3.5, 1], [1, 2, 3, 1], [1, 2, 2.5, 1], [0, 0, 0, 0.5], [1, 2, -1, 0.5],
                      [1, 2, 2, 0.5], [2, 1, 2, 0.5], [1, 2, 3, 1.5], [-3, 2, 3.5, 0.9]]).T
    with tu.enable_x64(jax.config):
        got, want = fsp.hyp2f1(*cases), jsp.hyp2f1(*cases)
        tu.assert_allclose(got, np.asarray(want), rtol=1e-12)
    tu.assert_allclose(np.asarray(got)[[1, 9]], sp.hyp2f1(*cases[:, [1, 9]]), rtol=1e-12)


def test_errors():
    with pytest.raises(ValueError, match="complex"):
        fsp.hyp1f1(1.0, 2.0, np.array([1 + 1j]))
    for name in ("dawsn", "sici"):
        with pytest.raises(ValueError, match="complex"):
            getattr(fsp, name)(np.array([1 + 1j]))
    with pytest.raises(NotImplementedError, match="complex"):
        fsp.fresnel(np.array([1 + 1j]))
    with pytest.raises(TypeError, match="int32"):
        fsp.spence(np.array([1, 2], np.int32))
    with pytest.raises(ValueError, match="complex"):
        fsp.owens_t(np.array([1 + 1j]), 1.0)


def test_wofz_promotes_to_complex_like_jax():
    jax, jsp = _jax_special()
    for x in (np.float32(0.5), np.array([1, 2], np.int32), np.complex64(0.5 + 1j)):
        got, want = fsp.wofz(x), jsp.wofz(x)
        assert got.dtype == want.dtype
        tu.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-5, check_dtypes=False)
