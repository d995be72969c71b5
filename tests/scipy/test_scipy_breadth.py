"""The rest of `jax.scipy`: `fft`, `ndimage`, `interpolate`, `cluster.vq`, `sparse.linalg`, `spatial.transform` and
the spectral functions of `signal`, against SciPy (float64) and real JAX (float32, values and dtypes), with jit
against eager, vmap against a loop, and derivatives against finite differences where JAX's are defined.

Each family is a table of records: (name, call(module, numpy), input maker); the same call runs on fluxion's module
with `fluxion.numpy`, SciPy's with NumPy and JAX's with `jax.numpy`.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any, Callable

import numpy as np
import pytest
import scipy.cluster.vq
import scipy.fft
import scipy.interpolate
import scipy.ndimage
import scipy.signal
import scipy.spatial.transform

import fluxion
import fluxion.numpy as jnp
import fluxion.scipy.cluster.vq as fvq
import fluxion.scipy.fft as ffft
import fluxion.scipy.interpolate as finterp
import fluxion.scipy.ndimage as fndimage
import fluxion.scipy.signal as fsignal
import fluxion.scipy.sparse.linalg as fsparse
import fluxion.scipy.spatial.transform as ftransform
from fluxion._src import test_util as tu


def _jax():
    return pytest.importorskip("jax")


def _close(a, b, rtol, atol=0.0):
    for x, y in zip(fluxion.tree_util.tree_leaves(a), fluxion.tree_util.tree_leaves(b)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=atol)


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    call: Callable[[Any, Any], Callable]  # (module, numpy) -> function of the arrays
    make: Callable[[np.random.Generator], list]  # rng -> float64 arrays
    order: int = 2  # derivative order checked (0: none)
    scipy: bool = True
    jax: bool = True
    vmap: bool = True
    rtol32: float = 2e-5


def _ids(cases):
    return [c.name for c in cases]


def _check_case(case, mod_f, mod_s, mod_j_name, rng):
    args = case.make(rng)
    with tu.enable_x64():
        ours = case.call(mod_f, jnp)(*args)
        if case.scipy:
            _close(ours, case.call(mod_s, np)(*args), rtol=1e-10, atol=1e-12)
        if case.order:
            tu.check_grads(case.call(mod_f, jnp), args, order=case.order, atol=1e-5, rtol=1e-5)
    args32 = [a.astype(np.float32) if a.dtype == np.float64 else a for a in args]
    f32 = case.call(mod_f, jnp)
    tu.check_jit(f32, args32, atol=1e-5, rtol=1e-5)
    if case.vmap:
        tu.check_batching(f32, [np.stack([a, a[::-1] if a.ndim else a]) for a in args32], atol=1e-5, rtol=1e-5)
    if case.jax:
        _jax()
        import importlib
        jmod = importlib.import_module(mod_j_name)
        import jax.numpy as jjnp
        ours32, theirs = f32(*args32), case.call(jmod, jjnp)(*args32)
        _close(ours32, theirs, rtol=case.rtol32, atol=1e-5)
        for x, y in zip(fluxion.tree_util.tree_leaves(ours32), fluxion.tree_util.tree_leaves(theirs)):
            assert (np.asarray(x).dtype, np.shape(x)) == (np.asarray(y).dtype, np.shape(y))


# --- fft -----------------------------------------------------------------------------------------------------------

def _mat(shape):
    return lambda r: [r.standard_normal(shape)]


FFT = [
    Case("dct", lambda m, N: lambda x: m.dct(x), _mat((3, 6))),
    Case("dct_ortho_axis0_n", lambda m, N: lambda x: m.dct(x, n=5, axis=0, norm="ortho"), _mat((3, 6))),
    Case("dct_pad", lambda m, N: lambda x: m.dct(x, n=9), _mat((2, 6))),
    Case("idct", lambda m, N: lambda x: m.idct(x), _mat((3, 7))),
    Case("idct_ortho_n", lambda m, N: lambda x: m.idct(x, n=4, norm="ortho"), _mat((3, 7))),
    Case("dctn", lambda m, N: lambda x: m.dctn(x), _mat((3, 4, 5))),
    Case("dctn_axes_s", lambda m, N: lambda x: m.dctn(x, s=(6, 3), axes=(0, 2), norm="ortho"), _mat((3, 4, 5))),
    Case("idctn", lambda m, N: lambda x: m.idctn(x, norm="backward"), _mat((4, 5))),
    Case("idctn_s", lambda m, N: lambda x: m.idctn(x, s=(3, 7)), _mat((4, 5))),
    Case("dct_complex", lambda m, N: lambda x: m.dct(x * (1 + 2j)), _mat((5,)), order=0),
]


@pytest.mark.parametrize("case", FFT, ids=_ids(FFT))
def test_fft(case, rng):
    _check_case(case, ffft, scipy.fft, "jax.scipy.fft", rng)


def test_dct_roundtrip_and_errors():
    x = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
    for norm in (None, "ortho"):
        np.testing.assert_allclose(np.asarray(ffft.idctn(ffft.dctn(x, norm=norm), norm=norm)), x, atol=1e-5)
    assert ffft.dct(np.arange(4)).dtype == np.float32
    with pytest.raises(NotImplementedError, match="type-2"):
        ffft.dct(x, type=3)
    with pytest.raises(ValueError, match="norm"):
        ffft.idct(x, norm="forward")
    with pytest.raises(ValueError, match="same length"):
        ffft.dctn(x, s=(2, 2), axes=(0,))


# --- ndimage.map_coordinates ---------------------------------------------------------------------------------------

# JAX's "constant" and "wrap" are SciPy's "grid-constant" and "grid-wrap"; the rest share SciPy's names.
_SCIPY_MODE = {"constant": "grid-constant", "wrap": "grid-wrap"}


def _map(mode, order, cval=0.0):
    def call(m, N):
        if m is scipy.ndimage:
            return lambda img, c0, c1: m.map_coordinates(img, [c0, c1], order=order, mode=_SCIPY_MODE.get(mode, mode),
                                                         cval=cval)
        return lambda img, c0, c1: m.map_coordinates(img, [c0, c1], order=order, mode=mode, cval=cval)
    return call


def _image_and_coords(r):
    return [r.standard_normal((5, 6)), r.uniform(-2.6, 6.6, (4, 3)), r.uniform(-2.6, 7.6, (4, 3))]


MAP = [Case(f"{mode}_order{order}", _map(mode, order, 0.7), _image_and_coords, order=0 if order == 0 else 1)
       for mode in ("constant", "nearest", "wrap", "mirror", "reflect") for order in (0, 1)]


@pytest.mark.parametrize("case", MAP, ids=_ids(MAP))
def test_map_coordinates(case, rng):
    _check_case(case, fndimage, scipy.ndimage, "jax.scipy.ndimage", rng)


def test_map_coordinates_integer_input_and_errors():
    img = np.arange(20, dtype=np.int32).reshape(4, 5)
    coords = [np.array([0.5, 1.25, 2.5]), np.array([0.5, 3.75, 1.0])]
    out = fndimage.map_coordinates(img, coords, order=1)
    assert out.dtype == np.int32
    _jax()
    import jax.scipy.ndimage
    np.testing.assert_array_equal(np.asarray(out), np.asarray(jax.scipy.ndimage.map_coordinates(img, coords, 1)))
    with pytest.raises(ValueError, match="length input.ndim"):
        fndimage.map_coordinates(img, coords[:1], order=1)
    with pytest.raises(NotImplementedError, match="order"):
        fndimage.map_coordinates(img, coords, order=3)
    with pytest.raises(NotImplementedError, match="mode"):
        fndimage.map_coordinates(img, coords, order=1, mode="grid-mirror")


# --- interpolate.RegularGridInterpolator ---------------------------------------------------------------------------

def _grid(r):
    g0 = np.sort(r.uniform(0, 3, 5))
    g1 = np.sort(r.uniform(-1, 1, 4))
    return [g0, g1, r.standard_normal((5, 4)), np.stack([r.uniform(-0.3, 3.3, 6), r.uniform(-1.2, 1.2, 6)], -1)]


def _rgi(method, fill_value=np.nan):
    def call(m, N):
        def f(g0, g1, values, xi):
            return m.RegularGridInterpolator((g0, g1), values, method=method, bounds_error=False,
                                             fill_value=fill_value)(xi)
        return f
    return call


INTERP = [
    Case("linear_nan", _rgi("linear"), _grid, order=0, vmap=False),
    Case("linear_fill", _rgi("linear", 0.5), _grid, order=0, vmap=False),
    Case("linear_extrapolate", _rgi("linear", None), _grid, order=0, vmap=False),
    Case("nearest", _rgi("nearest", None), _grid, order=0, vmap=False),
]


@pytest.mark.parametrize("case", INTERP, ids=_ids(INTERP))
def test_regular_grid_interpolator(case, rng):
    _check_case(case, finterp, scipy.interpolate, "jax.scipy.interpolate", rng)


def test_regular_grid_interpolator_is_a_differentiable_pytree():
    g0, g1, values, xi = _grid(np.random.default_rng(3))
    xi = np.clip(xi, [g0[0] + 0.01, g1[0] + 0.01], [g0[-1] - 0.01, g1[-1] - 0.01])  # inside: no fill values
    with tu.enable_x64():
        interp = finterp.RegularGridInterpolator((g0, g1), values)
        out = fluxion.jit(lambda it, x: it(x))(interp, xi)
        _close(out, interp(xi), rtol=1e-12)
        tu.check_grads(lambda v, x: finterp.RegularGridInterpolator((g0, g1), v)(x), [values, xi], order=2)
        extra = np.stack([values, 2 * values], -1)  # trailing value axes are carried along
        assert finterp.RegularGridInterpolator((g0, g1), extra)(xi).shape == (6, 2)
        scalar_axis = finterp.RegularGridInterpolator((g0,), values[:, 0])(np.array([0.5, 1.5]))
        want = scipy.interpolate.RegularGridInterpolator((g0,), values[:, 0], bounds_error=False)([0.5, 1.5])
        _close(scalar_axis, want, rtol=1e-12)
    with pytest.raises(ValueError, match="method"):
        finterp.RegularGridInterpolator((g0, g1), values, method="cubic")
    with pytest.raises(NotImplementedError, match="bounds_error"):
        finterp.RegularGridInterpolator((g0, g1), values, bounds_error=True)
    with pytest.raises(ValueError, match="dimension"):
        finterp.RegularGridInterpolator((g0, g1), values)(np.ones((2, 3)))
    with pytest.raises(ValueError, match="points\\[1\\]"):
        finterp.RegularGridInterpolator((g0, g1[:3]), values)


# --- cluster.vq ----------------------------------------------------------------------------------------------------

VQ = [
    Case("2d", lambda m, N: lambda o, c: m.vq(o, c), lambda r: [r.standard_normal((7, 3)), r.standard_normal((4, 3))],
         order=1),
    Case("1d", lambda m, N: lambda o, c: m.vq(o, c), lambda r: [r.standard_normal(6), r.standard_normal(3)], order=1),
]


@pytest.mark.parametrize("case", VQ, ids=_ids(VQ))
def test_vq(case, rng):
    _check_case(case, fvq, scipy.cluster.vq, "jax.scipy.cluster.vq", rng)


def test_vq_errors():
    with pytest.raises(ValueError, match="same rank"):
        fvq.vq(np.ones((3, 2)), np.ones(2))
    with pytest.raises(ValueError, match="1-D or 2-D"):
        fvq.vq(np.ones((3, 2, 1)), np.ones((2, 2, 1)))


# --- sparse.linalg -------------------------------------------------------------------------------------------------

def _system(seed, n=6, spd=False):
    r = np.random.default_rng(seed)
    q = r.standard_normal((n, n))
    a = q @ q.T + n * np.eye(n) if spd else q + 2 * n ** 0.5 * np.eye(n)
    return a, r.standard_normal(n)


SOLVERS = [
    ("cg", dict(), True),
    ("cg_preconditioned", dict(M="jacobi"), True),
    ("bicgstab", dict(), False),
    ("bicgstab_preconditioned", dict(M="jacobi"), False),
    ("gmres", dict(), False),
    ("gmres_restart2", dict(restart=2, maxiter=100), False),
    ("gmres_incremental", dict(solve_method="incremental"), False),
]


def _solver(name, module, kw, a):
    kw = dict(kw)
    if kw.get("M") == "jacobi":
        kw["M"] = np.diag(1 / np.diag(a))
    return lambda A, b: getattr(module, name.split("_")[0])(A, b, tol=1e-10, **kw)[0]


@pytest.mark.parametrize("name,kw,spd", SOLVERS, ids=[s[0] for s in SOLVERS])
def test_sparse_solvers(name, kw, spd):
    a, b = _system(0, spd=spd)
    with tu.enable_x64():
        solve = _solver(name, fsparse, kw, a)
        _close(solve(a, b), np.linalg.solve(a, b), rtol=1e-8, atol=1e-10)
        _close(solve(lambda x: a @ x, b), np.linalg.solve(a, b), rtol=1e-8, atol=1e-10)
        # Implicit derivatives: d/dA and d/db of the solve (not of the iterations), to second order.
        sym = (lambda m: (m + m.T) / 2) if spd else (lambda m: m)
        tu.check_grads(lambda m, v: solve(lambda x: sym(m) @ x, v), [a, b], order=2, atol=1e-5, rtol=1e-5)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    f = lambda m, v: _solver(name, fsparse, kw, a)(lambda x: m @ x, v)  # noqa: E731
    tu.check_jit(f, [a32, b32], atol=1e-5, rtol=1e-5)
    tu.check_batching(f, [np.stack([a32, a32 + np.eye(6, dtype=np.float32)]), np.stack([b32, -b32])],
                      atol=1e-4, rtol=1e-4)
    jax = _jax()
    import jax.scipy.sparse.linalg as jsparse
    theirs = _solver(name, jsparse, kw, a)(a32, b32)
    _close(f(a32, b32), theirs, rtol=1e-4, atol=1e-5)
    g = fluxion.grad(lambda m: jnp.sum(f(m, b32) ** 2))(a32)
    jg = jax.grad(lambda m: jax.numpy.sum(_solver(name, jsparse, kw, a)(lambda x: m @ x, b32) ** 2))(a32)
    _close(g, jg, rtol=1e-3, atol=1e-5)


def test_sparse_solvers_on_pytrees_and_errors():
    scale = {"u": np.float32([2.0, 4.0]), "v": np.float32([[5.0, 1.0]])}
    b = {"u": np.float32([1.0, 2.0]), "v": np.float32([[3.0, 1.0]])}
    op = lambda x: fluxion.tree_util.tree_map(lambda s, y: s * y, scale, x)  # noqa: E731
    for solver in (fsparse.cg, fsparse.bicgstab, fsparse.gmres):
        x, info = solver(op, b)
        assert info is None
        _close(x, fluxion.tree_util.tree_map(lambda s, y: y / s, scale, b), rtol=1e-5)
    a, rhs = _system(1)
    with pytest.raises(ValueError, match="tree structure"):
        fsparse.cg(a, rhs, x0=(rhs,))
    with pytest.raises(ValueError, match="shapes"):
        fsparse.cg(a, rhs, x0=rhs[:3])
    with pytest.raises(ValueError, match="square"):
        fsparse.gmres(np.ones((3, 4)), rhs)
    with pytest.raises(ValueError, match="solve_method"):
        fsparse.gmres(a, rhs, solve_method="qr")
    with pytest.raises(TypeError, match="function or a square matrix"):
        fsparse.bicgstab("A", rhs)


# --- spatial.transform ---------------------------------------------------------------------------------------------

def _quats(r):
    return [r.standard_normal((5, 4))]


def _rot(method_call):
    def call(m, N):
        return lambda q: method_call(m.Rotation.from_quat(q), m, N)
    return call


SEQS = ("xyz", "ZXY", "zxz", "XYX", "yzx", "ZYZ")
ROTATIONS = [
    Case("as_matrix", _rot(lambda r, m, N: r.as_matrix()), _quats),
    Case("as_rotvec", _rot(lambda r, m, N: r.as_rotvec()), _quats),
    Case("as_rotvec_degrees", _rot(lambda r, m, N: r.as_rotvec(degrees=True)), _quats),
    Case("as_mrp", _rot(lambda r, m, N: r.as_mrp()), _quats),
    Case("as_quat_canonical", _rot(lambda r, m, N: r.as_quat(canonical=True, scalar_first=True)), _quats),
    Case("magnitude", _rot(lambda r, m, N: r.magnitude()), _quats),
    Case("inv_compose", _rot(lambda r, m, N: (r * r.inv()[::-1]).as_matrix()), _quats),
    Case("apply", _rot(lambda r, m, N: r.apply(N.ones((5, 3)) * N.arange(3.0))), _quats),
    Case("apply_inverse_single", _rot(lambda r, m, N: r[1].apply(N.arange(15.0).reshape(5, 3), inverse=True)),
         _quats),
    Case("mean", _rot(lambda r, m, N: r.mean(N.arange(1.0, 6.0)).as_matrix()), _quats, vmap=False),
    Case("from_matrix", _rot(lambda r, m, N: m.Rotation.from_matrix(r.as_matrix()).as_quat(canonical=True)), _quats),
    Case("from_rotvec", lambda m, N: lambda v: m.Rotation.from_rotvec(v).as_matrix(),
         lambda r: [r.standard_normal((5, 3))]),
    Case("from_rotvec_small", lambda m, N: lambda v: m.Rotation.from_rotvec(v * 1e-4).as_matrix(),
         lambda r: [r.standard_normal((5, 3))]),
    Case("from_mrp", lambda m, N: lambda v: m.Rotation.from_mrp(v).as_matrix(),
         lambda r: [r.uniform(-0.5, 0.5, (5, 3))]),
    Case("slerp", lambda m, N: lambda q, t: m.Slerp.init(N.array([0.0, 1.0, 2.5, 3.0, 4.0]),
                                                         m.Rotation.from_quat(q))(t).as_matrix(),
         lambda r: [r.standard_normal((5, 4)), np.array([0.0, 0.3, 1.7, 2.7, 3.9, 4.0])], order=1, vmap=False),
] + [Case(f"from_euler_{s}", lambda m, N, s=s: lambda a: m.Rotation.from_euler(s, a).as_matrix(),
          lambda r: [r.uniform(-3, 3, (5, 3))]) for s in SEQS] \
  + [Case(f"as_euler_{s}", _rot(lambda r, m, N, s=s: r.as_euler(s)), _quats, rtol32=1e-4) for s in SEQS]


class _ScipyTransform:
    """SciPy's module, with Slerp built by its constructor (JAX's and fluxion's use Slerp.init)."""
    Rotation = scipy.spatial.transform.Rotation

    class Slerp:
        @staticmethod
        def init(times, rotations):
            return scipy.spatial.transform.Slerp(times, rotations)


@pytest.mark.parametrize("case", ROTATIONS, ids=_ids(ROTATIONS))
def test_rotation(case, rng):
    _check_case(case, ftransform, _ScipyTransform, "jax.scipy.spatial.transform", rng)


def test_rotation_singles_gimbal_lock_and_pytrees():
    R = ftransform.Rotation
    r = R.from_euler("z", 90, degrees=True)
    assert r.single and r.quat.shape == (4,)
    np.testing.assert_allclose(np.asarray(r.apply(np.array([1.0, 0.0, 0.0]))), [0, 1, 0], atol=1e-6)
    assert R.from_euler("x", np.array([0.1, 0.2])).quat.shape == (2, 4)
    assert len(R.identity(3)) == 3 and R.concatenate([r, R.identity(2)]).quat.shape == (3, 4)
    _jax()
    from jax.scipy.spatial.transform import Rotation as JR
    for seq, angles in (("xyz", [0.3, np.pi / 2, 0.2]), ("zxz", [0.3, 0.0, 0.2]), ("ZXY", [0.3, -np.pi / 2, 0.2])):
        angles = np.float32(angles)
        _close(R.from_euler(seq, angles).as_euler(seq), JR.from_euler(seq, angles).as_euler(seq), rtol=1e-4,
               atol=2e-6)
    # A Rotation crosses jit and vmap as a pytree (its quat is the leaf).
    q = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    rot = R.from_quat(q)
    _close(fluxion.jit(lambda rr: rr.as_matrix())(rot), rot.as_matrix(), rtol=1e-6)
    _close(fluxion.vmap(lambda rr: rr.as_rotvec())(rot), rot.as_rotvec(), rtol=1e-6)
    rnd = R.random(fluxion.random.key(0), 1000)
    _close(jnp.linalg.norm(rnd.quat, axis=-1), np.ones(1000), rtol=1e-5)
    assert abs(float(jnp.mean(rnd.as_matrix()[:, 0, 0]))) < 0.1  # E[R_00] = 0 for uniform rotations
    with pytest.raises(TypeError, match="not subscriptable"):
        r[0]
    with pytest.raises(ValueError, match="consecutive"):
        R.from_euler("xxy", np.zeros(3))
    with pytest.raises(ValueError, match="3 axes"):
        rot.as_euler("xy")
    with pytest.raises(ValueError, match="weights"):
        rot.mean(np.ones(2))
    with pytest.raises(ValueError, match="at least 2"):
        ftransform.Slerp.init([0.0], rot[:1])


# --- signal: stft, istft, csd, welch -------------------------------------------------------------------------------

def _signals(n=2):
    return lambda r: [r.standard_normal((3, 64)) for _ in range(n)]


def _quiet(fn):
    def call(*a):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*a)
    return call


SPECTRAL = [
    Case("stft", lambda m, N: lambda x: m.stft(x, nperseg=16), _signals(1)),
    Case("stft_odd_boundary", lambda m, N: lambda x: m.stft(x, nperseg=15, noverlap=5, nfft=20, boundary="odd",
                                                            padded=False), _signals(1)),
    Case("stft_axis0_even", lambda m, N: lambda x: m.stft(x.T, nperseg=16, boundary="even", axis=0), _signals(1)),
    Case("stft_twosided_window", lambda m, N: lambda x: m.stft(x, window=("tukey", 0.3), nperseg=12,
                                                               return_onesided=False), _signals(1)),
    Case("welch", lambda m, N: lambda x: m.welch(x, nperseg=32), _signals(1)),
    Case("welch_median_spectrum", lambda m, N: lambda x: m.welch(x, fs=3.0, nperseg=16, scaling="spectrum",
                                                                  average="median", detrend="linear"),
         _signals(1), order=1),
    Case("welch_array_window", lambda m, N: lambda x: m.welch(x, window=np.hanning(20), nfft=25, detrend=False),
         _signals(1)),
    Case("csd", lambda m, N: lambda x, y: m.csd(x, y, nperseg=20), _signals(2)),
    Case("csd_twosided_median", lambda m, N: lambda x, y: m.csd(x, y, nperseg=16, return_onesided=False,
                                                                 average="median"), _signals(2), order=1),
    Case("istft", lambda m, N: lambda x: m.istft(m.stft(x, nperseg=16)[2], nperseg=16), _signals(1)),
    Case("istft_axes", lambda m, N: lambda x: m.istft(N.moveaxis(m.stft(x, nperseg=16)[2], -1, 0), nperseg=16,
                                                      time_axis=0, freq_axis=-1), _signals(1)),
]
SPECTRAL = [dataclasses.replace(c, call=lambda m, N, c=c: _quiet(c.call(m, N))) for c in SPECTRAL]


@pytest.mark.parametrize("case", SPECTRAL, ids=_ids(SPECTRAL))
def test_spectral(case, rng):
    _check_case(case, fsignal, scipy.signal, "jax.scipy.signal", rng)


@pytest.mark.filterwarnings("ignore:.*greater than input length")
def test_spectral_roundtrip_and_errors():
    x = np.random.default_rng(0).standard_normal(100).astype(np.float32)
    _, _, z = fsignal.stft(x, nperseg=20, noverlap=15)
    t, back = fsignal.istft(z, nperseg=20, noverlap=15)
    np.testing.assert_allclose(np.asarray(back)[:100], x, atol=1e-5)
    assert t.shape == back.shape
    with pytest.raises(ValueError, match="noverlap"):
        fsignal.stft(x, nperseg=8, noverlap=8)
    with pytest.raises(ValueError, match="nfft"):
        fsignal.welch(x, nperseg=16, nfft=8)
    with pytest.raises(ValueError, match="average"):
        fsignal.csd(x, x, average="max")
    with pytest.raises(ValueError, match="scaling"):
        fsignal.welch(x, scaling="power")
    with pytest.raises(ValueError, match="boundary"):
        fsignal.stft(x, boundary="wrap")
    with pytest.raises(ValueError, match="2-D"):
        fsignal.istft(x)
