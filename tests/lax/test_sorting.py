"""Tests of `sort` (multi-operand) and `top_k` (fluxion/_src/lax/sorting.py).

Oracles: NumPy's stable sorts (`np.sort`, `np.argsort(kind='stable')`, `np.lexsort`), a Python `sorted` over
(value, index) keys for top_k, finite differences, a Python loop for `vmap`, eager execution for `jit`, and real
`jax.lax` where installed (NaN placement, -0.0 == 0.0, tie order).
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import fluxion
from fluxion._src import test_util as tu
from fluxion._src.lax import sorting as ls

f32, i32, bf16 = np.dtype(np.float32), np.dtype(np.int32), np.dtype(ml_dtypes.bfloat16)


def _with_specials(rng, shape):
    x = rng.standard_normal(shape).astype(np.float32)
    pick = rng.random(shape)
    x[pick < 0.1] = np.nan
    x[(pick >= 0.1) & (pick < 0.2)] = 0.0
    x[(pick >= 0.2) & (pick < 0.3)] = -0.0
    x[(pick >= 0.3) & (pick < 0.35)] = -np.inf
    return x


@pytest.mark.parametrize("shape,dim", [((7,), 0), ((3, 6), 1), ((3, 6), 0), ((2, 3, 4), 1), ((0, 3), 0)], ids=str)
@pytest.mark.parametrize("dtype", [f32, i32, np.dtype(np.bool_), np.dtype(np.uint8), bf16], ids=lambda d: d.name)
def test_sort_matches_numpy_stable_sort(shape, dim, dtype, rng):
    x = _with_specials(rng, shape).astype(dtype) if dtype.kind == "f" or dtype == bf16 else \
        tu.rand_like(rng, shape, dtype, "small_int")
    got = ls.sort(x, dim)
    want = np.sort(x.astype(np.float32) if dtype == bf16 else x, axis=dim, kind="stable").astype(dtype)
    tu.assert_allclose(got, want)
    tu.check_jit(lambda x: ls.sort(x, dim), [x])
    tu.check_eval_shape(lambda x: ls.sort(x, dim), [x])


def test_sort_nan_last_and_signed_zeros_tie():
    x = np.array([0.0, -0.0, np.nan, -np.nan, 1.0, -np.inf, 0.0], np.float32)
    out = np.asarray(ls.sort(x))
    assert np.isnan(out[-2:]).all() and out[0] == -np.inf and out[-3] == 1.0
    # 0.0, -0.0, 0.0 keep their original order (stable, equal keys).
    assert list(np.signbit(out[1:4])) == [False, True, False]
    k, v = ls.sort_key_val(np.array([0.0, -0.0, 0.0, -0.0], np.float32), np.arange(4, dtype=np.int32))
    tu.assert_allclose(v, np.arange(4, dtype=np.int32))


@pytest.mark.parametrize("num_keys", [1, 2, 3])
def test_multi_operand_sort_is_lexicographic(num_keys, rng):
    keys = [rng.integers(0, 3, (4, 9)).astype(np.int32) for _ in range(3)]
    payload = rng.standard_normal((4, 9)).astype(np.float32)
    outs = ls.sort(keys + [payload], dimension=1, num_keys=num_keys)
    assert isinstance(outs, tuple) and len(outs) == 4
    perm = np.lexsort(list(reversed(keys[:num_keys])), axis=1)
    for got, arr in zip(outs, keys + [payload]):
        tu.assert_allclose(got, np.take_along_axis(arr, perm, 1))


def test_sort_key_val_and_argsort_via_iota(rng):
    keys = rng.integers(0, 4, 10).astype(np.float32)
    vals = np.arange(10, dtype=np.int32)
    k, v = ls.sort_key_val(keys, vals)
    tu.assert_allclose(v, np.argsort(keys, kind="stable").astype(np.int32))
    tu.assert_allclose(k, np.sort(keys))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_sort_grads(dim, rng):
    x = (rng.permutation(20).reshape(4, 5) * 0.1).astype(np.float32)  # distinct: no ties within eps
    tu.check_grads(lambda x: ls.sort(x, dim), [x], order=2, rng=rng)
    y = rng.standard_normal((4, 5)).astype(np.float32)
    tu.check_grads(lambda x, y: ls.sort([x, y], dim, num_keys=1)[1], [x, y], order=2, rng=rng)


def test_jit_of_grad_matches_eager(rng):
    x = (rng.permutation(20).reshape(4, 5) * 0.1).astype(np.float32)
    tu.check_jit(fluxion.grad(lambda x: (ls.sort(x, 0) * np.arange(20.0).reshape(4, 5)).sum()), [x])
    tu.check_jit(fluxion.grad(lambda x: (ls.top_k(x, 2)[0] ** 2).sum()), [x])


@pytest.mark.parametrize("axes", [0, 1, 2], ids=str)
def test_sort_vmap(axes, rng):
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    tu.check_batching(lambda x: ls.sort(x, 0), [x], in_axes=axes)
    y = rng.integers(0, 2, np.delete(x.shape, axes)).astype(np.int32)
    tu.check_batching(lambda x, y: ls.sort([y, x], -1, num_keys=1), [x, y], in_axes=(axes, None))


def test_sort_against_jax(rng):
    jax = pytest.importorskip("jax")
    x = _with_specials(rng, (5, 8))
    for dim in (0, 1):
        tu.assert_allclose(ls.sort(x, dim), np.asarray(jax.lax.sort(x, dim)))
    keys = rng.integers(0, 3, (2, 8)).astype(np.float32)
    got = ls.sort([keys[0], keys[1], x[0]], num_keys=2)
    want = jax.lax.sort([keys[0], keys[1], x[0]], num_keys=2)
    tu.assert_allclose(got, tuple(np.asarray(w) for w in want))
    z = (rng.permutation(40).reshape(5, 8) * 0.1).astype(np.float32)
    wgt = np.arange(40, dtype=np.float32).reshape(5, 8)
    gj = jax.grad(lambda v: (jax.lax.sort(v, 1) * wgt).sum())(z)
    gm = fluxion.grad(lambda v: (ls.sort(v, 1) * wgt).sum())(z)
    tu.assert_allclose(gm, np.asarray(gj))


def test_sort_errors():
    with pytest.raises(TypeError, match="same shape"):
        ls.sort([np.zeros(3, np.float32), np.zeros(4, np.float32)])
    with pytest.raises(ValueError, match="num_keys"):
        ls.sort([np.zeros(3, np.float32)], num_keys=2)
    with pytest.raises(ValueError, match="dimension 2 is out of bounds"):
        ls.sort(np.zeros((3, 2), np.float32), 2)
    with pytest.raises(TypeError, match="rank >= 1"):
        ls.sort(np.float32(1.0))


# --------------------------------------------------------------------------------------------------------------
# top_k
# --------------------------------------------------------------------------------------------------------------

def top_k_reference(x, k):
    """Per row: indices ordered by (value descending, NaN first, index ascending)."""
    rows = x.reshape(-1, x.shape[-1])
    vals, idxs = [], []
    for row in rows:
        order = sorted(range(len(row)), key=lambda j: (0 if math.isnan(row[j]) else 1,
                                                       -float(row[j]) if not math.isnan(row[j]) else 0.0, j))[:k]
        idxs.append(order)
        vals.append(row[order])
    shape = x.shape[:-1] + (k,)
    return np.asarray(vals, x.dtype).reshape(shape), np.asarray(idxs, np.int32).reshape(shape)


@pytest.mark.parametrize("shape,k", [((6,), 3), ((3, 7), 7), ((2, 3, 5), 1), ((4, 5), 0)], ids=str)
@pytest.mark.parametrize("dtype", [f32, i32], ids=lambda d: d.name)
def test_top_k_matches_reference(shape, k, dtype, rng):
    x = _with_specials(rng, shape) if dtype == f32 else tu.rand_like(rng, shape, dtype, "small_int")
    values, indices = ls.top_k(x, k)
    want_v, want_i = top_k_reference(np.asarray(x), k)
    tu.assert_allclose(values, want_v)
    tu.assert_allclose(indices, want_i)
    tu.check_jit(lambda x: ls.top_k(x, k), [x])
    tu.check_eval_shape(lambda x: ls.top_k(x, k), [x])


def test_top_k_axis_argument(rng):
    x = rng.standard_normal((5, 3)).astype(np.float32)
    v, i = ls.top_k(x, 2, axis=0)
    wv, wi = top_k_reference(x.T, 2)
    tu.assert_allclose(v, wv.T)
    tu.assert_allclose(i, wi.T)


def test_top_k_grads_and_vmap(rng):
    x = (rng.permutation(24).reshape(4, 6) * 0.1).astype(np.float32)
    tu.check_grads(lambda x: ls.top_k(x, 3)[0], [x], order=2, rng=rng)
    tu.check_batching(lambda x: ls.top_k(x, 2), [x], in_axes=0)
    tu.check_batching(lambda x: ls.top_k(x, 2), [x], in_axes=1)


def test_top_k_against_jax(rng):
    jax = pytest.importorskip("jax")
    x = _with_specials(rng, (4, 9))
    x[0, :3] = 2.0  # ties
    got = ls.top_k(x, 4)
    want = jax.lax.top_k(x, 4)
    tu.assert_allclose(got, tuple(np.asarray(w) for w in want))


def test_top_k_errors():
    with pytest.raises(ValueError, match="k=4"):
        ls.top_k(np.zeros(3, np.float32), 4)
    with pytest.raises(TypeError, match="rank >= 1"):
        ls.top_k(np.float32(1.0), 1)
