"""Table-driven tests of `fluxion.scipy.special` against SciPy and real `jax.scipy.special`.

One record per function (see scipy_testing.py): values in float64 and float32 against SciPy, values, dtypes and
weak types against real JAX, derivatives against finite differences (float64, to second order where JAX's are
twice differentiable), eager against jit, and vmap against a Python loop for a few. Edge cases (poles, the ends of
the domains, tails) have their own tests, and a coverage test lists the names of `jax.scipy.special` not mirrored.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
import fluxion.scipy.special as fsp
from fluxion._src import test_util as tu

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # scipy_testing.py is here
from scipy_testing import Rec, differentiated, draw  # noqa: E402

sp = pytest.importorskip("scipy.special")


def _f(name):
    return lambda m: getattr(m, name)


def R(name, *domains, **kw):  # noqa: N802
    return Rec(name, kw.pop("fn", _f(name)), domains, **kw)


_POLY_ORDERS = np.array([0, 1, 2, 3, 1], np.int32)

RECORDS = [
    R("xlogy", "real", "pos", vmap=True),
    R("xlog1py", "real", "sym"),
    R("entr", "pos"),
    R("rel_entr", "pos", "pos"),
    R("kl_div", "pos", "pos"),
    R("expit", "real"),
    R("logit", "unit"),
    R("erf", "real"),
    R("erfc", "real"),
    R("erfinv", "sym"),
    R("ndtr", "real", vmap=True),
    R("ndtri", "unit", rtol=1e-13),
    # Below -20 both JAX and fluxion use a 3-term asymptotic series (SciPy is exact there); JAX's log(ndtr(x)) loses
    # digits for x in (3, 8), where fluxion uses log1p(-ndtr(-x)): SciPy is checked on (-20, 50) in EDGES.
    R("log_ndtr", "wide", rtol=1e-9, scipy=False),
    R("gammaln", "pos"),
    R("gamma", "nonint", rtol=1e-13),
    R("gammasgn", "nonint", order=0),
    R("loggamma", "pos"),
    R("digamma", "pos"),
    R("polygamma", "count", "pos", fixed={0: _POLY_ORDERS}, rtol=1e-12),
    R("betaln", "pos", "pos", rtol=1e-12),
    R("beta", "pos", "pos", rtol=1e-12),
    R("multigammaln", "gt1", "count", fixed={1: 3}, rtol=1e-12),
    R("factorial", "count", order=0, rtol=1e-13),
    R("comb", "count", "count", order=0, rtol=1e-12),
    R("poch", "pos", "small_pos", rtol=1e-12),
    R("boxcox", "pos", "sym", rtol=1e-12),
    R("boxcox1p", "sym", "sym", rtol=1e-12),
    R("zeta", "gt1", "pos", rtol=1e-12, grad_tol=1e-4),
    R("gammainc", "pos", "pos", rtol=1e-12, order=1, vmap=True),
    R("gammaincc", "pos", "pos", rtol=1e-12, order=1),
    R("betainc", "pos", "pos", "unit", rtol=1e-11, order=1),
    R("erfcx", "real", rtol=1e-12, vmap=True),
    R("exp1", "small_pos", rtol=1e-13),
    R("expi", "real", rtol=1e-12, grad_tol=1e-4),
    R("expn", "count", "small_pos", fixed={0: np.array([0, 1, 2, 3, 7])}, rtol=1e-13),
    R("i0e", "real", rtol=1e-13),
    R("i1e", "real", rtol=1e-13),
    R("i0", "real", rtol=1e-13),
    R("i1", "real", rtol=1e-13, vmap=True),
    R("logsumexp", "real", fn=lambda m: (lambda a: m.logsumexp(a, axis=1)), shapes=((3, 4),), vmap=True),
    R("logsumexp_b", "real", "pos", fn=lambda m: (lambda a, b: m.logsumexp(a, axis=0, b=b, keepdims=True)),
      shapes=((3, 4), (3, 4))),
    R("softmax", "real", fn=lambda m: (lambda a: m.softmax(a, axis=-1)), shapes=((3, 4),)),
    R("log_softmax", "real", fn=lambda m: (lambda a: m.log_softmax(a)), shapes=((3, 4),)),
]
BY_NAME = {r.name: r for r in RECORDS}


def _scipy_fn(rec):
    if rec.name == "logsumexp_b":
        return lambda a, b: sp.logsumexp(a, axis=0, b=b, keepdims=True)
    if rec.name == "log_softmax":
        return lambda a: sp.log_softmax(a, axis=None)
    if rec.name == "comb":
        return lambda n, k: sp.comb(n, k)
    return rec.fn(sp)


@pytest.mark.parametrize("rec", [r for r in RECORDS if r.scipy], ids=str)
def test_values_float64_against_scipy(rec, rng):
    args = draw(rec, rng)
    with tu.enable_x64():
        got = rec.fn(fsp)(*args)
    want = _scipy_fn(rec)(*args)
    assert np.asarray(got).dtype == np.float64
    tu.assert_allclose(got, want, rtol=rec.rtol, atol=1e-300 if rec.rtol < 1e-11 else 1e-14)


@pytest.mark.parametrize("rec", [r for r in RECORDS if r.scipy], ids=str)
def test_values_float32_against_scipy(rec, rng):
    args = draw(rec, rng, np.float32)
    got = rec.fn(fsp)(*args)
    want = _scipy_fn(rec)(*[np.asarray(a, np.float64) if isinstance(a, np.ndarray) and a.dtype.kind == "f"
                             else a for a in args])
    assert np.asarray(got).dtype == np.float32
    tu.assert_allclose(got, np.asarray(want, np.float32), rtol=rec.rtol32, atol=1e-6)


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
        tu.assert_allclose(got, np.asarray(want), rtol=max(rec.rtol, 1e-12), atol=1e-14)
    args32 = draw(rec, rng, np.float32)
    got, want = rec.fn(fsp)(*args32), rec.fn(jsp)(*args32)
    assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type)


@pytest.mark.parametrize("name", ["xlogy", "erf", "gammaln", "expit", "betaln", "zeta", "gammainc", "i0e"])
def test_python_scalars_stay_weak_like_jax(name):
    jax, jsp = _jax_special()
    rec = BY_NAME[name]
    scalars = [1.5 + i for i in range(len(rec.domains))]
    got, want = rec.fn(fsp)(*scalars), rec.fn(jsp)(*scalars)
    assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type)
    tu.assert_allclose(got, np.asarray(want), rtol=1e-5)
    ints = [2] * len(rec.domains)
    got, want = rec.fn(fsp)(*ints), rec.fn(jsp)(*ints)
    assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type)


@pytest.mark.parametrize("rec", [r for r in RECORDS if r.order], ids=str)
def test_derivatives_against_finite_differences(rec, rng):
    args = draw(rec, rng)
    with tu.enable_x64():
        build, dyn = differentiated(rec, args)
        tu.check_grads(build(fsp), dyn, order=rec.order, atol=rec.grad_tol, rtol=rec.grad_tol, rng=rng)


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
    "xlogy": ([0.0, 0.0, 1.0, 0.0, 2.0], [0.0, np.nan, 0.0, 5.0, np.inf]),
    "xlog1py": ([0.0, 0.0, 1.0], [-1.0, np.nan, -1.0]),
    "entr": ([0.0, -1.0, np.inf],),
    "rel_entr": ([0.0, 0.0, 1.0, -1.0, 1.0], [0.0, 1.0, 0.0, 1.0, -1.0]),
    "kl_div": ([0.0, 0.0, 1.0, -1.0], [0.0, 2.0, 0.0, 1.0]),
    "logit": ([0.0, 1.0, -0.5, 1.5],),
    "ndtri": ([0.0, 1.0, -0.1, 1.1, 1e-300, 1e-100, 1 - 1e-16, 0.5, np.nan],),
    "ndtr": ([-40.0, -10.0, 0.0, 10.0, np.inf, -np.inf],),
    "log_ndtr": ([-19.9, -10.0, -1.0, 0.0, 0.5, 3.0, 5.0, 7.9, 8.1, 50.0, np.inf],),
    "gamma": ([0.0, -0.0, -1.0, -2.0, np.inf, -np.inf, 171.5, np.nan],),
    "gammasgn": ([0.0, -0.0, -1.0, -2.5, np.inf, -np.inf, np.nan],),
    "loggamma": ([-1.5, 1e-300, 1e300],),  # and NaN at 0 as JAX, where SciPy gives inf
    "factorial": ([-1.0, 0.0, 20.0, 170.0],),
    "comb": ([5.0, 5.0, -1.0, 3.0], [6.0, -1.0, 2.0, 3.0]),
    "poch": ([2.0, -1.5, 3.0], [0.0, 2.0, -1.0]),
    "boxcox": ([1.0, 2.0, 0.0], [0.0, 0.0, 0.5]),
    "zeta": ([1.0, 0.5, 2.0, 2.0, 30.0], [1.0, 1.0, -1.0, 0.5, 1.0]),
    "gammainc": ([0.0, 1.0, 1.0, -1.0, 2.0, 0.5, 50.0, 200.0], [1.0, 0.0, np.inf, 1.0, -1.0, 1e-20, 49.0, 260.0]),
    "gammaincc": ([0.0, 1.0, 1.0, 0.5, 50.0, 200.0], [1.0, 0.0, np.inf, 1e-20, 49.0, 260.0]),
    "betainc": ([1.0, 2.0, 2.0, 0.5, -1.0, 200.0], [1.0, 3.0, 3.0, 0.5, 1.0, 300.0],
                [0.0, 1.0, 0.5, 1e-10, 0.5, 0.4]),
    "i0e": ([0.0, 29.999, 30.001, 1e4, -1e4, np.inf],),
    "erfcx": ([-30.0, -26.0, -5.0, 0.0, 1.999, 2.0, 2.001, 5.0, 26.0, 30.0, 1e5, 1e300, np.inf, -np.inf],),
    "exp1": ([0.0, 1e-10, 1.0, 1.0 + 1e-12, 40.0, 700.0, np.inf, -1.0],),
    "expi": ([0.0, 1e-10, -1e-10, 39.999, 40.001, 700.0, -700.0, np.inf, -np.inf],),
    "expn": ([0.0, 1.0, 2.0, 5.0, 1.0, -1.0, 2.0], [0.0, 0.0, 0.0, 1.0, 50.0, 1.0, -1.0]),
    "i1e": ([0.0, -29.999, 30.001, 1e4, -1e4],),
}


@pytest.mark.parametrize("name", sorted(EDGES))
def test_edge_values_against_scipy(name):
    args = [np.asarray(a, np.float64) for a in EDGES[name]]
    with tu.enable_x64():
        got = getattr(fsp, name)(*args)
    with np.errstate(all="ignore"):
        want = getattr(sp, name)(*args)
    tu.assert_allclose(got, want, rtol=1e-12, atol=1e-300)


def test_log_ndtr_far_tail_matches_jax_and_stays_finite():
    jax, jsp = _jax_special()
    x = np.array([-1e3, -100.0, -38.0, -20.5, -19.5, -10.5, -9.5])
    with tu.enable_x64(jax.config):
        tu.assert_allclose(fsp.log_ndtr(x), np.asarray(jsp.log_ndtr(x)), rtol=1e-14)
        for order in (0, 1, 5):
            tu.assert_allclose(fsp.log_ndtr(x, series_order=order), np.asarray(jsp.log_ndtr(x, series_order=order)),
                               rtol=1e-14)
        g = fluxion.vmap(fluxion.grad(fsp.log_ndtr))(x)
        tu.assert_allclose(g, np.asarray(jax.vmap(jax.grad(jsp.log_ndtr))(x)), rtol=1e-10)
    x32 = x.astype(np.float32)
    tu.assert_allclose(fsp.log_ndtr(x32), np.asarray(jsp.log_ndtr(x32)), rtol=1e-6)


def test_ndtri_tails_are_relatively_accurate():
    p = np.array([1e-300, 1e-200, 1e-50, 1e-10, 0.01, 0.049, 0.051, 0.099, 0.101, 0.4, 0.5 + 1e-10])
    with tu.enable_x64():
        got = fsp.ndtri(p)
        tu.assert_allclose(got, sp.ndtri(p), rtol=1e-13)
        tu.assert_allclose(fsp.ndtri(1 - p[4:-1]), -sp.ndtri(p[4:-1]), rtol=1e-13)
    p32 = np.array([1e-30, 1e-10, 0.02, 0.3, 0.7, 0.99], np.float32)
    tu.assert_allclose(fsp.ndtri(p32), sp.ndtri(p32.astype(np.float64)).astype(np.float32), rtol=3e-6)


def test_polygamma_traced_orders_use_zeta():
    # A traced n (vmap over the order) goes through (-1)^(n+1) n! zeta(n + 1, x).
    x = np.array([0.3, 1.0, 2.5, 7.0, 12.0])
    n = np.array([0, 1, 2, 3, 4], np.int32)
    with tu.enable_x64():
        got = fluxion.vmap(fsp.polygamma)(n, x)
        tu.assert_allclose(got, sp.polygamma(n, x), rtol=1e-12)
        got = fluxion.jit(fsp.polygamma)(n, x)
        tu.assert_allclose(got, sp.polygamma(n, x), rtol=1e-12)


def test_xlogy_gradient_is_finite_at_zero():
    with tu.enable_x64():
        gx, gy = fluxion.grad(lambda x, y: fsp.xlogy(x, y), argnums=(0, 1))(0.0, 2.0)
    assert float(gx) == pytest.approx(np.log(2.0)) and float(gy) == 0.0


def test_gammainc_derivative_in_a_matches_jax():
    jax, jsp = _jax_special()
    a = np.array([0.5, 1.0, 3.0, 10.0, 2.0])
    x = np.array([0.3, 2.0, 2.5, 12.0, 9.0])
    with tu.enable_x64(jax.config):
        for name in ("gammainc", "gammaincc"):
            ours = fluxion.vmap(fluxion.grad(getattr(fsp, name), argnums=(0, 1)))(a, x)
            theirs = jax.vmap(jax.grad(getattr(jsp, name), argnums=(0, 1)))(a, x)
            tu.assert_allclose(ours[0], np.asarray(theirs[0]), rtol=1e-8)
            tu.assert_allclose(ours[1], np.asarray(theirs[1]), rtol=1e-10)


@pytest.mark.parametrize("n", [0, 1, 2, 7, 30])
def test_bernoulli_numbers(n):
    jax, jsp = _jax_special()
    exact = [1, -1 / 2, 1 / 6, 0, -1 / 30, 0, 1 / 42, 0][: n + 1]
    with tu.enable_x64():
        got = np.asarray(fsp.bernoulli(n))
        np.testing.assert_allclose(got[: len(exact)], exact, rtol=1e-15)
        tu.assert_allclose(got, sp.bernoulli(n), rtol=1e-11)  # SciPy's B_4 is 2e-12 off -1/30
    ours, theirs = fsp.bernoulli(n), jsp.bernoulli(n)
    assert (ours.dtype, ours.shape) == (theirs.dtype, theirs.shape)
    tu.assert_allclose(ours, np.asarray(theirs), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="non-negative"):
        fsp.bernoulli(-1)


def test_bessel_jn(rng):
    z = np.concatenate([rng.uniform(-20, 20, 8), [0.0, 1e-300, 9.9e-4, 1.1e-3, -5e-4]])
    orders = np.arange(6)[:, None]
    with tu.enable_x64():
        got = fsp.bessel_jn(z, v=5)
        assert got.shape == (6, z.size)
        tu.assert_allclose(got, sp.jv(orders, z), rtol=1e-10, atol=1e-13)
        tu.check_grads(lambda x: fsp.bessel_jn(x, v=3), [z[:8]], order=2, rng=rng)
        # d/dz J_0 = -J_1
        tu.assert_allclose(fluxion.vmap(fluxion.grad(lambda x: fsp.bessel_jn(x, v=1)[0]))(z[:8]), -sp.jv(1, z[:8]),
                           rtol=1e-9, atol=1e-12)
    z32 = z.astype(np.float32)
    tu.check_jit(lambda x: fsp.bessel_jn(x, v=3), [z32])
    jax, jsp = _jax_special()
    ours, theirs = fsp.bessel_jn(z32, v=3), jsp.bessel_jn(z32, v=3)
    assert (ours.dtype, ours.shape) == (theirs.dtype, theirs.shape)
    # JAX's recurrence overflows to NaN for small or negative z in float32; compare where it is finite.
    finite = np.isfinite(np.asarray(theirs))
    tu.assert_allclose(np.asarray(ours)[finite], np.asarray(theirs)[finite], rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="non-negative"):
        fsp.bessel_jn(1.0, v=-1)


def test_errors():
    with pytest.raises(NotImplementedError):
        fsp.factorial(3, exact=True)
    with pytest.raises(NotImplementedError):
        fsp.zeta(2.0)
    with pytest.raises(ValueError, match="integer type"):
        fsp.polygamma(1.0, 2.0)
    with pytest.raises(TypeError, match="float32 or float64"):
        fsp.ndtri(jnp.asarray([1, 2]))
    with pytest.raises(TypeError, match="floating"):
        fsp.log_ndtr(jnp.asarray([1, 2]))
    with pytest.raises(ValueError, match="complex"):
        fsp.gammaln(jnp.asarray([1 + 1j]))
    with pytest.raises(ValueError, match="positive integer"):
        fsp.multigammaln(2.0, 0)
    with pytest.raises(fluxion.errors.ConcretizationTypeError):
        fluxion.jit(lambda d: fsp.multigammaln(3.0, d))(2)


# Names of jax.scipy.special not mirrored, and why.
MISSING_WITH_REASON: dict[str, str] = {}


def test_coverage_of_jax_scipy_special():
    _, jsp = _jax_special()
    theirs = {n for n in dir(jsp) if not n.startswith("_") and callable(getattr(jsp, n))}
    ours = {n for n in dir(fsp) if not n.startswith("_")}
    missing = theirs - ours
    assert missing == set(MISSING_WITH_REASON), (sorted(missing - set(MISSING_WITH_REASON)),
                                                  sorted(set(MISSING_WITH_REASON) - missing))
    assert ours - theirs <= set(), sorted(ours - theirs)
