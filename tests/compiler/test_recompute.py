"""Recomputing forward residuals next to their backward readers (`fusion.rewrite.recompute_residuals`) and the
grouping rule that keeps those recomputations out of the forward kernels."""

from __future__ import annotations

import collections
import os
import sys

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion._src.backends import compiler
from fluxion._src.backends.compiler import fusion
from fluxion._src.backends.compiler.fusion import groups, rewrite

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # compiler_helpers.py is here
from compiler_helpers import closed_of, reference  # noqa: E402

ROWS = max(8, fluxion.config.fluxion_fuse_min_elements // 16)  # (ROWS, 32) activations: above the fusion threshold


def _gelu_tanh(x):
    return 0.5 * x * (1.0 + jnp.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


def _mlp_loss(w1, w2, x):
    return jnp.sum(_gelu_tanh(x @ w1) @ w2)


def _program(rng, act=_gelu_tanh):
    x = rng.standard_normal((ROWS, 16)).astype(np.float32)
    w1 = (rng.standard_normal((16, 32)) * 0.3).astype(np.float32)
    w2 = (rng.standard_normal((32, 4)) * 0.3).astype(np.float32)
    f = fluxion.grad(lambda w1, w2, x: jnp.sum(act(x @ w1) @ w2), argnums=(0, 1))
    return compiler.passes.optimize(closed_of(f, w1, w2, x)), (w1, w2, x)


def _prims(closed):
    return collections.Counter(e.primitive.name for e in closed.jaxpr.eqns)


def _late_reads(closed):
    """Large values read after the first product that follows their producer: what crosses memory between the
    forward and the backward kernels."""
    eqns = closed.jaxpr.eqns
    producer = {v: i for i, e in enumerate(eqns) for v in e.outvars}
    late = set()
    for j, e in enumerate(eqns):
        for v in e.invars:
            i = producer.get(v)
            if i is not None and v.aval.shape == (ROWS, 32) and any(rewrite._barrier(eqns[k])
                                                                   for k in range(i + 1, j)):
                late.add(v)
    return late


def test_gelu_residuals_are_recomputed_from_its_input_and_tanh(rng):
    closed, args = _program(rng)
    new = rewrite.recompute_residuals(closed)
    assert new is not closed
    producer = {v: e for e in new.jaxpr.eqns for v in e.outvars}
    # What the backward pass reads from the forward one: the pre-activation (x @ w1) and tanh, nothing derived.
    late = {producer[v].primitive.name for v in _late_reads(new)}
    assert late <= {"dot_general", "tanh"}, late
    assert len(_late_reads(new)) < len(_late_reads(closed))
    # The tanh is not recomputed (only cheap arithmetic is): one tanh in both programs.
    assert _prims(new)["tanh"] == _prims(closed)["tanh"] == 1
    # The same operations on the same values: identical results.
    for a, b in zip(reference(new, *args), reference(closed, *args)):
        np.testing.assert_array_equal(a, b)


def test_recomputations_stay_out_of_the_forward_kernel(rng):
    new = rewrite.recompute_residuals(_program(rng)[0])
    j = new.jaxpr
    gs = groups.Grouping(j.eqns, j.outvars, fluxion.config.fluxion_fuse_min_elements).run()
    first_dot = next(i for i, e in enumerate(j.eqns) if e.primitive.name == "dot_general")
    for g in gs:
        # No kernel spans a product: each one's members sit between two consecutive products.
        spans = {sum(rewrite._barrier(j.eqns[k]) for k in range(first_dot, m)) for m in g.members}
        assert len(spans) == 1, g


def test_expensive_residuals_and_programs_without_products_are_left_alone(rng):
    closed, _ = _program(rng, act=lambda h: jnp.exp(h) * 0.5)
    assert rewrite.recompute_residuals(closed) is closed  # exp(h) is read, not recomputed
    x = rng.standard_normal((ROWS, 32)).astype(np.float32)
    no_dot = compiler.passes.optimize(closed_of(fluxion.grad(lambda x: jnp.sum(_gelu_tanh(x))), x))
    assert rewrite.recompute_residuals(no_dot) is no_dot
    assert fusion.prepare(no_dot) is no_dot


@pytest.mark.skipif(not fusion.available(), reason="Numba not installed")
def test_fused_gradients_with_recomputed_residuals_match_eager_and_finite_differences(rng):
    from fluxion._src.test_util import check_grads
    closed, args = _program(rng)
    exe = compiler.compile_closed(closed, fuse=True, sync=True)
    assert exe.tier >= 1
    got = exe(*[np.asarray(a) for a in args])
    want = reference(closed, *args)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5)
    w1, w2, x = (a.astype(np.float64) for a in args)
    check_grads(fluxion.jit(lambda w1, w2: _mlp_loss(w1, w2, x[:64])), (w1, w2), order=1, modes=("rev",))
