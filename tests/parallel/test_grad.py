"""Gradients through collectives, checked by central finite differences of the forward pmap.

For a per-replica loss L_i(x_i) = sum(c_i * sin(coll(x)_i)), the SPMD gradient that `grad` computes inside pmap
(collectives transposed: psum -> psum, all_gather <-> psum_scatter, ppermute -> inverse ppermute, all_to_all ->
swapped axes) is d(sum_j L_j)/dx_i. The test checks four routes against finite differences of
total(X) = sum(pmap(L)(X, C)): grad outside pmap, grad inside pmap (replica threads), grad inside vmap with the same
axis name, and forward-mode jvp, on 1, 2 and 4 devices.
"""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import lax

# name -> (per-replica input shape, collective) as functions of the number of replicas n
CASES = {
    "psum": (lambda n: (3,), lambda x, n: lax.psum(x, "i")),
    "pmean": (lambda n: (3,), lambda x, n: lax.pmean(x, "i")),
    "all_gather": (lambda n: (3,), lambda x, n: lax.all_gather(x, "i")),
    "all_gather_tiled": (lambda n: (2, 3), lambda x, n: lax.all_gather(x, "i", axis=1, tiled=True)),
    "psum_scatter": (lambda n: (n, 2), lambda x, n: lax.psum_scatter(x, "i")),
    "psum_scatter_tiled": (lambda n: (2 * n,), lambda x, n: lax.psum_scatter(x, "i", tiled=True)),
    "ppermute_cycle": (lambda n: (3,), lambda x, n: lax.ppermute(x, "i", [(k, (k + 1) % n) for k in range(n)])),
    "ppermute_partial": (lambda n: (3,), lambda x, n: lax.ppermute(x, "i", [(0, n - 1)])),
    "all_to_all": (lambda n: (n, 2), lambda x, n: lax.all_to_all(x, "i", 0, 1)),
    "all_to_all_tiled": (lambda n: (2, 2 * n), lambda x, n: lax.all_to_all(x, "i", 1, 0, tiled=True)),
    "two_collectives": (lambda n: (3,), lambda x, n: lax.psum(x * lax.all_gather(x, "i")[0], "i")),
}


def _setup(name, n, rng):
    shape_fn, coll = CASES[name]
    x = rng.standard_normal((n,) + shape_fn(n)).astype(np.float32)
    out_shape = fluxion.vmap(lambda v: coll(v, n), axis_name="i")(x).shape
    c = rng.standard_normal(out_shape).astype(np.float32)

    def loss(v, cc):
        return jnp.sum(cc * jnp.sin(coll(v, n)))

    return x, c, loss


def _finite_difference(total, x, eps=1e-2):
    g = np.zeros(x.shape, np.float64)
    for idx in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[idx] += eps
        xm[idx] -= eps
        g[idx] = (float(total(xp)) - float(total(xm))) / (2 * eps)
    return g


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_matches_finite_differences(ndev, name, rng):
    x, c, loss = _setup(name, ndev, rng)
    pm = fluxion.pmap(loss, axis_name="i")

    def total(xx):
        return np.asarray(pm(xx, c), np.float64).sum()

    expected = _finite_difference(total, x)
    tol = dict(rtol=2e-3, atol=2e-3)
    outside = fluxion.grad(lambda xx: pm(xx, c).sum())(x)
    np.testing.assert_allclose(outside, expected, **tol, err_msg="grad outside pmap")
    inside = fluxion.pmap(fluxion.grad(loss), axis_name="i")(x, c)
    np.testing.assert_allclose(inside, expected, **tol, err_msg="grad inside pmap")
    in_vmap = fluxion.vmap(fluxion.grad(loss), axis_name="i")(x, c)
    np.testing.assert_allclose(in_vmap, expected, **tol, err_msg="grad inside vmap")
    t = np.ones_like(x)
    _, tangent = fluxion.jvp(lambda xx: pm(xx, c).sum(), (x,), (t,))
    np.testing.assert_allclose(float(tangent), float((expected * t).sum()), rtol=2e-3, atol=2e-3)
    tangents = fluxion.pmap(lambda v, cc, tt: fluxion.jvp(lambda u: loss(u, cc), (v,), (tt,))[1],
                            axis_name="i")(x, c, t)
    np.testing.assert_allclose(float(np.sum(tangents)), float((expected * t).sum()), rtol=2e-3, atol=2e-3)


def test_psum_gradient_values_match_jax(ndev):
    """JAX gives pmap(grad(psum)) = n and pmap(grad(pmean)) = 1 per element; we do too."""
    x = np.arange(ndev, dtype=np.float32)
    np.testing.assert_allclose(fluxion.pmap(fluxion.grad(lambda v: lax.psum(v, "i")), axis_name="i")(x),
                               np.full(ndev, ndev, np.float32))
    np.testing.assert_allclose(fluxion.pmap(fluxion.grad(lambda v: lax.pmean(v, "i")), axis_name="i")(x),
                               np.ones(ndev, np.float32))


def test_pmax_is_not_differentiable_as_in_jax():
    with pytest.raises(NotImplementedError, match="pmax"):
        fluxion.vmap(fluxion.grad(lambda v: lax.pmax(v, "i")), axis_name="i")(jnp.arange(2.0))
