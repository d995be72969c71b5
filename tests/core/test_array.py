"""Tests of `fluxion.Array`: properties, conversions, printing, operators and methods.

Oracles: NumPy on the same values, hand-written reprs in JAX's format, and real JAX's repr/str where installed.
"""

from __future__ import annotations

import copy
import operator

import ml_dtypes
import numpy as np
import pytest

import fluxion as jax
import fluxion.numpy as jnp
from fluxion._src import test_util as tu


def test_properties():
    x = jnp.zeros((2, 3), jnp.float16)
    assert x.shape == (2, 3) and x.ndim == 2 and x.size == 6
    assert x.dtype == np.float16 and x.itemsize == 2 and x.nbytes == 12
    assert isinstance(x, jax.Array) and isinstance(x, jnp.ndarray)
    assert len(x) == 2
    assert x.block_until_ready() is x and jax.block_until_ready(x) is x


def test_numpy_view_is_read_only_and_shares_values():
    x = jnp.arange(4.)
    v = np.asarray(x)
    assert v.dtype == np.float32 and not v.flags.writeable
    np.testing.assert_array_equal(v, np.arange(4, dtype=np.float32))
    assert np.asarray(x, dtype=np.int64).dtype == np.int64
    c = np.array(x)  # np.array copies: the copy is writable, the Array is unchanged
    c[0] = 10
    assert float(np.asarray(x)[0]) == 0.0


def test_creation_copies_numpy_input():
    src = np.arange(3, dtype=np.float32)
    x = jnp.array(src)
    src[0] = 100
    assert np.asarray(x)[0] == 0.0
    y = jnp.asarray(src)
    src[1] = 200
    assert np.asarray(y)[1] == 1.0


@pytest.mark.parametrize("make,expected", [
    (lambda: jnp.array(5), "Array(5, dtype=int32, weak_type=True)"),  # Python scalars stay weakly typed
    (lambda: jnp.array(np.int32(5)), "Array(5, dtype=int32)"),
    (lambda: jnp.array(1.5, jnp.float32), "Array(1.5, dtype=float32)"),
    (lambda: jnp.ones(()) + 2.0, "Array(3., dtype=float32)"),
    (lambda: jnp.add(1.0, 2.0), "Array(3., dtype=float32, weak_type=True)"),
    (lambda: jnp.zeros((0,)), "Array([], shape=(0,), dtype=float32)"),
    (lambda: jnp.zeros((2, 0)), "Array([], shape=(2, 0), dtype=float32)"),
    (lambda: jnp.array([True, False]), "Array([ True, False], dtype=bool)"),
    (lambda: jnp.arange(6).reshape(2, 3), "Array([[0, 1, 2],\n       [3, 4, 5]], dtype=int32)"),
    (lambda: jnp.ones(2, jnp.bfloat16), "Array([1, 1], dtype=bfloat16)"),
    (lambda: jnp.array([1 + 2j]), "Array([1.+2.j], dtype=complex64)"),
    (lambda: jnp.array(1, jnp.uint8), "Array(1, dtype=uint8)"),
])
def test_repr_literal(make, expected):
    assert repr(make()) == expected


@pytest.mark.parametrize("make", [
    lambda m: m.array(5), lambda m: m.arange(3) * 1.0, lambda m: m.zeros((0, 3), m.int32), lambda m: m.ones((2, 2, 2)),
    lambda m: m.arange(30.), lambda m: m.linspace(0, 1, 7), lambda m: m.ones(3, m.float16) / 3,
    lambda m: m.array([True, False]), lambda m: m.arange(12).reshape(3, 4),
])
def test_repr_and_str_match_real_jax(make):
    real = pytest.importorskip("jax")
    import jax.numpy as real_jnp
    del real
    ours, theirs = make(jnp), make(real_jnp)
    assert repr(ours) == repr(theirs)
    assert str(ours) == str(theirs)


def test_repr_of_long_row_matches_jax():
    x = jnp.array(np.array([-0.2, -0.20000005, -0.19999981, -0.19999981, -0.19999981], np.float32))
    assert repr(x) == ("Array([-0.2       , -0.20000005, -0.19999981, -0.19999981, -0.19999981],      "
                       "dtype=float32)")


def test_str_and_format():
    assert str(jnp.arange(3)) == "[0 1 2]"
    assert str(jnp.array(2.5)) == "2.5"
    assert f"{jnp.array(1.23456):.2f}" == "1.23"
    assert f"{jnp.array(7)}" == "7"


def test_python_scalar_conversions():
    assert bool(jnp.array(True)) is True
    assert int(jnp.array(7)) == 7 and float(jnp.array(2.5)) == 2.5 and complex(jnp.array(1 + 1j)) == 1 + 1j
    assert operator.index(jnp.array(3)) == 3
    assert [10, 20, 30][jnp.array(1)] == 20
    with pytest.raises(TypeError):
        operator.index(jnp.array(1.5))
    with pytest.raises((TypeError, ValueError)):
        bool(jnp.ones(3))
    assert jnp.array(4.0).item() == 4.0 and isinstance(jnp.array(4.0).item(), float)
    assert jnp.arange(3).tolist() == [0, 1, 2]
    assert jnp.arange(3, dtype=jnp.int16).tobytes() == np.arange(3, dtype=np.int16).tobytes()


def test_iteration_and_len():
    rows = list(jnp.arange(6).reshape(3, 2))
    assert len(rows) == 3 and all(isinstance(r, jax.Array) for r in rows)
    assert [r.tolist() for r in rows] == [[0, 1], [2, 3], [4, 5]]
    with pytest.raises(TypeError):
        iter(jnp.array(1.0))
    with pytest.raises(TypeError):
        len(jnp.array(1.0))


def test_copy_and_deepcopy_return_equal_arrays():
    x = jnp.arange(3.)
    for y in (copy.copy(x), copy.deepcopy(x), x.copy()):
        tu.assert_allclose(y, np.arange(3, dtype=np.float32))


BINARY_OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
              operator.pow, operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne]


@pytest.mark.parametrize("op", BINARY_OPS, ids=lambda o: o.__name__)
def test_binary_operators_match_numpy(op, rng):
    a = rng.uniform(0.5, 2.0, (2, 3)).astype(np.float32)
    b = rng.uniform(0.5, 2.0, (3,)).astype(np.float32)
    out = op(jnp.asarray(a), jnp.asarray(b))
    tu.assert_allclose(out, op(a, b), atol=1e-6, rtol=1e-6)
    # Reflected operands: a NumPy array or Python scalar on the left still gives a fluxion Array.
    r = op(a, jnp.asarray(b))
    assert isinstance(r, jax.Array)
    tu.assert_allclose(r, op(a, b), atol=1e-6, rtol=1e-6)
    s = op(2.0, jnp.asarray(b))
    assert isinstance(s, jax.Array)
    tu.assert_allclose(s, op(np.float32(2.0), b), atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("op", [operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift],
                         ids=lambda o: o.__name__)
def test_integer_operators_match_numpy(op, rng):
    a = rng.integers(0, 50, (4,)).astype(np.int32)
    b = rng.integers(0, 5, (4,)).astype(np.int32)
    tu.assert_allclose(op(jnp.asarray(a), jnp.asarray(b)), op(a, b))
    tu.assert_allclose(op(jnp.asarray(a), 3), op(a, np.int32(3)))


def test_unary_operators():
    x = np.array([-1.5, 0.0, 2.0], np.float32)
    tu.assert_allclose(-jnp.asarray(x), -x)
    tu.assert_allclose(+jnp.asarray(x), x)
    tu.assert_allclose(abs(jnp.asarray(x)), np.abs(x))
    tu.assert_allclose(~jnp.array([1, 2], jnp.int8), ~np.array([1, 2], np.int8))
    tu.assert_allclose(~jnp.array([True, False]), np.array([False, True]))


def test_matmul_operator(rng):
    a = rng.standard_normal((2, 3)).astype(np.float32)
    b = rng.standard_normal((3, 4)).astype(np.float32)
    tu.assert_allclose(jnp.asarray(a) @ jnp.asarray(b), a @ b, atol=1e-5, rtol=1e-5)
    tu.assert_allclose(a @ jnp.asarray(b), a @ b, atol=1e-5, rtol=1e-5)


def test_divmod_operator():
    q, r = divmod(jnp.array([7, -7]), 3)
    assert q.tolist() == [2, -3] and r.tolist() == [1, 2]


METHODS = [
    ("sum", (), {}), ("sum", (), {"axis": 0}), ("mean", (), {"axis": 1, "keepdims": True}), ("max", (), {}),
    ("min", (), {"axis": 0}), ("prod", (), {"axis": 1}), ("std", (), {}), ("var", (), {"axis": 0, "ddof": 1}),
    ("argmax", (), {"axis": 1}), ("argmin", (), {}), ("cumsum", (), {"axis": 1}), ("cumprod", (), {"axis": 0}),
    ("reshape", (3, 2), {}), ("reshape", ((6,),), {}), ("transpose", (), {}), ("transpose", (1, 0), {}),
    ("swapaxes", (0, 1), {}), ("flatten", (), {}), ("ravel", (), {}), ("clip", (-0.5, 0.5), {}),
    ("round", (1,), {}), ("astype", (np.int32,), {}), ("any", (), {}), ("all", (), {"axis": 0}),
    ("conj", (), {}), ("diagonal", (), {}), ("trace", (), {}), ("squeeze", (), {}),
]


@pytest.mark.parametrize("name,args,kwargs", METHODS, ids=[f"{m[0]}{i}" for i, m in enumerate(METHODS)])
def test_methods_match_numpy(name, args, kwargs, rng):
    a = rng.standard_normal((2, 3)).astype(np.float32)
    out = getattr(jnp.asarray(a), name)(*args, **kwargs)
    expected = getattr(a, name)(*args, **kwargs)
    tu.assert_allclose(out, np.asarray(expected), atol=1e-5, rtol=1e-5, check_dtypes=False)
    assert np.shape(out) == np.shape(expected)


def test_properties_T_real_imag():
    z = jnp.array([[1 + 2j, 3 - 1j]])
    tu.assert_allclose(z.T, np.array([[1 + 2j], [3 - 1j]], np.complex64))
    tu.assert_allclose(z.real, np.array([[1, 3]], np.float32))
    tu.assert_allclose(z.imag, np.array([[2, -1]], np.float32))
    m = jnp.arange(24).reshape(2, 3, 4)
    tu.assert_allclose(m.mT, np.swapaxes(np.arange(24).reshape(2, 3, 4), -1, -2).astype(np.int32))


def test_numpy_ufunc_on_array_returns_numpy_result():
    x = jnp.arange(3.)
    out = np.sin(x)
    np.testing.assert_allclose(np.asarray(out), np.sin(np.arange(3, dtype=np.float32)), rtol=1e-6)


def test_bfloat16_values_round_trip():
    x = jnp.array([1.0, 2.5, -3.0], dtype=jnp.bfloat16)
    assert x.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(np.asarray(x).astype(np.float32), np.array([1.0, 2.5, -3.0], np.float32))


def test_arrays_work_as_jit_arguments_and_outputs():
    x = jnp.arange(3.)
    out = jax.jit(lambda v: v * 2)(x)
    assert type(out) is jax.Array
    tu.assert_allclose(out, np.arange(3, dtype=np.float32) * 2)


def test_device_get_and_put():
    tree = {"a": jnp.arange(3), "b": [np.float32(1.0), "text"]}
    host = jax.device_get(tree)
    assert isinstance(host["a"], np.ndarray) and host["b"][1] == "text"
    dev = jax.device_put({"x": np.ones(2, np.float64)})
    assert isinstance(dev["x"], jax.Array) and dev["x"].dtype == np.float32
