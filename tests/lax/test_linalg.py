"""Table-driven tests of linear algebra: `fluxion.lax.linalg` and `fluxion.numpy.linalg`.

One record per operation (or per parameterization of one: triangular_solve's sides, triangles, transposition and
unit diagonal; qr's and svd's modes): a function written against a library module `m` (`fluxion`, or real `jax`
as an oracle), its NumPy reference, an input generator (well conditioned: A A^T + n I for SPD inputs, I-dominated
general and triangular matrices, full-rank rectangular ones), an optional canonicalization of the outputs (the
sign gauge of eigenvectors, singular vectors and QR factors, and the non-unique completion columns of complete
factorizations are fixed in NumPy before comparing), and a gauge-invariant differentiable view of the outputs
(eigenvalues and spectral projectors, `U diag(s) V^T`, ...). Each record is expanded over float32 and float64
(64-bit mode in a context that restores it) and over unbatched and batched (leading batch dimension) inputs, and
checked for:

* values against NumPy, eagerly and under `fluxion.jit`; eager avals against abstract evaluation;
* JVPs and VJPs of the gauge-invariant view against finite differences: to second order in float64 (batched
  inputs, tight tolerances), to first order in float32; jitted derivatives against eager ones;
* `vmap` against a Python loop (batch axis 0 and 1, unmapped operands, on top of leading batch dimensions, and an
  empty batch);
* values and derivatives (JVP and VJP at one random direction) against real JAX where it is installed.

Known core bugs and gaps are strict xfails in `KNOWN_FAILURES`, each with a reproducer.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Callable

import numpy as np
import pytest

import fluxion
import fluxion.numpy  # binds `fluxion.numpy`, which the records reach as `m.numpy`
from fluxion._src import test_util as tu
from fluxion.tree_util import tree_leaves, tree_map

f32, f64 = np.dtype(np.float32), np.dtype(np.float64)
DTYPES = (f32, f64)
BATCHES = ((), (2,))  # leading batch dimensions of the inputs

_TOL = {f32: 5e-5, f64: 1e-11}
_GRAD_TOL = {f32: 2e-2, f64: 1e-6}
_JAX_DERIV_TOL = {f64: 1e-9}


@dataclasses.dataclass(frozen=True)
class Op:
    """One linear-algebra operation under test.

    Attributes:
      name: test id (`lax.` or `numpy.` prefix: the namespace it is reached through).
      fn: fn(m, *args) with `m` the library module (`fluxion` or `jax`); returns an array or a tuple of arrays.
      ref: the NumPy reference with the same arguments and output structure.
      make_args: (rng, batch, dtype) -> list of NumPy arguments with leading batch dimensions `batch`.
      canon: NumPy canonicalization applied to outputs (fluxion's, NumPy's, JAX's) before they are compared.
      diff: gauge-invariant differentiable view diff(m, *args) for derivative checks (default: fn); None: skip.
      vmap_axes: in_axes cases for the vmap check (per-example arguments have no batch dimensions).
      grad_error: the exception class JAX raises when differentiating this op (then fluxion must raise it too).
    """

    name: str
    fn: Callable
    ref: Callable
    make_args: Callable
    canon: Callable = lambda out: out
    diff: Callable | None = None
    vmap_axes: tuple = ((0,), (1,))
    grad_error: type | None = None

    @property
    def f(self) -> Callable:
        return functools.partial(self.fn, fluxion)

    @property
    def diff_fn(self) -> Callable | None:
        return self.fn if self.diff is None else self.diff


# --------------------------------------------------------------------------------------------------------------
# Inputs (generated in float64, then cast)
# --------------------------------------------------------------------------------------------------------------

N = 3


def _spd(rng, batch, dtype, n=N):
    a = rng.standard_normal(batch + (n, n))
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(dtype)


def _general(rng, batch, dtype, n=N):
    """I-dominated, well conditioned; the first row's sign is random, so determinants of both signs occur."""
    a = rng.standard_normal(batch + (n, n)) + 3 * np.eye(n)
    a[..., 0, :] *= np.where(rng.random(batch + (1,)) < 0.5, -1.0, 1.0)
    return a.astype(dtype)


def _triangular_operand(rng, batch, dtype, n=N):
    """Well conditioned in both triangles, with a dominant diagonal (the solve reads one triangle)."""
    return (0.5 * rng.standard_normal(batch + (n, n)) + np.diag(rng.uniform(2.0, 3.0, n))).astype(dtype)


def _rect(rng, batch, dtype, m, n):
    return rng.standard_normal(batch + (m, n)).astype(dtype)


def _rhs(rng, batch, dtype, shape):
    return rng.standard_normal(batch + shape).astype(dtype)


# --------------------------------------------------------------------------------------------------------------
# Canonical forms (NumPy): fix the sign gauge and the non-unique completion columns
# --------------------------------------------------------------------------------------------------------------

def _column_signs(v):
    """Per column of v (..., m, k), the sign of its largest-magnitude entry (shape (..., k))."""
    v = np.asarray(v)
    idx = np.argmax(np.abs(v), axis=-2)[..., None, :]
    return np.sign(np.take_along_axis(v, idx, axis=-2))[..., 0, :]


def _projector(q):
    q = np.asarray(q)
    return q @ np.swapaxes(q, -1, -2)


def _canon_eigh_lax(out):  # (v, w): eigenvector columns with a positive largest entry
    v, w = (np.asarray(o) for o in out)
    return v * _column_signs(v)[..., None, :], w


def _canon_eigh_numpy(out):  # (w, v)
    v, w = _canon_eigh_lax((out[1], out[0]))
    return w, v


def _canon_qr(out):
    """(q, r) -> (q[:, :k] D, D r, projector onto q's completion columns) with D = sign(diag(r)), k = rows of r
    that are determined (min(m, n))."""
    q, r = (np.asarray(o) for o in out)
    k = min(q.shape[-2], r.shape[-1])
    d = np.sign(np.diagonal(r, axis1=-2, axis2=-1))[..., :k]
    return q[..., :, :k] * d[..., None, :], r[..., :k, :] * d[..., :, None], _projector(q[..., :, k:])


def _canon_svd(out):
    """(u, s, vh) -> (u[:, :k] D, s, D vh[:k], projectors onto the completion columns of u and rows of vh)."""
    u, s, vh = (np.asarray(o) for o in out)
    k = s.shape[-1]
    d = _column_signs(u[..., :, :k])
    vhk = vh[..., :k, :] * d[..., :, None]
    return (u[..., :, :k] * d[..., None, :], s, vhk, _projector(u[..., :, k:]),
            _projector(np.swapaxes(vh[..., k:, :], -1, -2)))


# --------------------------------------------------------------------------------------------------------------
# Gauge-invariant differentiable views (written against the library module m)
# --------------------------------------------------------------------------------------------------------------

def _mT(m, x):
    return m.numpy.swapaxes(x, -1, -2)


def _eigh_view(m, v, w):
    """Eigenvalues, the reconstruction V diag(w) V^T, and the projector onto the top eigenvector."""
    top = v[..., :, -1:]
    return w, m.numpy.matmul(v * w[..., None, :], _mT(m, v)), m.numpy.matmul(top, _mT(m, top))


def _svd_view(m, u, s, vh):
    """Singular values, U diag(s) V^T, and the projectors onto the leading left and right singular vectors."""
    k = s.shape[-1]
    u1, v1 = u[..., :, :1], _mT(m, vh[..., :1, :])
    recon = m.numpy.matmul(u[..., :, :k] * s[..., None, :], vh[..., :k, :])
    return s, recon, m.numpy.matmul(u1, _mT(m, u1)), m.numpy.matmul(v1, _mT(m, v1))


def _qr_view(m, q, r):
    """The determined columns of q and rows of r (signs are fixed by the algorithm, locally smooth), and the
    projector onto the completion columns of a complete factorization."""
    k = min(q.shape[-2], r.shape[-1])
    rest = q[..., :, k:]
    return q[..., :, :k], r[..., :k, :], m.numpy.matmul(rest, _mT(m, rest))


# --------------------------------------------------------------------------------------------------------------
# References
# --------------------------------------------------------------------------------------------------------------

def _tri_ref(left, lower, transpose_a, unit):
    def ref(a, b):
        t = np.tril(a) if lower else np.triu(a)
        if unit:
            t = t - t * np.eye(a.shape[-1], dtype=a.dtype) + np.eye(a.shape[-1], dtype=a.dtype)
        if transpose_a:
            t = np.swapaxes(t, -1, -2)
        if left:  # op(a) x = b
            return np.linalg.solve(t, b)
        return np.swapaxes(np.linalg.solve(np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)  # x op(a) = b
    return ref


def _tri_op(left, lower, transpose_a, unit):
    name = "lax.triangular_solve-{}-{}{}{}".format("left" if left else "right", "lower" if lower else "upper",
                                                   "-transpose_a" if transpose_a else "",
                                                   "-unit_diagonal" if unit else "")

    def fn(m, a, b):
        return m.lax.linalg.triangular_solve(a, b, left_side=left, lower=lower, transpose_a=transpose_a,
                                             unit_diagonal=unit)

    def make_args(rng, batch, dtype):
        return [_triangular_operand(rng, batch, dtype), _rhs(rng, batch, dtype, (N, 2) if left else (2, N))]

    return Op(name, fn, _tri_ref(left, lower, transpose_a, unit), make_args,
              vmap_axes=((0, 0), (1, 1), (None, 0), (0, None)))


def _np_qr(mode):
    def ref(a):
        return np.linalg.qr(a, mode=mode)
    return ref


def _np_svd(full_matrices):
    def ref(a):
        u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
        return u, s, vh
    return ref


def _spd_args(rng, batch, dtype):
    return [_spd(rng, batch, dtype)]


def _general_args(rng, batch, dtype):
    return [_general(rng, batch, dtype)]


def _rect_args(m, n):
    def make(rng, batch, dtype):
        return [_rect(rng, batch, dtype, m, n)]
    return make


TALL, SQUARE, WIDE = (4, 3), (3, 3), (3, 4)


def _qr_ops(prefix, shape_name, shape):
    ops = []
    for full in (False, True):
        if prefix == "lax":
            def fn(m, a, full=full):
                return tuple(m.lax.linalg.qr(a, full_matrices=full))
        else:
            def fn(m, a, full=full):
                return tuple(m.numpy.linalg.qr(a, mode="complete" if full else "reduced"))

        def diff(m, a, fn=fn):
            return _qr_view(m, *fn(m, a))

        ops.append(Op(f"{prefix}.qr-{shape_name}-{'complete' if full else 'reduced'}", fn,
                      _np_qr("complete" if full else "reduced"), _rect_args(*shape), canon=_canon_qr, diff=diff))
    return ops


def _svd_ops(prefix, shape_name, shape):
    ops = []
    for full in (False, True):
        mod = (lambda m: m.lax.linalg) if prefix == "lax" else (lambda m: m.numpy.linalg)

        def fn(m, a, full=full, mod=mod):
            return tuple(mod(m).svd(a, full_matrices=full, compute_uv=True))

        def diff(m, a, fn=fn):
            return _svd_view(m, *fn(m, a))

        # JAX has no JVP for full_matrices=True on non-square inputs (the completion columns are arbitrary).
        error = NotImplementedError if full and shape[0] != shape[1] else None
        ops.append(Op(f"{prefix}.svd-{shape_name}-{'full' if full else 'reduced'}", fn, _np_svd(full),
                      _rect_args(*shape), canon=_canon_svd, diff=diff, grad_error=error))
    return ops


OPS = [
    # -- fluxion.lax.linalg ------------------------------------------------------------------------------------------
    Op("lax.cholesky", lambda m, a: m.lax.linalg.cholesky(a), np.linalg.cholesky, _spd_args),
    *[_tri_op(left, lower, t, unit) for left in (True, False) for lower in (True, False) for t in (False, True)
      for unit in (False, True)],
    Op("lax.eigh", lambda m, a: tuple(m.lax.linalg.eigh(a)),
       lambda a: tuple(reversed(np.linalg.eigh(a))), _spd_args, canon=_canon_eigh_lax,
       diff=lambda m, a: _eigh_view(m, *m.lax.linalg.eigh(a))),
    *_qr_ops("lax", "tall", TALL), *_qr_ops("lax", "square", SQUARE), *_qr_ops("lax", "wide", WIDE),
    *_svd_ops("lax", "tall", TALL), *_svd_ops("lax", "square", SQUARE), *_svd_ops("lax", "wide", WIDE),
    Op("lax.svd-tall-values_only", lambda m, a: m.lax.linalg.svd(a, compute_uv=False),
       lambda a: np.linalg.svd(a, compute_uv=False), _rect_args(*TALL)),
    Op("lax.svd-square-values_only", lambda m, a: m.lax.linalg.svd(a, compute_uv=False),
       lambda a: np.linalg.svd(a, compute_uv=False), _rect_args(*SQUARE)),
    # -- fluxion.numpy.linalg --------------------------------------------------------------------------------------
    Op("numpy.cholesky", lambda m, a: m.numpy.linalg.cholesky(a), np.linalg.cholesky, _spd_args),
    Op("numpy.cholesky-upper", lambda m, a: m.numpy.linalg.cholesky(a, upper=True),
       lambda a: np.linalg.cholesky(a, upper=True), _spd_args),
    Op("numpy.solve", lambda m, a, b: m.numpy.linalg.solve(a, b), np.linalg.solve,
       lambda rng, batch, dtype: [_general(rng, batch, dtype), _rhs(rng, batch, dtype, (N, 2))],
       vmap_axes=((0, 0), (1, 1), (None, 0), (0, None))),
    # b of shape (n,) is one vector for every matrix of a batch (NumPy 2 / JAX >= 0.5 semantics).
    Op("numpy.solve-vector", lambda m, a, b: m.numpy.linalg.solve(a, b), np.linalg.solve,
       lambda rng, batch, dtype: [_general(rng, batch, dtype), _rhs(rng, (), dtype, (N,))],
       vmap_axes=((0, 0), (1, 0), (None, 0), (0, None))),
    Op("numpy.inv", lambda m, a: m.numpy.linalg.inv(a), np.linalg.inv, _general_args),
    Op("numpy.det", lambda m, a: m.numpy.linalg.det(a), np.linalg.det, _general_args),
    # (tuple(...): the result types are not pytrees; see test_result_types_are_pytrees_like_jax)
    Op("numpy.slogdet", lambda m, a: tuple(m.numpy.linalg.slogdet(a)), lambda a: tuple(np.linalg.slogdet(a)),
       _general_args),
    Op("numpy.eigh", lambda m, a: tuple(m.numpy.linalg.eigh(a)), lambda a: tuple(np.linalg.eigh(a)), _spd_args,
       canon=_canon_eigh_numpy, diff=lambda m, a: _eigh_view(m, *reversed(tuple(m.numpy.linalg.eigh(a))))),
    Op("numpy.eigvalsh", lambda m, a: m.numpy.linalg.eigvalsh(a), np.linalg.eigvalsh, _spd_args),
    *_qr_ops("numpy", "tall", TALL), *_qr_ops("numpy", "wide", WIDE),
    Op("numpy.qr-tall-r", lambda m, a: m.numpy.linalg.qr(a, mode="r"), lambda a: np.linalg.qr(a, mode="r"),
       _rect_args(*TALL), canon=lambda r: np.asarray(r) * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[..., None]),
    *_svd_ops("numpy", "tall", TALL), *_svd_ops("numpy", "wide", WIDE),
    Op("numpy.svd-wide-values_only", lambda m, a: m.numpy.linalg.svd(a, compute_uv=False),
       lambda a: np.linalg.svd(a, compute_uv=False), _rect_args(*WIDE)),
    Op("numpy.svdvals", lambda m, a: m.numpy.linalg.svdvals(a), lambda a: np.linalg.svd(a, compute_uv=False),
       _rect_args(*TALL)),
]

OPS_BY_NAME = {op.name: op for op in OPS}
assert len(OPS_BY_NAME) == len(OPS), "duplicate op names in the table"

# --------------------------------------------------------------------------------------------------------------
# Known core bugs and gaps (strict xfails): (check, op name) -> (reason, predicate(dtype, batch) or None for all)
# --------------------------------------------------------------------------------------------------------------

_QR_JVP_GAP = (
    "core gap: no QR JVP for wide inputs or for complete factorizations of tall ones (the rule raises "
    "NotImplementedError and says JAX does too, but JAX 0.10 differentiates both); repro: "
    "fluxion.jvp(jnp.linalg.qr, (a,), (a,)) with a of shape (3, 4), or "
    "fluxion.jvp(lambda a: jnp.linalg.qr(a, mode='complete'), (a,), (a,)) with a of shape (4, 3)")
_SOLVE_BATCHED_VECTOR = (
    "core bug: jnp.linalg.solve(a, b) with a of shape (2, 3, 3) and one vector b of shape (3,) (broadcast over "
    "the batch as in NumPy 2 and JAX: result (2, 3)) works eagerly, where the NumPy backend broadcasts, but the "
    "abstract rule rejects it: jit(jnp.linalg.solve)(a, b) raises TypeError 'solve: b of shape (3,) is "
    "incompatible with a of shape (2, 3, 3)', and so do grad and jvp; vmap over a batch of such (a, b) pairs "
    "returns shape (B, 2, 3, 3) instead of (B, 2, 3)")


def _batched(dtype, batch) -> bool:
    return bool(batch)


_DERIVATIVE_CHECKS = ("grads", "jit_grads", "jax_grads")
_QR_GAPS = ["lax.qr-tall-complete", "lax.qr-wide-reduced", "lax.qr-wide-complete", "numpy.qr-tall-complete",
            "numpy.qr-wide-reduced", "numpy.qr-wide-complete"]

# (check, op name) -> (reason, predicate(dtype, batch) selecting the affected cases, or None for all)
KNOWN_FAILURES: dict[tuple, tuple] = {
    **{(check, name): (_QR_JVP_GAP, None) for check in _DERIVATIVE_CHECKS for name in _QR_GAPS},
    **{(check, "numpy.solve-vector"): (_SOLVE_BATCHED_VECTOR, _batched)
       for check in ("values", "batching") + _DERIVATIVE_CHECKS},
}


def _marks(check: str, op: Op, dtype=None, batch=None) -> list:
    entry = KNOWN_FAILURES.get((check, op.name))
    if entry is not None:
        reason, applies = entry
        if applies is None or applies(dtype, batch):
            return [pytest.mark.xfail(reason=reason, strict=True)]
    return []


def _id(op, dtype=None, batch=None) -> str:
    parts = [op.name] + ([np.dtype(dtype).name] if dtype is not None else [])
    if batch is not None:
        parts.append("batch" + "x".join(map(str, batch)) if batch else "unbatched")
    return "-".join(parts)


def _params(check: str, ops, dtypes=DTYPES, batches=BATCHES) -> list:
    return [pytest.param(op, dt, b, id=_id(op, dt, b), marks=_marks(check, op, dt, b))
            for op in ops for dt in dtypes for b in batches]


def _precision(dtype, *other_configs):
    """64-bit mode for float64 cases (in fluxion and the given oracle configs); nothing for float32."""
    return tu.enable_x64(*other_configs) if np.dtype(dtype) == f64 else contextlib.nullcontext()


def _jax():
    jax = pytest.importorskip("jax")
    pytest.importorskip("jax.numpy")  # binds `jax.numpy`, which the records reach as `m.numpy`
    return jax


def _np_tree(out):
    return tree_map(np.asarray, out)


# --------------------------------------------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("op,dtype,batch", _params("values", OPS))
def test_values_eager_jit_and_abstract_eval(op: Op, dtype, batch, rng):
    with _precision(dtype):
        args = op.make_args(rng, batch, dtype)
        expected = op.canon(op.ref(*args))
        tol = _TOL[np.dtype(dtype)]
        eager = op.f(*[fluxion.numpy.asarray(a) for a in args])
        dts = [np.asarray(leaf).dtype for leaf in tree_leaves(eager)]
        assert dts == [dtype] * len(dts), f"{op.name}: output dtypes {dts}, expected {dtype} (real inputs)"
        tu.assert_allclose(op.canon(_np_tree(eager)), expected, atol=tol, rtol=tol, check_dtypes=False,
                           err_msg=f"{op.name} eager vs NumPy")
        jitted = fluxion.jit(op.f)(*args)
        tu.assert_allclose(op.canon(_np_tree(jitted)), expected, atol=tol, rtol=tol, check_dtypes=False,
                           err_msg=f"{op.name} jit vs NumPy")
        tu.check_jit(op.f, args, atol=tol, rtol=tol, err_msg=f"{op.name} jit vs eager")
        tu.check_eval_shape(op.f, args, err_msg=f"{op.name} eval_shape")


# --------------------------------------------------------------------------------------------------------------
# Derivatives
# --------------------------------------------------------------------------------------------------------------

def _grad_params() -> list:
    # float64 on batched inputs to second order with tight tolerances (the main check: every rule, its own
    # derivative, and leading batch dimensions), and float32 on unbatched inputs to first order (the rules in
    # single precision, where finite differences are too coarse for a meaningful second-order comparison).
    return [p for dt, b in ((f64, (2,)), (f32, ())) for p in _params("grads", OPS, (dt,), (b,))]


@pytest.mark.parametrize("op,dtype,batch", _grad_params())
def test_grads(op: Op, dtype, batch, rng):
    diff = functools.partial(op.diff_fn, fluxion)
    with _precision(dtype):
        args = op.make_args(rng, batch, dtype)
        if op.grad_error is not None:
            with pytest.raises(op.grad_error):
                fluxion.jvp(diff, tuple(args), tuple(args))
            with pytest.raises(op.grad_error):
                fluxion.vjp(diff, *args)
            return
        f64_mode = np.dtype(dtype) == f64
        tu.check_grads(diff, args, order=2 if f64_mode else 1, modes=("fwd", "rev"), atol=_GRAD_TOL[dtype],
                       rtol=_GRAD_TOL[dtype], eps=1e-6 if f64_mode else None, rng=rng, err_msg=op.name)


@pytest.mark.parametrize("op,dtype,batch", _params("jit_grads", [op for op in OPS if op.grad_error is None],
                                                   (f32,), ((2,),)))
def test_jitted_derivatives_match_eager(op: Op, dtype, batch, rng):
    diff = functools.partial(op.diff_fn, fluxion)
    args = op.make_args(rng, batch, dtype)
    ts = [rng.standard_normal(np.shape(a)).astype(dtype) for a in args]
    out = diff(*args)
    cts = tree_map(lambda o: rng.standard_normal(np.shape(o)).astype(dtype), out)
    tu.check_jit(lambda *xs: fluxion.jvp(diff, xs, tuple(ts)), args, atol=1e-5, rtol=1e-5,
                 err_msg=f"{op.name} jit(jvp)")
    tu.check_jit(lambda *xs: fluxion.vjp(diff, *xs)[1](cts), args, atol=1e-5, rtol=1e-5,
                 err_msg=f"{op.name} jit(vjp)")


# --------------------------------------------------------------------------------------------------------------
# Batching
# --------------------------------------------------------------------------------------------------------------

def _batch_params() -> list:
    out = []
    for op in OPS:
        for axes in op.vmap_axes:
            out.append(pytest.param(op, axes, (), id=f"{op.name}-axes{axes}", marks=_marks("batching", op, f32, ())))
        nargs = len(op.vmap_axes[0])
        out.append(pytest.param(op, (0,) * nargs, (2,), id=f"{op.name}-over-leading-batch",
                                marks=_marks("batching", op, f32, (2,))))
    return out


@pytest.mark.parametrize("op,axes,batch", _batch_params())
def test_vmap_matches_loop(op: Op, axes, batch, rng):
    examples = [op.make_args(rng, batch, f32) for _ in range(3)]
    tu.check_batching(op.f, tu.stack_examples(examples, axes), in_axes=axes, atol=_TOL[f32], rtol=_TOL[f32],
                      err_msg=f"{op.name} vmap{axes}")


# --------------------------------------------------------------------------------------------------------------
# Real JAX as an oracle
# --------------------------------------------------------------------------------------------------------------

# float64 only: it is the precise comparison, and each JAX call compiles with XLA (the float32 values are checked
# against NumPy above).

@pytest.mark.parametrize("op,dtype,batch", _params("jax_values", OPS, (f64,), ((2,),)))
def test_values_match_jax(op: Op, dtype, batch, rng):
    jax = _jax()
    with _precision(dtype, jax.config):
        args = op.make_args(rng, batch, dtype)
        got = _np_tree(op.f(*args))
        want = _np_tree(jax.jit(functools.partial(op.fn, jax))(*args))
        assert [np.shape(x) for x in tree_leaves(got)] == [np.shape(x) for x in tree_leaves(want)], op.name
        tu.assert_allclose(op.canon(got), op.canon(want), atol=_TOL[f64], rtol=_TOL[f64],
                           err_msg=f"{op.name} vs jax")


def _jax_grad_ops() -> list:
    # Every op, but only half of triangular_solve's flag combinations (transpose_a and unit_diagonal set
    # together; each XLA compilation costs a few hundred ms); all 16 are checked against finite differences.
    return [op for op in OPS if not op.name.startswith("lax.triangular_solve")
            or ("transpose_a" in op.name) == ("unit_diagonal" in op.name)]


@pytest.mark.parametrize("op,dtype,batch", _params("jax_grads", _jax_grad_ops(), (f64,), ((2,),)))
def test_derivatives_match_jax(op: Op, dtype, batch, rng):
    """JVP and VJP of the gauge-invariant view at one random point and direction, exact AD against exact AD."""
    jax = _jax()
    with _precision(dtype, jax.config):
        args = tuple(op.make_args(rng, batch, dtype))
        ts = tuple(rng.standard_normal(np.shape(a)).astype(dtype) for a in args)
        flx = functools.partial(op.diff_fn, fluxion)
        jx = functools.partial(op.diff_fn, jax)
        if op.grad_error is not None:
            with pytest.raises(op.grad_error):
                fluxion.jvp(flx, args, ts)
            with pytest.raises(op.grad_error):
                jax.jvp(jx, args, ts)
            return
        out, t_out = fluxion.jvp(flx, args, ts)
        cts = tree_map(lambda o: rng.standard_normal(np.shape(o)).astype(dtype), _np_tree(out))
        got = fluxion.vjp(flx, *args)[1](cts)

        @jax.jit
        def jax_derivatives(args, ts, cts):  # one XLA compilation for both
            return jax.jvp(jx, args, ts)[1], jax.vjp(jx, *args)[1](cts)

        want_t, want_ct = jax_derivatives(args, ts, cts)
        tol = _JAX_DERIV_TOL[f64]
        tu.assert_allclose(_np_tree(t_out), _np_tree(want_t), atol=tol, rtol=tol, err_msg=f"{op.name} jvp vs jax")
        tu.assert_allclose(_np_tree(tuple(got)), _np_tree(tuple(want_ct)), atol=tol, rtol=tol,
                           err_msg=f"{op.name} vjp vs jax")


# --------------------------------------------------------------------------------------------------------------
# Result types, argument semantics and misuse, against JAX
# --------------------------------------------------------------------------------------------------------------

# name -> (call(m, a) returning the result, its field names in JAX)
_RESULT_TYPES = {
    "slogdet": (lambda m, a: m.numpy.linalg.slogdet(a), ("sign", "logabsdet")),
    "eigh": (lambda m, a: m.numpy.linalg.eigh(a), ("eigenvalues", "eigenvectors")),
    "svd": (lambda m, a: m.numpy.linalg.svd(a), ("U", "S", "Vh")),
    "qr": (lambda m, a: m.numpy.linalg.qr(a), ("Q", "R")),
}


@pytest.mark.parametrize("name", list(_RESULT_TYPES))
def test_result_types_are_named_pytrees_like_jax(name, rng):
    call, fields = _RESULT_TYPES[name]
    a = _spd(rng, (), f32)
    jax = _jax()
    want = call(jax, a)
    assert tuple(want._fields) == fields  # (the table matches JAX)
    got = fluxion.jit(functools.partial(call, fluxion))(a)  # leaves jit, so it must be a pytree
    for field, w in zip(fields, want):
        tu.assert_allclose(_unsigned(getattr(got, field)), _unsigned(w), atol=1e-5, rtol=1e-5,
                           err_msg=f"{name}.{field}")


def _unsigned(x):
    """Absolute values: the factors of these decompositions are unique up to the signs of columns/rows."""
    return np.abs(np.asarray(x))


_SOLVE_OLD_BATCHED_VECTORS = (
    "core bug: jnp.linalg.solve(a, b) with a of shape (2, 3, 3) and b of shape (2, 3) solves 2 batched vector "
    "systems (JAX < 0.5 semantics); NumPy 2 and JAX >= 0.5 treat b as a (2, 3) matrix and raise ValueError "
    "(JAX's message suggests solve(a, b[..., None])[..., 0]); repro: jnp.linalg.solve(jnp.ones((2, 3, 3)), "
    "jnp.ones((2, 3))) returns shape (2, 3)")


@pytest.mark.xfail(reason=_SOLVE_OLD_BATCHED_VECTORS, strict=True)
def test_solve_rejects_b_with_one_dimension_less_than_batched_a_like_jax(rng):
    a, b = _general(rng, (2,), f32), _rhs(rng, (2,), f32, (N,))
    jax = _jax()
    with pytest.raises(ValueError):
        jax.numpy.linalg.solve(a, b)
    with pytest.raises(ValueError):
        fluxion.numpy.linalg.solve(a, b)


_A23 = np.ones((2, 3), f32)
_EYE3 = np.eye(3, dtype=f32)

# name -> (m -> the failing call, the exception class JAX raises)
_MISUSES = {
    "cholesky_non_square": (lambda m: m.lax.linalg.cholesky(_A23), TypeError),
    "eigh_non_square": (lambda m: m.numpy.linalg.eigh(_A23), TypeError),
    "triangular_solve_shape_mismatch": (
        lambda m: m.lax.linalg.triangular_solve(_EYE3, np.ones((4, 2), f32), left_side=True), ValueError),
    "triangular_solve_dtype_mismatch": (
        lambda m: m.lax.linalg.triangular_solve(_EYE3, np.ones((3, 2), np.float16), left_side=True), TypeError),
    "solve_shape_mismatch": (lambda m: m.numpy.linalg.solve(_EYE3, np.ones(4, f32)), ValueError),
    "solve_non_square": (lambda m: m.numpy.linalg.solve(_A23, np.ones(2, f32)), ValueError),
    "det_non_square": (lambda m: m.numpy.linalg.det(_A23), ValueError),
    "inv_non_square": (lambda m: m.numpy.linalg.inv(_A23), ValueError),
    "slogdet_non_square": (lambda m: m.numpy.linalg.slogdet(_A23), ValueError),
    "qr_of_a_vector": (lambda m: m.numpy.linalg.qr(np.ones(3, f32)), TypeError),
    "svd_of_a_vector": (lambda m: m.lax.linalg.svd(np.ones(3, f32)), TypeError),
    "qr_unknown_mode": (lambda m: m.numpy.linalg.qr(_EYE3, mode="economic"), ValueError),
}

# (mode, misuse name) -> reason
_MISUSE_FAILURES: dict[tuple, str] = {}


@pytest.mark.parametrize("name,mode", [
    pytest.param(n, mode, id=f"{n}-{mode}",
                 marks=[pytest.mark.xfail(reason=_MISUSE_FAILURES[(mode, n)], strict=True)]
                 if (mode, n) in _MISUSE_FAILURES else [])
    for n in _MISUSES for mode in ("eager", "jit")])
def test_misuse_raises_the_error_class_jax_raises(name, mode):
    call, expected = _MISUSES[name]
    jax = _jax()
    with pytest.raises(expected):  # (the table matches JAX)
        call(jax)
    with pytest.raises(expected):
        if mode == "eager":
            call(fluxion)
        else:
            fluxion.jit(lambda: call(fluxion))()


# --------------------------------------------------------------------------------------------------------------
# Singular, indefinite and NaN matrices: inf/NaN results as in JAX, never an exception (eager, jit, vmap)
# --------------------------------------------------------------------------------------------------------------

_SING = np.array([[1.0, 2.0], [2.0, 4.0]], f32)
_ZERO = np.zeros((2, 2), f32)
_NANM = np.array([[1.0, np.nan], [0.0, 1.0]], f32)
_INDEF = np.array([[1.0, 2.0], [2.0, 1.0]], f32)
_SING3 = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], f32)
_INF, _NAN = np.inf, np.nan

# name -> (m, a -> outputs (a tuple), the input matrix, JAX 0.10's outputs). The inf/NaN patterns of solve and
# inv are those of LAPACK's LU factorization with partial pivoting followed by substitution (what XLA runs).
_DEGENERATE = {
    "inv_singular": (lambda m, a: (m.numpy.linalg.inv(a),), _SING, ([[-_INF, _INF], [_INF, -_INF]],)),
    "inv_zero": (lambda m, a: (m.numpy.linalg.inv(a),), _ZERO, ([[_NAN, _NAN], [_NAN, _INF]],)),
    "inv_singular_3x3": (lambda m, a: (m.numpy.linalg.inv(a),), _SING3,
                         ([[_NAN, _NAN, _NAN], [_INF, -_INF, _INF], [-_INF, _INF, -_INF]],)),
    "inv_nan": (lambda m, a: (m.numpy.linalg.inv(a),), _NANM, ([[_NAN, _NAN], [_NAN, _NAN]],)),
    "solve_singular": (lambda m, a: (m.numpy.linalg.solve(a, np.ones(a.shape[-1], f32)),), _SING,
                       ([-_INF, _INF],)),
    "solve_singular_3x3": (lambda m, a: (m.numpy.linalg.solve(a, np.ones(a.shape[-1], f32)),), _SING3,
                           ([_NAN, -_INF, _INF],)),
    "triangular_solve_zero_diagonal": (
        lambda m, a: (m.lax.linalg.triangular_solve(a, np.ones((1, 2), f32), left_side=False, lower=True),),
        _ZERO, ([[_NAN, _INF]],)),
    "triangular_solve_nan": (
        lambda m, a: (m.lax.linalg.triangular_solve(a, np.ones((1, 2), f32), left_side=False, lower=True),),
        _NANM, ([[1.0, 1.0]],)),
    "det_slogdet_singular": (lambda m, a: (m.numpy.linalg.det(a), *m.numpy.linalg.slogdet(a)), _SING,
                             (0.0, 0.0, -_INF)),
    "det_slogdet_nan": (lambda m, a: (m.numpy.linalg.det(a), *m.numpy.linalg.slogdet(a)), _NANM,
                        (_NAN, _NAN, _NAN)),
    "cholesky_indefinite": (lambda m, a: (m.numpy.linalg.cholesky(a),), _INDEF, ([[_NAN, 0.0], [_NAN, _NAN]],)),
    "cholesky_singular_3x3": (lambda m, a: (m.numpy.linalg.cholesky(a),), _SING3,
                              ([[_NAN, 0, 0], [_NAN, _NAN, 0], [_NAN, _NAN, _NAN]],)),
    "cholesky_nan": (lambda m, a: (m.numpy.linalg.cholesky(a),), _NANM, ([[1.0, 0.0], [_NAN, _NAN]],)),
    "svd_nan": (lambda m, a: tuple(m.numpy.linalg.svd(a)), _NANM,
                ([[_NAN, _NAN], [_NAN, _NAN]], [_NAN, _NAN], [[_NAN, _NAN], [_NAN, _NAN]])),
    "svdvals_nan": (lambda m, a: (m.numpy.linalg.svd(a, compute_uv=False),), _NANM, ([_NAN, _NAN],)),
    "eigh_nan": (lambda m, a: tuple(m.numpy.linalg.eigh(a)), _NANM, ([_NAN, _NAN], [[_NAN, _NAN], [_NAN, _NAN]])),
    "pinv_nan": (lambda m, a: (m.numpy.linalg.pinv(a),), _NANM, ([[_NAN, _NAN], [_NAN, _NAN]],)),
    "lstsq_nan": (lambda m, a: m.numpy.linalg.lstsq(a, np.ones(2, f32)), _NANM,
                  ([_NAN, _NAN], [_NAN], np.int32(0), [_NAN, _NAN])),
    "lstsq_singular_residuals": (lambda m, a: m.numpy.linalg.lstsq(a, np.ones(2, f32))[1:3], _SING,
                                 ([0.2], np.int32(1))),
}


def _assert_degenerate(got, want, name):
    got = tree_leaves(got)
    assert len(got) == len(want), name
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64), rtol=1e-5, atol=1e-6,
                                   err_msg=name)


@pytest.mark.parametrize("name,mode", [(n, mode) for n in _DEGENERATE for mode in ("eager", "jit", "vmap")
                                       if not (mode == "vmap" and n.startswith("lstsq"))])  # (lstsq: one matrix)
def test_degenerate_matrices_give_jax_inf_nan_instead_of_raising(name, mode):
    call, a, want = _DEGENERATE[name]
    if mode == "eager":
        _assert_degenerate(call(fluxion, fluxion.numpy.asarray(a)), want, name)
    elif mode == "jit":
        _assert_degenerate(fluxion.jit(lambda x: call(fluxion, x))(a), want, name)
    else:
        # One bad matrix between two identities: the bad one gets the answer above, the others are unaffected.
        batch = np.stack([np.eye(a.shape[0], dtype=f32), a, np.eye(a.shape[0], dtype=f32)])
        out = fluxion.vmap(lambda x: call(fluxion, x))(batch)
        _assert_degenerate(tree_map(lambda o: o[1], out), want, name)
        eye_out = call(fluxion, fluxion.numpy.eye(a.shape[0], dtype=f32))
        for o, e in zip(tree_leaves(out), tree_leaves(eye_out)):
            np.testing.assert_allclose(np.abs(np.asarray(o)[0]), np.abs(np.asarray(e)), atol=1e-6, err_msg=name)


@pytest.mark.parametrize("name", list(_DEGENERATE))
def test_degenerate_table_is_what_jax_gives(name):
    jax = _jax()
    call, a, want = _DEGENERATE[name]
    _assert_degenerate(jax.tree_util.tree_leaves(jax.jit(lambda x: call(jax, x))(a)), want, name)


# --------------------------------------------------------------------------------------------------------------
# Complex Cholesky derivatives: dL = L Phi(L^-1 dA L^-H) with conjugate transposes (values from JAX 0.10)
# --------------------------------------------------------------------------------------------------------------

_HPD = np.array([[4, 1 + 1j], [1 - 1j, 3]], np.complex64)
_WEIGHTS = np.array([[1, 2], [3, 4]], np.complex64)
_TANGENT = np.array([[1 + 2j, 0.5 - 1j], [-1 + 0.5j, 2 - 1j]], np.complex64)

# name -> (m -> function of the Hermitian matrix, JAX's value)
_COMPLEX_CHOLESKY_DERIVATIVES = {
    "grad_holomorphic": (
        lambda m: m.grad(lambda a: m.numpy.sum(m.numpy.linalg.cholesky(a) * _WEIGHTS), holomorphic=True),
        [[0.22061385, 0.43377227 + 0.31622776j], [0.43377227 - 0.31622776j, 1.264911]]),
    "jvp": (lambda m: lambda a: m.jvp(m.numpy.linalg.cholesky, (a,), (_TANGENT,))[1],
            [[0.25, 0], [-0.1875 + 0.4375j, 0.83009785]]),
    "grad_of_real_loss": (
        lambda m: m.grad(lambda a: m.numpy.sum(m.numpy.abs(m.numpy.linalg.cholesky(a)) ** 2 * _WEIGHTS.real)),
        [[1.125, -0.25 + 0.25j], [-0.25 - 0.25j, 4.0]]),
}


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("name", list(_COMPLEX_CHOLESKY_DERIVATIVES))
def test_complex_cholesky_derivatives_match_jax(name, jit):
    build, want = _COMPLEX_CHOLESKY_DERIVATIVES[name]
    fn = build(fluxion)
    got = (fluxion.jit(fn) if jit else fn)(_HPD)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want, np.complex64), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", list(_COMPLEX_CHOLESKY_DERIVATIVES))
def test_complex_cholesky_derivative_table_is_what_jax_gives(name):
    jax = _jax()
    build, want = _COMPLEX_CHOLESKY_DERIVATIVES[name]
    np.testing.assert_allclose(np.asarray(build(jax)(_HPD)), np.asarray(want, np.complex64), rtol=1e-5, atol=1e-6)
