"""Arguments that JAX rejects are rejected, with JAX's error class (they used to be silently ignored or misread)."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp


def _f(x):
    return x


@pytest.mark.parametrize("kwargs, match", [
    (dict(static_argnums=3), r"static_argnums=\(3,\), but only accepts 1 positional"),
    (dict(static_argnums=-2), r"static_argnums=\(-2,\), but only accepts 1 positional"),
    (dict(static_argnames="z"), r"invalid argnames \{'z'\} in static_argnames"),
    (dict(donate_argnums=1), r"donate_argnums=\(1,\), but only accepts 1 positional"),
    (dict(donate_argnames="z"), r"invalid argnames \{'z'\} in donate_argnames"),
])
def test_jit_rejects_arguments_the_function_does_not_have(kwargs, match):
    with pytest.raises(ValueError, match=match):
        fluxion.jit(_f, **kwargs)
    jax = pytest.importorskip("jax")
    with pytest.raises(ValueError):
        jax.jit(_f, **kwargs)(1.0)


def test_jit_accepts_any_argnums_for_varargs_and_any_argnames_for_kwargs():
    assert float(fluxion.jit(lambda *a: a[0], static_argnums=3)(1.0)) == 1.0
    assert float(fluxion.jit(lambda x, **kw: x, static_argnames="z")(2.0, z=1)) == 2.0


@pytest.mark.parametrize("out_axes", [3, 2, -3])
def test_vmap_out_axes_beyond_the_output_rank_raise(out_axes):
    with pytest.raises(ValueError, match=f"axis {out_axes} is out of bounds for array of dimension 2"):
        fluxion.vmap(lambda x: x, out_axes=out_axes)(jnp.ones((2, 3)))
    jax = pytest.importorskip("jax")
    with pytest.raises(ValueError):
        jax.vmap(lambda x: x, out_axes=out_axes)(jax.numpy.ones((2, 3)))


@pytest.mark.parametrize("out_axes", [0, 1, -1, -2])
def test_vmap_out_axes_in_range_match_jax(out_axes):
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    got = fluxion.vmap(lambda v: v * 2, out_axes=out_axes)(x)
    jax = pytest.importorskip("jax")
    np.testing.assert_array_equal(got, jax.vmap(lambda v: v * 2, out_axes=out_axes)(x))
