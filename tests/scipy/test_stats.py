"""Table-driven tests of `fluxion.scipy.stats` against `scipy.stats` and real `jax.scipy.stats`.

Every function of every distribution module gets one record (built from a per-distribution table of argument
domains): values in float64 and float32 against SciPy, values, dtypes and weak types against JAX, derivatives
against finite differences, eager against jit, and vmap against a loop for some. The multivariate distributions,
tails and the descriptive statistics (`mode`, `rankdata`, `sem`) have their own tests; a coverage test compares
the module lists with `jax.scipy.stats`.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import fluxion
import fluxion.scipy.stats as fst
from fluxion._src import test_util as tu

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # scipy_testing.py is here
from scipy_testing import Rec, differentiated, draw  # noqa: E402

sst = pytest.importorskip("scipy.stats")

# distribution -> (domain of x for densities/CDFs, shape-parameter domains, loc/scale domains or fixed values).
# A fixed value is given as a float; loc/scale None means the functions take no loc/scale.
CONTINUOUS = {
    "norm": ("real", (), ("real", "pos")),
    "logistic": ("real", (), ("real", "pos")),
    "laplace": ("real", (), ("real", "pos")),
    "cauchy": ("real", (), ("real", "pos")),
    "expon": ("pos", (), ("loc", "pos")),
    "uniform": ("unit", (), (-0.5, "gt1")),
    "t": ("real", ("pos",), ("real", "pos")),
    "gamma": ("pos", ("pos",), ("loc", "pos")),
    "chi2": ("pos", ("pos",), ("loc", "pos")),
    "beta": ("unit", ("pos", "pos"), (-0.5, 2.0)),
    "pareto": ("gt1", ("pos",), (0.2, 1.1)),
    "truncnorm": ("sym", ("lo", "hi"), ("loc", "pos")),
    "gumbel_r": ("real", (), ("real", "pos")),
    "gumbel_l": ("real", (), ("real", "pos")),
    "gennorm": ("real", ("gt1",), None),
    "vonmises": ("angle", ("pos",), None),
    "wrapcauchy": ("angle_pos", ("unit",), None),
}
QUANTILE_METHODS = ("ppf", "isf")
# Methods whose derivatives go through the iterative incomplete gamma/beta functions: first order only.
FIRST_ORDER = {("gamma", m) for m in ("cdf", "logcdf", "sf", "logsf")} | \
    {("chi2", m) for m in ("cdf", "logcdf", "sf", "logsf")} | \
    {("beta", m) for m in ("cdf", "logcdf", "sf", "logsf")} | {("gennorm", "cdf")}
# (distribution, method) -> float64 tolerance where the default 1e-10 is too tight.
RTOL = {("truncnorm", "logsf"): 1e-9, ("truncnorm", "sf"): 1e-9, ("truncnorm", "logcdf"): 1e-9,
        ("truncnorm", "cdf"): 1e-9}
VMAP = {("norm", "logpdf"), ("gamma", "cdf"), ("truncnorm", "logpdf"), ("t", "logpdf"), ("beta", "logpdf")}


def _method_fn(dist, method, nfixed_tail):
    def fn(m):
        f = getattr(getattr(m, dist), method)
        if not nfixed_tail:
            return f
        return f
    return fn


def _continuous_records():
    recs = []
    for dist, (xdom, params, locscale) in CONTINUOUS.items():
        for method in sorted(fst.__dict__[dist].__all__):
            first = "unit" if method in QUANTILE_METHODS else xdom
            domains = [first, *params]
            fixed = {}
            if locscale is not None:
                for v in locscale:
                    if isinstance(v, float):
                        fixed[len(domains)] = v
                        domains.append("real")
                    else:
                        domains.append(v)
            order = 1 if (dist, method) in FIRST_ORDER else 2
            recs.append(Rec(f"{dist}.{method}", _method_fn(dist, method, 0), tuple(domains), fixed=fixed,
                            order=order, rtol=RTOL.get((dist, method), 1e-10), rtol32=5e-5,
                            vmap=(dist, method) in VMAP, grad_tol=1e-4))
    return recs


def _discrete_records():
    def R(name, *domains, **kw):  # noqa: N802
        dist, method = name.split(".")
        return Rec(name, _method_fn(dist, method, 0), domains, **kw)
    return [
        R("poisson.logpmf", "count", "pos", diff=(1,), vmap=True),
        R("poisson.pmf", "count", "pos", diff=(1,)),
        R("poisson.cdf", "count", "pos", diff=(1,), order=1, rtol=1e-11),
        # JAX's entropy truncates its sums early for 10 <= mu < 100 (relative error ~5e-7 against SciPy there).
        R("poisson.entropy", "big_pos", diff=(0,), order=1, jax_rtol=1e-6),
        R("bernoulli.logpmf", "bits", "unit", diff=(1,)),
        R("bernoulli.pmf", "bits", "unit", diff=(1,)),
        R("bernoulli.cdf", "count", "unit", order=0),
        R("bernoulli.ppf", "unit", "unit", order=0),
        R("binom.logpmf", "count", "count", "unit", fixed={1: 10.0}, diff=(2,)),
        R("binom.pmf", "count", "count", "unit", fixed={1: 10.0}, diff=(2,)),
        # JAX's betaln (a log-gamma-difference series) is ~5e-7 off SciPy for these arguments; ours is 1e-9.
        R("betabinom.logpmf", "count", "count", "pos", "pos", fixed={1: 10.0}, diff=(2, 3), rtol=1e-9,
          jax_rtol=2e-6),
        R("betabinom.pmf", "count", "count", "pos", "pos", fixed={1: 10.0}, diff=(2, 3), rtol=1e-9, jax_rtol=2e-6),
        R("geom.logpmf", "count_pos", "unit", diff=(1,)),
        R("geom.pmf", "count_pos", "unit", diff=(1,)),
        R("nbinom.logpmf", "count", "pos", "unit", diff=(1, 2)),
        R("nbinom.pmf", "count", "pos", "unit", diff=(1, 2)),
    ]


RECORDS = _continuous_records() + _discrete_records()


def _scipy(rec):
    dist, method = rec.name.split(".")
    return getattr(getattr(sst, dist), method)


@pytest.mark.parametrize("rec", RECORDS, ids=str)
def test_values_float64_against_scipy(rec, rng):
    args = draw(rec, rng)
    with tu.enable_x64():
        got = rec.fn(fst)(*args)
    assert np.asarray(got).dtype == np.float64
    tu.assert_allclose(got, _scipy(rec)(*args), rtol=rec.rtol, atol=1e-13)


@pytest.mark.parametrize("rec", RECORDS, ids=str)
def test_values_float32_against_scipy(rec, rng):
    args = draw(rec, rng, np.float32)
    got = rec.fn(fst)(*args)
    assert np.asarray(got).dtype == np.float32
    want = _scipy(rec)(*[np.asarray(a, np.float64) for a in args])
    tu.assert_allclose(got, np.asarray(want, np.float32), rtol=rec.rtol32, atol=1e-5)


def _jax_stats():
    jax = pytest.importorskip("jax")
    import jax.scipy.stats as jst
    return jax, jst


@pytest.mark.parametrize("rec", RECORDS, ids=str)
def test_values_and_dtypes_against_jax(rec, rng):
    jax, jst = _jax_stats()
    args = draw(rec, rng)
    with tu.enable_x64(jax.config):
        tu.assert_allclose(rec.fn(fst)(*args), np.asarray(rec.fn(jst)(*args)), rtol=rec.jax_rtol or max(rec.rtol, 1e-9),
                           atol=1e-12)
    args32 = draw(rec, rng, np.float32)
    got, want = rec.fn(fst)(*args32), rec.fn(jst)(*args32)
    assert (got.dtype, got.weak_type, got.shape) == (want.dtype, want.weak_type, want.shape)
    scalars = [float(np.ravel(a)[0]) for a in args32]
    got, want = rec.fn(fst)(*scalars), rec.fn(jst)(*scalars)
    assert (got.dtype, got.weak_type, got.shape) == (want.dtype, want.weak_type, want.shape)


@pytest.mark.parametrize("rec", [r for r in RECORDS if r.order], ids=str)
def test_derivatives_against_finite_differences(rec, rng):
    args = draw(rec, rng)
    with tu.enable_x64():
        build, dyn = differentiated(rec, args)
        tu.check_grads(build(fst), dyn, order=rec.order, atol=rec.grad_tol, rtol=rec.grad_tol, rng=rng)


@pytest.mark.parametrize("rec", RECORDS, ids=str)
def test_jit_matches_eager(rec, rng):
    args = draw(rec, rng, np.float32)
    build, dyn = differentiated(rec, args)
    tu.check_jit(build(fst), dyn, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("rec", [r for r in RECORDS if r.vmap], ids=str)
def test_vmap_matches_loop(rec, rng):
    args = [np.stack([a, a[::-1]]) if isinstance(a, np.ndarray) else np.full((2, 5), a, np.float32)
            for a in draw(rec, rng, np.float32)]
    tu.check_batching(rec.fn(fst), args, rtol=1e-6, atol=1e-6)


# --------------------------------------------------------------------------------------------------------------
# Tails and supports
# --------------------------------------------------------------------------------------------------------------

TAILS = [
    ("norm.logcdf", ([-30.0, -5.0, 0.0, 5.0, 30.0],)),
    ("norm.logsf", ([-30.0, -5.0, 0.0, 5.0, 30.0],)),
    ("norm.ppf", ([0.0, 1e-200, 0.5, 1.0, -0.1],)),
    ("norm.isf", ([0.0, 1e-200, 0.5, 1.0],)),
    ("cauchy.cdf", ([-1e10, -3.0, 0.0, 1e10],)),
    ("cauchy.ppf", ([0.0, 0.25, 1.0, 1.5],)),
    ("expon.logpdf", ([-1.0, 0.0, 2.0],)),
    ("expon.cdf", ([-1.0, 0.0, 1e-20, 2.0],)),
    ("expon.logcdf", ([1e-20, 2.0, 50.0],)),
    ("uniform.logpdf", ([-0.5, 0.0, 1.0, 1.5],)),
    ("uniform.ppf", ([-0.5, 0.0, 1.0, 1.5],)),
    ("gamma.logpdf", ([-1.0, 0.0, 3.0], [2.0, 2.0, 2.0])),
    ("gamma.cdf", ([-1.0, 0.0, 300.0], [2.0, 2.0, 2.0])),
    ("gamma.sf", ([30.0, 60.0, 100.0], [2.0, 2.0, 2.0])),
    ("chi2.sf", ([30.0, 100.0, 200.0], [3.0, 3.0, 3.0])),
    ("beta.logpdf", ([-0.1, 0.0, 1.0, 1.1], [2.0, 2.0, 2.0, 2.0], [3.0, 3.0, 3.0, 3.0])),
    ("beta.sf", ([0.999, 0.9999, 1.0], [2.0, 2.0, 2.0], [3.0, 3.0, 3.0])),
    ("pareto.logpdf", ([0.5, 1.0, 3.0], [2.0, 2.0, 2.0])),
    ("pareto.cdf", ([0.5, 1.0, 3.0], [2.0, 2.0, 2.0])),
    ("truncnorm.logpdf", ([5.5, 6.0, 4.0], [5.0, 5.0, 5.0], [7.0, 7.0, 7.0])),
    ("truncnorm.logcdf", ([-6.5, -6.0, -8.0], [-7.0, -7.0, -7.0], [-5.0, -5.0, -5.0])),
    ("truncnorm.logsf", ([5.5, 6.5, 8.0], [5.0, 5.0, 5.0], [7.0, 7.0, 7.0])),
    ("gumbel_r.logsf", ([-3.0, 10.0, 40.0],)),
    ("gumbel_l.logcdf", ([-40.0, -10.0, 3.0],)),
    ("poisson.logpmf", ([-1.0, 0.5, 0.0, 3.0], [2.0, 2.0, 2.0, 2.0])),
    ("poisson.cdf", ([-1.0, 0.0, 2.5, 30.0], [2.0, 2.0, 2.0, 2.0])),
    ("poisson.entropy", ([0.0, 0.5, 9.5, 50.0, 99.0, 150.0, 400.0],)),  # (SciPy's sum is truncated by mu ~ 1e4)
    ("binom.logpmf", ([-1.0, 0.0, 10.0, 11.0], [10.0, 10.0, 10.0, 10.0], [0.3, 0.3, 0.3, 0.3])),
    ("geom.logpmf", ([0.0, 1.0, 5.0], [0.3, 0.3, 0.3])),
    ("nbinom.logpmf", ([-1.0, 0.0, 5.0], [2.5, 2.5, 2.5], [0.3, 0.3, 0.3])),
    ("bernoulli.cdf", ([-1.0, 0.0, 0.5, 1.0, 0.5], [0.3, 0.3, 0.3, 0.3, 1.5])),
]


@pytest.mark.parametrize("name,args", TAILS, ids=[t[0] for t in TAILS])
def test_tails_and_supports_against_scipy(name, args):
    dist, method = name.split(".")
    args = [np.asarray(a, np.float64) for a in args]
    with tu.enable_x64():
        got = getattr(getattr(fst, dist), method)(*args)
    with np.errstate(all="ignore"):
        want = getattr(getattr(sst, dist), method)(*args)
    tu.assert_allclose(got, want, rtol=1e-9, atol=1e-300)


def test_bernoulli_ppf_follows_jax_at_zero():
    jax, jst = _jax_stats()
    q, p = np.array([0.0, 0.3, 0.7, 1.0, -0.1]), np.array([0.4, 0.4, 0.4, 0.4, 0.4])
    tu.assert_allclose(fst.bernoulli.ppf(q, p), np.asarray(jst.bernoulli.ppf(q, p)))


@pytest.mark.parametrize("kappa", [0.5, 3.0, 50.0, 1e3])
def test_vonmises_large_kappa_and_wrapcauchy(kappa):
    x = np.linspace(-3, 3, 7)
    with tu.enable_x64():
        tu.assert_allclose(fst.vonmises.logpdf(x, kappa), sst.vonmises.logpdf(x, kappa), rtol=1e-10)
        tu.assert_allclose(fst.wrapcauchy.logpdf(x + 3.1, 0.4), sst.wrapcauchy.logpdf(x + 3.1, 0.4), rtol=1e-10)
    assert np.isnan(np.asarray(fst.vonmises.logpdf(x, -1.0))).all()
    assert np.isneginf(np.asarray(fst.wrapcauchy.logpdf(-0.5, 0.3)))


# --------------------------------------------------------------------------------------------------------------
# Multivariate
# --------------------------------------------------------------------------------------------------------------

def _spd(rng, n, batch=()):
    a = rng.normal(size=batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


@pytest.mark.parametrize("case", ["matrix", "scalar_cov", "univariate", "batched"])
def test_multivariate_normal_against_scipy_and_jax(case, rng):
    n = 3
    if case == "matrix":
        x, mean, cov = rng.normal(size=(4, n)), rng.normal(size=n), _spd(rng, n)
        want = sst.multivariate_normal.logpdf(x, mean, cov)
    elif case == "scalar_cov":
        x, mean, cov = rng.normal(size=(4, n)), rng.normal(size=n), np.float64(1.7)
        want = sst.multivariate_normal.logpdf(x, mean, cov * np.eye(n))
    elif case == "univariate":
        x, mean, cov = rng.normal(size=5), np.float64(0.3), np.float64(2.0)
        want = sst.norm.logpdf(x, mean, np.sqrt(cov))
    else:
        x, mean, cov = rng.normal(size=(2, n)), rng.normal(size=(2, n)), _spd(rng, n, (2,))
        want = np.array([sst.multivariate_normal.logpdf(x[i], mean[i], cov[i]) for i in range(2)])
    with tu.enable_x64():
        got = fst.multivariate_normal.logpdf(x, mean, cov)
        tu.assert_allclose(got, want, rtol=1e-10)
        tu.assert_allclose(fst.multivariate_normal.pdf(x, mean, cov), np.exp(want), rtol=1e-10)
        tu.check_jit(fst.multivariate_normal.logpdf, [x, mean, cov])
        if case == "matrix":
            tu.check_grads(lambda x_, m_, c_: fst.multivariate_normal.logpdf(x_, m_, (c_ + c_.T) / 2),
                           [x, mean, cov], order=2, atol=1e-5, rtol=1e-5, rng=rng)
    jax, jst = _jax_stats()
    with tu.enable_x64(jax.config):
        tu.assert_allclose(fst.multivariate_normal.logpdf(x, mean, cov),
                           np.asarray(jst.multivariate_normal.logpdf(x, mean, cov)), rtol=1e-10)


def test_multivariate_normal_errors():
    with pytest.raises(ValueError, match="incompatible shapes"):
        fst.multivariate_normal.logpdf(np.zeros(3), np.zeros(3), np.eye(2))
    with pytest.raises(NotImplementedError):
        fst.multivariate_normal.logpdf(np.zeros(3), np.zeros(3), np.eye(3), allow_singular=True)


def test_dirichlet_against_scipy_and_jax(rng):
    alpha = np.array([0.7, 2.0, 3.5])
    x = rng.dirichlet(alpha, size=4).T  # (K, batch): SciPy's layout
    with tu.enable_x64():
        tu.assert_allclose(fst.dirichlet.logpdf(x, alpha), sst.dirichlet.logpdf(x, alpha), rtol=1e-10)
        tu.assert_allclose(fst.dirichlet.logpdf(x[:-1], alpha), sst.dirichlet.logpdf(x, alpha), rtol=1e-8)
        tu.assert_allclose(fst.dirichlet.pdf(x[:, 0], alpha), sst.dirichlet.pdf(x[:, 0], alpha), rtol=1e-10)
        tu.check_grads(lambda a: fst.dirichlet.logpdf(x, a), [alpha], order=2, rng=rng, atol=1e-5, rtol=1e-5)
        off = np.array([0.5, 0.6, 0.2])
        assert np.isneginf(float(fst.dirichlet.logpdf(off, alpha)))
    jax, jst = _jax_stats()
    with tu.enable_x64(jax.config):
        tu.assert_allclose(fst.dirichlet.logpdf(x, alpha), np.asarray(jst.dirichlet.logpdf(x, alpha)), rtol=1e-10)
    with pytest.raises(ValueError, match="one-dimensional"):
        fst.dirichlet.logpdf(x, alpha[None])
    with pytest.raises(ValueError, match="one entry fewer"):
        fst.dirichlet.logpdf(x[:1], alpha)


def test_multinomial_against_scipy_and_jax():
    x = np.array([[2.0, 3.0, 5.0], [0.0, 10.0, 0.0], [1.0, 1.0, 1.0]])
    p = np.array([0.2, 0.3, 0.5])
    with tu.enable_x64():
        got = fst.multinomial.logpmf(x, 10.0, p)
        tu.assert_allclose(got, sst.multinomial.logpmf(x, 10, p), rtol=1e-12)
        tu.assert_allclose(fst.multinomial.pmf(x, 10.0, p), sst.multinomial.pmf(x, 10, p), rtol=1e-12)
    jax, jst = _jax_stats()
    with tu.enable_x64(jax.config):
        # JAX insists on integer counts (fluxion, like SciPy, takes any dtype), and JAX compares n with the sum
        # over ALL axes of x, so a batch of rows is -inf there: compare one row at a time.
        for row in x:
            tu.assert_allclose(fst.multinomial.logpmf(row, 10.0, p),
                               np.asarray(jst.multinomial.logpmf(row.astype(np.int64), 10, p)), rtol=1e-12)


# --------------------------------------------------------------------------------------------------------------
# Descriptive statistics
# --------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("axis,keepdims", [(0, False), (1, True), (None, False), (None, True), (-1, False)])
def test_mode_against_scipy_and_jax(axis, keepdims, rng):
    a = rng.integers(0, 4, size=(6, 5))
    got = fst.mode(a, axis=axis, keepdims=keepdims)
    want = sst.mode(a, axis=axis, keepdims=keepdims)
    np.testing.assert_array_equal(np.asarray(got.mode), want.mode)
    np.testing.assert_array_equal(np.asarray(got.count), want.count)
    jax, jst = _jax_stats()
    theirs = jst.mode(a, axis=axis, keepdims=keepdims)
    for ours_leaf, their_leaf in zip(got, theirs):
        assert (ours_leaf.shape, ours_leaf.dtype) == (their_leaf.shape, their_leaf.dtype)
    jitted = fluxion.jit(lambda v: fst.mode(v, axis=axis, keepdims=keepdims))(a)
    np.testing.assert_array_equal(np.asarray(jitted.mode), want.mode)


@pytest.mark.parametrize("method", ["average", "min", "max", "dense", "ordinal"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_rankdata_against_scipy_and_jax(method, axis, rng):
    a = rng.integers(0, 5, size=(4, 6)).astype(np.float32)
    got = fst.rankdata(a, method, axis=axis)
    np.testing.assert_allclose(np.asarray(got), sst.rankdata(a, method, axis=axis))
    jax, jst = _jax_stats()
    want = jst.rankdata(a, method, axis=axis)
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    tu.check_jit(lambda v: fst.rankdata(v, method, axis=axis), [a])
    tu.check_batching(lambda v: fst.rankdata(v, method), [a])
    with_nan = a.copy()
    with_nan[0, 0] = np.nan
    assert np.isnan(np.asarray(fst.rankdata(with_nan, method))).all()


@pytest.mark.parametrize("axis,ddof,keepdims", [(0, 1, False), (1, 0, True), (None, 1, False)])
def test_sem_against_scipy_and_jax(axis, ddof, keepdims, rng):
    a = rng.normal(size=(5, 4))
    with tu.enable_x64():
        got = fst.sem(a, axis=axis, ddof=ddof, keepdims=keepdims)
        tu.assert_allclose(got, sst.sem(a, axis=axis, ddof=ddof, keepdims=keepdims), rtol=1e-12)
        tu.check_grads(lambda v: fst.sem(v, axis=axis, ddof=ddof), [a], order=2, rng=rng)
    a_nan = a.copy()
    a_nan[1, 1] = np.nan
    with tu.enable_x64():
        tu.assert_allclose(fst.sem(a_nan, axis=axis, ddof=ddof, nan_policy="omit", keepdims=keepdims),
                           sst.sem(a_nan, axis=axis, ddof=ddof, nan_policy="omit", keepdims=keepdims), rtol=1e-12)
    jax, jst = _jax_stats()
    got, want = fst.sem(a.astype(np.float32), axis=axis), jst.sem(a.astype(np.float32), axis=axis)
    assert (got.dtype, got.shape) == (want.dtype, want.shape)


def test_descriptive_errors():
    with pytest.raises(ValueError, match="unknown method"):
        fst.rankdata([1, 2], "bogus")
    with pytest.raises(ValueError, match="nan_policy"):
        fst.mode([1, 2], nan_policy="bogus")
    with pytest.raises(NotImplementedError):
        fst.rankdata([1, 2], nan_policy="omit")
    with pytest.raises(ValueError, match="not supported"):
        fst.sem([1.0, 2.0], nan_policy="raise")


MISSING_WITH_REASON = {
    "gaussian_kde": "a class with bandwidth selection and resampling: not implemented yet",
}


def test_coverage_of_jax_scipy_stats():
    _, jst = _jax_stats()
    theirs = {n for n in dir(jst) if not n.startswith("_")}
    ours = {n for n in dir(fst) if not n.startswith("_")}
    missing = theirs - ours
    assert missing == set(MISSING_WITH_REASON), sorted(missing ^ set(MISSING_WITH_REASON))
    for name in sorted(theirs & ours):
        mod = getattr(jst, name)
        if type(mod).__name__ != "module":
            continue
        their_fns = {f for f in dir(mod) if not f.startswith("_") and callable(getattr(mod, f))
                     and getattr(getattr(mod, f), "__module__", "").startswith("jax._src.scipy.stats")}
        assert their_fns == set(getattr(fst, name).__all__), name
