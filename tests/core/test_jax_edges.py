"""Edges where fluxion differed from JAX 0.10 (found by running ecosystem programs unmodified): printed tracers,
abstract values, error classes and messages, holomorphic differentiation, pytree vjp functions, IntEnum inputs."""

from __future__ import annotations

import enum

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import errors

jax = pytest.importorskip("jax")


def _printed(transform, arg, capsys):
    transform(lambda x: print(x) or x)(arg)
    return capsys.readouterr().out.strip()


@pytest.mark.parametrize("make", [
    lambda m: (m.jit, m.numpy.arange(5)),
    lambda m: (m.grad, 1.0),
    lambda m: (m.vmap, m.numpy.arange(3.0)),
    lambda m: (lambda f: m.jit(m.grad(f)), 1.0),
    lambda m: (lambda f: m.grad(m.grad(f)), 1.0),
    lambda m: (lambda f: m.jit(m.vmap(f)), m.numpy.arange(3.0)),
])
def test_tracers_print_as_in_jax(make, capsys):
    ours = _printed(*make(fluxion), capsys=capsys)
    theirs = _printed(*make(jax), capsys=capsys)
    assert ours == theirs


def test_abstract_values_print_as_in_jax():
    from fluxion._src.core import ShapedArray
    for shape, weak in (((3,), False), ((), True), ((2, 4), False)):
        ours = ShapedArray(shape, np.dtype(np.float32), weak)
        theirs = jax.core.ShapedArray(shape, np.float32, weak_type=weak)
        assert str(ours) == str(theirs) and repr(ours) == repr(theirs)
    # jaxpr text keeps the short form
    assert "f32[3]" in str(fluxion.make_jaxpr(lambda x: x * 2)(jnp.ones(3)))


def test_int_of_a_tracer_is_a_concretization_error_and_index_an_integer_conversion_error():
    with pytest.raises(errors.ConcretizationTypeError) as info:
        fluxion.jit(lambda x: int(x))(1)
    assert not isinstance(info.value, errors.TracerIntegerConversionError)
    with pytest.raises(errors.TracerIntegerConversionError):
        fluxion.jit(lambda x: [1, 2, 3][x])(1)


def test_jit_returning_a_non_array_names_the_function():
    def label(x):
        return "label"
    with pytest.raises(TypeError, match=r"function label at .* traced for jit returned a value of type "
                                        r"<class 'str'>, which is not a valid JAX type"):
        fluxion.jit(label)(1)


def test_reductions_refuse_lists_and_empty_maxima_say_why():
    with pytest.raises(TypeError, match=r"sum requires ndarray or scalar arguments, got <class 'list'> at position 0"):
        jnp.sum([1, 2, 3])
    with pytest.raises(TypeError):
        jax.numpy.sum([1, 2, 3])
    with pytest.raises(ValueError, match="zero-size array to reduction operation max which has no identity"):
        jnp.max(jnp.zeros(0))


def test_dict_keys_that_cannot_be_sorted_raise_value_error():
    with pytest.raises(ValueError, match="sorting pytree dictionary keys"):
        fluxion.tree.map(lambda x: x, {1: 7, "y": 42})
    with pytest.raises(ValueError):
        jax.tree.map(lambda x: x, {1: 7, "y": 42})


def test_grad_of_a_complex_output_needs_holomorphic_and_holomorphic_works():
    with pytest.raises(TypeError, match="grad requires real-valued outputs.*holomorphic=True"):
        fluxion.grad(lambda x: x * 1j)(1.0)
    with pytest.raises(TypeError, match="grad with holomorphic=True requires inputs with complex dtype"):
        fluxion.grad(lambda z: z ** 2, holomorphic=True)(1.0)
    with pytest.raises(TypeError, match="requires outputs with complex dtype"):
        fluxion.grad(lambda z: (z ** 2).real, holomorphic=True)(1.0 + 1j)
    with pytest.raises(TypeError, match="jacfwd requires real-valued inputs"):
        fluxion.jacfwd(lambda z: z ** 2)(jnp.array([1 + 2j, 3j]))
    z = np.array([1 + 2j, 3j], np.complex64)
    for name in ("jacfwd", "jacrev"):
        ours = getattr(fluxion, name)(lambda z: z ** 3 + 2 * z, holomorphic=True)(z)
        theirs = getattr(jax, name)(lambda z: z ** 3 + 2 * z, holomorphic=True)(z)
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    np.testing.assert_allclose(fluxion.grad(lambda z: jnp.sin(z) * z, holomorphic=True)(1 + 2j),
                               jax.grad(lambda z: jax.numpy.sin(z) * z, holomorphic=True)(1 + 2j), rtol=1e-6)
    np.testing.assert_allclose(fluxion.hessian(lambda z: z ** 3, holomorphic=True)(1 + 2j), 6 * (1 + 2j), rtol=1e-6)


def test_reduce_axes_is_refused():
    with pytest.raises(NotImplementedError, match="reduce_axes"):
        fluxion.grad(lambda x: x, reduce_axes=("batch",))


def test_vjp_function_is_a_pytree_of_residuals_and_can_cross_jit():
    x = np.arange(3.0, dtype=np.float32)
    _, f_vjp = fluxion.vjp(lambda x: jnp.sin(x) * x, x)
    _, g_vjp = jax.vjp(lambda x: jax.numpy.sin(x) * x, x)
    assert len(fluxion.tree.leaves(f_vjp)) >= 1 and len(jax.tree.leaves(g_vjp)) >= 1
    ct = np.ones(3, np.float32)
    expected = np.cos(x) * x + np.sin(x)
    np.testing.assert_allclose(f_vjp(ct)[0], expected, rtol=1e-6)
    np.testing.assert_allclose(fluxion.jit(lambda f, c: f(c))(f_vjp, ct)[0], expected, rtol=1e-6)
    leaves, tree = fluxion.tree.flatten(f_vjp)
    np.testing.assert_allclose(fluxion.tree.unflatten(tree, leaves)(ct)[0], expected, rtol=1e-6)


class _Step(enum.IntEnum):
    FIRST = 0
    MID = 1


def test_int_enum_members_are_python_scalars():
    for ours, theirs in ((jnp.asarray(_Step.MID), jax.numpy.asarray(_Step.MID)),
                         (fluxion.jit(lambda s: s + 1)(_Step.MID), jax.jit(lambda s: s + 1)(_Step.MID)),
                         (jnp.array([_Step.MID, _Step.FIRST]), jax.numpy.array([_Step.MID, _Step.FIRST]))):
        np.testing.assert_array_equal(ours, theirs)
        assert ours.dtype == theirs.dtype and ours.weak_type == theirs.weak_type


def test_fluxion_operations_do_not_warn_about_inf_and_nan_but_user_numpy_still_does(tmp_path):
    # XLA computes inf/nan silently; NumPy's RuntimeWarnings from inside fluxion reached users (as errors under
    # `-W error`). Run in a fresh interpreter: pytest manages warning filters itself.
    import subprocess
    import sys
    script = tmp_path / "w.py"
    script.write_text(
        "import numpy as np, fluxion, fluxion.numpy as jnp\n"
        "x = jnp.array([0.0, 1.0, np.inf])\n"
        "r = [x * np.inf * 0, jnp.log(x - 1), x / 0, fluxion.jit(lambda v: v * jnp.inf * 0 + jnp.log(v - 1))(x),\n"
        "     fluxion.grad(lambda v: jnp.sum(jnp.sqrt(v)))(x), jnp.arccosh(x - 5)]\n"
        "try:\n"
        "    np.array([0.0]) / 0\n"
        "except RuntimeWarning:\n"
        "    print('user numpy warned')\n")
    out = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", str(script)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "user numpy warned"


@pytest.mark.parametrize("make", [
    lambda m: m.numpy.array([1, -3], m.numpy.int8) + 300,
    lambda m: m.numpy.int8(5) + 300,
    lambda m: m.numpy.array([1, 7], m.numpy.uint8) - 2,
    lambda m: m.numpy.array([1], m.numpy.uint8) + (-1),
    lambda m: m.jit(lambda x: x * 1000)(m.numpy.array([3], m.numpy.int16)),
])
def test_python_ints_wrap_to_narrow_integer_arrays_as_in_jax(make):
    ours, theirs = make(fluxion), make(jax)
    np.testing.assert_array_equal(ours, theirs)
    assert ours.dtype == theirs.dtype


def test_vmap_maps_keyword_arguments_along_axis_0():
    # JAX maps keyword arguments along their leading axis (in_axes covers the positional ones); they were passed
    # through unmapped, silently broadcasting instead.
    out = fluxion.vmap(lambda x, y=None: x + y, in_axes=(0,))(jnp.ones((3, 2)), y=jnp.ones((3, 2)))
    assert out.shape == (3, 2)
    out = fluxion.vmap(lambda x, *, k: x * k)(jnp.ones((3, 2)), k=jnp.arange(3.0))
    np.testing.assert_array_equal(np.asarray(out), np.arange(3.0, dtype=np.float32)[:, None] * np.ones((3, 2)))
    with pytest.raises(ValueError, match="inconsistent sizes"):
        fluxion.vmap(lambda x, *, k: x * k)(jnp.ones((3, 2)), k=jnp.arange(4.0))


def test_numpy_issubdtype_knows_prng_key_dtypes():
    key = fluxion.random.key(0)
    assert jnp.issubdtype(key.dtype, fluxion.dtypes.prng_key)
    assert not jnp.issubdtype(jnp.float32, fluxion.dtypes.prng_key)
    assert jnp.issubdtype(jnp.bfloat16, jnp.floating)
