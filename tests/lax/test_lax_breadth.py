"""Breadth of `fluxion.lax` against JAX 0.10.2's `jax.lax`: every public name, and the functions added for it.

* Coverage: every public name of `jax.lax` exists in `fluxion.lax` or is listed in `MISSING_WITH_REASON`; every
  exported `*_p` primitive has JAX's primitive name.
* Special functions (one record each): values against SciPy (float64) and real JAX, eager against `jit`, `vmap`
  against a loop, derivatives against finite differences to second order (in the arguments JAX differentiates).
* The other new functions: values against real JAX on the same inputs (table-driven), plus jit/vmap/grad where
  they apply.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, Callable

import numpy as np
import pytest
import scipy.special as sps

import fluxion
import fluxion.lax as lax
import fluxion.numpy as jnp
from fluxion._src import test_util as tu

jax = pytest.importorskip("jax")
jlax = jax.lax

MISSING_WITH_REASON = {
    "ragged_all_to_all": "ragged collectives are not implemented",
    "ragged_all_to_all_p": "ragged collectives are not implemented",
    "scaled_dot": "block-scaled (microscaling) dot products are not implemented",
    "after_all": "tokens (XLA side-effect ordering) do not exist: fluxion runs effects in program order",
    "after_all_p": "tokens do not exist (see after_all)",
    "create_token": "tokens do not exist (see after_all)",
    "create_token_p": "tokens do not exist (see after_all)",
    "dce_sink": "an internal dead-code-elimination anchor of JAX's tracer; fluxion's jaxprs need none",
    "dce_sink_p": "see dce_sink",
    "device_put_p": "device placement is not a primitive in fluxion (one CPU device)",
    "sharding_constraint_p": "no sharding propagation: one device",
    "pbroadcast": "varying-manual-axes typing of shard_map is not implemented",
    "pcast": "varying-manual-axes typing of shard_map is not implemented",
    "psend": "point-to-point sends inside shard_map are not implemented",
    "precv": "point-to-point receives inside shard_map are not implemented",
    "pswapaxes": "not implemented (all_to_all covers the common case)",
    "stage": "an internal staging marker of JAX's pipeline parallelism",
    "stage_p": "see stage",
    "shape_as_value": "dynamic shapes do not exist in fluxion",
    "eq_to_p": "internal comparison-chain primitives of JAX's dynamic shapes",
    "le_to_p": "see eq_to_p",
    "lt_to_p": "see eq_to_p",
    "reduce_p": "lax.reduce is a composition of other primitives here (a pairwise tree or reduce_sum etc.)",
    "reduce_window_p": "lax.reduce_window binds reduce_window_sum/max/min; a general reducer is not supported",
    "scatter_sub_p": "lax.scatter_sub binds scatter-add of the negated updates",
    "select_and_gather_add_p": "internal to JAX's max-pool derivative; fluxion differentiates reduce_window_max "
                               "directly",
    "select_and_scatter_add_p": "see select_and_gather_add_p",
    "select_and_scatter_p": "see select_and_gather_add_p",
    "split_p": "lax.split is a composition of slices here",
    "stack_p": "lax.stack is a composition of expand_dims and concatenate here",
    "unstack_p": "lax.unstack is a composition of slices here",
    "tile_p": "lax.tile is a composition of broadcast_in_dim and reshape here",
    "approx_top_k_p": "approx_max_k/approx_min_k compute the exact top-k through top_k_p",
    "rng_uniform": "not implemented: XLA's stateful RNG has no defined stream",
    "rng_uniform_p": "see rng_uniform",
}


def test_every_public_name_exists_or_is_listed():
    names = [n for n in dir(jlax) if not n.startswith("_")]
    missing = [n for n in names if not hasattr(lax, n) and n not in MISSING_WITH_REASON]
    assert not missing, missing
    stale = [n for n in MISSING_WITH_REASON if hasattr(lax, n)]
    assert not stale, f"listed as missing but present: {stale}"


LINALG_MISSING_WITH_REASON = {
    name: "not implemented yet" for name in (
        "EigImplementation", "EighImplementation", "SvdAlgorithm", "cholesky_update", "cholesky_update_p", "eig",
        "eig_p", "hessenberg", "hessenberg_p", "householder_product", "householder_product_p", "lu", "lu_p",
        "lu_pivots_to_permutation", "lu_pivots_to_permutation_p", "ormqr", "ormqr_p", "qdwh", "schur", "schur_p",
        "symmetric_product", "symmetric_product_p", "tridiagonal", "tridiagonal_p")
}
LINALG_MISSING_WITH_REASON["tridiagonal_solve_p"] = "tridiagonal_solve is a composition of two scans here"


def test_every_linalg_name_exists_or_is_listed():
    names = [n for n in dir(jlax.linalg) if not n.startswith("_")]
    missing = [n for n in names if not hasattr(lax.linalg, n) and n not in LINALG_MISSING_WITH_REASON]
    assert not missing, missing
    assert not [n for n in LINALG_MISSING_WITH_REASON if hasattr(lax.linalg, n)]
    for n in dir(lax.linalg):
        if n.endswith("_p"):
            assert getattr(lax.linalg, n).name == getattr(jlax.linalg, n).name, n


def test_exported_primitives_have_jax_names():
    exported = [n for n in dir(lax) if n.endswith("_p") and hasattr(jlax, n)]
    assert len(exported) > 120
    for n in exported:
        assert getattr(lax, n).name == getattr(jlax, n).name, n


# --------------------------------------------------------------------------------------------------------------
# Special functions
# --------------------------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Special:
    name: str
    fn: Callable
    ref: Callable  # SciPy, float64
    jax_fn: Callable
    make: Callable  # rng -> list of float32 operands (shape (6,))
    grad_args: tuple = ()  # positions differentiated (to second order) with the others held fixed
    order: int = 2
    jax_rtol: float = 2e-4
    jax_grad_fn: Callable | None = None  # the JAX function whose gradient is compared (default: jax_fn)


def _pos(rng, lo=0.2, hi=6.0):
    return rng.uniform(lo, hi, 6).astype(np.float32)


def _dpda(a, x):  # reference dP/da by high-order differences of SciPy's P in float64
    h = 1e-5
    return (sps.gammainc(a + h, x) - sps.gammainc(a - h, x)) / (2 * h)


SPECIALS = [
    Special("igamma", lax.igamma, sps.gammainc, jlax.igamma, lambda r: [_pos(r), _pos(r)], grad_args=(1,)),
    Special("igammac", lax.igammac, sps.gammaincc, jlax.igammac, lambda r: [_pos(r), _pos(r)], grad_args=(1,)),
    Special("igamma_grad_a", lax.igamma_grad_a, _dpda, jlax.igamma_grad_a, lambda r: [_pos(r), _pos(r)],
            order=0, jax_rtol=1e-3),
    Special("random_gamma_grad", lax.random_gamma_grad,
            lambda a, x: -_dpda(a, x) / np.exp((a - 1) * np.log(x) - x - sps.gammaln(a)),
            jlax.random_gamma_grad, lambda r: [_pos(r), _pos(r)], order=0, jax_rtol=1e-3),
    Special("betainc", lax.betainc, sps.betainc, jlax.betainc,
            lambda r: [_pos(r, 0.5, 4), _pos(r, 0.5, 4), _pos(r, 0.05, 0.95)], grad_args=(2,)),
    Special("bessel_i0e", lax.bessel_i0e, sps.i0e, jlax.bessel_i0e,
            lambda r: [r.uniform(-8, 8, 6).astype(np.float32)], grad_args=(0,)),
    Special("bessel_i1e", lax.bessel_i1e, sps.i1e, jlax.bessel_i1e,
            lambda r: [r.uniform(-8, 8, 6).astype(np.float32)], grad_args=(0,)),
    # jax.lax.zeta has no derivative; jax.scipy.special.zeta differentiates in q as fluxion's lax.zeta does.
    Special("zeta", lax.zeta, sps.zeta, jlax.zeta, lambda r: [_pos(r, 1.5, 6), _pos(r, 0.5, 4)], grad_args=(1,),
            jax_grad_fn=jax.scipy.special.zeta),
]


def _ids(records):
    return [r.name for r in records]


@pytest.mark.parametrize("rec", SPECIALS, ids=_ids(SPECIALS))
def test_special_values_against_scipy_and_jax(rec):
    args = rec.make(np.random.default_rng(0))
    out = np.asarray(rec.fn(*args))
    assert out.dtype == np.float32
    expected = rec.ref(*[a.astype(np.float64) for a in args])
    np.testing.assert_allclose(out, expected, rtol=2e-6 if rec.order else 1e-5, atol=1e-7)
    np.testing.assert_allclose(out, np.asarray(rec.jax_fn(*args)), rtol=rec.jax_rtol, atol=1e-6)


@pytest.mark.parametrize("rec", SPECIALS, ids=_ids(SPECIALS))
def test_special_jit_vmap_and_scalars(rec):
    args = rec.make(np.random.default_rng(1))
    tu.check_jit(rec.fn, args)
    tu.check_batching(rec.fn, args)
    if len(args) > 1:  # a scalar operand broadcasts (vmap over the array operand only)
        scalar_first = [np.float32(args[0][0])] + args[1:]
        tu.check_batching(rec.fn, scalar_first, in_axes=[None] + [0] * (len(args) - 1))
    float64 = np.asarray(rec.fn(*[a.astype(np.float16) for a in args]))
    assert float64.dtype == np.float16


@pytest.mark.parametrize("rec", [r for r in SPECIALS if r.grad_args], ids=_ids([r for r in SPECIALS if r.grad_args]))
def test_special_derivatives(rec):
    args = rec.make(np.random.default_rng(2))
    for i in rec.grad_args:
        def f(v, i=i):
            return rec.fn(*[v if j == i else args[j] for j in range(len(args))])
        tu.check_grads(f, [args[i].astype(np.float32)], order=rec.order, atol=5e-2, rtol=5e-2)
        g = fluxion.grad(lambda v, f=f: jnp.sum(f(v)))(args[i])
        jfn = rec.jax_grad_fn or rec.jax_fn
        jg = jax.grad(lambda v, i=i: jax.numpy.sum(jfn(*[v if j == i else args[j]
                                                         for j in range(len(args))])))(args[i])
        np.testing.assert_allclose(np.asarray(g), np.asarray(jg), rtol=1e-3, atol=1e-5)


def test_igamma_derivative_in_a_matches_jax():
    a, x = np.float32([0.5, 1.3, 4.0]), np.float32([0.7, 2.0, 3.0])
    g = fluxion.grad(lambda a: jnp.sum(lax.igamma(a, x)))(a)
    jg = jax.grad(lambda a: jax.numpy.sum(jlax.igamma(a, x)))(a)
    np.testing.assert_allclose(np.asarray(g), np.asarray(jg), rtol=1e-4)
    gc = fluxion.grad(lambda a: jnp.sum(lax.igammac(a, x)))(a)
    np.testing.assert_allclose(np.asarray(gc), -np.asarray(jg), rtol=1e-4)


@pytest.mark.parametrize("fn, arg, msg", [
    (lambda a: lax.betainc(a, 2.0, 0.3), 1.5, "betainc gradient with respect to a"),
    (lambda x: lax.zeta(x, 2.0), 3.0, "zeta gradient with respect to x"),
])
def test_unsupported_derivatives_raise(fn, arg, msg):
    with pytest.raises(ValueError, match=msg):
        fluxion.grad(fn)(np.float32(arg))


def test_special_rejects_integers_and_mixed_dtypes():
    with pytest.raises(TypeError):
        lax.igamma(np.int32(1), np.int32(2))
    with pytest.raises(TypeError):
        lax.zeta(np.float32([2]), np.float16([1]))


def test_bessel_i1e_derivative_at_zero():
    assert float(fluxion.grad(lax.bessel_i1e)(np.float32(0))) == pytest.approx(0.5)


# --------------------------------------------------------------------------------------------------------------
# reduce_precision, mulhi, optimization_barrier
# --------------------------------------------------------------------------------------------------------------

def _precision_inputs(dt):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(2000) * 10.0 ** rng.integers(-40, 38, 2000)
    x = np.concatenate([x, [np.nan, np.inf, -np.inf, 0.0, -0.0, 65504.0, 65520.0, 1e-8, 3.0e38]])
    with np.errstate(over="ignore"):
        return x.astype(dt)


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("bits", [(8, 7), (5, 10), (4, 3), (3, 0), (2, 1), (8, 23), (11, 52)])
def test_reduce_precision_bit_exact_with_jax(dt, bits):
    with contextlib.ExitStack() as stack:
        if dt == np.float64:  # both libraries need 64-bit mode to keep float64
            stack.enter_context(tu.enable_x64())
            stack.enter_context(jax.enable_x64(True))
        x = _precision_inputs(dt)
        finfo = np.finfo(dt)
        bits = (min(bits[0], finfo.iexp), min(bits[1], finfo.nmant))
        ours = np.asarray(lax.reduce_precision(x, *bits))
        theirs = np.asarray(jlax.reduce_precision(x, *bits))
    assert ours.dtype == dt
    np.testing.assert_array_equal(ours.view(f"u{ours.itemsize}"), theirs.view(f"u{theirs.itemsize}"))


def test_reduce_precision_transformations():
    x = np.float32([1.2345678, -3.3e-3, 7.77])
    f = lambda v: lax.reduce_precision(v, 5, 10)  # noqa: E731
    tu.check_jit(f, [x])
    tu.check_batching(f, [np.stack([x, 2 * x])])
    g = fluxion.grad(lambda v: jnp.sum(f(v) * v))(x)
    jg = jax.grad(lambda v: jax.numpy.sum(jlax.reduce_precision(v, 5, 10) * v))(x)
    np.testing.assert_array_equal(np.asarray(g), np.asarray(jg))
    with pytest.raises(TypeError, match="floating"):
        lax.reduce_precision(np.int32(3), 5, 10)


@pytest.mark.parametrize("dt", [np.uint32, np.int32, np.uint8, np.int16, np.uint16, np.int8])
def test_mulhi_matches_jax(dt):
    info = np.iinfo(dt)
    rng = np.random.default_rng(4)
    x = rng.integers(info.min, info.max, 300, dtype=dt, endpoint=True)
    y = rng.integers(info.min, info.max, 300, dtype=dt, endpoint=True)
    np.testing.assert_array_equal(np.asarray(lax.mulhi(x, y)), np.asarray(jlax.mulhi(x, y)))
    tu.check_jit(lax.mulhi, [x, y])
    tu.check_batching(lax.mulhi, [x.reshape(30, 10), y.reshape(30, 10)])


def test_mulhi_64_bit():
    x = np.array([2**63 + 5, 2**64 - 1, 3], np.uint64)
    y = np.array([7, 2**64 - 1, 2**40], np.uint64)
    expected = np.array([(int(a) * int(b)) >> 64 for a, b in zip(x, y)], np.uint64)
    with tu.enable_x64():
        np.testing.assert_array_equal(np.asarray(lax.mulhi(x, y)), expected)
        xs, ys = x.view(np.int64), np.array([-7, 3, -(2**62)], np.int64)
        signed = np.array([(int(a) * int(b)) >> 64 for a, b in zip(xs, ys)], np.int64)
        np.testing.assert_array_equal(np.asarray(lax.mulhi(xs, ys)), signed)


def test_optimization_barrier():
    tree = {"a": np.float32([1, 2]), "b": (np.int32(3),)}
    out = lax.optimization_barrier(tree)
    assert fluxion.tree_util.tree_structure(out) == fluxion.tree_util.tree_structure(tree)
    np.testing.assert_array_equal(np.asarray(out["a"]), tree["a"])
    jaxpr = fluxion.make_jaxpr(lambda x: lax.optimization_barrier((x, 2 * x)))(np.float32(1))
    assert "optimization_barrier" in str(jaxpr)
    f = lambda x: jnp.sum(lax.optimization_barrier(jnp.sin(x)) ** 2)  # noqa: E731
    x = np.float32([0.3, 1.1])
    tu.check_grads(f, [x], order=2)
    tu.check_jit(f, [x])
    tu.check_batching(lambda x: lax.optimization_barrier(x * 2), [np.ones((3, 2), np.float32)])


# --------------------------------------------------------------------------------------------------------------
# General reduce
# --------------------------------------------------------------------------------------------------------------

def _argmax_pair(a, b):
    (va, ia), (vb, ib) = a, b
    take_b = (vb > va) | ((vb == va) & (ib < ia))
    return (jnp.where(take_b, vb, va), jnp.where(take_b, ib, ia))


def _jargmax_pair(a, b):
    (va, ia), (vb, ib) = a, b
    take_b = (vb > va) | ((vb == va) & (ib < ia))
    return (jax.numpy.where(take_b, vb, va), jax.numpy.where(take_b, ib, ia))


X = np.random.default_rng(5).standard_normal((3, 5, 4)).astype(np.float32)
IDX = np.broadcast_to(np.arange(5, dtype=np.int32)[None, :, None], X.shape).copy()

REDUCES = [
    ("add", X, 0.0, lax.add, jlax.add, (1,)),
    ("add_nonidentity_init", X, 2.5, lax.add, jlax.add, (0, 2)),
    ("max", X, -np.inf, lax.max, jlax.max, (1, 2)),
    ("mul", X, 1.0, lax.mul, jlax.mul, (0,)),
    ("and", X > 0, True, lax.bitwise_and, jlax.bitwise_and, (2,)),
    ("logaddexp", X, -np.inf, jnp.logaddexp, jax.numpy.logaddexp, (1,)),
    ("logaddexp_all", X, -np.inf, jnp.logaddexp, jax.numpy.logaddexp, (0, 1, 2)),
    ("hypot", X, 0.0, jnp.hypot, jax.numpy.hypot, (0, 1)),
]


@pytest.mark.parametrize("name, x, init, comp, jcomp, dims", REDUCES, ids=[r[0] for r in REDUCES])
def test_reduce_matches_jax(name, x, init, comp, jcomp, dims):
    init = np.asarray(init, x.dtype)
    out = lax.reduce(x, init, comp, dims)
    np.testing.assert_allclose(np.asarray(out), np.asarray(jlax.reduce(x, init, jcomp, dims)), rtol=2e-6, atol=1e-6)
    tu.check_jit(lambda v: lax.reduce(v, init, comp, dims), [x])
    if x.dtype == np.float32:
        tu.check_batching(lambda v: lax.reduce(v, init, comp, [d for d in dims]), [np.stack([x, x[::-1]])])
        if name in ("add", "logaddexp", "hypot", "max"):
            tu.check_grads(lambda v: lax.reduce(v, init, comp, dims), [x], order=2 if name != "max" else 1,
                           atol=5e-2, rtol=5e-2)


def test_reduce_several_operands_argmax():
    out = lax.reduce((X, IDX), (np.float32(-np.inf), np.int32(0)), _argmax_pair, (1,))
    jout = jlax.reduce((X, IDX), (np.float32(-np.inf), np.int32(0)), _jargmax_pair, (1,))
    for a, b in zip(out, jout):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    np.testing.assert_array_equal(np.asarray(out[1]), np.argmax(X, axis=1))
    vm = fluxion.vmap(lambda x, i: lax.reduce((x, i), (np.float32(-np.inf), np.int32(0)), _argmax_pair, (0,)))(X, IDX)
    np.testing.assert_array_equal(np.asarray(vm[1]), np.argmax(X, axis=1))


def test_reduce_errors():
    with pytest.raises(ValueError, match="structure"):
        lax.reduce((X, X), 0.0, lax.add, (0,))
    with pytest.raises(TypeError, match="same shape"):
        lax.reduce((X, X[0]), (0.0, 0.0), lambda a, b: a, (0,))
    with pytest.raises(ValueError, match="repeated"):
        lax.reduce(X, np.float32(0), lax.add, (0, 0))


# --------------------------------------------------------------------------------------------------------------
# Wrappers built from existing primitives: values against JAX
# --------------------------------------------------------------------------------------------------------------

A = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
V = np.arange(5, dtype=np.float32)
BM_L = np.random.default_rng(6).standard_normal((3, 2, 4)).astype(np.float32)
BM_R = np.random.default_rng(7).standard_normal((3, 4, 5)).astype(np.float32)

# name -> (call(lax_module, numpy_module)), evaluated with fluxion (lax, jnp) and JAX (jax.lax, jax.numpy).
WRAPPERS: dict[str, Callable[[Any, Any], Any]] = {
    "dynamic_slice_in_dim": lambda L, N: L.dynamic_slice_in_dim(A, 1, 2, axis=2),
    "dynamic_slice_in_dim_negative": lambda L, N: L.dynamic_slice_in_dim(V, -2, 2),
    "dynamic_slice_in_dim_clamped": lambda L, N: L.dynamic_slice_in_dim(V, 4, 3),
    "dynamic_index_in_dim": lambda L, N: L.dynamic_index_in_dim(A, 2, axis=1),
    "dynamic_index_in_dim_squeezed": lambda L, N: L.dynamic_index_in_dim(A, -1, axis=1, keepdims=False),
    "dynamic_update_slice_in_dim": lambda L, N: L.dynamic_update_slice_in_dim(A, -A[:, :2], 1, axis=1),
    "dynamic_update_slice_in_dim_negative": lambda L, N: L.dynamic_update_slice_in_dim(V, V[:2] + 10, -2, 0),
    "dynamic_update_index_in_dim": lambda L, N: L.dynamic_update_index_in_dim(A, A[:, 0] * 0, 2, 1),
    "dynamic_update_index_in_dim_keepdims": lambda L, N: L.dynamic_update_index_in_dim(A, A[:1] + 1, 1, 0),
    "index_take": lambda L, N: L.index_take(A, (np.array([0, 1, 1]), np.array([2, 0, 1])), (0, 2)),
    "index_take_one_axis": lambda L, N: L.index_take(A, (np.array([2, 0]),), (1,)),
    "collapse": lambda L, N: L.collapse(A, 1),
    "collapse_range": lambda L, N: L.collapse(A, 0, 2),
    "collapse_negative_stop": lambda L, N: L.collapse(A, 0, -1),
    "broadcast_to_rank": lambda L, N: L.broadcast_to_rank(V, 3),
    "broadcast_like": lambda L, N: L.broadcast_like(V[:4], A),
    "full_like": lambda L, N: L.full_like(A, 7),
    "full_like_dtype_shape": lambda L, N: L.full_like(A, 2, np.int32, (3,)),
    "batch_matmul": lambda L, N: L.batch_matmul(BM_L, BM_R),
    "reciprocal": lambda L, N: L.reciprocal(V + 1),
    "split": lambda L, N: L.split(A, (1, 3), axis=2),
    "tile": lambda L, N: L.tile(A, (1, 2, 3)),
    "stack": lambda L, N: L.stack([V, 2 * V, 3 * V], axis=1),
    "unstack": lambda L, N: L.unstack(A, axis=1),
    "empty": lambda L, N: L.empty((2, 3), np.float32),
    "approx_max_k": lambda L, N: L.approx_max_k(np.float32([3, 1, 4, 1, 5, 9, 2, 6]), 3),
    "approx_min_k": lambda L, N: L.approx_min_k(A, 2, reduction_dimension=1),
    "platform_dependent": lambda L, N: L.platform_dependent(V, cpu=lambda x: x + 1, default=lambda x: x),
    "composite": lambda L, N: L.composite(lambda x: N.sin(x) * 2, "my.op")(V),
}


@pytest.mark.parametrize("name", sorted(WRAPPERS))
def test_wrapper_matches_jax(name):
    call = WRAPPERS[name]
    ours, theirs = call(lax, jnp), call(jlax, jax.numpy)
    ol, tl = fluxion.tree_util.tree_leaves(ours), jax.tree.leaves(theirs)
    assert len(ol) == len(tl)
    for o, t in zip(ol, tl):
        o, t = np.asarray(o), np.asarray(t)
        assert o.shape == t.shape and o.dtype == t.dtype, (o.shape, o.dtype, t.shape, t.dtype)
        np.testing.assert_allclose(o, t, rtol=1e-6)


@pytest.mark.parametrize("fn, args", [
    (lambda x, i: lax.dynamic_slice_in_dim(x, i, 2), [V, np.int32(-1)]),
    (lambda x, i: lax.dynamic_index_in_dim(x, i, keepdims=False), [V, np.int32(3)]),
    (lambda x, u, i: lax.dynamic_update_slice_in_dim(x, u, i, 0), [V, V[:2] * 3, np.int32(-3)]),
    (lambda x, u, i: lax.dynamic_update_index_in_dim(x, u, i, 0), [V, np.float32(9), np.int32(1)]),
    (lambda x: lax.tile(x, (3,)), [V]),
    (lambda x: lax.split(x, (2, 3)), [V]),
    (lambda x: lax.collapse(x, 0), [A]),
], ids=["slice", "index", "update_slice", "update_index", "tile", "split", "collapse"])
def test_wrappers_compose_with_jit_vmap_grad(fn, args):
    tu.check_jit(fn, args)
    tu.check_batching(fn, [np.stack([a, a]) for a in args])
    float_args = [i for i, a in enumerate(args) if np.asarray(a).dtype == np.float32]

    def f(*fargs):
        full = list(args)
        for i, v in zip(float_args, fargs):
            full[i] = v
        return fn(*full)

    tu.check_grads(f, [args[i] for i in float_args], order=2)


def test_traced_negative_index_wraps_as_in_jax():
    f = fluxion.jit(lambda i: lax.dynamic_slice_in_dim(V, i, 2))
    np.testing.assert_array_equal(np.asarray(f(np.int32(-2))), np.asarray(jlax.dynamic_slice_in_dim(V, -2, 2)))


@pytest.mark.parametrize("fn, match", [
    (lambda: lax.split(V, (2, 2)), "sum to"),
    (lambda: lax.tile(V, (2, 2)), "one per dimension"),
    (lambda: lax.stack([]), "at least one"),
    (lambda: lax.batch_matmul(BM_L, BM_R[0]), "same rank"),
    (lambda: lax.index_take(A, (np.array([0]),), (0, 1)), "index arrays"),
    (lambda: lax.broadcast_like(A, V), "cannot broadcast"),
    (lambda: lax.platform_dependent(V, tpu=lambda x: x), "no function"),
    (lambda: lax.dynamic_slice_in_dim(V, -2, 2, allow_negative_indices=False), "out of bounds"),
], ids=["split", "tile", "stack", "batch_matmul", "index_take", "broadcast_like", "platform_dependent",
        "negative_index_not_allowed"])
def test_wrapper_errors(fn, match):
    with pytest.raises((ValueError, TypeError, NotImplementedError), match=match):
        fn()


def test_dtype_and_broadcast_shapes_match_jax():
    for x in (1.0, 1, True, np.float64(2), np.int64(3), np.zeros(2, np.float16), "float32", np.int8, 1j):
        assert lax.dtype(x) == jlax.dtype(x), x
    for shapes in [((2, 1), (3,)), ((), (4, 1, 2)), ((5, 1), (1, 6), (5, 6))]:
        assert lax.broadcast_shapes(*shapes) == jlax.broadcast_shapes(*shapes)
    with pytest.raises(ValueError):
        lax.broadcast_shapes((2,), (3,))


SHAPE_TUPLES = [
    ("conv_shape_tuple", ((2, 3, 10, 9), (4, 3, 3, 2), (1, 2), ((1, 1), (0, 1)))),
    ("conv_shape_tuple", ((4, 3, 10, 9), (4, 3, 3, 2), (2, 2), "SAME", 2)),
    ("conv_general_shape_tuple", ((2, 10, 9, 3), (3, 2, 3, 4), (1, 2), "VALID", ("NHWC", "HWIO", "NHWC"))),
    ("conv_transpose_shape_tuple", ((2, 10, 9, 3), (3, 2, 3, 4), (2, 2), "SAME", ("NHWC", "HWIO", "NHWC"))),
    ("conv_transpose_shape_tuple", ((2, 3, 7, 7), (4, 3, 3, 3), (2, 1), ((1, 1), (2, 0)), ("NCHW", "OIHW", "NCHW"))),
    ("reduce_window_shape_tuple", ((8, 9), (2, 3), (2, 1), ((0, 1), (1, 1)))),
    ("reduce_window_shape_tuple", ((8, 9), (2, 3), (2, 1), ((0, 1), (1, 1)), (2, 1), (1, 2))),
]


@pytest.mark.parametrize("name, args", SHAPE_TUPLES, ids=[f"{n}{i}" for i, (n, _) in enumerate(SHAPE_TUPLES)])
def test_shape_tuples_match_jax(name, args):
    ours = getattr(lax, name)(*args)
    theirs = getattr(jlax, name)(*args)
    assert tuple(int(d) for d in ours) == tuple(int(d) for d in theirs)


def test_option_enums():
    assert lax.Precision("float32") is lax.Precision.HIGHEST
    assert lax.Precision("bfloat16") is lax.Precision.DEFAULT
    assert lax.Precision("tensorfloat32") is lax.Precision.HIGH
    for ours, theirs in [(lax.Precision, jlax.Precision), (lax.RoundingMethod, jlax.RoundingMethod),
                         (lax.DotAlgorithmPreset, jlax.DotAlgorithmPreset), (lax.AccuracyMode, jlax.AccuracyMode),
                         (lax.RandomAlgorithm, jlax.RandomAlgorithm)]:
        assert [m.name for m in ours] == [m.name for m in theirs]
    assert [m.value for m in lax.RoundingMethod] == [m.value for m in jlax.RoundingMethod]
    assert str(lax.Precision.HIGH) == str(jlax.Precision.HIGH) and repr(lax.Precision.HIGH) == repr(
        jlax.Precision.HIGH)
    assert lax.Tolerance()._fields == ("atol", "rtol", "ulps")
    assert lax.DotAlgorithm(np.float32, np.float32, np.float32).lhs_component_count == 1
    x = np.float32([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(np.asarray(lax.dot(x, x, precision=lax.Precision.HIGHEST)), x @ x)
    half = np.float32([0.5, 1.5, 2.5, -0.5])
    np.testing.assert_array_equal(np.asarray(lax.round(half, lax.RoundingMethod.TO_NEAREST_EVEN)),
                                  np.asarray(jlax.round(half, jlax.RoundingMethod.TO_NEAREST_EVEN)))


# --------------------------------------------------------------------------------------------------------------
# conv_general_dilated_patches, linalg.tridiagonal_solve
# --------------------------------------------------------------------------------------------------------------

PATCH_X = np.random.default_rng(8).standard_normal((2, 3, 7, 6)).astype(np.float32)

PATCHES = [
    ("nchw_same", PATCH_X, dict(filter_shape=(2, 3), window_strides=(1, 2), padding="SAME")),
    ("nhwc_valid_dilated", np.moveaxis(PATCH_X, 1, -1),
     dict(filter_shape=(3, 2), window_strides=(1, 1), padding="VALID", rhs_dilation=(2, 1),
          dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    ("explicit_padding_lhs_dilation", PATCH_X,
     dict(filter_shape=(2, 2), window_strides=(2, 1), padding=((1, 0), (0, 1)), lhs_dilation=(1, 2))),
]


@pytest.mark.parametrize("name, x, kw", PATCHES, ids=[p[0] for p in PATCHES])
def test_conv_general_dilated_patches_matches_jax(name, x, kw):
    ours = np.asarray(lax.conv_general_dilated_patches(x, **kw))
    theirs = np.asarray(jlax.conv_general_dilated_patches(x, **kw))
    assert ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)
    f = lambda v: lax.conv_general_dilated_patches(v, **kw)  # noqa: E731
    tu.check_jit(f, [x])
    tu.check_batching(f, [np.stack([x, -x])])
    g = fluxion.grad(lambda v: jnp.sum(jnp.sin(f(v))))(x)
    jg = jax.grad(lambda v: jax.numpy.sum(jax.numpy.sin(jlax.conv_general_dilated_patches(v, **kw))))(x)
    np.testing.assert_allclose(np.asarray(g), np.asarray(jg), rtol=1e-5, atol=1e-5)


def _tridiagonal(rng, batch, m, n, dtype=np.float32):
    dl = rng.standard_normal(batch + (m,)).astype(dtype)
    du = rng.standard_normal(batch + (m,)).astype(dtype)
    d = (4 + rng.random(batch + (m,))).astype(dtype)  # diagonally dominant: no pivoting needed
    b = rng.standard_normal(batch + (m, n)).astype(dtype)
    return [dl, d, du, b]


def _dense(dl, d, du):
    return np.diag(d) + np.diag(dl[1:], -1) + np.diag(du[:-1], 1)


@pytest.mark.parametrize("batch, m, n", [((), 1, 1), ((), 5, 3), ((2,), 6, 1), ((2, 3), 4, 2)])
def test_tridiagonal_solve(batch, m, n):
    args = _tridiagonal(np.random.default_rng(9), batch, m, n)
    x = np.asarray(lax.linalg.tridiagonal_solve(*args))
    np.testing.assert_allclose(x, np.asarray(jlax.linalg.tridiagonal_solve(*args)), rtol=1e-5, atol=1e-6)
    flat = [a.reshape((-1,) + a.shape[len(batch):]) for a in args]
    for i in range(flat[0].shape[0]):
        dense = _dense(flat[0][i], flat[1][i], flat[2][i]).astype(np.float64)
        np.testing.assert_allclose(x.reshape(flat[3].shape)[i], np.linalg.solve(dense, flat[3][i]), rtol=1e-4,
                                   atol=1e-5)
    tu.check_jit(lax.linalg.tridiagonal_solve, args)


def test_tridiagonal_solve_ignores_corner_entries_and_transforms():
    dl, d, du, b = _tridiagonal(np.random.default_rng(10), (), 5, 2)
    dl2, du2 = dl.copy(), du.copy()
    dl2[0], du2[-1] = 123.0, -77.0
    np.testing.assert_array_equal(np.asarray(lax.linalg.tridiagonal_solve(dl2, d, du2, b)),
                                  np.asarray(lax.linalg.tridiagonal_solve(dl, d, du, b)))
    tu.check_grads(lax.linalg.tridiagonal_solve, [dl, d, du, b], order=2, atol=5e-2, rtol=5e-2)
    batched = _tridiagonal(np.random.default_rng(11), (3,), 5, 2)
    tu.check_batching(lax.linalg.tridiagonal_solve, batched)
    tu.check_batching(lax.linalg.tridiagonal_solve, [dl, d, du, batched[3]], in_axes=(None, None, None, 0))
    g = fluxion.grad(lambda d: jnp.sum(lax.linalg.tridiagonal_solve(dl, d, du, b) ** 2))(d)
    jg = jax.grad(lambda d: jax.numpy.sum(jlax.linalg.tridiagonal_solve(dl, d, du, b) ** 2))(d)
    np.testing.assert_allclose(np.asarray(g), np.asarray(jg), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("args, err", [
    (lambda: [np.ones(3, np.float32), np.ones(4, np.float32), np.ones(3, np.float32), np.ones((3, 1), np.float32)],
     ValueError),
    (lambda: [np.ones(3, np.float32)] * 3 + [np.ones((4, 1), np.float32)], ValueError),
    (lambda: [np.ones(3, np.int32)] * 3 + [np.ones((3, 1), np.int32)], TypeError),
], ids=["diagonals", "rhs", "dtype"])
def test_tridiagonal_solve_errors(args, err):
    with pytest.raises(err):
        lax.linalg.tridiagonal_solve(*args())


LOCAL = [
    ("nchw", (2, 3, 6, 5), (2, 2), (1, 1), "VALID", None),
    ("nhwc_same_strided", (2, 6, 5, 3), (3, 2), (2, 1), "SAME", ("NHWC", "HWIO", "NHWC")),
]


@pytest.mark.parametrize("name, lhs_shape, filt, strides, padding, dn", LOCAL, ids=[c[0] for c in LOCAL])
def test_conv_general_dilated_local_matches_jax(name, lhs_shape, filt, strides, padding, dn):
    rng = np.random.default_rng(12)
    x = rng.standard_normal(lhs_shape).astype(np.float32)
    patches = np.asarray(jlax.conv_general_dilated_patches(x, filt, strides, padding, dimension_numbers=dn))
    spec = dn or ("NCHW", "OIHW", "NCHW")
    out_sp = [patches.shape[spec[2].index(c)] for c in spec[2] if c not in "NC"]
    sizes = {"O": 4, "I": patches.shape[spec[2].index("C")]}
    sp = iter(out_sp)
    rhs_shape = tuple(sizes[c] if c in sizes else next(sp) for c in spec[1])
    w = rng.standard_normal(rhs_shape).astype(np.float32)
    f = lambda x, w: lax.conv_general_dilated_local(x, w, strides, padding, filt, dimension_numbers=dn)  # noqa: E731
    ours = np.asarray(f(x, w))
    theirs = np.asarray(jlax.conv_general_dilated_local(x, w, strides, padding, filt, dimension_numbers=dn))
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)
    tu.check_jit(f, [x, w])
    tu.check_grads(f, [x, w], order=1, atol=5e-2, rtol=5e-2)


# --------------------------------------------------------------------------------------------------------------
# custom_root
# --------------------------------------------------------------------------------------------------------------

def _newton(grad):
    def solve(f, x0):
        x = x0
        for _ in range(25):
            x = x - f(x) / grad(f)(x)
        return x
    return solve


def _sqrt_root(lib_lax, grad, a):
    return lib_lax.custom_root(lambda x: x ** 2 - a, 1.0, _newton(grad), lambda g, y: y / g(1.0))


def test_custom_root_scalar_matches_jax():
    a = np.float32(2.0)
    ours = lambda a: _sqrt_root(lax, fluxion.grad, a)  # noqa: E731
    theirs = lambda a: _sqrt_root(jlax, jax.grad, a)  # noqa: E731
    np.testing.assert_allclose(np.asarray(ours(a)), np.sqrt(2), rtol=1e-6)
    for d in (0, 1, 2):
        f, jf = ours, theirs
        for _ in range(d):
            f, jf = fluxion.grad(f), jax.grad(jf)
        np.testing.assert_allclose(np.asarray(f(a)), np.asarray(jf(a)), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(fluxion.jit(fluxion.grad(ours))(a)), 0.5 / np.sqrt(2), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(fluxion.vmap(ours)(np.float32([1, 4, 9]))), [1, 2, 3], rtol=1e-6)
    tu.check_grads(ours, [a], order=2, atol=1e-2, rtol=1e-2)


def _vector_root(L, N, solve_fn, jac, params):
    """x with A x + 0.1 x^3 = b (A, b from params), by a fixed number of Newton steps."""
    A, b = params

    def f(x):
        return A @ x + 0.1 * x ** 3 - b

    def solve(f, x0):
        x = x0
        for _ in range(20):
            x = x - solve_fn(jac(f)(x), f(x))
        return x

    def tangent_solve(g, y):
        return solve_fn(jac(g)(y), y)

    return L.custom_root(f, N.zeros_like(b), solve, tangent_solve)


def test_custom_root_vector_gradients_match_jax():
    rng = np.random.default_rng(13)
    A = (np.eye(3) * 3 + 0.3 * rng.standard_normal((3, 3))).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    ours = lambda A, b: jnp.sum(jnp.sin(_vector_root(lax, jnp, jnp.linalg.solve, fluxion.jacfwd, (A, b))))  # noqa: E731
    theirs = lambda A, b: jax.numpy.sum(jax.numpy.sin(  # noqa: E731
        _vector_root(jlax, jax.numpy, jax.numpy.linalg.solve, jax.jacfwd, (A, b))))
    np.testing.assert_allclose(np.asarray(ours(A, b)), np.asarray(theirs(A, b)), rtol=1e-5)
    g = fluxion.grad(ours, argnums=(0, 1))(A, b)
    jg = jax.grad(theirs, argnums=(0, 1))(A, b)
    for x, y in zip(g, jg):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-4, atol=1e-5)


def test_custom_root_has_aux_and_structure_error():
    def solve(f, x0):
        return x0 - f(x0) / 2.0, "aux-data"
    x, aux = lax.custom_root(lambda x: 2.0 * x - 4.0, np.float32(0), solve, lambda g, y: y / g(1.0), has_aux=True)
    assert aux == "aux-data" and float(x) == 2.0
    with pytest.raises(TypeError, match="structure"):
        lax.custom_root(lambda x: (x, x), np.float32(0), solve, lambda g, y: y)
