"""fluxion.sharding, device_put onto shardings, shard_map and jit shardings against real JAX.

The table lives in `sharding_cases.py` (one record per behaviour, written against the `jax` API). Real JAX runs the
whole table once in a subprocess with `XLA_FLAGS=--xla_force_host_platform_device_count=8`; fluxion runs each record
in-process with 8 CPU devices. Results must match: repr strings and index maps exactly, values to float32 rounding,
and failing records must raise the same exception class.
"""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import jax_oracle  # noqa: E402  (the tests directory is not a package)

cases = jax_oracle.load("sharding_cases")
_compare = jax_oracle.compare

# Messages fluxion words differently from JAX; for the other failing records the message must contain JAX's first
# sentence (up to the first ':', '.' or '('), so the user sees the same diagnosis.
_OWN_WORDING = {"shard_map_error_unreplicated_output", "make_mesh_too_many_devices",
                "use_abstract_mesh_needs_abstract",  # JAX names `jax.sharding.AbstractMesh`
                "make_array_from_process_local_data_wrong_global_shape"}  # JAX's lacks a space after a '.'


@pytest.fixture(scope="module")
def oracle():
    pytest.importorskip("jax")
    return jax_oracle.run_jax("sharding_cases")


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_against_jax(name, oracle, eight_devices):
    import fluxion
    mine = cases.run_case(name, fluxion)
    ref = oracle[name]
    if ref[0] == "raises":
        assert mine[0] == "raises", f"JAX raised {ref[1]}: {ref[2]}, fluxion returned {mine[1]!r}"
        assert mine[1] == ref[1], f"exception class {mine[1]} ({mine[2]}) != JAX's {ref[1]} ({ref[2]})"
        if name not in _OWN_WORDING:
            head = ref[2].replace("\n", " ").split(":")[0].split(". ")[0].split("(")[0]
            assert head in mine[2].replace("\n", " "), f"message {mine[2]!r} lacks JAX's {head!r}"
        return
    assert mine[0] == "ok", f"fluxion raised {mine[1]}: {mine[2]}"
    _compare(mine[1], ref[1])


def test_sharded_values_feed_ordinary_ops(eight_devices):
    """A sharded Array is an ordinary value for every operation (one global buffer). (Auto axes: on make_mesh's
    default Explicit axes `a @ a.T[:, :4]` contracts a split dimension and needs `out_sharding=`, as in JAX.)"""
    import fluxion
    import fluxion.numpy as jnp
    from fluxion.sharding import AxisType, NamedSharding, PartitionSpec as P
    m = fluxion.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    x = np.arange(32, dtype=np.float32).reshape(8, 4)
    a = fluxion.device_put(x, NamedSharding(m, P("x", "y")))
    np.testing.assert_array_equal(jnp.sin(a) + a @ a.T[:, :4], np.sin(x) + x @ x.T[:, :4])
    np.testing.assert_array_equal(fluxion.jit(lambda v: v * 2)(a), x * 2)
    np.testing.assert_array_equal(fluxion.pmap(lambda v: v + 1)(a), x + 1)
    assert fluxion.device_put({"w": x}, NamedSharding(m, P("x")))["w"].sharding.spec == P("x")


def test_mesh_contexts_and_spec_errors(eight_devices):
    """Ways to give the current mesh, and the errors fluxion words itself (no JAX counterpart to compare with)."""
    import fluxion
    from fluxion import lax
    from fluxion.sharding import Mesh, NamedSharding, PartitionSpec as P, get_mesh, use_mesh
    from fluxion.experimental import mesh_utils
    m = Mesh(mesh_utils.create_device_mesh((4, 2)), ("a", "b"))
    f = fluxion.shard_map(lambda v: lax.psum(v, "a"), in_specs=P("a"), out_specs=P())
    x = np.arange(8, dtype=np.float32)
    with pytest.raises(ValueError, match="requires a mesh"):
        f(x)
    for ctx in (m, use_mesh(m)):
        with ctx:
            assert get_mesh() is m
            np.testing.assert_array_equal(f(x), x.reshape(4, 2).sum(0))
        assert get_mesh() is None
    with pytest.raises(ValueError, match="without in_specs"):
        fluxion.shard_map(lambda v: v, mesh=m, out_specs=P("a"))(x)
    with pytest.raises(ValueError, match="out_specs is not a tree prefix"):
        fluxion.shard_map(lambda v: (v, v), mesh=m, in_specs=P("a"), out_specs=(P("a"),) * 3)(x)
    with pytest.raises(ValueError, match="was given out_specs which require replicated outputs"):
        fluxion.shard_map(lambda v: v + 1, mesh=m, in_specs=P("a"), out_specs=P())(x)
    with pytest.raises(NameError, match="unbound axis name"):
        fluxion.shard_map(lambda v: lax.psum(v, "b"), mesh=m, in_specs=P("a"), out_specs=P("a"),
                          axis_names={"a"})(x)
    with pytest.raises(ValueError, match="a PartitionSpec P\\('a',\\) was given without a mesh"):
        fluxion.device_put(x, P("a"))
    with pytest.raises(TypeError, match="spec must be a PartitionSpec"):
        NamedSharding(m, ("a",))
    with pytest.raises(ValueError, match="devices must be unique"):
        Mesh(np.array([fluxion.devices()[0]] * 2), ("a",))
    legacy = fluxion.experimental.shard_map.shard_map(lambda v: lax.psum(v, "a"), m, P("a"), P(), auto={"b"})
    np.testing.assert_array_equal(legacy(x), x.reshape(4, 2).sum(0))


def test_pytree_specs_and_none_leaves(eight_devices):
    import fluxion
    from fluxion import lax
    from fluxion.sharding import PartitionSpec as P
    m = fluxion.make_mesh((2, 4), ("x", "y"))
    params = {"w": np.ones((4, 3), np.float32), "b": np.arange(3, dtype=np.float32)}
    batch = np.arange(24, dtype=np.float32).reshape(8, 3)

    def step(p, xb):
        return {"w": p["w"] * lax.psum(xb.sum(), ("x", "y")), "b": p["b"]}, xb * p["b"]

    f = fluxion.shard_map(step, mesh=m, in_specs=({"w": P("y"), "b": None}, P(("x", "y"))),
                          out_specs=({"w": P("y"), "b": P()}, P(("x", "y"))))
    new, pred = fluxion.jit(f)(params, batch)
    np.testing.assert_allclose(new["w"], params["w"] * batch.sum())
    np.testing.assert_array_equal(new["b"], params["b"])
    np.testing.assert_allclose(pred, batch * params["b"])
    eager_new, _ = f(params, batch)
    assert eager_new["w"].sharding.spec == P("y") and eager_new["b"].sharding.spec == P()


def test_scaling_benchmark_workloads_run(four_devices):
    """benchmarks/sharding_scaling.py's workloads run on fluxion (tiny sizes; nothing here is timed)."""
    import fluxion
    import fluxion.numpy as jnp
    sys.path.insert(0, str(HERE.parent.parent))
    from benchmarks import sharding_scaling as bench
    for key, (_, fn) in bench.WORKLOADS.items():
        for devices in (0, 4):
            samples = fn(fluxion, jnp, devices, True)["samples"]
            assert samples and all(np.isfinite(s) and s >= 0 for s in samples), (key, devices)
    fake = {(fw, d): {"matmul": 0.002, "mlp_step": 0.004 if fw == "fluxion" else 0.002}
            for fw in bench.FRAMEWORKS for d in bench.DEVICE_COUNTS}
    text = bench.table(fake, quick=True)
    assert "| sharded matmul, 64x64 float32, rows over the mesh | 1, no sharding | 2.00 | 2.00 | 1.00 |" in text
    assert "| MLP SGD step 32-16-4, batch 32 over the mesh | 4 | 4.00 | 2.00 | 0.50 |" in text
