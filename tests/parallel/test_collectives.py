"""Collectives (fluxion/_src/lax/parallel.py) against NumPy references, under pmap and under vmap(axis_name=...).

Every collective runs on 1, 2 and 4 CPU devices (`ndev` fixture). The reference for replica r is written directly
from the definition with NumPy on the stacked inputs (x[i] is replica i's value); the same reference is used for the
pmap path (threads exchanging values) and the vmap path (batching rules), so the two are also checked against each
other. Nesting (pmap of vmap with two axis names) is checked against the reference on the flattened index.
"""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import lax

MAPS = {
    "pmap": lambda f: fluxion.pmap(f, axis_name="i"),
    "vmap": lambda f: fluxion.vmap(f, axis_name="i"),
}


def run(kind, f, *xs):
    return np.asarray(MAPS[kind](f)(*xs))


def per_replica(n, fn):
    return np.stack([fn(r) for r in range(n)])


@pytest.fixture(params=sorted(MAPS))
def kind(request):
    return request.param


def test_psum_pmean_pmax_pmin(ndev, kind, rng):
    x = rng.standard_normal((ndev, 3, 2)).astype(np.float32)
    for fn, ref in [(lax.psum, x.sum(0)), (lax.pmean, x.mean(0)), (lax.pmax, x.max(0)), (lax.pmin, x.min(0))]:
        out = run(kind, lambda v: fn(v, "i"), x)
        assert out.shape == x.shape and out.dtype == np.float32
        np.testing.assert_allclose(out, np.broadcast_to(ref, x.shape), rtol=1e-6, atol=1e-6, err_msg=fn.__name__)


def test_psum_integer_bool_and_pytree(ndev, kind):
    x = np.arange(ndev * 3, dtype=np.int32).reshape(ndev, 3)
    out = MAPS[kind](lambda v: lax.psum({"a": v, "b": v > 2}, "i"))(x)
    np.testing.assert_array_equal(out["a"], np.broadcast_to(x.sum(0), x.shape))
    assert out["a"].dtype == np.int32
    np.testing.assert_array_equal(out["b"], np.broadcast_to((x > 2).sum(0), x.shape))
    assert out["b"].dtype == np.int32  # booleans are summed as int32, as in JAX
    mean = run(kind, lambda v: lax.pmean(v, "i"), x)
    assert mean.dtype == np.float32
    np.testing.assert_allclose(mean, np.broadcast_to(x.mean(0), x.shape), rtol=1e-6)


def test_psum_of_constants_is_static(ndev, kind):
    seen = []

    def f(v):
        n = lax.psum(1, "i")
        seen.append(n)
        return v * n + lax.psum(jnp.float32(0.5), "i")

    out = run(kind, f, np.ones((ndev, 2), np.float32))
    assert seen and all(type(s) is int and s == ndev for s in seen)
    np.testing.assert_allclose(out, np.full((ndev, 2), ndev + 0.5 * ndev, np.float32))
    assert lax.psum(1, ()) == 1


@pytest.mark.parametrize("axis,tiled", [(0, False), (1, False), (-1, False), (0, True), (1, True)])
def test_all_gather(ndev, kind, axis, tiled, rng):
    x = rng.standard_normal((ndev, 2, 3)).astype(np.float32)
    out = run(kind, lambda v: lax.all_gather(v, "i", axis=axis, tiled=tiled), x)
    gathered = (np.concatenate(list(x), axis=axis) if tiled else np.stack(list(x), axis=axis))
    np.testing.assert_array_equal(out, per_replica(ndev, lambda r: gathered))


@pytest.mark.parametrize("dim,tiled", [(0, False), (1, False), (0, True), (1, True)])
def test_psum_scatter(ndev, kind, dim, tiled, rng):
    shape = [2, 3]
    shape[dim] = ndev * (2 if tiled else 1)
    x = rng.standard_normal([ndev] + shape).astype(np.float32)
    out = run(kind, lambda v: lax.psum_scatter(v, "i", scatter_dimension=dim, tiled=tiled), x)
    total = x.sum(0)
    ref = per_replica(ndev, lambda r: np.split(total, ndev, axis=dim)[r] if tiled else np.take(total, r, axis=dim))
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shift", [1, -1])
def test_ppermute_cycle_and_partial(ndev, kind, shift, rng):
    x = rng.standard_normal((ndev, 3)).astype(np.float32)
    perm = [(i, (i + shift) % ndev) for i in range(ndev)]
    out = run(kind, lambda v: lax.ppermute(v, "i", perm), x)
    np.testing.assert_array_equal(out, per_replica(ndev, lambda r: x[(r - shift) % ndev]))
    partial = [(0, ndev - 1)]  # every other replica receives zeros
    out = run(kind, lambda v: lax.ppermute(v, "i", partial), x)
    np.testing.assert_array_equal(out, per_replica(ndev, lambda r: x[0] if r == ndev - 1 else np.zeros(3)))
    rev = list(reversed(range(ndev)))
    out = run(kind, lambda v: lax.pshuffle(v, "i", rev), x)
    np.testing.assert_array_equal(out, x[::-1])


@pytest.mark.parametrize("split,concat,tiled", [(0, 0, False), (0, 1, False), (1, 0, False), (0, 1, True),
                                                (1, 0, True), (1, 1, True)])
def test_all_to_all(ndev, kind, split, concat, tiled, rng):
    shape = [3, 2]
    shape[split] = ndev * (2 if tiled else 1)
    x = rng.standard_normal([ndev] + shape).astype(np.float32)
    out = run(kind, lambda v: lax.all_to_all(v, "i", split, concat, tiled=tiled), x)

    def ref(r):
        if tiled:
            return np.concatenate([np.split(x[i], ndev, axis=split)[r] for i in range(ndev)], axis=concat)
        return np.stack([np.take(x[i], r, axis=split) for i in range(ndev)], axis=concat)

    np.testing.assert_array_equal(out, per_replica(ndev, ref))


def test_axis_index_and_size(ndev, kind):
    out = run(kind, lambda v: lax.axis_index("i") + 0 * lax.axis_size("i"), np.zeros((ndev, 1)))
    np.testing.assert_array_equal(out, np.arange(ndev))
    assert out.dtype == np.int32


def test_two_axis_names_pmap_of_vmap(four_devices, rng):
    """pmap over 'i' (2 devices) of vmap over 'j' (3): collectives over ('i', 'j') see 6 replicas, row-major."""
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    flat = x.reshape(6, 4)

    def nest(f):
        return fluxion.pmap(fluxion.vmap(f, axis_name="j"), axis_name="i", devices=fluxion.devices()[:2])

    np.testing.assert_allclose(nest(lambda v: lax.psum(v, ("i", "j")))(x), np.broadcast_to(x.sum((0, 1)), x.shape),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(nest(lambda v: lax.psum(v, "j"))(x), np.broadcast_to(x.sum(1, keepdims=True),
                                                                                    x.shape), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(nest(lambda v: lax.pmean(v, "i"))(x), np.broadcast_to(x.mean(0), x.shape), rtol=1e-6,
                               atol=1e-6)
    np.testing.assert_array_equal(nest(lambda v: lax.axis_index(("i", "j")))(x), np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(nest(lambda v: lax.all_gather(v, ("i", "j")))(x),
                                  np.broadcast_to(flat, (2, 3, 6, 4)))
    perm = [(k, (k + 1) % 6) for k in range(6)]
    np.testing.assert_array_equal(nest(lambda v: lax.ppermute(v, ("i", "j"), perm))(x),
                                  np.roll(flat, 1, axis=0).reshape(x.shape))
    y = rng.standard_normal((2, 3, 12)).astype(np.float32)
    scattered = nest(lambda v: lax.psum_scatter(v, ("i", "j"), scatter_dimension=0, tiled=True))(y)
    np.testing.assert_allclose(scattered.reshape(6, 2), y.sum((0, 1)).reshape(6, 2), rtol=1e-5, atol=1e-6)
    z = rng.standard_normal((2, 3, 6)).astype(np.float32)
    a2a = nest(lambda v: lax.all_to_all(v, ("i", "j"), 0, 0))(z).reshape(6, 6)
    np.testing.assert_array_equal(a2a, z.reshape(6, 6).T)


def test_vmap_of_vmap_inner_and_outer_axes(rng):
    x = rng.standard_normal((2, 3)).astype(np.float32)
    f = fluxion.vmap(fluxion.vmap(lambda v: (lax.psum(v, "outer"), lax.axis_index("outer"), lax.axis_index("inner")),
                                  axis_name="inner"), axis_name="outer")
    s, io, ii = f(x)
    np.testing.assert_allclose(s, np.broadcast_to(x.sum(0), x.shape), rtol=1e-6)
    np.testing.assert_array_equal(io, np.repeat(np.arange(2)[:, None], 3, 1))
    np.testing.assert_array_equal(ii, np.repeat(np.arange(3)[None], 2, 0))


def test_unmapped_operand_and_out_axes_none(ndev, kind):
    c = np.arange(3, dtype=np.float32)
    f = MAPS[kind](lambda v: (lax.psum(jnp.asarray(c) + 0 * v.sum(), "i"), lax.all_gather(jnp.asarray(c), "i"),
                              lax.pmax(jnp.asarray(c), "i")))
    s, g, m = f(np.zeros((ndev, 2), np.float32))
    np.testing.assert_allclose(s, np.broadcast_to(c * ndev, (ndev, 3)))
    np.testing.assert_array_equal(g, np.broadcast_to(c, (ndev, ndev, 3)))
    np.testing.assert_array_equal(m, np.broadcast_to(c, (ndev, 3)))
    out = fluxion.vmap(lambda v: lax.psum(v, "i"), axis_name="i", out_axes=None)(np.arange(ndev, dtype=np.float32))
    assert np.asarray(out).shape == () and float(out) == ndev * (ndev - 1) / 2


def test_jit_inside_and_outside(ndev):
    x = np.arange(ndev * 2, dtype=np.float32).reshape(ndev, 2)
    f = lambda v: lax.psum(v * 2, "i")
    ref = np.broadcast_to(2 * x.sum(0), x.shape)
    np.testing.assert_allclose(fluxion.pmap(fluxion.jit(f), axis_name="i")(x), ref)
    np.testing.assert_allclose(fluxion.jit(fluxion.pmap(f, axis_name="i"))(x), ref)
    np.testing.assert_allclose(fluxion.jit(fluxion.vmap(f, axis_name="i"))(x), ref)


def test_errors():
    x = jnp.ones(3)
    with pytest.raises(NameError, match="unbound axis name: 'k'"):
        lax.psum(x, "k")
    with pytest.raises(NameError, match="unbound axis name"):
        fluxion.vmap(lambda v: lax.psum(v, "k"), axis_name="i")(jnp.ones((2, 3)))
    with pytest.raises(NameError, match="unbound axis name"):
        fluxion.pmap(lambda v: lax.axis_index("k"), axis_name="i")(jnp.ones((1, 3)))
    with pytest.raises(NotImplementedError, match="axis_index_groups"):
        fluxion.vmap(lambda v: lax.psum(v, "i", axis_index_groups=[[0, 1]]), axis_name="i")(jnp.ones((2, 3)))
    with pytest.raises(ValueError, match="equal the axis size 2"):
        fluxion.vmap(lambda v: lax.psum_scatter(v, "i"), axis_name="i")(jnp.ones((2, 3)))
    with pytest.raises(ValueError, match="are 2 and 3"):
        fluxion.vmap(lambda v: lax.all_to_all(v, "i", 0, 0), axis_name="i")(jnp.ones((2, 3)))
    with pytest.raises(ValueError, match="repeats a source or a destination"):
        fluxion.vmap(lambda v: lax.ppermute(v, "i", [(0, 1), (0, 0)]), axis_name="i")(jnp.ones((2, 3)))
    with pytest.raises(ValueError, match="out of range for an axis of size 2"):
        fluxion.vmap(lambda v: lax.ppermute(v, "i", [(0, 2)]), axis_name="i")(jnp.ones((2, 3)))
    with pytest.raises(ValueError, match="out of bounds"):
        fluxion.vmap(lambda v: lax.all_gather(v, "i", axis=3), axis_name="i")(jnp.ones((2, 3)))


def test_against_jax(four_devices, rng):
    """Spot-check against real JAX on 4 CPU devices (pmap replaced by vmap there, which JAX runs everywhere)."""
    jax = pytest.importorskip("jax")
    x = rng.standard_normal((4, 4, 2)).astype(np.float32)
    cases = {
        "psum": lambda L: (lambda v: L.psum(v, "i")),
        "all_gather_tiled": lambda L: (lambda v: L.all_gather(v, "i", axis=1, tiled=True)),
        "psum_scatter": lambda L: (lambda v: L.psum_scatter(v, "i", scatter_dimension=0, tiled=True)),
        "all_to_all": lambda L: (lambda v: L.all_to_all(v, "i", 0, 1)),
        "ppermute": lambda L: (lambda v: L.ppermute(v, "i", [(0, 3), (3, 1), (1, 2), (2, 0)])),
    }
    for name, make in cases.items():
        ours = fluxion.pmap(make(lax), axis_name="i")(x)
        theirs = jax.vmap(make(jax.lax), axis_name="i")(x)
        np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-5, atol=1e-6, err_msg=name)
