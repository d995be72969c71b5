"""Tests of `gather` and the `scatter` family (fluxion/_src/lax/indexing.py).

Oracles: a direct Python-loop transcription of XLA's Gather/Scatter semantics (one window at a time), finite
differences for derivatives (`test_util.check_grads`), a Python loop for `vmap` (`test_util.check_batching`), eager
execution for `jit`, and real `jax.lax` where it is installed.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion._src import test_util as tu
from fluxion._src.lax import indexing as lx
from fluxion._src.lax import structural as lst

GDN, SDN, Mode = lx.GatherDimensionNumbers, lx.ScatterDimensionNumbers, lx.GatherScatterMode
f32, i32 = np.dtype(np.float32), np.dtype(np.int32)


# --------------------------------------------------------------------------------------------------------------
# Loop references (XLA semantics, one window at a time)
# --------------------------------------------------------------------------------------------------------------

def _default_fill(dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return True
    if dtype.kind in "iu":
        return np.iinfo(dtype).min if dtype.kind == "i" else np.iinfo(dtype).max
    return np.nan


def _window_start(operand_shape, idx_vec, batch_pos, index_map, op_bdims, idx_bdims, sizes):
    start = [0] * len(operand_shape)
    for k, d in enumerate(index_map):
        start[d] = int(idx_vec[k])
    for a, b in zip(op_bdims, idx_bdims):
        start[a] = batch_pos[b]
    in_bounds = all(0 <= start[d] <= operand_shape[d] - sizes[d] for d in index_map)
    clamped = list(start)
    for d in index_map:
        clamped[d] = min(max(start[d], 0), operand_shape[d] - sizes[d])
    return clamped, in_bounds


def gather_reference(operand, indices, dn, slice_sizes, mode="fill", fill_value=None):
    """XLA Gather by loops: `mode` is 'clip' or 'fill' (promise_in_bounds behaves as 'clip')."""
    operand, indices = np.asarray(operand), np.asarray(indices)
    batch_shape = indices.shape[:-1]
    window = [d for d in range(operand.ndim) if d not in dn.collapsed_slice_dims + dn.operand_batching_dims]
    rank = len(batch_shape) + len(window)
    out_shape, bi, wi = [], iter(batch_shape), iter(window)
    for i in range(rank):
        out_shape.append(slice_sizes[next(wi)] if i in dn.offset_dims else next(bi))
    out = np.zeros(out_shape, operand.dtype)
    fill = _default_fill(operand.dtype) if fill_value is None else fill_value
    for b in np.ndindex(*batch_shape):
        start, ok = _window_start(operand.shape, indices[b], b, dn.start_index_map, dn.operand_batching_dims,
                                  dn.start_indices_batching_dims, slice_sizes)
        for w in np.ndindex(*[slice_sizes[d] for d in window]):
            pos = list(start)
            for k, d in zip(w, window):
                pos[d] += k
            bs, ws = iter(b), iter(w)
            out_idx = tuple(next(ws) if i in dn.offset_dims else next(bs) for i in range(rank))
            out[out_idx] = operand[tuple(pos)] if (ok or mode != "fill") else fill
    return out


_COMBINE = {"set": lambda old, new: new, "add": lambda old, new: old + new, "mul": lambda old, new: old * new,
            "min": min, "max": max}


def scatter_reference(operand, indices, updates, dn, combine="add", mode="drop"):
    """XLA Scatter by loops over the updates in C order (so for repeated indices the last update wins)."""
    out = np.array(operand, copy=True)
    indices, updates = np.asarray(indices), np.asarray(updates)
    scatter_axes = [i for i in range(updates.ndim) if i not in dn.update_window_dims]
    window = [d for d in range(out.ndim) if d not in dn.inserted_window_dims + dn.operand_batching_dims]
    sizes = [1] * out.ndim
    for w, d in enumerate(window):
        sizes[d] = updates.shape[dn.update_window_dims[w]]
    fn = _COMBINE[combine]
    for u in np.ndindex(*updates.shape):
        b = tuple(u[i] for i in scatter_axes)
        start, ok = _window_start(out.shape, indices[b], b, dn.scatter_dims_to_operand_dims, dn.operand_batching_dims,
                                  dn.scatter_indices_batching_dims, sizes)
        if not ok and mode != "clip":
            continue
        pos = list(start)
        for w, d in enumerate(window):
            pos[d] += u[dn.update_window_dims[w]]
        out[tuple(pos)] = fn(out[tuple(pos)], updates[u])
    return out


# --------------------------------------------------------------------------------------------------------------
# Gather cases
# --------------------------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class GatherCase:
    name: str
    operand_shape: tuple
    indices_shape: tuple
    dn: lx.GatherDimensionNumbers
    slice_sizes: tuple
    index_range: tuple = (-2, 7)  # includes out-of-bounds starts

    def args(self, rng, dtype, in_bounds=False):
        x = tu.rand_like(rng, self.operand_shape, dtype)
        lo, hi = self.index_range
        if in_bounds:
            # One index column per start_index_map entry, each within [0, dim - size].
            limits = [self.operand_shape[d] - self.slice_sizes[d] + 1 for d in self.dn.start_index_map]
            cols = [rng.integers(0, lim, self.indices_shape[:-1]) for lim in limits]
            idx = np.stack(cols, -1) if cols else np.zeros(self.indices_shape, np.int64)
        else:
            idx = rng.integers(lo, hi, self.indices_shape)
        return [x, idx.astype(np.int32)]

    def fn(self, mode="clip", fill_value=None):
        return lambda x, i: lx.gather(x, i, self.dn, self.slice_sizes, mode=mode, fill_value=fill_value)


GATHER_CASES = [
    GatherCase("rows", (5, 3), (4, 1), GDN((1,), (0,), (0,)), (1, 3)),
    GatherCase("elements_2d", (5, 4), (2, 3, 2), GDN((), (0, 1), (0, 1)), (1, 1)),
    GatherCase("windows", (6, 5), (3, 2), GDN((1, 2), (), (0, 1)), (2, 3)),
    GatherCase("offset_first", (4, 6, 3), (2, 1), GDN((0, 2), (1,), (1,)), (4, 1, 2)),
    GatherCase("start_map_permuted", (4, 5, 3), (2, 2), GDN((1,), (1, 2), (2, 1)), (4, 1, 1)),
    GatherCase("batching_dims", (3, 6, 2), (3, 4, 1), GDN((2,), (1,), (1,), (0,), (0,)), (1, 1, 2)),
    GatherCase("batching_dims_inner", (6, 3), (4, 3, 1), GDN((), (0,), (0,), (1,), (1,)), (1, 1)),
    GatherCase("scalar_indices_batch", (5,), (1,), GDN((), (0,), (0,)), (1,)),
    GatherCase("empty_index_vector", (3, 2), (4, 0), GDN((1, 2), (), ()), (3, 2)),
    GatherCase("empty_batch", (5, 3), (0, 1), GDN((1,), (0,), (0,)), (1, 3)),
]


@pytest.mark.parametrize("case", GATHER_CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("dtype", [f32, i32, np.dtype(np.bool_)], ids=lambda d: d.name)
@pytest.mark.parametrize("mode", ["clip", "fill", "promise_in_bounds"])
def test_gather_values_match_loop_reference(case, dtype, mode, rng):
    x, idx = case.args(rng, dtype)
    got = case.fn(mode)(x, idx)
    want = gather_reference(x, idx, case.dn, case.slice_sizes, "fill" if mode == "fill" else "clip")
    tu.assert_allclose(got, want, err_msg=f"{case.name} {mode}")


@pytest.mark.parametrize("case", GATHER_CASES[:6], ids=lambda c: c.name)
def test_gather_fill_value_and_jit_and_eval_shape(case, rng):
    x, idx = case.args(rng, f32)
    f = case.fn("fill", fill_value=-7.0)
    tu.assert_allclose(f(x, idx), gather_reference(x, idx, case.dn, case.slice_sizes, "fill", -7.0))
    tu.check_jit(f, [x, idx])
    tu.check_eval_shape(f, [x, idx])


@pytest.mark.parametrize("case", GATHER_CASES[:7], ids=lambda c: c.name)
@pytest.mark.parametrize("mode", ["clip", "fill", "promise_in_bounds"])
def test_gather_grads(case, mode, rng):
    # promise_in_bounds clamps when reading but drops out-of-bounds cotangents (as JAX), so keep it in bounds.
    x, idx = case.args(rng, f32, in_bounds=mode == "promise_in_bounds")
    fill = 0.0 if mode == "fill" else None
    tu.check_grads(lambda x: case.fn(mode, fill)(x, idx), [x], order=2, rng=rng)


@pytest.mark.parametrize("case", GATHER_CASES[:7], ids=lambda c: c.name)
@pytest.mark.parametrize("axes", [(0, None), (None, 0), (1, 1), (-1, 0)], ids=str)
def test_gather_vmap(case, axes, rng):
    examples = [case.args(rng, f32) for _ in range(3)]
    args = tu.stack_examples(examples, axes)
    tu.check_batching(case.fn("fill", 0.0), args, in_axes=axes)


def test_gather_against_jax(rng):
    jax = pytest.importorskip("jax")
    for case in GATHER_CASES:
        x, idx = case.args(rng, f32)
        jdn = jax.lax.GatherDimensionNumbers(*case.dn)
        for mode in ["clip", "fill", "promise_in_bounds"]:
            want = jax.lax.gather(x, idx, jdn, case.slice_sizes, mode=mode)
            tu.assert_allclose(case.fn(mode)(x, idx), np.asarray(want), err_msg=f"{case.name} {mode}")
        g = jax.grad(lambda x: (jax.lax.gather(x, idx, jdn, case.slice_sizes, mode="clip") ** 2).sum())(x)
        mine = fluxion.grad(lambda x: (case.fn("clip")(x, idx) ** 2).sum())(x)
        tu.assert_allclose(mine, np.asarray(g), atol=1e-5, rtol=1e-5, err_msg=f"{case.name} grad")


def test_gather_mode_parsing_and_default_fill():
    assert Mode.from_any(None) is Mode.FILL_OR_DROP
    assert Mode.from_any("drop") is Mode.FILL_OR_DROP and Mode.from_any("fill") is Mode.FILL_OR_DROP
    assert Mode.from_any("clip") is Mode.CLIP
    assert Mode.from_any("promise_in_bounds") is Mode.PROMISE_IN_BOUNDS
    with pytest.raises(ValueError, match="Unknown gather/scatter mode"):
        Mode.from_any("wrap")
    dn = GDN((), (0,), (0,))
    idx = np.array([[5]], np.int32)
    assert np.isnan(np.asarray(lx.gather(np.arange(3, dtype=np.float32), idx, dn, (1,)))[0])
    assert np.asarray(lx.gather(np.arange(3, dtype=np.int32), idx, dn, (1,)))[0] == np.iinfo(np.int32).min
    assert np.asarray(lx.gather(np.arange(3, dtype=np.uint8), idx, dn, (1,)))[0] == 255
    assert np.asarray(lx.gather(np.zeros(3, bool), idx, dn, (1,)))[0]


@pytest.mark.parametrize("kwargs,match", [
    (dict(operand=(4, 3), indices=(2, 1), dn=GDN((1,), (0,), (0,)), sizes=(1, 4)), "slice size 4 of dimension 1"),
    (dict(operand=(4, 3), indices=(2, 2), dn=GDN((1,), (0,), (0,)), sizes=(1, 3)), "index vector"),
    (dict(operand=(4, 3), indices=(2, 1), dn=GDN((1,), (0,), (0,)), sizes=(2, 3)), "slice size <= 1"),
    (dict(operand=(4, 3), indices=(2, 1), dn=GDN((0, 1), (0,), (0,)), sizes=(1, 3)), "offset_dims"),
    (dict(operand=(4, 3), indices=(2, 1), dn=GDN((1,), (0,), (0,)), sizes=(1,)), "one entry per operand"),
    (dict(operand=(4, 3), indices=(2, 1), dn=GDN((1,), (0,), (0,), (1,), (0,)), sizes=(1, 1)),
     "operand batching dim 1"),
])
def test_gather_shape_errors(kwargs, match):
    x = np.zeros(kwargs["operand"], np.float32)
    i = np.zeros(kwargs["indices"], np.int32)
    with pytest.raises(TypeError, match=match):
        lx.gather(x, i, kwargs["dn"], kwargs["sizes"])
    with pytest.raises(TypeError, match=match):
        fluxion.jit(lambda x, i: lx.gather(x, i, kwargs["dn"], kwargs["sizes"]))(x, i)


def test_gather_rejects_float_indices():
    with pytest.raises(TypeError, match="integer dtype"):
        lx.gather(np.zeros(3, np.float32), np.zeros((1, 1), np.float32), GDN((), (0,), (0,)), (1,))


# --------------------------------------------------------------------------------------------------------------
# Scatter cases
# --------------------------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class ScatterCase:
    name: str
    operand_shape: tuple
    indices: tuple  # literal index values (so repeated and out-of-bounds entries are deliberate)
    updates_shape: tuple
    dn: lx.ScatterDimensionNumbers
    unique: bool = False

    def args(self, rng, dtype):
        x = tu.rand_like(rng, self.operand_shape, dtype)
        n = int(np.prod(self.updates_shape))
        if np.dtype(dtype).kind == "f":
            # Distinct update values spaced apart, so min/max never tie within finite-difference steps.
            u = (rng.permutation(n).reshape(self.updates_shape) * 0.37 - n * 0.15 + 0.05).astype(dtype)
        else:
            u = tu.rand_like(rng, self.updates_shape, dtype)
        return [x, np.asarray(self.indices, np.int32), u]


SCATTER_CASES = [
    ScatterCase("rows_repeated", (5, 3), [[1], [3], [1], [0]], (4, 3), SDN((1,), (0,), (0,))),
    ScatterCase("rows_out_of_bounds", (5, 3), [[1], [7], [-1], [4]], (4, 3), SDN((1,), (0,), (0,))),
    ScatterCase("elements_unique", (4, 3), [[0, 1], [3, 2], [1, 0]], (3,), SDN((), (0, 1), (0, 1)), unique=True),
    ScatterCase("elements_repeated", (4, 3), [[0, 1], [3, 2], [0, 1], [2, 2]], (4,), SDN((), (0, 1), (0, 1))),
    ScatterCase("windows", (6, 5), [[0, 1], [3, 2], [5, 0]], (3, 2, 3), SDN((1, 2), (), (0, 1))),
    ScatterCase("window_dims_first", (6, 4), [[1], [4], [2]], (4, 3), SDN((0,), (1,), (1,))),
    ScatterCase("batching_dims", (3, 5, 2), [[[1], [1]], [[0], [4]], [[2], [3]]], (3, 2, 2),
                SDN((2,), (1,), (1,), (0,), (0,))),
    ScatterCase("unique_rows", (5, 3), [[4], [0], [2]], (3, 3), SDN((1,), (0,), (0,)), unique=True),
]

_SCATTERS = {"set": lx.scatter, "add": lx.scatter_add, "mul": lx.scatter_mul, "min": lx.scatter_min,
             "max": lx.scatter_max}


def _scatter_fn(case, op, mode="drop"):
    prim = _SCATTERS[op]
    return lambda x, i, u: prim(x, i, u, case.dn, mode=mode, unique_indices=case.unique)


@pytest.mark.parametrize("case", SCATTER_CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("op", list(_SCATTERS))
@pytest.mark.parametrize("mode", ["drop", "clip", "promise_in_bounds"])
def test_scatter_values_match_loop_reference(case, op, mode, rng):
    for dtype in (f32, i32):
        x, i, u = case.args(rng, dtype)
        got = _scatter_fn(case, op, mode)(x, i, u)
        want = scatter_reference(x, i, u, case.dn, op, "clip" if mode == "clip" else "drop")
        tu.assert_allclose(got, want, err_msg=f"{case.name} {op} {mode} {dtype}")


@pytest.mark.parametrize("case", SCATTER_CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("op", list(_SCATTERS))
def test_scatter_grads(case, op, rng):
    x, i, u = case.args(rng, f32)
    for mode in ("drop", "clip"):
        f = _scatter_fn(case, op, mode)
        tu.check_grads(lambda x, u: f(x, i, u), [x, u], order=2, rng=rng, err_msg=f"{case.name} {op} {mode}")


@pytest.mark.parametrize("case", SCATTER_CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("op", ["set", "add", "max"])
@pytest.mark.parametrize("axes", [(0, None, None), (None, None, 0), (None, 0, None), (1, 0, -1)], ids=str)
def test_scatter_vmap(case, op, axes, rng):
    examples = []
    for _ in range(3):
        x, i, u = case.args(rng, f32)
        examples.append([x, np.asarray(rng.permuted(i, axis=0)), u])
    args = tu.stack_examples(examples, axes)
    tu.check_batching(_scatter_fn(case, op), args, in_axes=axes)


@pytest.mark.parametrize("op", list(_SCATTERS))
def test_scatter_jit_and_eval_shape(op, rng):
    case = SCATTER_CASES[0]
    args = case.args(rng, f32)
    tu.check_jit(_scatter_fn(case, op), args)
    tu.check_eval_shape(_scatter_fn(case, op), args)


@pytest.mark.parametrize("op", list(_SCATTERS))
def test_jit_of_grad_matches_eager(op, rng):
    # Under jit the JVP/transpose rules' equations also pass abstract evaluation.
    for case in (SCATTER_CASES[0], SCATTER_CASES[6]):
        x, i, u = case.args(rng, f32)
        g = fluxion.grad(lambda x, u: (_scatter_fn(case, op)(x, i, u) ** 2).sum(), argnums=(0, 1))
        tu.check_jit(g, [x, u], atol=1e-5, rtol=1e-5)
    gcase = GATHER_CASES[5]
    x, idx = gcase.args(rng, f32)
    tu.check_jit(fluxion.grad(lambda x: (gcase.fn("fill", 0.0)(x, idx) ** 2).sum()), [x])


def test_scatter_against_jax(rng):
    jax = pytest.importorskip("jax")
    jfns = {"set": jax.lax.scatter, "add": jax.lax.scatter_add, "mul": jax.lax.scatter_mul,
            "min": jax.lax.scatter_min, "max": jax.lax.scatter_max}
    for case in SCATTER_CASES:
        x, i, u = case.args(rng, f32)
        jdn = jax.lax.ScatterDimensionNumbers(*case.dn)
        for op, mode in [(op, "drop") for op in jfns] + [("add", "clip")]:
            want = jfns[op](x, i, u, jdn, mode=mode, unique_indices=case.unique)
            tu.assert_allclose(_scatter_fn(case, op, mode)(x, i, u), np.asarray(want), atol=1e-5, rtol=1e-5,
                               err_msg=f"{case.name} {op} {mode}")
        for op in ("max", "set"):
            f_j = lambda x, u: (jfns[op](x, i, u, jdn, unique_indices=case.unique) ** 2).sum()
            f_m = lambda x, u: (_scatter_fn(case, op)(x, i, u) ** 2).sum()
            want = jax.grad(f_j, argnums=(0, 1))(x, u)
            got = fluxion.grad(f_m, argnums=(0, 1))(x, u)
            tu.assert_allclose(got, tuple(np.asarray(w) for w in want), atol=1e-4, rtol=1e-5,
                               err_msg=f"{case.name} {op} grad")


def test_scatter_ties_share_the_tangent_like_jax():
    # Position 0: operand 1.0 ties with update 1.0 -> the tangent is their average, as in JAX.
    dn = SDN((), (0,), (0,))
    idx = np.array([[0], [0], [1]], np.int32)
    out, t = fluxion.jvp(lambda x, u: lx.scatter_max(x, idx, u, dn),
                         (np.array([1., 0., 0.], np.float32), np.array([1., 0.5, 2.], np.float32)),
                         (np.array([1., 1., 1.], np.float32), np.array([10., 100., 1000.], np.float32)))
    tu.assert_allclose(out, np.array([1., 2., 0.], np.float32))
    tu.assert_allclose(t, np.array([5.5, 1000., 1.], np.float32))
    # scatter with repeated indices: the last update wins, and so does its tangent.
    out, t = fluxion.jvp(lambda x, u: lx.scatter(x, idx, u, dn),
                         (np.array([1., 0., 0.], np.float32), np.array([1., 0.5, 2.], np.float32)),
                         (np.array([1., 1., 1.], np.float32), np.array([10., 100., 1000.], np.float32)))
    tu.assert_allclose(out, np.array([0.5, 2., 0.], np.float32))
    tu.assert_allclose(t, np.array([100., 1000., 1.], np.float32))


def test_scatter_mul_grad_with_repeated_indices_and_zeros(rng):
    # JAX only supports unique indices here; check against finite differences. First derivatives are exact even
    # with zero updates (one or two at a position); second derivatives are checked away from exact zeros.
    dn = SDN((), (0,), (0,))
    idx = np.array([[0], [0], [1], [1], [1], [2]], np.int32)
    x = np.array([1.5, -2.0, 0.5], np.float32)
    f = lambda x, u: lx.scatter_mul(x, idx, u, dn)
    for u in ([2.0, -0.5, 0.0, 3.0, 0.0, 1.25], [2.0, -0.5, 0.0, 3.0, 1.5, 1.25]):
        tu.check_grads(f, [x, np.array(u, np.float32)], order=1, rng=rng)
    tu.check_grads(f, [x, np.array([2.0, -0.5, 0.7, 3.0, 1.5, 1.25], np.float32)], order=2, rng=rng)


def test_scatter_sub_and_apply(rng):
    dn = SDN((), (0,), (0,))
    idx = np.array([[0], [0], [2], [5]], np.int32)
    x = np.arange(4, dtype=np.float32)
    tu.assert_allclose(lx.scatter_sub(x, idx, np.ones(4, np.float32), dn), np.array([-2., 1., 1., 3.], np.float32))
    # func applies once per occurrence of an index (position 0 twice); out-of-bounds index 5 is dropped.
    got = lx.scatter_apply(x, idx, lambda v: v * 2 + 1, dn, update_shape=(4,))
    tu.assert_allclose(got, np.array([3., 1., 5., 3.], np.float32))


@pytest.mark.parametrize("kwargs,match", [
    (dict(op=(4, 3), idx=(2, 1), upd=(2, 3), dn=SDN((1,), (0,), (0,)), udt=np.int32), "updates dtype"),
    (dict(op=(4, 3), idx=(2, 1), upd=(3, 3), dn=SDN((1,), (0,), (0,)), udt=np.float32), "scatter dims of updates"),
    (dict(op=(4, 3), idx=(2, 1), upd=(2, 5), dn=SDN((1,), (0,), (0,)), udt=np.float32), "larger than operand"),
    (dict(op=(4, 3), idx=(2, 1), upd=(2, 3), dn=SDN((1,), (), (0,)), udt=np.float32), "update_window_dims"),
])
def test_scatter_shape_errors(kwargs, match):
    x = np.zeros(kwargs["op"], np.float32)
    i = np.zeros(kwargs["idx"], np.int32)
    u = np.zeros(kwargs["upd"], kwargs["udt"])
    with pytest.raises(TypeError, match=match):
        lx.scatter_add(x, i, u, kwargs["dn"])


# --------------------------------------------------------------------------------------------------------------
# vmap of dynamic_slice / dynamic_update_slice with batched start indices (the helpers structural.py uses)
# --------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("axes", [(None, 0, 0), (0, 0, None), (1, None, 0), (0, 0, 0)], ids=str)
def test_vmap_dynamic_slice_with_batched_starts(axes, rng):
    examples = [[tu.rand_like(rng, (5, 6), f32), np.int32(rng.integers(-2, 6)), np.int32(rng.integers(-2, 7))]
                for _ in range(4)]
    args = tu.stack_examples(examples, axes)
    f = lambda x, i, j: lst.dynamic_slice(x, (i, j), (2, 3))
    tu.check_batching(f, args, in_axes=axes)
    tu.check_grads(lambda x: fluxion.vmap(f, in_axes=axes)(x, *args[1:]), [args[0]], order=2, rng=rng)


@pytest.mark.parametrize("axes", [(None, None, 0, 0), (0, None, 0, None), (1, 0, None, 0), (0, 0, 0, 0)], ids=str)
def test_vmap_dynamic_update_slice_with_batched_starts(axes, rng):
    examples = [[tu.rand_like(rng, (5, 6), f32), tu.rand_like(rng, (2, 3), f32), np.int32(rng.integers(-2, 6)),
                 np.int32(rng.integers(-2, 7))] for _ in range(4)]
    args = tu.stack_examples(examples, axes)
    f = lambda x, u, i, j: lst.dynamic_update_slice(x, u, (i, j))
    tu.check_batching(f, args, in_axes=axes)
    tu.check_grads(lambda x, u: fluxion.vmap(f, in_axes=axes)(x, u, *args[2:]), args[:2], order=2, rng=rng)


def test_take_along_axis_helper_uses_batching_dims(rng):
    x = tu.rand_like(rng, (3, 5, 2), f32)
    idx = rng.integers(0, 5, (3, 4, 2)).astype(np.int32)
    tu.assert_allclose(lx.take_along_axis(x, idx, 1), np.take_along_axis(x, idx, 1))
    jaxpr = str(fluxion.make_jaxpr(lambda x, i: lx.take_along_axis(x, i, 1))(x, idx))
    assert "gather" in jaxpr and "operand_batching_dims=(0, 2)" in jaxpr


def test_gather_and_scatter_are_single_equations_under_vmap(rng):
    x = tu.rand_like(rng, (4, 5, 3), f32)
    idx = rng.integers(0, 5, (4, 2, 1)).astype(np.int32)
    case = GATHER_CASES[0]
    jaxpr = fluxion.make_jaxpr(fluxion.vmap(case.fn("clip")))(x, idx)
    assert [e.primitive.name for e in jaxpr.eqns] == ["gather"]
    sc = SCATTER_CASES[0]
    u = tu.rand_like(rng, (4, 2, 3), f32)
    jaxpr = fluxion.make_jaxpr(fluxion.vmap(_scatter_fn(sc, "add")))(x, idx, u)
    assert [e.primitive.name for e in jaxpr.eqns] == ["scatter-add"]


def test_weak_type_follows_operand():
    x = jnp.asarray(np.arange(3, dtype=np.float32)) * 1  # strong
    out = lx.gather(x, np.array([[1]], np.int32), GDN((), (0,), (0,)), (1,))
    assert not out.weak_type
