"""Row gathers and row scatter-adds (`compiler.rows`), checked against the backend's general implementation."""

from __future__ import annotations

import itertools
import os
import sys

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion._src.backends import compiler
from fluxion._src.backends.compiler import rows

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # compiler_helpers.py is here
from compiler_helpers import closed_of, reference  # noqa: E402

MODES = ["clip", "fill", "promise_in_bounds"]
DTYPES = [np.float32, np.float64, np.int32, np.int64, np.float16, "bfloat16", np.bool_]
# (operand shape, index batch shape)
SHAPES = [((6, 3), (7,)), ((5,), (2, 3)), ((4, 2, 3), (3, 2)), ((6, 3), (0,)), ((1, 1), (1,)), ((3, 2), ())]


def _values(rng, shape, dtype):
    dt = jnp.dtype(dtype)
    if dt == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    return (rng.standard_normal(shape) * 4).astype(dt)


def _assert_same(got, want):
    """Equal values (NaN equal to NaN, which NumPy's comparison only grants its own float types)."""
    if got.dtype.name == "bfloat16":
        got, want = got.astype(np.float32), want.astype(np.float32)
    np.testing.assert_array_equal(got, want)


def _row_indices(rng, n, batch):
    """Indices with repeats and, one in four, out of range on either side."""
    return rng.integers(-2, n + 2, (*batch, 1)).astype(np.int32)


def _gather_eqn(op_shape, batch, dtype, mode):
    dn = lax.GatherDimensionNumbers(offset_dims=tuple(range(len(batch), len(batch) + len(op_shape) - 1)),
                                    collapsed_slice_dims=(0,), start_index_map=(0,))
    closed = closed_of(lambda o, i: lax.gather(o, i, dn, (1, *op_shape[1:]), mode=mode),
                       np.zeros(op_shape, jnp.dtype(dtype)), np.zeros((*batch, 1), np.int32))
    (eqn,) = closed.jaxpr.eqns
    return eqn


def _scatter_eqn(op_shape, batch, dtype, mode):
    dn = lax.ScatterDimensionNumbers(update_window_dims=tuple(range(len(batch), len(batch) + len(op_shape) - 1)),
                                     inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
    dt = jnp.dtype(dtype)
    closed = closed_of(lambda o, i, u: lax.scatter_add(o, i, u, dn, mode=mode), np.zeros(op_shape, dt),
                       np.zeros((*batch, 1), np.int32), np.zeros((*batch, *op_shape[1:]), dt))
    (eqn,) = closed.jaxpr.eqns
    return eqn


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op_shape, batch", SHAPES)
def test_take_rows_matches_the_backends_gather(rng, op_shape, batch, dtype, mode):
    eqn = _gather_eqn(op_shape, batch, dtype, mode)
    assert rows.row_gather(eqn)
    operand, idx = _values(rng, op_shape, dtype), _row_indices(rng, op_shape[0], batch)
    want = eqn.primitive.impl(operand, idx, **eqn.params)
    clamp = mode != "fill"
    got = rows.take_rows(operand, idx, clamp=clamp, fill_value=eqn.params["fill_value"])
    assert got.dtype == want.dtype and got.shape == want.shape and got.flags.c_contiguous
    _assert_same(got, want)
    # A transposed operand (the same values) gives the same rows.
    t = np.ascontiguousarray(operand.T).T
    _assert_same(rows.take_rows(t, idx, clamp=clamp, fill_value=eqn.params["fill_value"]), want)


@pytest.mark.parametrize("use_kernel", [True, False])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op_shape, batch", SHAPES)
def test_add_rows_matches_the_backends_scatter_add(rng, monkeypatch, op_shape, batch, dtype, mode, use_kernel):
    eqn = _scatter_eqn(op_shape, batch, dtype, mode)
    assert rows.row_scatter_add(eqn)
    if use_kernel:
        rows.add_rows_kernel.get(block=True)
    else:
        monkeypatch.setattr(rows.add_rows_kernel, "get", lambda block=False: None)
    operand = _values(rng, op_shape, dtype)
    idx = _row_indices(rng, op_shape[0], batch)
    upd = _values(rng, (*batch, *op_shape[1:]), dtype)
    want = eqn.primitive.impl(operand, idx, upd, **eqn.params)
    got = rows.add_rows(operand.copy(), idx, upd, clip=mode == "clip")
    assert got.dtype == want.dtype and got.shape == want.shape
    # The same additions in the same order per element: identical, not merely close.
    _assert_same(got, want)
    # Into a non-contiguous operand (in place all the same) and from transposed updates.
    if operand.ndim == 2:
        into = np.zeros((op_shape[1], op_shape[0]), operand.dtype).T
        into[...] = operand
        out = rows.add_rows(into, idx, np.ascontiguousarray(upd.T).T, clip=mode == "clip")
        assert out is into
        _assert_same(out, want)


def test_other_gathers_and_scatters_are_not_row_forms():
    # A partial window of each row.
    dn = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    closed = closed_of(lambda o, i: lax.gather(o, i, dn, (1, 2)), np.zeros((4, 3)), np.zeros((5, 1), np.int32))
    assert not rows.row_gather(closed.jaxpr.eqns[0])
    # Columns, not rows.
    dn = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(1,), start_index_map=(1,))
    closed = closed_of(lambda o, i: lax.gather(o, i, dn, (4, 1)), np.zeros((4, 3)), np.zeros((5, 1), np.int32))
    assert not rows.row_gather(closed.jaxpr.eqns[0])
    # take_along_axis's batched gather and its scatter-add gradient (the cross-entropy's label pick).
    closed = closed_of(lambda x, i: jnp.take_along_axis(x, i, axis=1), np.zeros((4, 3)), np.zeros((4, 1), np.int32))
    assert not any(rows.row_gather(e) for e in closed.jaxpr.eqns if e.primitive.name == "gather")
    closed = closed_of(lambda x: fluxion.grad(lambda x: jnp.take_along_axis(x, np.ones((4, 1), np.int32), 1).sum())(x),
                       np.zeros((4, 3)))
    assert not any(rows.row_scatter_add(e) for e in closed.jaxpr.eqns if e.primitive.name == "scatter-add")
    # Updates narrower than the operand's rows.
    dn = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,))
    closed = closed_of(lambda o, i, u: lax.scatter_add(o, i, u, dn), np.zeros((4, 3)), np.zeros((5, 1), np.int32),
                       np.zeros((5, 2)))
    assert not rows.row_scatter_add(closed.jaxpr.eqns[0])
    # An empty table (the backend's scatter returns it unchanged).
    assert not rows.row_scatter_add(_scatter_eqn((0, 3), (2,), np.float32, "clip"))


def _embedding_loss(table, ids):
    return jnp.sum(jnp.sin(jnp.take(table, ids, axis=0)) * jnp.arange(table.shape[1], dtype=table.dtype))


def test_generated_code_takes_and_adds_rows(rng):
    table = rng.standard_normal((7, 5)).astype(np.float32)
    ids = rng.integers(0, 7, (3, 4)).astype(np.int32)
    f = fluxion.value_and_grad(_embedding_loss)
    closed = closed_of(f, table, ids)
    exe = compiler.compile_closed(closed, fuse=False)
    assert "take_rows(" in exe.source and "add_rows(" in exe.source
    got, want = list(exe(table, ids)), reference(closed, table, ids)
    for x, y in zip(got, want):
        np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, "bfloat16"])
def test_jitted_embedding_lookup_and_gradient_match_eager(rng, dtype):
    dt = jnp.dtype(dtype)
    table = jnp.asarray(_values(rng, (9, 4), dt))
    ids = jnp.asarray(rng.integers(-3, 12, (5, 3)).astype(np.int32))  # out-of-range ids: JAX's fill/drop
    for mode in (None, "clip", "fill"):
        take = lambda t, i, m=mode: jnp.take(t, i, axis=0, mode=m)  # noqa: E731
        _assert_same(np.asarray(fluxion.jit(take)(table, ids)), np.asarray(take(table, ids)))
    if dt.kind == "f":
        loss = lambda t, i: jnp.sum(jnp.take(t, i, axis=0).astype(jnp.float32) ** 2)  # noqa: E731
        np.testing.assert_allclose(np.asarray(fluxion.jit(fluxion.grad(loss))(table, ids)).astype(np.float64),
                                   np.asarray(fluxion.grad(loss)(table, ids)).astype(np.float64), rtol=1e-6)


def test_jitted_embedding_gradient_matches_finite_differences(rng):
    from fluxion._src.test_util import check_grads
    table = rng.standard_normal((6, 3))
    ids = rng.integers(0, 6, (4, 2)).astype(np.int32)
    check_grads(fluxion.jit(lambda t: _embedding_loss(t, ids)), (table,), order=1, modes=("rev",))


def test_embedding_gradient_accumulates_repeated_rows(rng):
    table = np.zeros((3, 2), np.float32)
    ids = np.array([[0, 2, 0], [2, 2, 1]], np.int32)
    g = fluxion.jit(fluxion.grad(lambda t: jnp.take(t, ids, axis=0).sum()))(table)
    np.testing.assert_array_equal(np.asarray(g), [[2, 2], [1, 1], [3, 3]])


@pytest.mark.parametrize("batch", list(itertools.product([0, 1, 3], [1, 2])))
def test_size_zero_and_one_batches_through_jit(rng, batch):
    table = rng.standard_normal((4, 3)).astype(np.float32)
    ids = rng.integers(0, 4, batch).astype(np.int32)
    f = fluxion.jit(fluxion.value_and_grad(lambda t: jnp.take(t, ids, axis=0).sum() * 2))
    v, g = f(table)
    np.testing.assert_allclose(float(v), 2 * table[ids].sum(), rtol=1e-5)
    want = np.zeros_like(table)
    np.add.at(want, ids.reshape(-1), 2)
    np.testing.assert_array_equal(np.asarray(g), want)
