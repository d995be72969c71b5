"""Tests of `fluxion.scipy.integrate`, `.optimize` and `.signal` against SciPy and real JAX."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
import fluxion.scipy.integrate as fint
import fluxion.scipy.optimize as fopt
import fluxion.scipy.signal as fsig
from fluxion._src import test_util as tu

scipy_integrate = pytest.importorskip("scipy.integrate")
scipy_optimize = pytest.importorskip("scipy.optimize")
scipy_signal = pytest.importorskip("scipy.signal")


# --- integrate.trapezoid ------------------------------------------------------------------------------------------

TRAPEZOID_CASES = [
    ("dx", lambda r: (r.normal(size=(3, 7)),), dict(dx=0.3)),
    ("x_1d", lambda r: (r.normal(size=(3, 7)), np.sort(r.uniform(0, 4, 7))), dict()),
    ("axis0", lambda r: (r.normal(size=(6, 2)), np.sort(r.uniform(0, 4, 6))), dict(axis=0)),
    ("x_full", lambda r: (r.normal(size=(3, 5)), np.sort(r.uniform(0, 4, (3, 5)), axis=1)), dict()),
    ("ints", lambda r: (r.integers(0, 5, size=6),), dict()),
]


@pytest.mark.parametrize("name,make,kw", TRAPEZOID_CASES, ids=[c[0] for c in TRAPEZOID_CASES])
def test_trapezoid(name, make, kw, rng):
    args = make(rng)
    with tu.enable_x64():
        tu.assert_allclose(fint.trapezoid(*args, **kw), scipy_integrate.trapezoid(*args, **kw), rtol=1e-12,
                           check_dtypes=False)
        if args[0].dtype.kind == "f":
            tu.check_grads(lambda *a: fint.trapezoid(*a, **kw), list(args), order=2, rng=rng)
    tu.check_jit(lambda *a: fint.trapezoid(*a, **kw), [a.astype(np.float32) for a in args])
    pytest.importorskip("jax")
    import jax.scipy.integrate as jint
    got, want = fint.trapezoid(*args, **kw), jint.trapezoid(*args, **kw)
    assert (got.dtype, got.shape) == (want.dtype, want.shape)


def test_trapezoid_errors():
    with pytest.raises(ValueError, match="points"):
        fint.trapezoid(np.ones(4), np.ones(3))


# --- optimize.minimize --------------------------------------------------------------------------------------------

def _rosenbrock(x):
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def _quadratic(x, a, b):
    return 0.5 * x @ a @ x - b @ x


def test_minimize_rosenbrock_matches_scipy_and_jax():
    x0 = np.zeros(4)  # (from (-1.2, 1) JAX 0.10 stops with a line-search failure, status 3)
    want = scipy_optimize.minimize(lambda x: float(np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)),
                                   x0, method="BFGS")
    with tu.enable_x64():
        res = fopt.minimize(_rosenbrock, x0, method="BFGS")
        assert isinstance(res, fopt.OptimizeResults)
        assert bool(res.success) and int(res.status) == 0
        tu.assert_allclose(res.x, want.x, atol=1e-5, rtol=1e-5)
        assert float(res.fun) < 1e-10
        assert float(jnp.max(jnp.abs(res.jac))) < 1e-5
        assert int(res.nit) > 0 and int(res.nfev) >= int(res.nit)
        jitted = fluxion.jit(lambda z: fopt.minimize(_rosenbrock, z, method="BFGS"))(x0)
        tu.assert_allclose(jitted.x, res.x, rtol=1e-12)
    jax = pytest.importorskip("jax")
    import jax.numpy as real_jnp
    import jax.scipy.optimize as jopt
    with tu.enable_x64(jax.config):
        theirs = jopt.minimize(lambda x: real_jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2), x0,
                               method="BFGS")
        tu.assert_allclose(res.x, np.asarray(theirs.x), atol=1e-5, rtol=1e-5)
    assert type(res).__name__ == type(theirs).__name__ and res._fields == theirs._fields
    ours32 = fopt.minimize(_rosenbrock, x0.astype(np.float32), method="BFGS")
    theirs32 = jopt.minimize(lambda x: real_jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2),
                             x0.astype(np.float32), method="BFGS")
    for name in res._fields:
        a, b = getattr(ours32, name), getattr(theirs32, name)
        assert (a.dtype, a.shape) == (b.dtype, b.shape), name


def test_minimize_quadratic_with_args_and_hess_inv(rng):
    m = rng.normal(size=(3, 3))
    a = m @ m.T + 3 * np.eye(3)
    b = rng.normal(size=3)
    with tu.enable_x64():
        res = fopt.minimize(_quadratic, np.zeros(3), args=(a, b), method="bfgs", options=dict(gtol=1e-9))
        tu.assert_allclose(res.x, np.linalg.solve(a, b), rtol=1e-7)
        # On a quadratic, BFGS's inverse-Hessian estimate approaches inv(a).
        tu.assert_allclose(res.hess_inv, np.linalg.inv(a), rtol=1e-3, atol=1e-3)


def test_minimize_under_vmap(rng):
    x0s = rng.normal(size=(3, 2))

    def solve(x0):
        return fopt.minimize(lambda x: jnp.sum((x - 2.0) ** 2) + jnp.sum(x ** 4) * 0.1, x0, method="BFGS").x
    tu.check_batching(solve, [x0s.astype(np.float32)], rtol=1e-4, atol=1e-4, check_empty=False)


def test_minimize_status_on_iteration_limit():
    res = fopt.minimize(_rosenbrock, np.array([-1.2, 1.0]), method="BFGS", options=dict(maxiter=2))
    assert int(res.status) == 1 and not bool(res.success) and int(res.nit) == 2


def test_minimize_errors():
    with pytest.raises(TypeError, match="tuple"):
        fopt.minimize(_rosenbrock, np.zeros(2), args=[1], method="BFGS")
    with pytest.raises(ValueError, match="not recognized"):
        fopt.minimize(_rosenbrock, np.zeros(2), method="Nelder-Mead")
    with pytest.raises(ValueError, match="one-dimensional"):
        fopt.minimize(_rosenbrock, np.zeros((2, 2)), method="BFGS")


# --- signal -------------------------------------------------------------------------------------------------------

SHAPES = [((9,), (4,)), ((4,), (9,)), ((6, 7), (3, 2)), ((3, 2), (6, 7)), ((5, 4, 3), (2, 3, 2))]
SIGNAL_FUNCS = ["convolve", "correlate", "fftconvolve"]


@pytest.mark.parametrize("name", SIGNAL_FUNCS)
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_signal_against_scipy(name, mode, shapes, rng):
    a, b = rng.normal(size=shapes[0]), rng.normal(size=shapes[1])
    with tu.enable_x64():
        got = getattr(fsig, name)(a, b, mode=mode)
    tu.assert_allclose(got, getattr(scipy_signal, name)(a, b, mode=mode), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", ["convolve", "correlate", "fftconvolve", "convolve2d", "correlate2d"])
def test_signal_against_jax_grads_jit_vmap(name, rng):
    a, b = rng.normal(size=(6, 5)), rng.normal(size=(3, 2))
    f = getattr(fsig, name)
    with tu.enable_x64():
        tu.check_grads(lambda x, y: f(x, y, mode="same"), [a, b], order=2, rng=rng)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    tu.check_jit(lambda x, y: f(x, y), [a32, b32], rtol=1e-5, atol=1e-5)
    tu.check_batching(lambda x, y: f(x, y, mode="valid"), [np.stack([a32, a32 * 2]), np.stack([b32, -b32])],
                      rtol=1e-5, atol=1e-5)
    pytest.importorskip("jax")
    import jax.scipy.signal as jsig
    ours, theirs = f(a32, b32), getattr(jsig, name)(a32, b32)
    tu.assert_allclose(ours, np.asarray(theirs), rtol=1e-4, atol=1e-4)
    assert (ours.dtype, ours.shape) == (theirs.dtype, theirs.shape)
    ints = f(np.arange(6).reshape(3, 2), np.ones((2, 2), np.int32))
    theirs = getattr(jsig, name)(np.arange(6).reshape(3, 2), np.ones((2, 2), np.int32))
    assert ints.dtype == theirs.dtype


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_complex_and_fft_axes(mode, rng):
    a = rng.normal(size=8) + 1j * rng.normal(size=8)
    b = rng.normal(size=3) + 1j * rng.normal(size=3)
    with tu.enable_x64():
        tu.assert_allclose(fsig.fftconvolve(a, b, mode=mode), scipy_signal.fftconvolve(a, b, mode=mode),
                           rtol=1e-10, atol=1e-10)
        tu.assert_allclose(fsig.correlate(a, b, mode=mode, method="fft"),
                           scipy_signal.correlate(a, b, mode=mode), rtol=1e-10, atol=1e-10)
        x, k = rng.normal(size=(3, 10)), rng.normal(size=(1, 4))
        tu.assert_allclose(fsig.fftconvolve(x, k, mode=mode, axes=1),
                           scipy_signal.fftconvolve(x, k, mode=mode, axes=1), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("kw", [dict(), dict(type="constant"), dict(axis=0), dict(bp=[3, 7]), dict(bp=5, axis=0)])
def test_detrend(kw, rng):
    data = rng.normal(size=(10, 12)) + np.arange(12) * 0.5
    with tu.enable_x64():
        tu.assert_allclose(fsig.detrend(data, **kw), scipy_signal.detrend(data, **kw), rtol=1e-10, atol=1e-12)
        tu.check_grads(lambda d: fsig.detrend(d, **kw), [data], order=1, rng=rng)
    tu.check_jit(lambda d: fsig.detrend(d, **kw), [data.astype(np.float32)], rtol=1e-5, atol=1e-5)
    pytest.importorskip("jax")
    import jax.scipy.signal as jsig
    ours, theirs = fsig.detrend(data.astype(np.float32), **kw), jsig.detrend(data.astype(np.float32), **kw)
    assert (ours.dtype, ours.shape) == (theirs.dtype, theirs.shape)
    tu.assert_allclose(ours, np.asarray(theirs), rtol=1e-4, atol=1e-4)


def test_signal_errors():
    with pytest.raises(ValueError, match="mode"):
        fsig.convolve(np.ones(3), np.ones(2), mode="bogus")
    with pytest.raises(ValueError, match="dimensionality"):
        fsig.convolve(np.ones(3), np.ones((2, 2)))
    with pytest.raises(ValueError, match="2-dimensional"):
        fsig.convolve2d(np.ones(3), np.ones(2))
    with pytest.raises(NotImplementedError):
        fsig.convolve2d(np.ones((3, 3)), np.ones((2, 2)), boundary="wrap")
    with pytest.raises(ValueError, match="trend type"):
        fsig.detrend(np.ones(4), type="quadratic")
    with pytest.raises(ValueError, match="breakpoints"):
        fsig.detrend(np.ones(4), bp=9)
    with pytest.raises(ValueError, match="at least as large"):
        fsig.convolve(np.ones((3, 1)), np.ones((1, 3)), mode="valid")


def test_coverage_of_jax_scipy_signal_integrate_optimize():
    pytest.importorskip("jax")
    import jax.scipy.integrate as jint
    import jax.scipy.optimize as jopt
    import jax.scipy.signal as jsig
    for theirs, ours in ((jsig, fsig), (jint, fint), (jopt, fopt)):
        names = {n for n in dir(theirs) if not n.startswith("_")}
        assert names - set(dir(ours)) == set()
