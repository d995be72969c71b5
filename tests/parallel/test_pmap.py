"""`pmap` (fluxion/_src/pmap.py): results equal vmap's, argument handling, errors, outputs, and the replica runtime.

Oracles: `vmap` of the same function (itself tested against NumPy in tests/core), NumPy expressions, and the
printed results of the pmap examples of reference tutorial 001 (8 devices).
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion._src import distributed
from fluxion._src import pmap as pmap_mod
from fluxion._src.interpreters import spmd


def _f_matmul(x, w):
    return jnp.tanh(x @ w).sum(-1)


def _f_tree(d):
    return {"s": d["a"] * 2 + d["b"].sum(), "t": (jnp.exp(d["a"]), d["b"].T)}


@pytest.mark.parametrize("case", ["elementwise", "matmul_broadcast_w", "tree", "in_axes1_out_axes1", "kwargs"])
def test_pmap_equals_vmap(ndev, case, rng):
    x = rng.standard_normal((ndev, 3)).astype(np.float32)
    w = rng.standard_normal((3, 2)).astype(np.float32)
    if case == "elementwise":
        f, args, kw = (lambda a, b: jnp.sin(a) * b + 1), (x, x), {}
    elif case == "matmul_broadcast_w":
        f, args, kw = _f_matmul, (x[:, None, :], w), dict(in_axes=(0, None))
    elif case == "tree":
        f, args, kw = _f_tree, ({"a": x, "b": rng.standard_normal((ndev, 2, 3)).astype(np.float32)},), {}
    elif case == "in_axes1_out_axes1":
        f, args, kw = (lambda a: jnp.cumsum(a) * 3), (x.T,), dict(in_axes=1, out_axes=1)
    else:
        out_p = fluxion.pmap(lambda a, *, b: a * b)(x, b=x + 1)
        out_v = fluxion.vmap(lambda a, b: a * b)(x, x + 1)
        np.testing.assert_array_equal(out_p, out_v)
        return
    out_p = fluxion.pmap(f, **kw)(*args)
    out_v = fluxion.vmap(f, **kw)(*args)
    leaves_p, tree_p = fluxion.tree_util.tree_flatten(out_p)
    leaves_v, tree_v = fluxion.tree_util.tree_flatten(out_v)
    assert tree_p == tree_v
    for a, b in zip(leaves_p, leaves_v):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-6)


def test_outputs_print_convert_index_and_feed_next_pmap(four_devices):
    x = jnp.arange(8).reshape(4, 2)
    y = fluxion.pmap(lambda v: v * 2)(x)
    assert isinstance(y, fluxion.Array) and y.shape == (4, 2) and y.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(y), np.arange(8).reshape(4, 2) * 2)
    assert str(y) == str(np.arange(8).reshape(4, 2) * 2)
    assert repr(y).startswith("Array([[ 0,  2],")
    assert int(y[3, 1]) == 14
    np.testing.assert_array_equal(y[1:3], [[4, 6], [8, 10]])
    z = fluxion.pmap(lambda v: lax.psum(v, "i"), axis_name="i")(y)
    np.testing.assert_array_equal(z, np.broadcast_to(np.asarray(y).sum(0), (4, 2)))
    np.testing.assert_array_equal(y + 1, np.asarray(y) + 1)  # ordinary array ops on the result


def test_out_axes_none_and_static_broadcast(ndev):
    x = np.arange(ndev * 2, dtype=np.float32).reshape(ndev, 2)
    calls = []

    def f(v, power, scale):
        calls.append(power)
        return lax.psum(v ** power, "i") * scale, v

    g = fluxion.pmap(f, axis_name="i", in_axes=(0, None, None), out_axes=(None, 0), static_broadcasted_argnums=1)
    total, same = g(x, 2, 3.0)
    np.testing.assert_allclose(total, (x ** 2).sum(0) * 3)
    np.testing.assert_array_equal(same, x)
    g(x, 2, 5.0)
    assert calls == [2]  # same signature and static value: traced once
    g(x, 3, 5.0)
    assert calls == [2, 3]
    for _ in range(3):  # a fresh wrapper per call (the tutorial's loop) reuses the cache
        fluxion.pmap(f, axis_name="i", in_axes=(0, None, None), out_axes=(None, 0), static_broadcasted_argnums=1)(
            x, 3, 5.0)
    assert calls == [2, 3]


def test_devices_argument_and_size_errors(four_devices):
    devs = fluxion.devices()
    out = fluxion.pmap(lambda v: lax.axis_index("i") + v, axis_name="i", devices=devs[2:])(jnp.zeros(2, jnp.int32))
    np.testing.assert_array_equal(out, [0, 1])
    np.testing.assert_array_equal(fluxion.pmap(lambda v: v + 1)(jnp.zeros(3)), np.ones(3))  # 3 of 4 devices
    with pytest.raises(ValueError, match=r"mapped axis has size 5, but only 4 local CPU device"):
        fluxion.pmap(lambda v: v)(jnp.zeros(5))
    with pytest.raises(ValueError, match=r"mapped axis has size 3 but devices= lists 2 device"):
        fluxion.pmap(lambda v: v, devices=devs[:2])(jnp.zeros(3))
    with pytest.raises(ValueError, match=r"inconsistent sizes.*size 2.*size 3"):
        fluxion.pmap(lambda a, b: a + b.sum())(jnp.zeros(2), jnp.zeros(3))
    with pytest.raises(ValueError, match="rank 0"):
        fluxion.pmap(lambda a: a)(1.0)
    with pytest.raises(ValueError, match="in_axes has 1 entries but .* 2 positional"):
        fluxion.pmap(lambda a, b: a, in_axes=(0,))(jnp.zeros(2), jnp.zeros(2))
    with pytest.raises(ValueError, match="axis_size"):
        fluxion.pmap(lambda a: a, in_axes=None)(jnp.zeros(2))
    np.testing.assert_array_equal(fluxion.pmap(lambda a: a * 2, in_axes=None, axis_size=3)(jnp.ones(2)),
                                  np.full((3, 2), 2.0))


def test_pmap_inside_transformations_means_vmap(ndev, rng):
    x = rng.standard_normal((ndev, 3)).astype(np.float32)

    def f(v):
        return jnp.sin(v) * lax.pmean(v, "i")

    p = fluxion.pmap(f, axis_name="i")
    v = fluxion.vmap(f, axis_name="i")
    np.testing.assert_allclose(fluxion.jit(p)(x), v(x), rtol=1e-6)
    np.testing.assert_allclose(fluxion.grad(lambda a: p(a).sum())(x), fluxion.grad(lambda a: v(a).sum())(x),
                               rtol=1e-6)
    batched = fluxion.vmap(p)(np.stack([x, 2 * x]))
    np.testing.assert_allclose(batched, np.stack([v(x), v(2 * x)]), rtol=1e-6)
    nested = fluxion.pmap(fluxion.vmap(lambda a: lax.psum(a, "i") + lax.psum(a, "j"), axis_name="j"),
                          axis_name="i")(x)
    np.testing.assert_allclose(nested, x.sum(0) + x.sum(1, keepdims=True), rtol=1e-6, atol=1e-6)


def test_device_put_replicated_and_sharded(ndev):
    devs = fluxion.local_devices()
    tree = {"w": jnp.arange(3.0), "step": 0}
    rep = fluxion.device_put_replicated(tree, devs)
    assert rep["w"].shape == (ndev, 3) and rep["step"].shape == (ndev,)
    np.testing.assert_array_equal(rep["w"], np.tile(np.arange(3.0), (ndev, 1)))
    back = pmap_mod.unreplicate(rep)
    np.testing.assert_array_equal(back["w"], np.arange(3.0))
    np.testing.assert_array_equal(pmap_mod.replicate(tree)["w"], rep["w"])
    shards = [{"a": np.full(2, i, np.float32)} for i in range(ndev)]
    sh = fluxion.device_put_sharded(shards, devs)
    np.testing.assert_array_equal(sh["a"], np.repeat(np.arange(ndev, dtype=np.float32)[:, None], 2, 1))
    with pytest.raises(ValueError, match=f"got {ndev + 1} shards for {ndev} devices"):
        fluxion.device_put_sharded(shards + shards[:1], devs)
    with pytest.raises(ValueError, match="non-empty"):
        fluxion.device_put_replicated(tree, [])
    if ndev > 1:
        bad = shards[:-1] + [{"a": np.zeros(3, np.float32)}]
        with pytest.raises(ValueError, match=r"shard \d+ has a leaf of shape \(3,\)"):
            fluxion.device_put_sharded(bad, devs)


def test_tutorial_001_pmap_on_8_devices(eight_devices):
    """The pmap example of reference tutorial 001, on 8 CPU devices."""
    assert fluxion.device_count() == 8
    assert repr(fluxion.devices()) == "[" + ", ".join(f"CpuDevice(id={i})" for i in range(8)) + "]"
    x = jnp.arange(8)
    y = jnp.arange(8)
    out_v = fluxion.vmap(jnp.add)(x, y)
    out_p = fluxion.pmap(jnp.add)(x, y)
    np.testing.assert_array_equal(out_p, [0, 2, 4, 6, 8, 10, 12, 14])
    np.testing.assert_array_equal(out_p, out_v)
    assert out_p.dtype == np.int32
    some_func = lambda v: jnp.dot(v, v)
    comp = fluxion.pmap(fluxion.vmap(some_func))(jnp.arange(8 * 2 * 3.0).reshape(8, 2, 3))
    np.testing.assert_allclose(comp, np.einsum("abc,abc->ab", *(2 * [np.arange(48.0).reshape(8, 2, 3)])))


# --------------------------------------------------------------------------------------------------------------
# The replica runtime
# --------------------------------------------------------------------------------------------------------------

def _run(executable, n, timeout=None):
    devs = fluxion.local_devices()[:n]
    old = distributed._state.timeout
    distributed._state.timeout = timeout
    try:
        return spmd.run_replicas(executable, [], [[i] for i in range(n)], devs, "r", 0, n, None)
    finally:
        distributed._state.timeout = old


def test_replicas_run_concurrently_on_distinct_threads(four_devices):
    def exe(consts, args):
        slot = spmd.current_replica("r")
        # deadlocks unless all replicas run at once
        got = slot.exchange([np.asarray(args[0])], "test", lambda vals: [int(v[0]) for v in vals])
        return [threading.get_ident(), got]

    results = _run(exe, 4)
    assert len({r[0] for r in results}) == 4
    assert all(r[1] == [0, 1, 2, 3] for r in results)


def test_replica_failure_stops_the_others(four_devices):
    def exe(consts, args):
        if args[0] == 2:
            raise ZeroDivisionError("replica 2 failed")
        spmd.current_replica("r").exchange([np.asarray(1)], "test", len)
        return []

    with pytest.raises(ZeroDivisionError, match="replica 2 failed"):
        _run(exe, 4, timeout=30)


def test_replica_that_never_arrives_times_out(four_devices):
    gate = threading.Event()

    def exe(consts, args):
        if args[0] == 1:  # still running (not finished) while the others wait: only the timeout can tell
            assert gate.wait(30)
            return []
        try:
            spmd.current_replica("r").exchange([np.asarray(1)], "psum", len)
        except spmd.CollectiveError:
            gate.set()
            raise
        return []

    with pytest.raises(spmd.CollectiveError, match="waited more than 0.3 s at collective 'psum'"):
        _run(exe, 3, timeout=0.3)


# A replica that skips a collective, or reaches another one, is reported as soon as that can be seen (the generous
# timeouts only bound how long a regression would take to fail).
def _skips_psum(args):
    if args[0] != 1:
        spmd.current_replica("r").exchange([np.asarray(1)], "psum", len)


def _psum_or_pmax(args):
    spmd.current_replica("r").exchange([np.asarray(1)], "psum" if args[0] == 0 else "pmax", len)


def _skips_second_psum(args):
    slot = spmd.current_replica("r")
    slot.exchange([np.asarray(1)], "psum", len)  # every replica meets here first
    if args[0] == 0:
        slot.exchange([np.asarray(1)], "psum", len)


MISMATCHES = [
    ("replica finished", _skips_psum, 3,
     r"replica 0 is at collective 'psum' over axis 'r', but replica 1 finished its program without reaching it"),
    ("replica finished later", _skips_second_psum, 4, r"at collective 'psum' over axis 'r', but replica [123] finished"),
    ("different collectives", _psum_or_pmax, 4, r"replicas reached different collectives over axis 'r': replica \d "
     r"is at '(psum|pmax)' while replica \d is at '(psum|pmax)'"),
]


@pytest.mark.parametrize("what, body, n, message", MISMATCHES, ids=[m[0] for m in MISMATCHES])
def test_mismatched_collectives_fail_at_once(four_devices, what, body, n, message):
    def exe(consts, args):
        body(args)
        return []

    with pytest.raises(spmd.CollectiveError, match=message):
        _run(exe, n, timeout=120)


def test_psum_in_a_branch_only_some_replicas_take(four_devices):
    def body(x):
        return lax.cond(lax.axis_index("i") < 2, lambda x: lax.psum(x, "i"), lambda x: x * 2.0, x)

    with fluxion.config.override("fluxion_collective_timeout", 120.0):
        with pytest.raises(spmd.CollectiveError, match="at collective 'psum' over axis 'i', but replica [23] "
                                                       "finished its program"):
            fluxion.pmap(body, axis_name="i")(np.arange(4, dtype=np.float32))
        # the same program with the collective outside the branch is fine, and the runtime is still usable
        out = fluxion.pmap(lambda x: lax.psum(x, "i") + x, axis_name="i")(np.arange(4, dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(out), 6.0 + np.arange(4, dtype=np.float32))


def test_collective_outside_replica_names_axis():
    with pytest.raises(NameError, match="unbound axis name: 'zz'"):
        spmd.current_replica("zz")


def test_pytree_prefix_in_axes_and_out_axes(ndev, rng):
    a = rng.standard_normal((ndev, 3)).astype(np.float32)
    b = rng.standard_normal((3,)).astype(np.float32)

    def f(d):
        return {"sum": d["a"] + d["b"], "b": d["b"] * 2}

    out = fluxion.pmap(f, in_axes=({"a": 0, "b": None},), out_axes={"sum": 1, "b": None})({"a": a, "b": b})
    np.testing.assert_allclose(out["sum"], (a + b).T, rtol=1e-6)
    np.testing.assert_allclose(out["b"], b * 2, rtol=1e-6)
