"""`jit` as a call primitive: under other transformations a jitted function is traced once per signature and bound
as `jit[name=... jaxpr=...]`, whose JVP, transpose and batching rules transform the traced program."""

from __future__ import annotations

import dataclasses
import operator

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion._src import test_util as tu


def counted(fun):
    """`fun` with a counter of how many times Python runs it (each run is a trace once jitted)."""
    calls = [0]

    def wrapped(*args, **kwargs):
        calls[0] += 1
        return fun(*args, **kwargs)
    wrapped.calls = calls
    return wrapped


def test_grad_of_jit_traces_once_in_100_calls():
    f = counted(lambda x: jnp.sin(x) * x ** 2)
    jf = fluxion.jit(f)
    g = fluxion.grad(lambda x: jf(x).sum())
    x = jnp.arange(4.0)
    for _ in range(100):
        out = g(x)
    assert f.calls[0] == 1
    np.testing.assert_allclose(out, np.cos(x) * x ** 2 + 2 * x * np.sin(x), rtol=1e-6)


def test_vmap_and_jvp_and_hessian_of_jit_trace_once_per_signature(rng):
    f = counted(lambda x, y: jnp.tanh(x @ y) * 2.0)
    jf = fluxion.jit(f)
    x, y = (rng.standard_normal((3, 3)).astype(np.float32) for _ in range(2))
    for _ in range(5):
        v = fluxion.vmap(jf, in_axes=(0, None))(np.stack([x, x + 1]), y)
        _, t = fluxion.jvp(jf, (x, y), (np.ones_like(x), np.zeros_like(y)))
    assert f.calls[0] == 1
    np.testing.assert_allclose(v[1], np.tanh((x + 1) @ y) * 2, rtol=1e-5)
    np.testing.assert_allclose(t, 2 * (1 - np.tanh(x @ y) ** 2) * (np.ones_like(x) @ y), rtol=1e-5)
    h = fluxion.hessian(lambda x: jf(x, y).sum())(x)
    h_ref = fluxion.hessian(lambda x: f(x, y).sum())(x)
    np.testing.assert_allclose(h, h_ref, rtol=1e-5, atol=1e-6)


def test_derivatives_through_jit_match_finite_differences(rng):
    jf = fluxion.jit(lambda x, y: jnp.sum(jnp.exp(x) * jnp.sin(y)) + jnp.max(x * y))
    x, y = (rng.standard_normal(5).astype(np.float64) for _ in range(2))
    with _x64():
        tu.check_grads(jf, (x, y), order=2, modes=("fwd", "rev"))


class _x64:
    def __enter__(self):
        self.saved = fluxion.config.jax_enable_x64
        fluxion.config.update("jax_enable_x64", True)

    def __exit__(self, *exc):
        fluxion.config.update("jax_enable_x64", self.saved)


def test_make_jaxpr_shows_the_call_like_jax():
    def inner(x):
        return jnp.sin(x) * 2.0
    text = str(fluxion.make_jaxpr(lambda x: fluxion.jit(inner)(x) + 1.0)(jnp.ones(3)))
    assert "jit[" in text and "name=inner" in text and "jaxpr={ lambda" in text and "sin" in text
    # Name first, then the program, as JAX prints it.
    assert text.index("name=inner") < text.index("jaxpr=")


def test_jit_inside_scan_and_jit_is_traced_once_and_compiled_flat():
    body = counted(lambda c, x: (c * 0.5 + jnp.sin(x), c))
    jbody = fluxion.jit(body)
    run = fluxion.jit(lambda xs: lax.scan(jbody, jnp.float32(1.0), xs))  # a strong carry: one signature
    xs = jnp.arange(6.0)
    c, ys = run(xs)
    c2, ys2 = run(xs + 1)
    assert body.calls[0] == 1
    ref_c, ref_ys = 1.0, []
    for x in np.arange(6.0) + 1:
        ref_ys.append(ref_c)
        ref_c = ref_c * 0.5 + np.sin(x)
    np.testing.assert_allclose(c2, ref_c, rtol=1e-6)
    np.testing.assert_allclose(ys2, ref_ys, rtol=1e-6)
    # The compiler inlines nested calls: the executable has no jit equation left.
    exe_text = run.lower(xs).compile().as_text()
    assert "impl_jit" not in exe_text


def test_jit_closing_over_an_outer_tracer_passes_it_as_an_operand():
    def outer(y):
        return fluxion.jit(lambda x: x * y)(2.0)
    assert float(fluxion.grad(outer)(3.0)) == 2.0
    assert np.allclose(fluxion.vmap(outer)(jnp.arange(3.0)), [0.0, 2.0, 4.0])


def test_weak_types_survive_the_call_primitive():
    jf = fluxion.jit(lambda x, y: (x * 2, y + 1))
    a, b = fluxion.vmap(jf, in_axes=(0, None))(jnp.ones(3, jnp.float32), 1.0)
    assert not a.weak_type and b.weak_type


@dataclasses.dataclass(slots=True, eq=False)
class _AddK:
    k: float

    def __call__(self, x):
        return x + self.k


def test_callables_without_weak_references_never_share_a_cache():
    # Instances of a __slots__ class (and itemgetter) cannot be weakly referenced; keyed by id alone, a new
    # instance reusing a dead one's id ran the dead one's compiled code (six results of 100.0).
    got = [float(fluxion.jit(_AddK(k))(100.0)) for k in range(6)]
    assert got == [100.0, 101.0, 102.0, 103.0, 104.0, 105.0]
    got = [float(fluxion.jit(operator.itemgetter(k))(jnp.arange(6.0))) for k in range(6)]
    assert got == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


@pytest.mark.parametrize("n_calls", [3])
def test_jit_of_grad_of_jit(n_calls):
    inner = counted(lambda x: jnp.sum(x ** 3))
    f = fluxion.jit(fluxion.grad(fluxion.jit(inner)))
    for k in range(n_calls):
        np.testing.assert_allclose(f(jnp.arange(3.0) + k), 3 * (np.arange(3.0) + k) ** 2)
    assert inner.calls[0] == 1


def test_pmap_callables_without_weak_references_never_share_a_cache():
    # The same defect as above in pmap's cache: each `_AddK(k)` dies right after its call, and a new one often gets
    # its id.
    got = [float(fluxion.pmap(_AddK(k))(jnp.full((1,), 100.0))[0]) for k in range(6)]
    assert got == [100.0, 101.0, 102.0, 103.0, 104.0, 105.0]
