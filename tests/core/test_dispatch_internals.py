"""Invariants the fast dispatch paths rely on: cached avals, one trace object per level, no reference cycles.

Oracles: the values the uncached computations give (avals rebuilt from the buffers), real JAX for the promotion
of identical weak operands, and the garbage collector (which must find nothing after a transformation).
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

import fluxion as jax
import fluxion.numpy as jnp
from fluxion._src import core
from fluxion._src.core import Array
from fluxion._src.interpreters import ad
from fluxion._src.interpreters import partial_eval as pe


def test_array_aval_is_built_once_and_describes_the_buffer():
    x = Array(np.ones((2, 3), np.float16), True)
    a = core.get_aval(x)
    assert (a.shape, a.dtype, a.weak_type) == ((2, 3), np.float16, True)
    assert core.get_aval(x) is a and x.aval is a


def test_jvp_tracer_aval_is_its_primal_aval():
    seen = []

    def f(x):
        y = jnp.sin(x) * 2.0
        seen.append((y.aval, core.get_aval(y.primal), y.shape, y.dtype, y.weak_type))
        return y

    jax.jvp(f, (jnp.ones(3),), (jnp.ones(3),))
    (aval, primal_aval, shape, dtype, weak), = seen
    assert aval == primal_aval and shape == (3,) and dtype == np.float32 and weak is False


def test_one_trace_object_per_level_and_it_is_released_on_exit():
    with core.new_main(ad.JVPTrace) as main:
        assert core.find_top_trace([ad.JVPTracer(main.trace, jnp.ones(2), ad.Zero(core.get_aval(jnp.ones(2))))]) \
            is main.trace
        assert isinstance(main.trace, ad.JVPTrace) and main.trace.main is main
    assert main.trace is None and not main.active


def test_transformations_leave_no_cyclic_garbage():
    """What a grad or jit call builds (tracers, traces, jaxprs, residual arrays) is freed by reference counting,
    so large residuals go as soon as the call returns rather than at the next collection."""
    g = jax.grad(lambda x: jnp.sum(jnp.tanh(x) ** 2))
    g3 = jax.grad(jax.grad(jax.grad(lambda x: x ** 3 + 2 * x)))
    h = jax.jit(lambda x: jnp.cos(x) * 2.0)
    x = jnp.ones(10)
    g(x), g3(2.0), h(x)  # warm caches
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for _ in range(3):
            g(x)
            g3(2.0)
            h(x + 1.0)
            jax.make_jaxpr(lambda y: jnp.sum(y * y))(x)
        gc.collect()
        ours = (core.Tracer, core.Trace, core.MainTrace, core.Array, core.Jaxpr, core.Var, pe.JaxprBuilder)
        leaked = [type(o).__name__ for o in gc.garbage if isinstance(o, ours)]
        assert leaked == []
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was_enabled:
            gc.enable()


def test_escaped_tracers_still_raise_after_their_level_ended():
    leaked = []
    jax.grad(lambda x: leaked.append(x) or x * 2.0)(1.0)
    with pytest.raises(jax.errors.UnexpectedTracerError):
        leaked[0] + 1.0
    with pytest.raises(jax.errors.UnexpectedTracerError):
        jnp.sin(leaked[0])


def test_identical_weak_operands_keep_their_dtype_when_broadcast():
    """weak f16 (3,) + weak f16 () is weak f16 in JAX (and in the same-shape and operator fast paths)."""
    x = Array(np.ones(3, np.float16), True)
    s = Array(np.float16(2), True)
    for out in (jnp.add(x, s), jnp.multiply(s, x), x + s, jnp.where(True, x, s), jnp.sin(x)):
        assert out.dtype == np.float16 and out.weak_type is True
    rjax = pytest.importorskip("jax")
    from jax._src import lax as rlax
    f16 = np.dtype(np.float16)
    rx = rlax.lax._convert_element_type(np.ones(3, np.float16), f16, weak_type=True)
    rs = rlax.lax._convert_element_type(np.float16(2), f16, weak_type=True)
    ref = rjax.numpy.add(rx, rs)
    assert ref.dtype == np.float16 and ref.weak_type is True


def test_promotion_between_different_weak_or_strong_types_is_unchanged():
    f32 = jnp.ones(3, jnp.float32)
    assert (f32 + 1).dtype == np.float32 and (f32 + 1).weak_type is False
    i = jnp.ones(3, jnp.int32)
    assert (i + 1.5).dtype == np.float32
    assert jnp.add(Array(np.float16(1), True), f32).dtype == np.float32
    assert (jnp.asarray(1.0) + jnp.asarray(2.0)).weak_type is True
