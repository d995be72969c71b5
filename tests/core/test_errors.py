"""Tests of error behaviour: exception types (JAX's names and built-in bases) and what the messages say.

Each message must name the culprit (argument, shapes, dtypes), point at the user's source line where relevant, and
say how to fix the problem. Messages are matched with regular expressions on their essential content only.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import fluxion as jax
import fluxion.lax as lax
import fluxion.numpy as jnp
from fluxion import errors


def test_error_classes_have_jax_bases():
    assert issubclass(errors.TracerBoolConversionError, errors.ConcretizationTypeError)
    assert issubclass(errors.ConcretizationTypeError, TypeError)
    for cls in (errors.TracerIntegerConversionError, errors.TracerArrayConversionError,
                errors.UnexpectedTracerError):
        assert issubclass(cls, TypeError)


def test_if_on_traced_value_under_jit():
    @jax.jit
    def f(x, y):
        if x > 0:
            return y
        return -y

    with pytest.raises(errors.TracerBoolConversionError) as info:
        f(1.0, 2.0)
    assert isinstance(info.value, TypeError)
    msg = str(info.value)
    assert re.search(r"argument\w* x\b", msg), msg  # names the argument the condition depends on
    assert "y" not in re.findall(r"argument\w* (\w+)", msg)
    assert "if x > 0:" in msg  # the user's source line
    assert "static_argnames" in msg and "lax.cond" in msg and "where" in msg
    assert "test_errors.py" in msg


def test_condition_on_pytree_argument_names_its_path():
    @jax.jit
    def f(params):
        return params["w"] if params["flag"] > 0 else params["w"] * 2

    with pytest.raises(errors.TracerBoolConversionError, match=r"params\['flag'\]"):
        f({"w": 1.0, "flag": 1.0})


def test_while_loop_on_traced_value():
    @jax.jit
    def f(x):
        while x < 10:
            x = x * 2
        return x

    with pytest.raises(errors.TracerBoolConversionError, match=r"(?s)while x < 10"):
        f(1.0)


def test_float_of_tracer_is_concretization_error():
    with pytest.raises(errors.ConcretizationTypeError, match=r"(?s)float.*argument\w* x"):
        jax.jit(lambda x: float(x))(1.0)


def test_int_of_tracer():
    with pytest.raises(errors.ConcretizationTypeError, match=r"(?s)int.*static"):  # as JAX 0.10
        jax.jit(lambda x: int(x))(np.int32(3))


def test_tracer_as_shape_or_index():
    with pytest.raises(TypeError, match="(?i)shape"):  # JAX raises a plain TypeError here too
        jax.jit(lambda n: jnp.zeros(n))(np.int32(3))
    with pytest.raises(errors.TracerIntegerConversionError):
        jax.jit(lambda n: range(n))(np.int32(3))


def test_numpy_on_tracer():
    with pytest.raises(errors.TracerArrayConversionError, match=r"(?s)__array__.*fluxion\.numpy"):
        jax.jit(lambda x: np.asarray(x))(np.ones(2, np.float32))
    with pytest.raises(errors.TracerArrayConversionError):
        jax.jit(lambda x: np.sin(x))(np.ones(2, np.float32))


def test_item_and_tolist_of_tracer():
    with pytest.raises(errors.ConcretizationTypeError, match="item"):
        jax.jit(lambda x: x.item())(np.float32(1))
    with pytest.raises(errors.ConcretizationTypeError):
        jax.jit(lambda x: x.tolist())(np.ones(2, np.float32))


def test_bool_under_vmap_explains_batching():
    with pytest.raises(errors.TracerBoolConversionError, match="(?i)batch"):
        jax.vmap(lambda x: 1.0 if x > 0 else 0.0)(jnp.arange(3.))


def test_concrete_values_are_allowed_under_grad():
    # Forward/reverse differentiation keeps the primal concrete, so Python control flow on it works (as in JAX).
    def f(x):
        return x ** 2 if x > 0 else -x

    assert float(jax.grad(f)(3.0)) == 6.0
    assert float(jax.grad(f)(-3.0)) == -1.0


def test_grad_of_non_scalar_output_names_the_shape():
    with pytest.raises(TypeError, match=r"(?s)scalar.*\(3,\)"):
        jax.grad(lambda x: x * 2)(jnp.ones(3))


def test_grad_of_integer_output():
    with pytest.raises(TypeError, match=r"int32"):
        jax.grad(lambda x: jnp.sum(x).astype(jnp.int32))(jnp.ones(3))


def test_grad_with_respect_to_integer_input_says_why_and_what_to_do():
    with pytest.raises(TypeError) as info:
        jax.grad(lambda x: jnp.sum(x * 2.0))(jnp.arange(3))
    msg = str(info.value)
    assert "int32" in msg
    assert re.search(r"(?i)(float|inexact)", msg)  # why: only floating/complex inputs have gradients
    assert "astype" in msg or "argnums" in msg  # what to do


def test_grad_argnums_out_of_range():
    with pytest.raises((TypeError, ValueError), match="argnums"):
        jax.grad(lambda x: x, argnums=2)(1.0)


def test_lax_add_dtype_mismatch_names_both_dtypes_under_jit():
    with pytest.raises(TypeError, match=r"(?s)float32.*int32"):
        jax.jit(lax.add)(np.ones(2, np.float32), np.ones(2, np.int32))


def test_lax_add_dtype_mismatch_names_both_dtypes_eagerly():
    with pytest.raises(TypeError, match=r"(?s)float32.*int32"):
        lax.add(np.ones(2, np.float32), np.ones(2, np.int32))


@pytest.mark.parametrize("jit", [False, True])
def test_jnp_add_shape_mismatch_names_both_shapes(jit):
    f = jax.jit(jnp.add) if jit else jnp.add
    with pytest.raises(ValueError, match=r"(?s)\(2, 3\).*\(4,\)"):
        f(jnp.ones((2, 3)), jnp.ones(4))


def test_leaked_tracer_is_unexpected_tracer_error():
    leaked = []

    @jax.jit
    def f(x):
        leaked.append(x)
        return x + 1

    f(1.0)
    with pytest.raises(errors.UnexpectedTracerError, match="(?i)(outside|escaped|after the transformation)"):
        jnp.sin(leaked[0])
    with pytest.raises(errors.UnexpectedTracerError):
        leaked[0] * 2


def test_leaked_tracer_from_grad_used_later():
    saved = []

    def f(x):
        saved.append(x)
        return x * x

    jax.grad(f)(1.0)
    with pytest.raises(errors.UnexpectedTracerError):
        jax.jit(lambda y: y + saved[0])(1.0)


def test_non_array_argument_to_jit():
    with pytest.raises(TypeError, match=r"(?s)str.*static"):
        jax.jit(lambda s, x: x)("abc", 1.0)


def test_vmap_size_mismatch_and_bad_in_axes():
    with pytest.raises(ValueError, match=r"(?s)\[2, 3\]"):
        jax.vmap(lambda a, b: a + b)(np.ones(2, np.float32), np.ones(3, np.float32))
    with pytest.raises(ValueError, match="in_axes"):
        jax.vmap(lambda a, b: a + b, in_axes=(0, 0, 0))(np.ones(2, np.float32), np.ones(2, np.float32))


def test_array_is_immutable():
    x = jnp.ones(3)
    with pytest.raises(TypeError, match=r"\.at\["):
        x[0] = 2.0
    with pytest.raises(ValueError):
        np.asarray(x)[0] = 2.0  # the NumPy view of an Array is read-only


def test_unhashable_array():
    with pytest.raises(TypeError, match="unhashable"):
        hash(jnp.ones(2))


def _user_error_in_jit_of_grad():
    def loss(w, x):
        return jnp.sum(jnp.dot(x, w))  # (3, 4) @ (5,): a shape error in the user's line
    jax.jit(jax.grad(loss))(jnp.ones(5), jnp.ones((3, 4)))


def test_tracebacks_keep_the_users_frames_and_drop_fluxions():
    import traceback
    with pytest.raises(TypeError) as info:
        _user_error_in_jit_of_grad()
    frames = traceback.extract_tb(info.value.__traceback__)
    internal = [f for f in frames if "/fluxion/_src/" in f.filename]
    assert len(frames) <= 15 and len(internal) <= 2, [f"{f.filename}:{f.lineno}" for f in frames]
    assert any(f.name == "loss" for f in frames)  # the user's line is there
    assert any("JAX_TRACEBACK_FILTERING=off" in n for n in getattr(info.value, "__notes__", ["JAX_TRACEBACK_FILTERING=off"]))


def test_traceback_filtering_can_be_turned_off():
    import traceback
    jax.config.update("jax_traceback_filtering", "off")
    try:
        with pytest.raises(TypeError) as info:
            _user_error_in_jit_of_grad()
    finally:
        jax.config.update("jax_traceback_filtering", "auto")
    frames = traceback.extract_tb(info.value.__traceback__)
    assert len([f for f in frames if "/fluxion/_src/" in f.filename]) > 5
