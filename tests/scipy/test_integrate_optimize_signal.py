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


# One record per problem: (name, objective written against a `jnp` module, x0, float32 check): "exact" compares the
# counters in float32 too, "outcome" only status, success and the point, None skips float32.
# The iteration is JAX's step for step, so in float64 the counters agree exactly and the values to rounding. In float32
# XLA fuses `a * b + c` into one fused multiply-add (in JAX's own loop and in the objective), which fluxion, computing
# op by op, does not: near float32 noise a comparison in the line search can then go the other way (the "bowl" stops
# with a line-search failure in both, one iteration apart), so only the outcome and the point are compared there; on the
# 4-d Rosenbrock JAX's float32 run stops on such a failure at 26 iterations where fluxion's converges).
MINIMIZE_PROBLEMS = [
    ("bowl", lambda np_: lambda p: np_.sum(np_.array([1.0, 4.0, 9.0]) * (p - np_.array([1.0, -2.0, 0.5])) ** 2)
     + 0.1 * np_.sum(p ** 4), np.zeros(3), "outcome"),
    # From (-1.2, 1, 0.5) JAX's zoom fails on the first iteration's bracket (status 3), in both precisions.
    ("rosenbrock_fails", lambda np_: lambda x: np_.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2),
     np.array([-1.2, 1.0, 0.5]), "exact"),
    ("quadratic", lambda np_: lambda x: 0.5 * x @ np_.array([[4.0, 1.0, 0.0], [1.0, 3.0, 0.5], [0.0, 0.5, 2.0]]) @ x
     - np_.array([1.0, -2.0, 3.0]) @ x, np.zeros(3), "exact"),
    ("rosenbrock_4d", lambda np_: lambda x: np_.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2),
     np.zeros(4), None),
]
_COUNTERS = ("status", "success", "nit", "nfev", "njev")


def _jax_minimize(make, x0, x64, **kw):
    jax = pytest.importorskip("jax")
    import jax.numpy as real_jnp
    import jax.scipy.optimize as jopt
    with tu.enable_x64(jax.config) if x64 else _nullcontext():
        return jopt.minimize(make(real_jnp), x0, method="BFGS", **kw)


def _nullcontext():
    import contextlib
    return contextlib.nullcontext()


def _assert_same_result(ours, theirs, *, tol, counters=True):
    assert type(ours).__name__ == type(theirs).__name__ and ours._fields == theirs._fields
    for name in ours._fields:
        a, b = getattr(ours, name), getattr(theirs, name)
        assert (a.dtype, a.shape, a.weak_type) == (b.dtype, b.shape, b.weak_type), name
    checked = _COUNTERS if counters else ("status", "success")
    got = {k: np.asarray(getattr(ours, k)).tolist() for k in checked}
    assert got == {k: np.asarray(getattr(theirs, k)).tolist() for k in checked}
    tu.assert_allclose(ours.x, np.asarray(theirs.x), rtol=tol, atol=tol)
    tu.assert_allclose(ours.fun, np.asarray(theirs.fun), rtol=tol, atol=tol)
    tu.assert_allclose(ours.jac, np.asarray(theirs.jac), rtol=tol if counters else 1.0, atol=tol if counters else 2e-3)


@pytest.mark.parametrize("x64", [False, True], ids=["float32", "float64"])
@pytest.mark.parametrize("name,make,x0,check32", MINIMIZE_PROBLEMS, ids=[p[0] for p in MINIMIZE_PROBLEMS])
def test_minimize_follows_jax_step_for_step(name, make, x0, check32, x64):
    if not x64 and check32 is None:
        pytest.skip("float32 rounding (XLA's fused multiply-adds) changes the outcome; see MINIMIZE_PROBLEMS")
    dt = np.float64 if x64 else np.float32
    theirs = _jax_minimize(make, x0.astype(dt), x64)
    with tu.enable_x64() if x64 else _nullcontext():
        ours = fopt.minimize(make(jnp), x0.astype(dt), method="BFGS")
        _assert_same_result(ours, theirs, tol=1e-7 if x64 else 1e-4, counters=x64 or check32 == "exact")
        jitted = fluxion.jit(lambda z: fopt.minimize(make(jnp), z, method="BFGS"))(x0.astype(dt))
        if x64:
            for field in ours._fields:
                tu.assert_allclose(getattr(jitted, field), getattr(ours, field), rtol=1e-6, atol=1e-6)
        else:  # jitted multiply-adds round once (as in XLA), eager ones twice: float32 iterates drift apart
            _assert_same_result(jitted, theirs, tol=1e-3, counters=False)


def test_minimize_options_follow_jax():
    make = MINIMIZE_PROBLEMS[2][1]
    x0 = np.array([3.0, -1.0, 2.0], np.float32)
    # tol is ignored by JAX 0.10.2 (only options["gtol"] counts); maxiter, norm and gtol are honoured.
    for kw in (dict(tol=1e-1), dict(options=dict(maxiter=2)), dict(options=dict(gtol=1e-2, norm=1)),
               dict(options=dict(line_search_maxiter=1))):
        ours = fopt.minimize(make(jnp), x0, method="BFGS", **kw)
        _assert_same_result(ours, _jax_minimize(make, x0, False, **kw), tol=1e-5)


def test_minimize_under_vmap_matches_jax():
    jax = pytest.importorskip("jax")
    import jax.numpy as real_jnp
    import jax.scipy.optimize as jopt
    x0s = np.array([[0.0, 0.0, 0.0], [2.0, -1.0, 0.5], [-1.0, 1.0, 3.0]])
    make = MINIMIZE_PROBLEMS[0][1]
    with tu.enable_x64(jax.config):
        theirs = jax.vmap(lambda z: jopt.minimize(make(real_jnp), z, method="BFGS"))(x0s)
    with tu.enable_x64():
        ours = fluxion.vmap(lambda z: fopt.minimize(make(jnp), z, method="BFGS"))(x0s)
        for i, z in enumerate(x0s):  # each lane is the unbatched run
            one = fopt.minimize(make(jnp), z, method="BFGS")
            assert int(ours.nfev[i]) == int(one.nfev) and int(ours.nit[i]) == int(one.nit)
    _assert_same_result(ours, theirs, tol=1e-7)


LINE_SEARCHES = [
    # (name, objective, x, direction, extra keyword arguments): each drives another branch of the search.
    ("accept_first", lambda np_: lambda x: np_.sum(x ** 2), [1.0, 2.0], [-1.0, -2.0], dict()),
    ("zoom_cubic", lambda np_: lambda x: np_.sum(x ** 4) + x[0] * x[1], [1.0, -0.5], [-6.0, 3.0], dict()),
    ("double_then_zoom", lambda np_: lambda x: np_.sum((x - 3.0) ** 2), [0.0, 0.0], [0.1, 0.1], dict()),
    ("slope_turns", lambda np_: lambda x: np_.sum((x - 1.0) ** 2), [0.0, 0.0], [0.3, 0.3], dict(c2=0.01)),
    ("start_from_history", lambda np_: lambda x: np_.sum(np_.cos(x) + 0.1 * x ** 2), [0.5, 1.0], [-1.0, -0.5],
     dict(old_fval=None, old_old_fval=3.0)),
    ("maxiter", lambda np_: lambda x: -np_.sum(x), [0.0], [1.0], dict(maxiter=3)),
]


@pytest.mark.parametrize("name,make,x,p,kw", LINE_SEARCHES, ids=[c[0] for c in LINE_SEARCHES])
def test_line_search_matches_jax(name, make, x, p, kw):
    jax = pytest.importorskip("jax")
    import jax.numpy as real_jnp
    from jax._src.scipy.optimize.line_search import line_search as jax_line_search

    from fluxion._src.scipy.optimize import line_search
    x, p = np.asarray(x), np.asarray(p)
    with tu.enable_x64(jax.config):
        theirs = jax_line_search(make(real_jnp), x, p, **kw)
    with tu.enable_x64():
        ours = line_search(make(jnp), x, p, **kw)
    assert ours._fields == theirs._fields
    for field in ours._fields:
        tu.assert_allclose(getattr(ours, field), np.asarray(getattr(theirs, field)), rtol=1e-12, atol=1e-12,
                           err_msg=field)


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
    with pytest.raises(TypeError, match="floating"):
        fopt.minimize(_rosenbrock, np.zeros(2, np.int32), method="BFGS")
    with pytest.raises(TypeError, match="unknown options"):
        fopt.minimize(_rosenbrock, np.zeros(2), method="BFGS", options=dict(xtol=1.0))


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
