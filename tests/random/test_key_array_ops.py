"""Typed PRNG key arrays (`random.key`, dtype `key<fry>`) in `fluxion.numpy` and `fluxion.lax` functions, against
JAX 0.10.2.

One record per call: a function of (numpy module, lax module, keys K of shape (2, 3), key k1 of shape ()), run
with fluxion and with JAX on keys built from the same seeds. The results must agree in kind (key array or not),
shape, dtype and data (`random.key_data` for keys); where JAX refuses the call, fluxion must raise the same
exception class. Every accepted call is also run under `jit` (the keys traced) against its eager result. Plus:
`vmap` over a batch of keys, `grad` through a function that selects keys, and the eager path of ordinary arrays.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp
from fluxion import lax as flax_
from fluxion import random

jax = pytest.importorskip("jax")
jnp = jax.numpy


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    call: Callable  # (np, lax, K, k1) -> result
    error: type | None = None  # the class JAX raises, if it refuses the call
    jit: bool = True  # whether to also compare under jit (False for calls with data-dependent shapes)


def _c(name, call, error=None, jit=True):
    return Case(name, call, error, jit)


B = lambda np_: np_.array([[True, False, True], [False, True, True]])  # noqa: E731
I2 = lambda np_: np_.array([2, 0])  # noqa: E731

CASES = [
    # numpy: arrangement of one key array
    _c("reshape", lambda np_, lx, K, k1: np_.reshape(K, (3, 2))),
    _c("reshape_-1", lambda np_, lx, K, k1: np_.reshape(K, (-1,))),
    _c("method_reshape", lambda np_, lx, K, k1: K.reshape(6)),
    _c("ravel", lambda np_, lx, K, k1: np_.ravel(K)),
    _c("method_squeeze", lambda np_, lx, K, k1: K[None].squeeze(0)),
    _c("method_swapaxes", lambda np_, lx, K, k1: K.swapaxes(0, 1)),
    _c("method_transpose", lambda np_, lx, K, k1: K.transpose()),
    _c("method_transpose_axes", lambda np_, lx, K, k1: K[None].transpose(2, 0, 1)),
    _c("method_take", lambda np_, lx, K, k1: K.take(I2(np_), axis=1)),
    _c("at_get", lambda np_, lx, K, k1: K.at[:, I2(np_)].get()),
    _c("at_set", lambda np_, lx, K, k1: K.at[1, 0].set(k1)),
    _c("at_set_rows", lambda np_, lx, K, k1: K.at[0].set(K[1, ::-1])),
    _c("at_add", lambda np_, lx, K, k1: K.at[0].add(k1), error=TypeError),
    _c("at_set_number", lambda np_, lx, K, k1: K.at[0].set(0), error=TypeError),
    _c("expand_dims", lambda np_, lx, K, k1: np_.expand_dims(K, -1)),
    _c("expand_dims_tuple", lambda np_, lx, K, k1: np_.expand_dims(K, (0, 3))),
    _c("squeeze", lambda np_, lx, K, k1: np_.squeeze(np_.expand_dims(K, 1), 1)),
    _c("moveaxis", lambda np_, lx, K, k1: np_.moveaxis(np_.expand_dims(K, 0), 0, -1)),
    _c("swapaxes", lambda np_, lx, K, k1: np_.swapaxes(K, 0, -1)),
    _c("transpose", lambda np_, lx, K, k1: np_.transpose(K)),
    _c("transpose_axes", lambda np_, lx, K, k1: np_.transpose(np_.expand_dims(K, 0), (2, 0, 1))),
    _c("permute_dims", lambda np_, lx, K, k1: np_.permute_dims(K, (1, 0))),
    _c("matrix_transpose", lambda np_, lx, K, k1: np_.matrix_transpose(K)),
    _c("flip", lambda np_, lx, K, k1: np_.flip(K, -1)),
    _c("flip_all", lambda np_, lx, K, k1: np_.flip(K)),
    _c("fliplr", lambda np_, lx, K, k1: np_.fliplr(K)),
    _c("flipud", lambda np_, lx, K, k1: np_.flipud(K)),
    _c("rot90", lambda np_, lx, K, k1: np_.rot90(K)),
    _c("roll", lambda np_, lx, K, k1: np_.roll(K, 1, axis=1)),
    _c("roll_flat", lambda np_, lx, K, k1: np_.roll(K, 2)),
    _c("rollaxis", lambda np_, lx, K, k1: np_.rollaxis(K, 1)),
    _c("tile", lambda np_, lx, K, k1: np_.tile(K, (2, 1))),
    _c("tile_scalar_key", lambda np_, lx, K, k1: np_.tile(k1, 3)),
    _c("repeat", lambda np_, lx, K, k1: np_.repeat(K, 2, axis=0)),
    _c("repeat_flat", lambda np_, lx, K, k1: np_.repeat(K, 2)),
    _c("take", lambda np_, lx, K, k1: np_.take(K, I2(np_), axis=1)),
    _c("take_flat", lambda np_, lx, K, k1: np_.take(K, I2(np_))),
    _c("take_along_axis", lambda np_, lx, K, k1: np_.take_along_axis(K, np_.array([[0, 2], [1, 1]]), axis=1)),
    _c("getitem", lambda np_, lx, K, k1: K[:, 1:]),
    _c("getitem_reversed", lambda np_, lx, K, k1: K[::-1, ::2]),
    _c("broadcast_to", lambda np_, lx, K, k1: np_.broadcast_to(k1, (3, 2))),
    _c("broadcast_to_rows", lambda np_, lx, K, k1: np_.broadcast_to(K, (4, 2, 3))),
    _c("broadcast_arrays", lambda np_, lx, K, k1: np_.broadcast_arrays(K, k1)),
    _c("atleast_1d", lambda np_, lx, K, k1: np_.atleast_1d(k1)),
    _c("atleast_2d", lambda np_, lx, K, k1: np_.atleast_2d(k1)),
    _c("atleast_3d", lambda np_, lx, K, k1: np_.atleast_3d(K)),
    _c("atleast_1d_many", lambda np_, lx, K, k1: np_.atleast_1d(k1, K)),
    _c("diagonal", lambda np_, lx, K, k1: np_.diagonal(K)),
    _c("diag", lambda np_, lx, K, k1: np_.diag(K)),
    _c("tril", lambda np_, lx, K, k1: np_.tril(K)),
    _c("triu", lambda np_, lx, K, k1: np_.triu(K, 1)),
    _c("resize", lambda np_, lx, K, k1: np_.resize(K, (4, 2))),
    _c("delete", lambda np_, lx, K, k1: np_.delete(K, 1, axis=1)),
    _c("compress", lambda np_, lx, K, k1: np_.compress(np_.array([True, False]), K, axis=0), jit=False),
    _c("extract", lambda np_, lx, K, k1: np_.extract(B(np_), K), jit=False),
    _c("copy", lambda np_, lx, K, k1: np_.copy(K)),
    _c("pad_edge", lambda np_, lx, K, k1: np_.pad(K, 1, mode="edge")),
    _c("pad_wrap", lambda np_, lx, K, k1: np_.pad(K, ((0, 0), (2, 1)), mode="wrap")),
    _c("pad_constant", lambda np_, lx, K, k1: np_.pad(K, 1), error=ValueError),
    # numpy: splitting
    _c("split", lambda np_, lx, K, k1: np_.split(K, 3, axis=1)),
    _c("split_indices", lambda np_, lx, K, k1: np_.split(K, [1], axis=-1)),
    _c("array_split", lambda np_, lx, K, k1: np_.array_split(K, 2, axis=1)),
    _c("hsplit", lambda np_, lx, K, k1: np_.hsplit(K, 3)),
    _c("vsplit", lambda np_, lx, K, k1: np_.vsplit(K, 2)),
    _c("dsplit", lambda np_, lx, K, k1: np_.dsplit(np_.expand_dims(K, -1), 1)),
    _c("unstack", lambda np_, lx, K, k1: np_.unstack(K, axis=1)),
    # numpy: several key arrays
    _c("stack", lambda np_, lx, K, k1: np_.stack([K, K[::-1]])),
    _c("stack_last", lambda np_, lx, K, k1: np_.stack([K, K], axis=-1)),
    _c("concatenate", lambda np_, lx, K, k1: np_.concatenate([K, K[:, :1]], axis=1)),
    _c("concatenate_flat", lambda np_, lx, K, k1: np_.concatenate([K, K], axis=None)),
    _c("concat", lambda np_, lx, K, k1: np_.concat([K, K])),
    _c("hstack", lambda np_, lx, K, k1: np_.hstack([K, K])),
    _c("vstack", lambda np_, lx, K, k1: np_.vstack([K, K[:1]])),
    _c("vstack_scalars", lambda np_, lx, K, k1: np_.vstack([k1, k1])),
    _c("dstack", lambda np_, lx, K, k1: np_.dstack([K, K])),
    _c("column_stack", lambda np_, lx, K, k1: np_.column_stack([K[0], K[1]])),
    _c("block", lambda np_, lx, K, k1: np_.block([[K, K], [K, K]])),
    _c("append", lambda np_, lx, K, k1: np_.append(K, K, axis=0)),
    _c("insert", lambda np_, lx, K, k1: np_.insert(K, 1, k1, axis=1)),
    _c("concatenate_rows_of_one_array", lambda np_, lx, K, k1: np_.concatenate(K)),
    _c("stack_rows_of_one_array", lambda np_, lx, K, k1: np_.stack(K)),
    _c("hstack_tuple", lambda np_, lx, K, k1: np_.hstack((K, K))),
    _c("array_nested_lists", lambda np_, lx, K, k1: np_.array([[K[0, 0]], [K[0, 1]]])),
    _c("roll_two_axes", lambda np_, lx, K, k1: np_.roll(K, (1, 1), axis=(0, 1))),
    _c("take_clip", lambda np_, lx, K, k1: np_.take(K, np_.array([5, -9]), axis=1, mode="clip")),
    _c("take_fill", lambda np_, lx, K, k1: np_.take(K, np_.array([5, 1]), axis=1, mode="fill")),
    _c("select_number_default", lambda np_, lx, K, k1: np_.select([B(np_)], [K]), error=ValueError),
    _c("where", lambda np_, lx, K, k1: np_.where(B(np_), K, k1)),
    _c("where_scalar_cond", lambda np_, lx, K, k1: np_.where(False, K, K[::-1])),
    _c("choose", lambda np_, lx, K, k1: np_.choose(np_.array([0, 1, 0]), [K[0], K[1]])),
    _c("select", lambda np_, lx, K, k1: np_.select([B(np_)], [K], k1)),
    # numpy: comparisons of whole keys
    _c("equal", lambda np_, lx, K, k1: np_.equal(K, K[:1])),
    _c("not_equal", lambda np_, lx, K, k1: np_.not_equal(K, K[:1])),
    _c("array_equal", lambda np_, lx, K, k1: np_.array_equal(K, K)),
    _c("array_equal_no", lambda np_, lx, K, k1: np_.array_equal(K, K[::-1])),
    _c("isin", lambda np_, lx, K, k1: np_.isin(K, K[0])),
    _c("isin_invert", lambda np_, lx, K, k1: np_.isin(K, K[1], invert=True)),
    # numpy: creation and conversion
    _c("zeros_like", lambda np_, lx, K, k1: np_.zeros_like(K)),
    _c("ones_like", lambda np_, lx, K, k1: np_.ones_like(K)),
    _c("empty_like_shape", lambda np_, lx, K, k1: np_.empty_like(K, shape=(4,))),
    _c("full_like", lambda np_, lx, K, k1: np_.full_like(K, 3)),
    _c("zeros_like_float", lambda np_, lx, K, k1: np_.zeros_like(K, dtype=np_.float32)),
    _c("zeros_key_dtype", lambda np_, lx, K, k1: np_.zeros((2,), dtype=K.dtype)),
    _c("full_key", lambda np_, lx, K, k1: np_.full((2, 2), k1)),
    _c("array", lambda np_, lx, K, k1: np_.array(K)),
    _c("asarray", lambda np_, lx, K, k1: np_.asarray(K)),
    _c("array_of_list", lambda np_, lx, K, k1: np_.array([k1, K[0, 0]])),
    _c("astype_key", lambda np_, lx, K, k1: np_.astype(K, K.dtype)),
    _c("astype_uint32", lambda np_, lx, K, k1: np_.astype(K, np_.uint32), error=ValueError),
    _c("array_uint32", lambda np_, lx, K, k1: np_.array(K, dtype=np_.uint32), error=ValueError),
    # numpy: refused (arithmetic, ordering, reductions, mixing keys with numbers)
    _c("add", lambda np_, lx, K, k1: np_.add(K, K), error=TypeError),
    _c("multiply", lambda np_, lx, K, k1: np_.multiply(K, 2), error=TypeError),
    _c("negative", lambda np_, lx, K, k1: np_.negative(K), error=TypeError),
    _c("greater", lambda np_, lx, K, k1: np_.greater(K, K), error=TypeError),
    _c("sum", lambda np_, lx, K, k1: np_.sum(K), error=TypeError),
    _c("sort", lambda np_, lx, K, k1: np_.sort(K), error=TypeError),
    _c("where_cond_key", lambda np_, lx, K, k1: np_.where(K, 1, 2), error=TypeError),
    _c("concatenate_mixed", lambda np_, lx, K, k1: np_.concatenate([K, np_.zeros((2, 3), np_.uint32)]),
       error=ValueError),
    _c("stack_mixed", lambda np_, lx, K, k1: np_.stack([K, np_.zeros((2, 3), np_.uint32)]), error=ValueError),
    _c("where_mixed", lambda np_, lx, K, k1: np_.where(True, K, 0), error=ValueError),
    _c("array_mixed", lambda np_, lx, K, k1: np_.array([k1, 0]), error=ValueError),
    _c("reshape_bad", lambda np_, lx, K, k1: np_.reshape(K, (4,)), error=TypeError),
    _c("expand_dims_bad", lambda np_, lx, K, k1: np_.expand_dims(K, 5), error=ValueError),
    _c("take_bad_axis", lambda np_, lx, K, k1: np_.take(K, I2(np_), axis=3), error=ValueError),
    _c("broadcast_to_bad", lambda np_, lx, K, k1: np_.broadcast_to(K, (3, 3)), error=ValueError),
    # lax
    _c("lax.select", lambda np_, lx, K, k1: lx.select(B(np_), K, K[::-1])),
    _c("lax.select_n", lambda np_, lx, K, k1: lx.select_n(np_.array([[0, 1, 2]] * 2), K, K[::-1], K)),
    _c("lax.broadcast_in_dim", lambda np_, lx, K, k1: lx.broadcast_in_dim(K, (2, 4, 3), (0, 2))),
    _c("lax.broadcast", lambda np_, lx, K, k1: lx.broadcast(K, (4,))),
    _c("lax.broadcast_to_rank", lambda np_, lx, K, k1: lx.broadcast_to_rank(K, 3)),
    _c("lax.dynamic_slice", lambda np_, lx, K, k1: lx.dynamic_slice(K, (0, 1), (2, 2))),
    _c("lax.dynamic_update_slice", lambda np_, lx, K, k1: lx.dynamic_update_slice(K, K[:1, :1], (1, 1))),
    _c("lax.dynamic_slice_in_dim", lambda np_, lx, K, k1: lx.dynamic_slice_in_dim(K, 1, 2, axis=1)),
    _c("lax.dynamic_index_in_dim", lambda np_, lx, K, k1: lx.dynamic_index_in_dim(K, 1, axis=1)),
    _c("lax.dynamic_update_slice_in_dim",
       lambda np_, lx, K, k1: lx.dynamic_update_slice_in_dim(K, K[:, :1], 2, axis=1)),
    _c("lax.dynamic_update_index_in_dim",
       lambda np_, lx, K, k1: lx.dynamic_update_index_in_dim(K, K[:, 0], 1, axis=1)),
    _c("lax.concatenate", lambda np_, lx, K, k1: lx.concatenate([K, K[:1]], 0)),
    _c("lax.reshape", lambda np_, lx, K, k1: lx.reshape(K, (6,))),
    _c("lax.transpose", lambda np_, lx, K, k1: lx.transpose(K, (1, 0))),
    _c("lax.rev", lambda np_, lx, K, k1: lx.rev(K, (1,))),
    _c("lax.slice", lambda np_, lx, K, k1: lx.slice(K, (0, 0), (2, 3), (1, 2))),
    _c("lax.slice_in_dim", lambda np_, lx, K, k1: lx.slice_in_dim(K, 0, 2, axis=1)),
    _c("lax.index_in_dim", lambda np_, lx, K, k1: lx.index_in_dim(K, 1, 1, keepdims=False)),
    _c("lax.squeeze", lambda np_, lx, K, k1: lx.squeeze(lx.expand_dims(K, (0,)), (0,))),
    _c("lax.expand_dims", lambda np_, lx, K, k1: lx.expand_dims(K, (2,))),
    _c("lax.split", lambda np_, lx, K, k1: lx.split(K, (1, 2), axis=1)),
    _c("lax.tile", lambda np_, lx, K, k1: lx.tile(K, (1, 2))),
    _c("lax.collapse", lambda np_, lx, K, k1: lx.collapse(K, 0, 2)),
    _c("lax.unstack", lambda np_, lx, K, k1: lx.unstack(K, axis=1)),
    _c("lax.index_take", lambda np_, lx, K, k1: lx.index_take(K, (np_.array([1, 0]),), (0,))),
    _c("lax.full_like", lambda np_, lx, K, k1: lx.full_like(K, 7)),
    _c("lax.gather", lambda np_, lx, K, k1: lx.gather(
        K, np_.array([[1], [0]]), lx.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                                            start_index_map=(0,)), (1, 3))),
    _c("lax.scatter", lambda np_, lx, K, k1: lx.scatter(
        K, np_.array([[1]]), K[:1], lx.ScatterDimensionNumbers(update_window_dims=(1,),
                                                              inserted_window_dims=(0,),
                                                              scatter_dims_to_operand_dims=(0,)))),
    _c("lax.eq", lambda np_, lx, K, k1: lx.eq(K, K[::-1])),
    _c("lax.ne", lambda np_, lx, K, k1: lx.ne(K, K[::-1])),
    _c("lax.add", lambda np_, lx, K, k1: lx.add(K, K), error=TypeError),
    _c("lax.lt", lambda np_, lx, K, k1: lx.lt(K, K), error=TypeError),
    _c("lax.sort", lambda np_, lx, K, k1: lx.sort(K), error=TypeError),
    _c("lax.reduce_precision", lambda np_, lx, K, k1: lx.reduce_precision(K, 8, 7), error=TypeError),
    _c("lax.convert_element_type", lambda np_, lx, K, k1: lx.convert_element_type(K, np_.uint32),
       error=ValueError),
    _c("lax.bitcast_convert_type", lambda np_, lx, K, k1: lx.bitcast_convert_type(K, np_.uint32),
       error=ValueError),
]


def _fluxion_keys():
    return random.split(random.key(0), 6).reshape(2, 3), random.key(1)


def _jax_keys():
    return jax.random.split(jax.random.key(0), 6).reshape(2, 3), jax.random.key(1)


def _is_jax_key(x) -> bool:
    return hasattr(x, "dtype") and jnp.issubdtype(x.dtype, jax.dtypes.prng_key)


def _assert_same(ours: Any, theirs: Any, where: str) -> None:
    if isinstance(theirs, (list, tuple)):
        assert isinstance(ours, (list, tuple)) and len(ours) == len(theirs), where
        for i, (o, t) in enumerate(zip(ours, theirs)):
            _assert_same(o, t, f"{where}[{i}]")
        return
    if _is_jax_key(theirs):
        assert isinstance(ours, random.PRNGKeyArray), f"{where}: expected a key array, got {type(ours)}"
        assert str(ours.dtype) == "key<fry>"
        assert ours.shape == theirs.shape, (where, ours.shape, theirs.shape)
        np.testing.assert_array_equal(np.asarray(random.key_data(ours)), np.asarray(jax.random.key_data(theirs)),
                                      err_msg=where)
        return
    assert not isinstance(ours, random.PRNGKeyArray), where
    assert np.asarray(ours).dtype == np.asarray(theirs).dtype, (where, np.asarray(ours).dtype)
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs), err_msg=where)


def _data(x: Any) -> Any:
    if isinstance(x, (list, tuple)):
        return [_data(y) for y in x]
    return np.asarray(random.key_data(x)) if isinstance(x, random.PRNGKeyArray) else np.asarray(x)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_key_array_op_matches_jax(case):
    K, k1 = _fluxion_keys()
    JK, jk1 = _jax_keys()
    if case.error is not None:
        with pytest.raises(case.error):
            case.call(jnp, jax.lax, JK, jk1)
        with pytest.raises(case.error):
            case.call(fnp, flax_, K, k1)
        return
    theirs = case.call(jnp, jax.lax, JK, jk1)
    ours = case.call(fnp, flax_, K, k1)
    _assert_same(ours, theirs, case.name)
    if case.jit:
        jitted = fluxion.jit(lambda K, k1: case.call(fnp, flax_, K, k1))(K, k1)
        _assert_same(jitted, theirs, case.name + " under jit")


def _words(data, f):
    return np.stack([f(data[..., w]) for w in range(2)], axis=-1)


@pytest.mark.parametrize("reshape,expected", [
    (lambda K: fnp.reshape(K, (3, 2), order="F"), lambda d: _words(d, lambda w: w.reshape((3, 2), order="F"))),
    (lambda K: flax_.reshape(K, (3, 2), dimensions=(1, 0)), lambda d: _words(d, lambda w: w.T.reshape((3, 2)))),
], ids=["jnp_order_F", "lax_dimensions"])
def test_column_major_reshapes_reorder_whole_keys(reshape, expected):
    # JAX 0.10 fails to compile these calls; the key result is the same reshape applied to each key as a unit.
    K, _ = _fluxion_keys()
    want = expected(np.asarray(random.key_data(K)))
    for out in (reshape(K), fluxion.jit(reshape)(K)):
        assert out.shape == (3, 2)
        np.testing.assert_array_equal(np.asarray(random.key_data(out)), want)


def test_lax_pad_with_a_key_padding_value():
    # JAX 0.10 fails to compile this call; the result is the keys with copies of the padding key around them.
    K, k1 = _fluxion_keys()
    out = flax_.pad(K, k1, [(0, 0, 0), (1, 2, 0)])
    assert out.shape == (2, 6)
    data, pad = np.asarray(random.key_data(K)), np.asarray(random.key_data(k1))
    expected = np.concatenate([np.broadcast_to(pad, (2, 1, 2)), data, np.broadcast_to(pad, (2, 2, 2))], axis=1)
    np.testing.assert_array_equal(np.asarray(random.key_data(out)), expected)


def test_lax_mixing_keys_and_numbers_is_a_type_error():
    K, _ = _fluxion_keys()
    with pytest.raises(TypeError, match="key<fry>"):
        flax_.concatenate([K, fnp.zeros((2, 3), fnp.uint32)], 0)


def test_vmap_over_keys_matches_jax():
    K, k1 = _fluxion_keys()
    JK, jk1 = _jax_keys()

    def body(np_, lx):
        def f(row, k):
            # row: keys of shape (3,); k: one key.
            picked = np_.where(np_.arange(row.shape[0]) % 2 == 0, row, k)
            return np_.stack([np_.roll(picked, 1), lx.dynamic_update_index_in_dim(row, k, 0, 0)])
        return f

    ours = fluxion.vmap(body(fnp, flax_), in_axes=(0, None))(K, k1)
    theirs = jax.vmap(body(jnp, jax.lax), in_axes=(0, None))(JK, jk1)
    _assert_same(ours, theirs, "vmap")
    ours_jit = fluxion.jit(fluxion.vmap(body(fnp, flax_), in_axes=(1, None)))(K, k1)
    theirs_jit = jax.vmap(body(jnp, jax.lax), in_axes=(1, None))(JK, jk1)
    _assert_same(ours_jit, theirs_jit, "jit(vmap)")


def test_grad_through_key_selection_matches_jax():
    K, k1 = _fluxion_keys()
    JK, jk1 = _jax_keys()

    def loss(np_, lx, rnd):
        def f(x, K, k1):
            keys = np_.where(x[:, None] > 0, K, k1)  # keys chosen by the sign of x: no derivative through them
            noise = rnd.uniform(np_.ravel(keys)[1], (2,))
            return np_.sum(x * x * noise)
        return f

    x = np.array([0.5, -1.5], np.float32)
    ours = fluxion.grad(loss(fnp, flax_, random))(fnp.asarray(x), K, k1)
    theirs = jax.grad(loss(jnp, jax.lax, jax.random))(jnp.asarray(x), JK, jk1)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6)
    ours_jit = fluxion.jit(fluxion.grad(loss(fnp, flax_, random)))(fnp.asarray(x), K, k1)
    np.testing.assert_allclose(np.asarray(ours_jit), np.asarray(theirs), rtol=1e-6)


def test_vmap_with_a_batched_condition_matches_jax():
    K, k1 = _fluxion_keys()
    JK, jk1 = _jax_keys()
    cond = np.array([[True, False, True], [False, False, True]])

    def f(np_):
        return lambda c, row, k: np_.where(c, row, k)

    ours = fluxion.vmap(f(fnp), in_axes=(0, 0, None))(fnp.asarray(cond), K, k1)
    theirs = jax.vmap(f(jnp), in_axes=(0, 0, None))(jnp.asarray(cond), JK, jk1)
    _assert_same(ours, theirs, "vmap(where)")
    ours = fluxion.vmap(f(fnp), in_axes=(1, None, 0))(fnp.asarray(cond), K[:, 0], K[1])
    theirs = jax.vmap(f(jnp), in_axes=(1, None, 0))(jnp.asarray(cond), JK[:, 0], JK[1])
    _assert_same(ours, theirs, "vmap(where) over the other operand")


@pytest.mark.parametrize("module", [fnp, flax_], ids=["numpy", "lax"])
def test_wrappers_keep_the_signatures(module):
    import inspect
    wrapped = [n for n in dir(module) if hasattr(getattr(module, n), "__wrapped_for_keys__")]
    assert len(wrapped) > 20
    for n in wrapped:
        fn = getattr(module, n)
        original = fn.__wrapped_for_keys__
        assert inspect.signature(fn, follow_wrapped=False) == inspect.signature(original), n
        assert fn.__doc__ == original.__doc__, n


def test_ordinary_arrays_take_the_unwrapped_functions():
    # The wrappers hand ordinary arguments straight to the original functions.
    x = fnp.arange(6).reshape(2, 3)
    for name in ("reshape", "stack", "where", "zeros_like", "array"):
        assert getattr(fnp, name).__wrapped_for_keys__ is not None
    np.testing.assert_array_equal(np.asarray(fnp.stack([x, x])), np.stack([np.asarray(x)] * 2))
    np.testing.assert_array_equal(np.asarray(fnp.where(x > 2, x, 0)), np.where(np.asarray(x) > 2, np.asarray(x), 0))
    assert fnp.array([1.0, 2.0]).dtype == np.float32
