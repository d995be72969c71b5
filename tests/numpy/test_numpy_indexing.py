"""Tests of NumPy-style indexing in fluxion.numpy (fluxion/_src/numpy/indexing.py).

Oracles: NumPy itself (indexing, `ufunc.at` for accumulating updates, nonzero/searchsorted/... functions), finite
differences for gradients, a Python loop for `vmap`, eager execution for `jit`, and real `jax.numpy` for the
behaviours where JAX deliberately differs from NumPy (out-of-bounds clamping/dropping, fill modes, clipping in
`unravel_index`, ...).

(The file is not called test_indexing.py because tests/lax/test_indexing.py exists and the suite has no
__init__.py files, so pytest requires unique basenames.)
"""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion._src import test_util as tu
from fluxion._src.numpy import indexing as ix
from fluxion._src.numpy import sorting as srt

f32, i32 = np.dtype(np.float32), np.dtype(np.int32)
X = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)

# Index expressions valid for an array of shape (2, 3, 4, 5), covering basic, advanced and boolean indexing.
INDICES = [
    0, -1, (1, 2), (slice(None),), slice(1, None, 2), slice(None, None, -1), (slice(3, 0, -2), 1),
    (Ellipsis, 1), (None, 0, Ellipsis, None), (0, slice(None), 1), np.array([0, 1]), ([0, 1], [1, 2]),
    (slice(None), [0, 2], [1, 3]), (slice(None), [0, 2], slice(None), [1, 3]), (0, slice(None), [1, 2]),
    ([[0], [1]], slice(None), [1, 2, 3]), (Ellipsis, [0, -1]), (X[..., 0] > 20,),
    (slice(None), X[0, :, :, 0] > 5), (None, [1], None, 0), ([0, 1], None, [1, 2]),
    (slice(None), [0, 2], Ellipsis, [1, 3]), True, False, (np.int32(1), slice(None, None, -2)),
    (slice(None), np.array([[0, 1], [2, 1]]), 0, slice(1, 3)), slice(10, 20), slice(-100, 100), [],
    (np.array([], np.int32), 0), (Ellipsis,), (), (1, Ellipsis, 2, slice(None, 2)),
]


def _id(idx):
    return repr(idx).replace("\n", "")[:40]


@pytest.mark.parametrize("idx", INDICES, ids=_id)
def test_getitem_matches_numpy(idx):
    got = jnp.asarray(X)[idx]
    tu.assert_allclose(got, X[idx], err_msg=repr(idx))


@pytest.mark.parametrize("idx", [i for i in INDICES if not (isinstance(i, tuple) and any(
    isinstance(j, np.ndarray) and j.dtype == bool for j in i))], ids=_id)
def test_getitem_jit_eval_shape_and_int_dtypes(idx):
    tu.check_jit(lambda x: x[idx], [X])
    tu.check_eval_shape(lambda x: x[idx], [X])
    xi = X.astype(np.int32)
    tu.assert_allclose(jnp.asarray(xi)[idx], xi[idx])


def _prims(f, *args):
    return [e.primitive.name for e in fluxion.make_jaxpr(f)(*args).eqns]


def test_static_indices_lower_to_slices_and_traced_ints_to_dynamic_slice():
    x = jnp.asarray(X)
    assert _prims(lambda x: x[1:3], x) == ["slice"]
    assert _prims(lambda x: x[::-2], x) == ["slice", "rev"]
    assert "gather" not in _prims(lambda x: x[0, None, :, -1], x)
    assert "dynamic_slice" in _prims(lambda x, i: x[i], x, 1)
    assert "gather" not in _prims(lambda x, i: x[i, 1:], x, 1)
    assert "gather" in _prims(lambda x: x[jnp.array([1, 0])], x)


def test_out_of_bounds_reads_clamp_like_jax():
    x = jnp.arange(3.0)
    assert float(x[5]) == 2.0 and float(x[-5]) == 0.0
    tu.assert_allclose(x[jnp.array([5, -5, 1, -1])], np.array([2.0, 0.0, 1.0, 2.0], np.float32))
    f = fluxion.jit(lambda x, i: x[i])
    assert float(f(x, 5)) == 2.0 and float(f(x, -5)) == 0.0 and float(f(x, -1)) == 2.0


def test_get_modes_against_jax():
    jax = pytest.importorskip("jax")
    vec = np.arange(4, dtype=np.float32)
    mat = np.arange(12, dtype=np.float32).reshape(3, 4)
    cases = [(vec, 1, 1), (vec, 5, 5), (vec, -5, -5),
             (vec, np.array([0, 5, -1]), jax.numpy.array([0, 5, -1])),
             (mat, (slice(None), np.array([[1], [7]])), (slice(None), jax.numpy.array([[1], [7]])))]
    for x, idx, jidx in cases:
        for mode, fill in [(None, None), ("clip", None), ("fill", None), ("fill", -3.0)]:
            got = jnp.asarray(x).at[idx].get(mode=mode, fill_value=fill)
            want = jax.numpy.asarray(x).at[jidx].get(mode=mode, fill_value=fill)
            tu.assert_allclose(got, np.asarray(want), err_msg=f"{idx} {mode} {fill}")


def test_boolean_masks_need_concrete_values():
    x = jnp.asarray(X)
    with pytest.raises(fluxion.errors.NonConcreteBooleanIndexError, match="jnp.where"):
        fluxion.jit(lambda x: x[x > 3])(x)
    with pytest.raises(TypeError):  # the error is a TypeError, as in JAX
        fluxion.jit(lambda x: x.at[x > 3].set(0.0))(x)
    # Under grad the mask's value is known, so it works (as in JAX).
    g = fluxion.grad(lambda x: x[x > 0].sum())(jnp.arange(-2.0, 2.0))
    tu.assert_allclose(g, np.array([0, 0, 0, 1], np.float32))


@pytest.mark.parametrize("idx,exc,match", [
    ((0, 0, 0, 0, 0), IndexError, "Too many indices"),
    ((Ellipsis, 0, Ellipsis), IndexError, "single ellipsis"),
    (1.5, TypeError, "Indexer must be"),
    (np.array([0.5]), TypeError, "integer or boolean"),
    (np.ones((3, 3), bool), IndexError, "does not match"),
    ([slice(None), 0], TypeError, "non-tuple sequence"),
])
def test_index_errors(idx, exc, match):
    with pytest.raises(exc, match=match):
        jnp.asarray(X)[idx]


def test_traced_slice_bounds_raise_index_error():
    with pytest.raises(IndexError, match="static start/stop/step"):
        fluxion.jit(lambda x, i: x[i:])(jnp.arange(5.0), 1)


GRAD_INDICES = [1, (slice(None), 2), (slice(None, None, -2), None, [0, 2, 2]), ([0, 1, 1], slice(1, 4), [1, 0, 2]),
                (Ellipsis, np.array([[0], [2]])), (X[:, :, :, 0] > 30,)]


@pytest.mark.parametrize("idx", GRAD_INDICES, ids=_id)
def test_getitem_grads_and_vmap(idx, rng):
    x = rng.standard_normal(X.shape).astype(np.float32)
    tu.check_grads(lambda x: x[idx], [x], order=2, rng=rng)
    tu.check_batching(lambda x: x[idx], [np.stack([x, 2 * x, -x], 1)], in_axes=1)


def test_vmap_over_traced_indices(rng):
    x = rng.standard_normal((4, 5)).astype(np.float32)
    i = np.array([2, 0, -1, 7], np.int32)
    tu.check_batching(lambda x, i: x[i], [x, i], in_axes=(None, 0))
    tu.check_batching(lambda x, i: x[i, 1:], [np.stack([x] * 4), i], in_axes=(0, 0))
    tu.check_batching(lambda x, i: x[:, i], [x, np.stack([i, i[::-1]])], in_axes=(None, 0))
    tu.check_batching(lambda x, i: x[i, i % 5], [x, i], in_axes=(None, 0))


# --------------------------------------------------------------------------------------------------------------
# x.at[idx]
# --------------------------------------------------------------------------------------------------------------

def _np_update(x, idx, op, v):
    """NumPy reference for in-bounds indices: `ufunc.at` accumulates repeated indices; set keeps the last."""
    out = np.array(x, copy=True)
    v = np.broadcast_to(np.asarray(v, x.dtype), np.shape(x[idx]))
    if op == "set":
        out[idx] = v
    elif op == "add":
        np.add.at(out, idx, v)
    elif op == "subtract":
        np.subtract.at(out, idx, v)
    elif op == "multiply":
        np.multiply.at(out, idx, v)
    elif op == "min":
        np.minimum.at(out, idx, v)
    elif op == "max":
        np.maximum.at(out, idx, v)
    elif op == "divide":
        np.divide.at(out, idx, v)
    return out


UPDATE_INDICES = [0, (slice(None), 1), (Ellipsis, [0, 2]), ([0, 1, 0], [2, 1, 2]), (slice(None), slice(None, None, -2)),
                  (X[:, :, :, 0] > 10,), (None, 0, 1, 2), (1, [2, 0, 2], slice(1, 4)), ()]
OPS = ["set", "add", "subtract", "multiply", "min", "max", "divide"]


@pytest.mark.parametrize("idx", UPDATE_INDICES, ids=_id)
@pytest.mark.parametrize("op", OPS)
def test_updates_match_numpy(idx, op, rng):
    x = rng.standard_normal(X.shape).astype(np.float32)
    v = (rng.standard_normal(np.shape(x[idx])) + 3.0).astype(np.float32)
    got = getattr(jnp.asarray(x).at[idx], op)(v)
    tu.assert_allclose(got, _np_update(x, idx, op, v), atol=1e-5, rtol=1e-5, err_msg=f"{idx} {op}")
    # A scalar update broadcasts.
    got = getattr(jnp.asarray(x).at[idx], op)(2.0)
    tu.assert_allclose(got, _np_update(x, idx, op, 2.0), atol=1e-5, rtol=1e-5)


def test_power_and_apply_with_repeated_indices():
    x = jnp.array([2.0, 3.0])
    idx = jnp.array([0, 0])
    tu.assert_allclose(x.at[idx].power(3.0), np.array([512.0, 3.0], np.float32))  # (2**3)**3, as JAX
    tu.assert_allclose(x.at[idx].apply(lambda v: v + 1), np.array([4.0, 3.0], np.float32))  # applied twice
    tu.assert_allclose(x.at[1].apply(jnp.sqrt), np.array([2.0, np.sqrt(3.0)], np.float32))
    tu.assert_allclose(x.at[:].apply(jnp.square), np.array([4.0, 9.0], np.float32))
    tu.assert_allclose(x.at[::-2].apply(jnp.negative), np.array([2.0, -3.0], np.float32))
    tu.assert_allclose(fluxion.jit(lambda x, i: x.at[i].apply(jnp.negative))(x, 5), np.array([2.0, 3.0], np.float32))
    # Traced repeated indices: func is still applied once per occurrence.
    tu.assert_allclose(fluxion.jit(lambda x, i: x.at[i].apply(lambda v: v * 2))(x, jnp.array([1, 0, 1])),
                       np.array([4.0, 12.0], np.float32))
    tu.assert_allclose(x.at[idx].divide(jnp.array([2.0, 4.0])), np.array([0.25, 3.0], np.float32))


def test_update_dtype_follows_the_array():
    assert jnp.arange(5).at[2].add(1.5).dtype == np.int32
    tu.assert_allclose(jnp.arange(5).at[2].add(1.5), np.array([0, 1, 3, 3, 4], np.int32))
    assert jnp.arange(5.0).at[2].set(jnp.int32(7)).dtype == np.float32


def test_out_of_bounds_updates_against_jax():
    jax = pytest.importorskip("jax")
    x = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    for idx in [5, -5, ([0, 5, -1],), (1, [3, 10, -1]), (slice(None), -4, [0, -5])]:
        jidx = tuple(jax.numpy.asarray(i) if isinstance(i, list) else i for i in idx) if isinstance(idx, tuple) \
            else idx
        for op, mode in [("set", None), ("set", "clip"), ("set", "promise_in_bounds"), ("add", None),
                         ("add", "clip"), ("multiply", "drop"), ("max", None), ("power", None)]:
            if True:
                want = getattr(jax.numpy.asarray(x).at[jidx], op)(3.0, mode=mode)
                got = getattr(jnp.asarray(x).at[idx], op)(3.0, mode=mode)
                tu.assert_allclose(got, np.asarray(want), err_msg=f"{idx} {op} {mode}")


def test_traced_index_updates_drop_out_of_bounds():
    f = fluxion.jit(lambda x, i: x.at[i].set(9.0))
    tu.assert_allclose(f(jnp.arange(3.0), 5), np.array([0, 1, 2], np.float32))
    tu.assert_allclose(f(jnp.arange(3.0), -1), np.array([0, 1, 9], np.float32))
    g = fluxion.jit(lambda x, i: x.at[i].add(1.0, mode="clip"))
    tu.assert_allclose(g(jnp.arange(3.0), 5), np.array([0, 1, 3], np.float32))


@pytest.mark.parametrize("idx", GRAD_INDICES, ids=_id)
@pytest.mark.parametrize("op", ["set", "add", "multiply", "min", "max"])
def test_update_grads_jit_and_vmap(idx, op, rng):
    x = rng.standard_normal(X.shape).astype(np.float32)
    shape = np.shape(x[idx])
    n = int(np.prod(shape))
    # Updates spaced apart from each other and from x, so min/max never tie within a finite-difference step.
    v = (np.asarray(x[idx]) + (rng.permutation(n) * 0.1 - n * 0.05 + 0.03).reshape(shape)).astype(np.float32)
    f = lambda x, v: getattr(x.at[idx], op)(v)
    tu.check_grads(f, [x, v], order=2, rng=rng, atol=2e-2, rtol=2e-2, err_msg=f"{idx} {op}")
    tu.check_jit(f, [x, v])
    tu.check_batching(f, [np.stack([x, 2 * x], 1), v], in_axes=(1, None))
    tu.check_batching(f, [x, np.stack([v, -v], 0)], in_axes=(None, 0))


def test_jit_of_update_grads(rng):
    x = rng.standard_normal((4, 5)).astype(np.float32)
    for idx in [(jnp.array([0, 3, 0]),), (slice(None), jnp.array([1, 1, 4])), (slice(None, None, 2), jnp.array([2])),
                (1, slice(1, 3))]:
        for op in ["set", "add", "max", "multiply"]:
            g = fluxion.grad(lambda x, v: (getattr(x.at[idx], op)(v) ** 2).sum(), argnums=(0, 1))
            tu.check_jit(g, [x, np.float32(1.5)], atol=1e-5, rtol=1e-5)


def test_update_grads_against_jax(rng):
    jax = pytest.importorskip("jax")
    x = rng.standard_normal((4, 5)).astype(np.float32)
    for idx in [(jnp.array([0, 3, 0]),), (slice(None), jnp.array([1, 1, 4]))]:
        jidx = tuple(jax.numpy.asarray(np.asarray(i)) if not isinstance(i, slice) else i for i in idx)
        v = rng.standard_normal(np.shape(x[tuple(np.asarray(i) if not isinstance(i, slice) else i
                                                 for i in idx)])).astype(np.float32)
        for op in ["set", "add", "max"]:
            gm = fluxion.grad(lambda x, v: (getattr(x.at[idx], op)(v) ** 2).sum(), argnums=(0, 1))(x, v)
            gj = jax.grad(lambda x, v: (getattr(x.at[jidx], op)(v) ** 2).sum(), argnums=(0, 1))(x, v)
            tu.assert_allclose(gm, tuple(np.asarray(g) for g in gj), atol=1e-5, rtol=1e-5, err_msg=f"{idx} {op}")


def test_vmap_of_updates_with_batched_indices(rng):
    x = rng.standard_normal((4, 5)).astype(np.float32)
    i = np.array([2, 0, 3], np.int32)
    tu.check_batching(lambda x, i: x.at[i].set(0.0), [np.stack([x] * 3), i], in_axes=(0, 0))
    tu.check_batching(lambda x, i: x.at[i, 2].add(1.0), [x, i], in_axes=(None, 0))
    tu.check_batching(lambda x, i: x.at[i, 2].add(1.0, mode="clip"), [x, i + 3], in_axes=(None, 0))
    tu.check_batching(lambda x, i: x.at[jnp.stack([i, i])].max(5.0), [x, i], in_axes=(None, 0))


def test_update_broadcast_error():
    with pytest.raises(ValueError, match="cannot broadcast updates"):
        jnp.zeros(4).at[jnp.array([1, 2])].set(jnp.ones((1, 2)))


def test_at_repr_and_immutability():
    x = jnp.arange(3.0)
    assert "_IndexUpdateHelper" in repr(x.at) and "_IndexUpdateRef" in repr(x.at[0])
    with pytest.raises(TypeError, match="immutable"):
        x[0] = 1.0


# --------------------------------------------------------------------------------------------------------------
# take / take_along_axis
# --------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_take_in_bounds_matches_numpy(axis, rng):
    a = rng.standard_normal((4, 5)).astype(np.float32)
    n = a.size if axis is None else a.shape[axis]
    i = rng.integers(-n, n, (2, 3)).astype(np.int32)
    tu.assert_allclose(ix.take(a, i, axis=axis), np.take(a, i, axis=axis))
    tu.assert_allclose(ix.take(a, i + 3 * n, axis=axis, mode="wrap"), np.take(a, i, axis=axis))
    tu.check_grads(lambda a: ix.take(a, i, axis=axis), [a], order=2, rng=rng)
    tu.check_batching(lambda a, i: ix.take(a, i, axis=axis), [np.stack([a, -a]), np.stack([i, i[::-1]])],
                      in_axes=(0, 0))


def test_take_modes_against_jax(rng):
    jax = pytest.importorskip("jax")
    a = rng.standard_normal((4, 5)).astype(np.float32)
    i = np.array([[0, -1], [4, 7], [-6, 2]], np.int32)
    for mode in [None, "clip", "wrap", "fill"]:
        for axis in [None, 0, 1]:
            tu.assert_allclose(ix.take(a, i, axis=axis, mode=mode), np.asarray(jax.numpy.take(a, i, axis=axis,
                                                                                                mode=mode)))
    tu.assert_allclose(ix.take(a, i, axis=1, fill_value=-1.0), np.asarray(jax.numpy.take(a, i, axis=1,
                                                                                           fill_value=-1.0)))
    with pytest.raises(NotImplementedError, match="raise"):
        ix.take(a, i, mode="raise")


def test_take_along_axis(rng):
    a = rng.standard_normal((4, 5)).astype(np.float32)
    i = rng.integers(0, 5, (4, 3)).astype(np.int32)
    tu.assert_allclose(ix.take_along_axis(a, i, 1), np.take_along_axis(a, i, 1))
    tu.assert_allclose(ix.take_along_axis(a, i[:1], 1), np.take_along_axis(a, np.broadcast_to(i[:1], (4, 3)), 1))
    tu.assert_allclose(ix.take_along_axis(a, i[0], None), np.take_along_axis(a.ravel(), i[0], None))
    j = rng.integers(0, 4, (2, 5)).astype(np.int32)
    tu.assert_allclose(ix.take_along_axis(a, j, 0), np.take_along_axis(a, j, 0))
    tu.check_grads(lambda a: ix.take_along_axis(a, i, 1), [a], order=2, rng=rng)
    tu.check_batching(lambda a, i: ix.take_along_axis(a, i, -1), [np.stack([a, -a], 2), np.stack([i, i], 0)],
                      in_axes=(2, 0))
    with pytest.raises(ValueError, match="same number of dimensions"):
        ix.take_along_axis(a, i[0], 1)


def test_take_along_axis_modes_against_jax(rng):
    jax = pytest.importorskip("jax")
    a = rng.standard_normal((4, 5)).astype(np.float32)
    i = rng.integers(-7, 7, (4, 3)).astype(np.int32)
    for mode in [None, "clip", "fill"]:
        tu.assert_allclose(ix.take_along_axis(a, i, 1, mode=mode),
                           np.asarray(jax.numpy.take_along_axis(a, i, 1, mode=mode)))


# --------------------------------------------------------------------------------------------------------------
# nonzero family
# --------------------------------------------------------------------------------------------------------------

def test_nonzero_argwhere_flatnonzero_match_numpy(rng):
    a = (rng.standard_normal((4, 5)) > 0.3) * rng.integers(1, 5, (4, 5))
    tu.assert_allclose(srt.nonzero(a), tuple(p.astype(np.int32) for p in np.nonzero(a)))
    tu.assert_allclose(srt.argwhere(a), np.argwhere(a).astype(np.int32))
    tu.assert_allclose(srt.flatnonzero(a), np.flatnonzero(a).astype(np.int32))
    assert np.asarray(srt.argwhere(np.float32(3))).shape == (1, 0)
    assert np.asarray(srt.argwhere(np.float32(0))).shape == (0, 0)
    tu.assert_allclose(jnp.where(jnp.asarray(a))[1], np.nonzero(a)[1].astype(np.int32))
    with pytest.raises(ValueError, match="0d"):
        srt.nonzero(np.float32(1))


@pytest.mark.parametrize("size", [0, 3, 20])
def test_nonzero_with_size_is_jittable(size, rng):
    a = (rng.standard_normal((4, 5)) > 0.3).astype(np.float32)
    want = [np.nonzero(a)[d] for d in range(2)]
    for fill in (None, -1, (7, 8)):
        fills = fill if isinstance(fill, tuple) else (0 if fill is None else fill,) * 2
        expected = tuple(np.concatenate([w[:size], np.full(max(0, size - len(w)), f)]).astype(np.int32)
                         for w, f in zip(want, fills))
        got = fluxion.jit(lambda a: srt.nonzero(a, size=size, fill_value=fill))(a)
        tu.assert_allclose(got, expected)
    tu.check_batching(lambda a: srt.nonzero(a, size=4), [np.stack([a, 1 - a])], in_axes=0)
    with pytest.raises(fluxion.errors.ConcretizationTypeError, match="size="):
        fluxion.jit(srt.nonzero)(a)


def test_nonzero_family_against_jax(rng):
    jax = pytest.importorskip("jax")
    a = rng.standard_normal((3, 4)).astype(np.float32) * (rng.random((3, 4)) > 0.5)
    for size in (2, 9):
        tu.assert_allclose(srt.argwhere(a, size=size, fill_value=5), np.asarray(jax.numpy.argwhere(
            a, size=size, fill_value=5)))
        tu.assert_allclose(srt.flatnonzero(a, size=size), np.asarray(jax.numpy.flatnonzero(a, size=size)))


# --------------------------------------------------------------------------------------------------------------
# Index constructors and conversions
# --------------------------------------------------------------------------------------------------------------

def test_index_constructors_match_numpy():
    for got, want in [(ix.ix_(np.array([0, 2]), np.array([1, 0, 2])), np.ix_([0, 2], [1, 0, 2])),
                      (ix.ix_(np.array([True, False, True])), np.ix_([True, False, True])),
                      (ix.diag_indices(3, 3), np.diag_indices(3, 3)), (ix.tril_indices(4, 1, 5), np.tril_indices(4, 1, 5)),
                      (ix.triu_indices(4, -1), np.triu_indices(4, -1)),
                      (ix.tril_indices_from(np.zeros((3, 4))), np.tril_indices_from(np.zeros((3, 4)))),
                      (ix.triu_indices_from(np.zeros((3, 4)), 1), np.triu_indices_from(np.zeros((3, 4)), 1)),
                      (ix.diag_indices_from(np.zeros((3, 3))), np.diag_indices_from(np.zeros((3, 3))))]:
        tu.assert_allclose(got, tuple(np.asarray(w).astype(np.int32) for w in want), check_dtypes=False)
    x = np.arange(20, dtype=np.int32).reshape(4, 5)
    tu.assert_allclose(jnp.asarray(x)[ix.ix_(np.array([0, 3]), np.array([4, 1]))], x[np.ix_([0, 3], [4, 1])])


def test_unravel_and_ravel_multi_index(rng):
    flat = rng.integers(0, 24, 7).astype(np.int32)
    tu.assert_allclose(ix.unravel_index(flat, (2, 3, 4)),
                       tuple(p.astype(np.int32) for p in np.unravel_index(flat, (2, 3, 4))))
    # JAX: negative indices wrap once, out-of-bounds indices clip.
    tu.assert_allclose(ix.unravel_index(np.array([-1, 7, 100, -7], np.int32), (2, 3)),
                       (np.array([1, 1, 1, 0], np.int32), np.array([2, 2, 2, 0], np.int32)))
    multi = tuple(rng.integers(0, d, 6).astype(np.int32) for d in (2, 3, 4))
    for order in "CF":
        tu.assert_allclose(ix.ravel_multi_index(multi, (2, 3, 4), order=order),
                           np.ravel_multi_index(multi, (2, 3, 4), order=order).astype(np.int32))
    bad = (np.array([0, 1, 5], np.int32), np.array([1, 2, -1], np.int32))
    tu.assert_allclose(ix.ravel_multi_index(bad, (2, 3), mode="clip"), np.array([1, 5, 3], np.int32))
    tu.assert_allclose(ix.ravel_multi_index(bad, (2, 3), mode="wrap"), np.array([1, 5, 5], np.int32))
    with pytest.raises(ValueError, match="invalid entry"):
        ix.ravel_multi_index(bad, (2, 3))
    with pytest.raises(fluxion.errors.ConcretizationTypeError, match="mode='wrap'"):
        fluxion.jit(lambda i, j: ix.ravel_multi_index((i, j), (2, 3)))(*bad)


def test_compress_extract_select_choose(rng):
    x = rng.standard_normal((4, 5)).astype(np.float32)
    c = np.array([True, False, True, True])
    tu.assert_allclose(srt.compress(c, x, axis=0), np.compress(c, x, axis=0))
    tu.assert_allclose(srt.compress(c[:3], x, axis=1), np.compress(c[:3], x, axis=1))
    tu.assert_allclose(srt.compress(c, x), np.compress(c, x))
    tu.assert_allclose(fluxion.jit(lambda c, x: srt.compress(c, x, axis=0, size=2))(c, x), x[[0, 2]])
    tu.assert_allclose(srt.compress(c, x, axis=0, size=4, fill_value=9.0), np.concatenate([x[[0, 2, 3]],
                                                                                         np.full((1, 5), 9.0)]).astype(np.float32))
    tu.assert_allclose(srt.extract(x > 0, x), np.extract(x > 0, x))
    conds, choices = [x > 0.5, x < -0.5], [x, 2 * x]
    tu.assert_allclose(ix.select(conds, choices, -1.0), np.select(conds, choices, -1.0))
    tu.check_grads(lambda x: ix.select([x > 0.5, x < -0.5], [x, 2 * x], 0.0), [x], order=2, rng=rng)
    a = rng.integers(0, 3, (4, 5))
    tu.assert_allclose(ix.choose(a, [x, -x, 2 * x]), np.choose(a, [x, -x, 2 * x]))
    for mode in ("wrap", "clip"):
        tu.assert_allclose(ix.choose(a + 2, [x, -x, 2 * x], mode=mode), np.choose(a + 2, [x, -x, 2 * x], mode=mode))
    with pytest.raises(ValueError, match="invalid entry"):
        ix.choose(a + 2, [x, -x, 2 * x])
    with pytest.raises(TypeError, match="boolean"):
        ix.select([x], [x])


# --------------------------------------------------------------------------------------------------------------
# Sorting-based: searchsorted, digitize, bincount, sort/argsort/lexsort
# --------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_matches_numpy(side, rng):
    a = np.sort(rng.integers(0, 6, 15)).astype(np.float32)
    v = rng.integers(-1, 8, (3, 4)).astype(np.float32) * 0.5
    tu.assert_allclose(srt.searchsorted(a, v, side=side), np.searchsorted(a, v, side=side).astype(np.int32))
    tu.assert_allclose(fluxion.jit(lambda a, v: srt.searchsorted(a, v, side=side))(a, v),
                       np.searchsorted(a, v, side=side).astype(np.int32))
    perm = rng.permutation(15)
    tu.assert_allclose(srt.searchsorted(a[perm], v, side=side, sorter=np.argsort(a[perm], kind="stable")),
                       np.searchsorted(a, v, side=side).astype(np.int32))
    tu.check_batching(lambda a, v: srt.searchsorted(a, v, side=side), [a, v], in_axes=(None, 0))


def test_searchsorted_nan_total_order_and_digitize_against_jax(rng):
    jax = pytest.importorskip("jax")
    a = np.array([1.0, 2.0, 2.0, np.nan, np.nan], np.float32)
    v = np.array([np.nan, 2.0, 0.0, 5.0, -np.inf], np.float32)
    for side in ("left", "right"):
        tu.assert_allclose(srt.searchsorted(a, v, side=side), np.asarray(jax.numpy.searchsorted(a, v, side=side)))
    bins = np.array([0.0, 1.0, 1.0, 2.0], np.float32)
    x = rng.integers(-1, 6, 10).astype(np.float32) * 0.5
    for right in (False, True):
        for b in (bins, bins[::-1]):
            tu.assert_allclose(srt.digitize(x, b, right), np.asarray(jax.numpy.digitize(x, b, right)))
            tu.assert_allclose(srt.digitize(x, b, right), np.digitize(x, b, right).astype(np.int32))


def test_bincount(rng):
    x = rng.integers(0, 6, 20).astype(np.int32)
    w = rng.standard_normal(20).astype(np.float32)
    tu.assert_allclose(ix.bincount(x), np.bincount(x).astype(np.int32))
    tu.assert_allclose(ix.bincount(x, w, minlength=9), np.bincount(x, w, minlength=9).astype(np.float32),
                       atol=1e-5, rtol=1e-5)
    tu.assert_allclose(fluxion.jit(lambda x: ix.bincount(x, length=4))(x), np.bincount(x)[:4].astype(np.int32))
    # As in JAX, negative values count toward bin 0.
    tu.assert_allclose(ix.bincount(np.array([-1, 0, 2], np.int32)), np.array([2, 0, 1], np.int32))
    tu.check_grads(lambda w: ix.bincount(x, w, length=6), [w], order=2)
    with pytest.raises(fluxion.errors.ConcretizationTypeError, match="length="):
        fluxion.jit(ix.bincount)(x)
    with pytest.raises(TypeError, match="integer"):
        ix.bincount(w)


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_and_argsort(axis, descending, rng):
    y = rng.integers(0, 3, (4, 6)).astype(np.float32)
    y[0, 2] = np.nan
    got = srt.argsort(y, axis, descending=descending)
    flat = y.ravel() if axis is None else y
    ax = 0 if axis is None else axis
    if descending:
        # Stable descending order: by (-value, index), NaN first.
        key = np.where(np.isnan(flat), -np.inf, -flat)
        want = np.argsort(key, axis=ax, kind="stable")
    else:
        want = np.argsort(flat, axis=ax, kind="stable")
    tu.assert_allclose(got, want.astype(np.int32))
    tu.assert_allclose(srt.sort(y, axis, descending=descending), np.take_along_axis(flat, want, ax))
    keys = [rng.integers(0, 3, 8), rng.integers(0, 3, 8)]
    tu.assert_allclose(srt.lexsort(keys), np.lexsort(keys).astype(np.int32))
    z = (rng.permutation(24).reshape(4, 6) * 0.1).astype(np.float32)
    tu.check_grads(lambda z: srt.sort(z, axis, descending=descending), [z], order=2, rng=rng)


def test_array_methods_use_this_module(rng):
    x = jnp.asarray(rng.standard_normal((3, 4)).astype(np.float32))
    tu.assert_allclose(x.take(jnp.array([0, 2]), axis=1), np.asarray(x)[:, [0, 2]])
    tu.assert_allclose(jnp.nonzero(x > 0)[0], np.nonzero(np.asarray(x) > 0)[0].astype(np.int32))
