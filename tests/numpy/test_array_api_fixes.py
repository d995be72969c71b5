"""Python Array API (2024.12) behaviour of `fluxion.numpy`, each record checked against real `jax.numpy`.

These are the regular CI checks for what the data-apis array-api-tests suite exercises (that suite itself runs in
`test_array_api_suite.py` only when a checkout of it is present): scalar types as dtype objects, the `device=`
arguments and attributes, and results the suite compares against JAX's.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


def _check_same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, equal_nan=True)


# ---------------------------------------------------------------------------------------------------------------
# Scalar types are dtype objects: `==` with anything never raises (the suite keys tables by dtype and compares
# dtypes with dicts, strings and None).
# ---------------------------------------------------------------------------------------------------------------

_OTHERS = [lambda m: {}, lambda m: {"a": 1}, lambda m: "float32", lambda m: "int8", lambda m: None, lambda m: 1.0,
           lambda m: [1], lambda m: object, lambda m: np.float32, lambda m: np.dtype("float32"), lambda m: np.int8,
           lambda m: np.dtype("int8"), lambda m: m.float32, lambda m: m.int8, lambda m: m.bfloat16,
           lambda m: np.dtype(m.bfloat16)]


@pytest.mark.parametrize("name", ["float32", "int8", "bool_", "bfloat16", "complex64", "uint16"])
@pytest.mark.parametrize("other", range(len(_OTHERS)))
def test_scalar_type_equality_matches_jax(name, other):
    def compare(m):
        t, o = getattr(m, name), _OTHERS[other](m)
        return (t == o, o == t, t != o, o != t)
    assert compare(fnp) == compare(jnp)


def test_scalar_types_key_equality_mappings():
    # The suite's EqualityMapping looks dtypes up by `==` over a list of (dtype, value) pairs.
    pairs = [(fnp.int8, "int8"), (fnp.float32, "float32"), (fnp.bool_, "bool")]
    assert [v for k, v in pairs if k == fnp.asarray([1.0]).dtype] == ["float32"]
    assert all(not (k == {}) for k, _ in pairs) and len({fnp.float32, fnp.float32}) == 1


# ---------------------------------------------------------------------------------------------------------------
# device= on the creation functions (keyword-only, as in JAX), astype and from_dlpack; Array.device/to_device.
# ---------------------------------------------------------------------------------------------------------------

_CREATION = {
    "zeros": lambda m, **kw: m.zeros((2, 3), **kw),
    "ones": lambda m, **kw: m.ones(4, m.int8, **kw),
    "empty": lambda m, **kw: m.zeros_like(m.empty((2,), **kw)),  # empty's values are unspecified
    "full": lambda m, **kw: m.full((2,), 7, **kw),
    "zeros_like": lambda m, **kw: m.zeros_like(m.arange(3), **kw),
    "ones_like": lambda m, **kw: m.ones_like(m.arange(3.0), dtype=m.int16, **kw),
    "empty_like": lambda m, **kw: m.empty_like(m.arange(3), **kw).shape,
    "full_like": lambda m, **kw: m.full_like(m.arange(3), 2.5, **kw),
    "arange": lambda m, **kw: m.arange(1, 7, 2, **kw),
    "linspace": lambda m, **kw: m.linspace(0.0, 1.0, 5, **kw),
    "eye": lambda m, **kw: m.eye(3, 4, k=1, **kw),
    "asarray": lambda m, **kw: m.asarray([1, 2], dtype=m.float32, **kw),
    "astype": lambda m, **kw: m.astype(m.arange(3), m.float32, **kw),
    "from_dlpack": lambda m, **kw: m.from_dlpack(np.arange(3, dtype=np.int32), **kw),
}


@pytest.mark.parametrize("name", sorted(_CREATION))
def test_device_argument(name):
    make = _CREATION[name]
    want = make(jnp, device=jax.devices()[0])
    got = make(fnp, device=fluxion.devices()[0])
    if isinstance(want, tuple):
        assert got == want
        return
    _check_same(got, want)
    assert got.device == fluxion.devices()[0]
    _check_same(make(fnp, device=None), want)
    # Traced: the placement is recorded, the values are the same.
    _check_same(fluxion.jit(lambda: make(fnp, device=fluxion.devices()[0]))(), want)


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like",
                                  "full_like", "arange", "linspace", "eye", "asarray", "astype", "from_dlpack"])
def test_device_is_keyword_only_as_in_jax(name):
    ours = inspect.signature(getattr(fnp, name)).parameters["device"]
    theirs = inspect.signature(getattr(jnp, name)).parameters["device"]
    assert (ours.kind, ours.default) == (theirs.kind, theirs.default)


def test_device_rejects_non_devices():
    with pytest.raises(ValueError, match="device must be None, a fluxion Device or a Sharding; got 'cpu'"):
        fnp.zeros(2, device="cpu")
    with pytest.raises(ValueError, match="stream must be None"):
        fnp.ones(2).to_device(fluxion.devices()[0], stream=1)


def test_array_device_and_to_device():
    x, xj = fnp.arange(3.0), jnp.arange(3.0)
    assert str(x.device) == str(xj.device) == "cpu:0"
    moved = x.to_device(fluxion.devices()[0])
    _check_same(moved, xj.to_device(jax.devices()[0]))
    assert moved.device == fluxion.devices()[0]
    assert x.to_device(None) is x
    # Tracers have no device, in JAX too.
    with pytest.raises(AttributeError):
        jax.jit(lambda t: t.device)(xj)
    with pytest.raises(AttributeError, match="has no attribute device"):
        fluxion.jit(lambda t: t.device)(x)


def test_from_dlpack_copy():
    src = np.arange(4.0)
    _check_same(fnp.from_dlpack(src, copy=True), jnp.from_dlpack(src, copy=True))
    with pytest.raises(ValueError, match="copy=False is not supported"):
        fnp.from_dlpack(src, copy=False)


# ---------------------------------------------------------------------------------------------------------------
# Results the suite compares: round of complex numbers, searchsorted's index dtype (also with x64).
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("decimals", [0, 1, -1])
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_round_complex(decimals, dtype):
    x = np.array([1.25 + 2.55j, -0.5 - 1.5j, 2.5 + 0.5j, 15.0 - 25.0j], dtype)
    want = jnp.round(x, decimals)
    _check_same(fnp.round(x, decimals), want)
    _check_same(fluxion.jit(lambda v: fnp.round(v, decimals))(x), want)
    _check_same(fnp.asarray(x).round(decimals), want)


@pytest.mark.parametrize("x64", [False, True])
@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_index_dtype(x64, side):
    a, v = np.array([1.0, 2.0, 2.0, 5.0]), np.array([[2.0, 0.0], [6.0, 2.0]])
    with fluxion.enable_x64(x64), jax.enable_x64(x64):
        want = jnp.searchsorted(a, v, side=side)
        _check_same(fnp.searchsorted(a, v, side=side), want)
        _check_same(fluxion.jit(lambda p, q: fnp.searchsorted(p, q, side=side))(a, v), want)
        _check_same(fnp.searchsorted(a[::-1], v, side=side, sorter=np.arange(4)[::-1]),
                    jnp.searchsorted(a[::-1], v, side=side, sorter=np.arange(4)[::-1]))
        _check_same(fnp.searchsorted(a, np.zeros((0,))), jnp.searchsorted(a, np.zeros((0,))))


# ---------------------------------------------------------------------------------------------------------------
# Reductions and linear algebra the suite checks by dtype and value (records run on both libraries).
# ---------------------------------------------------------------------------------------------------------------

_WHERE = np.array([[True, False, True], [True, False, False]])
_RECORDS = {
    "var_empty_correction": lambda m: m.var(np.zeros(0), correction=1),
    "std_single_ddof": lambda m: m.std(np.ones(1, np.float32), ddof=1),
    "var_axis_ddof_too_big": lambda m: m.var(np.ones((2, 3)), axis=1, ddof=3, keepdims=True),
    "std_axis_partly_nan": lambda m: m.std(np.arange(6.0).reshape(2, 3), axis=0, ddof=1, where=_WHERE),
    "var_ok": lambda m: m.var(np.arange(6.0).reshape(2, 3), axis=1, correction=0.5),
    "vecdot_int8": lambda m: m.vecdot(np.ones((2, 3), np.int8), np.full((3,), 3, np.int8)),
    "vecdot_uint16_int8": lambda m: m.vecdot(np.ones((2, 3), np.uint16), np.full((3,), 3, np.int8)),
    "vecdot_complex": lambda m: m.vecdot(np.array([1 + 2j, 3j], np.complex64), np.array([2 - 1j, 1], np.complex64)),
    "pinv_complex64": lambda m: m.linalg.pinv(np.array([[1 + 1j, 2], [3j, 4 - 1j], [0, 1]], np.complex64)),
    "pinv_complex_batched": lambda m: m.linalg.pinv(
        np.array([[[1 + 1j, 2], [3j, 4 - 1j]], [[2, 1j], [0, 1]]], np.complex64), rtol=1e-3),
    "pinv_real": lambda m: m.linalg.pinv(np.array([[1.0, 2], [3, 4], [5, 6]], np.float32)),
    "vector_norm_ord0_complex": lambda m: m.linalg.vector_norm(np.array([[1j, 0], [2, 3]], np.complex64), ord=0),
    "vector_norm_ord0_axis": lambda m: m.linalg.vector_norm(np.array([[1j, 0], [2, 0]], np.complex64), ord=0,
                                                            axis=1, keepdims=True),
    "vector_norm_ord0_real": lambda m: m.linalg.vector_norm(np.array([1.0, 0, 2], np.float32), ord=0),
}


@pytest.mark.parametrize("name", sorted(_RECORDS))
def test_records_match_jax(name):
    record = _RECORDS[name]
    want = record(jnp)
    _check_same(record(fnp), want)
    _check_same(fluxion.jit(lambda: record(fnp))(), want)


def test_pinv_complex_is_a_pseudo_inverse_and_differentiable():
    a = np.array([[1 + 1j, 2], [3j, 4 - 1j], [0, 1]], np.complex64)
    p = np.asarray(fnp.linalg.pinv(a))
    np.testing.assert_allclose(a @ p @ a, a, atol=1e-5)
    g = fluxion.grad(lambda x: fnp.sum(fnp.linalg.pinv(x)))(np.array([[2.0, 1.0], [0.5, 3.0]], np.float32))
    gj = jax.grad(lambda x: jnp.sum(jnp.linalg.pinv(x)))(np.array([[2.0, 1.0], [0.5, 3.0]], np.float32))
    np.testing.assert_allclose(np.asarray(g), np.asarray(gj), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------------------------------
# Errors: the same exception class as jax.numpy (the suite checks some of them with pytest.raises).
# ---------------------------------------------------------------------------------------------------------------

_ERRORS = {
    "matmul_contracting_mismatch": (TypeError, lambda m: m.matmul(m.ones((2, 3)), m.ones((2, 3)))),
    "eye_negative": (ValueError, lambda m: m.eye(-1)),
    "eye_negative_columns": (ValueError, lambda m: m.eye(2, -3)),
    "result_type_nothing": (ValueError, lambda m: m.result_type()),
    "namespace_old_version": (ValueError, lambda m: m.ones(2).__array_namespace__(api_version="2023.12")),
    "namespace_unknown_version": (ValueError, lambda m: m.ones(2).__array_namespace__(api_version="2019.12")),
}


@pytest.mark.parametrize("name", sorted(_ERRORS))
def test_errors_match_jax(name):
    error, call = _ERRORS[name]
    with pytest.raises(error):
        call(jnp)
    with pytest.raises(error):
        call(fnp)


def test_array_namespace_versions():
    x = fnp.ones(2)
    assert x.__array_namespace__() is fnp and x.__array_namespace__(api_version="2024.12") is fnp
    params = inspect.signature(type(x).__array_namespace__).parameters
    assert params["api_version"].kind == inspect.Parameter.KEYWORD_ONLY
    assert fnp.eye(0, 2).shape == jnp.eye(0, 2).shape == (0, 2)


# ---------------------------------------------------------------------------------------------------------------
# Complex special values (the suite's special-case tables): log2/log10 of 0, inf and nan parts, expm1 on the real
# axis, compared over a grid of special components.
# ---------------------------------------------------------------------------------------------------------------

_SPECIAL = [0.0, -0.0, 1.0, -1.0, 2.5, np.inf, -np.inf, np.nan]
_GRID = np.array([complex(a, b) for a in _SPECIAL for b in _SPECIAL])


def _same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype
    for g, w in ((got.real, want.real), (got.imag, want.imag)):
        same = (np.isnan(g) & np.isnan(w)) | ((g == w) & (np.signbit(g) == np.signbit(w))) | np.isclose(g, w)
        assert same.all(), (_GRID[~same], g[~same], w[~same])


@pytest.mark.parametrize("name", ["log2", "log10", "expm1"])
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_special_values(name, dtype):
    with fluxion.enable_x64(), jax.enable_x64():
        x = _GRID.astype(dtype)
        want = getattr(jnp, name)(x)
        _same_bits(getattr(fnp, name)(x), want)
        _same_bits(fluxion.jit(getattr(fnp, name))(x), want)


# ---------------------------------------------------------------------------------------------------------------
# Indexing with an empty result: no gather is formed (JAX's path), so size-0 axes can be indexed by arrays.
# ---------------------------------------------------------------------------------------------------------------

_EMPTY_INDEXING = {
    "ellipsis_array_newaxis": ((2, 0, 0), lambda m: (Ellipsis, m.asarray([0]), None)),
    "newaxes_then_array": ((0, 0, 2), lambda m: (None, None, m.asarray([0, 0, 0]))),
    "empty_index_array": ((3, 2), lambda m: (m.asarray([], dtype=m.int32),)),
    "array_into_nonempty_axis": ((3, 0), lambda m: (m.asarray([1, 2]),)),
    "slice_and_array": ((2, 3, 0), lambda m: (Ellipsis, slice(None, 2, -1), m.asarray([-3]))),
}


@pytest.mark.parametrize("name", sorted(_EMPTY_INDEXING))
def test_empty_result_indexing(name):
    shape, index = _EMPTY_INDEXING[name]
    x = np.zeros(shape, np.float32)
    want = jnp.asarray(x)[index(jnp)]
    _check_same(fnp.asarray(x)[index(fnp)], want)
    _check_same(fluxion.jit(lambda v: v[index(fnp)])(x), want)
    grad = fluxion.grad(lambda v: fnp.sum(v[index(fnp)]))(x)
    _check_same(grad, jax.grad(lambda v: jnp.sum(v[index(jnp)]))(x))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_astype_complex_to_bool(dtype):
    x = np.array([0j, 1j, 1 + 0j, complex(0, -0.0), complex(np.nan, 0)], dtype)
    want = jnp.astype(x, jnp.bool_)
    _check_same(fnp.astype(x, fnp.bool_), want)
    _check_same(fnp.asarray(x).astype(bool), want)
    _check_same(fluxion.jit(lambda v: fnp.astype(v, bool))(x), want)


@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_sort_descending_orders_ties_as_jax(axis):
    x = np.array([[3.0, np.nan, -0.0, 0.0], [-np.inf, 0.0, 1.0, -0.0]])
    want = jnp.sort(x, axis=axis, descending=True)
    got = fnp.sort(x, axis=axis, descending=True)
    _check_same(got, want)
    assert (np.signbit(np.asarray(got)) == np.signbit(np.asarray(want))).all()
    jitted = fluxion.jit(lambda v: fnp.sort(v, axis=axis, descending=True))(x)
    assert (np.signbit(np.asarray(jitted)) == np.signbit(np.asarray(want))).all()
