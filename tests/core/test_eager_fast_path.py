"""The eager fast path of `Array`'s binary operators (`core.fast_binary_operator`).

Oracle: the full path, i.e. the `fluxion.numpy` function each operator stands for (`jnp.add` for `+`, ...), which
promotes, broadcasts and binds the primitive. The fast path must agree with it on values, dtype, shape and weak
type for every operand combination, and must hand everything it does not cover (mixed dtypes, bool arithmetic,
integer division, non-Array operands, active transformations) to it.
"""

from __future__ import annotations

import operator
import pickle

import ml_dtypes
import numpy as np
import pytest

import fluxion as jax
import fluxion.numpy as jnp
from fluxion._src.core import Array

OPS = {
    "+": (operator.add, "add"), "-": (operator.sub, "subtract"), "*": (operator.mul, "multiply"),
    "/": (operator.truediv, "true_divide"), "==": (operator.eq, "equal"), "!=": (operator.ne, "not_equal"),
    "<": (operator.lt, "less"), "<=": (operator.le, "less_equal"), ">": (operator.gt, "greater"),
    ">=": (operator.ge, "greater_equal"),
}
DTYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.int32, np.int8, np.uint8, np.complex64, np.bool_]
SHAPES = [((4,), (4,)), ((2, 3), (2, 3)), ((), ()), ((3,), ()), ((), (3,)), ((3, 1), (4,)), ((2, 1, 3), (1, 5, 1))]


def _array(shape, dtype, weak, seed):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype) == np.bool_:
        v = rng.random(shape) < 0.5
    else:
        v = (rng.integers(1, 5, shape)).astype(dtype)  # nonzero, so `/` has no 0/0
    return Array(np.asarray(v), weak)


def _outcome(fn, *args):
    try:
        out = fn(*args)
    except Exception as e:  # noqa: BLE001 -- the oracle may raise; then the fast path must raise alike
        return ("raises", type(e))
    return ("value", np.asarray(out).tobytes(), out.dtype, out.shape, out.weak_type)  # bits: nan == nan


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_operator_matches_full_path(op, dtype, shapes):
    fn, name = OPS[op]
    full = getattr(jnp, name)
    for wx, wy in [(False, False), (True, True), (True, False), (False, True)]:
        x = _array(shapes[0], dtype, wx, 0)
        y = _array(shapes[1], dtype, wy, 1)
        assert _outcome(fn, x, y) == _outcome(full, x, y), (op, wx, wy)


@pytest.mark.parametrize("op", ["+", "-", "*", "/"])
def test_weak_type_needs_both_operands_weak(op):
    fn, _ = OPS[op]
    weak = Array(np.float32(2.0), True)
    strong = Array(np.ones(3, np.float32), False)
    assert fn(weak, weak).weak_type is True
    assert fn(weak, strong).weak_type is False and fn(strong, weak).weak_type is False
    assert fn(strong, strong).weak_type is False


def test_comparisons_are_never_weak():
    x = Array(np.float32(1.0), True)
    for op in ["==", "!=", "<", "<=", ">", ">="]:
        out = OPS[op][0](x, x)
        assert out.dtype == np.bool_ and out.weak_type is False


def test_results_match_jax_weak_types():
    jax_real = pytest.importorskip("jax")
    import jax.numpy as rjnp
    for a, b in [(1.0, 2.0), (np.float32(1.0), 2.0)]:
        ours = jnp.asarray(a) + jnp.asarray(b)
        theirs = rjnp.asarray(a) + rjnp.asarray(b)
        assert ours.dtype == theirs.dtype and ours.weak_type == theirs.weak_type
    del jax_real


def test_fast_path_skips_the_numpy_functions_and_fallbacks_use_them(monkeypatch):
    """Which cases the shortcut takes: replacing the full path by a sentinel shows who got there."""
    calls = []

    def sentinel(name):
        def f(*args):
            calls.append(name)
            return "full path"
        return f

    for name in ("add", "subtract", "multiply", "true_divide", "less"):
        monkeypatch.setattr(jnp, name, sentinel(name))
    f32 = Array(np.ones(3, np.float32))
    i32 = Array(np.ones(3, np.int32))
    b = Array(np.ones(3, np.bool_))
    # Taken: same dtype (any shapes), every covered operator.
    for out in (f32 + f32, f32 - f32, f32 * f32, f32 / f32, f32 < f32, i32 + i32, i32 < i32,
                f32 + Array(np.ones((2, 3), np.float32))):
        assert isinstance(out, Array)
    assert calls == []
    # Not taken: mixed dtypes, bool +, integer /, Python and NumPy operands.
    assert f32 + i32 == "full path"
    assert b + b == "full path"
    assert i32 / i32 == "full path"
    assert f32 + 1.0 == "full path"
    assert f32 * np.ones(3, np.float32) == "full path"
    assert calls == ["add", "add", "true_divide", "add", "multiply"]


def test_equal_but_not_identical_dtypes_take_the_fast_path():
    dt = pickle.loads(pickle.dumps(np.dtype(np.float32)))
    assert dt is not np.dtype(np.float32) and dt == np.float32
    x = Array(np.frombuffer(np.arange(3, dtype=np.float32).tobytes(), dtype=dt))
    y = Array(np.ones(3, np.float32))
    out = x + y
    assert out.dtype == np.float32 and np.asarray(out).tolist() == [1.0, 2.0, 3.0]


def test_incompatible_shapes_raise_the_full_path_error():
    x, y = jnp.ones(3), jnp.ones(4)
    with pytest.raises(ValueError, match="add: incompatible shapes"):
        x + y
    with pytest.raises(ValueError, match="less: incompatible shapes"):
        x < y


def test_transformations_still_see_operations_on_concrete_arrays():
    x, y = jnp.ones(3), jnp.full(3, 2.0)
    # Under jit/make_jaxpr the dynamic trace must capture `x + y` even though both operands are concrete.
    text = str(jax.make_jaxpr(lambda a: (x + y) * a)(1.0))
    assert "add" in text and "mul" in text
    np.testing.assert_allclose(jax.jit(lambda a: (x - y) / a)(2.0), [-0.5] * 3)
    # Under grad, the closed-over arithmetic runs on the primal values while the tracer path differentiates.
    g = jax.grad(lambda a: jnp.sum((x * y) * a + (x < y) * a))(3.0)
    np.testing.assert_allclose(g, 9.0)


def test_tracer_operands_take_the_full_path():
    y = jnp.ones(3)
    g = jax.grad(lambda a: jnp.sum(jnp.full(3, a) / y + y * a))(1.0)
    np.testing.assert_allclose(g, 6.0)
    out = jax.vmap(lambda r: r - y)(jnp.ones((2, 3)))
    assert out.shape == (2, 3)
