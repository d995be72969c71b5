"""Explicit sharding mode (`AxisType.Explicit`: shardings in the types) against real JAX.

The table lives in `explicit_sharding_cases.py` (one record per family of operations, written against the `jax`
API): the text of `jax.typeof` for placed arrays and for the results of elementwise ops, products (with and without
`out_sharding=`), reductions, reshapes/transposes/broadcasts, `jit` (types seen while tracing and the outputs'
shardings), `reshard`/`with_sharding_constraint`, gradients, `auto_axes`/`explicit_axes`; and the errors
(`ShardingTypeError` and its message) where JAX rejects an operation. Real JAX runs the table in a subprocess with 8
host devices; fluxion runs each record in-process with 8 CPU devices.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import jax_oracle  # noqa: E402  (the tests directory is not a package)

cases = jax_oracle.load("explicit_sharding_cases")
runner = jax_oracle.load("sharding_cases")


@pytest.fixture(scope="module")
def oracle():
    pytest.importorskip("jax")
    return jax_oracle.run_jax("explicit_sharding_cases")


def _plain(x):
    """Error outcomes inside a result, reduced to (class, JAX's first sentence) for comparison; messages of
    fluxion must contain JAX's first sentence."""
    if isinstance(x, tuple) and len(x) == 3 and x[0] == "raises":
        return ("raises", x[1], x[2].split(". ")[0])
    if isinstance(x, (list, tuple)):
        return type(x)(_plain(v) for v in x)
    return x


def _check_errors(mine, ref):
    if isinstance(ref, tuple) and len(ref) == 3 and ref[0] == "raises":
        assert isinstance(mine, tuple) and mine[:2] == ref[:2], f"{mine!r} != {ref!r}"
        assert ref[2].split(". ")[0] in mine[2], f"message {mine[2]!r} lacks JAX's {ref[2].split('. ')[0]!r}"
    elif isinstance(ref, (list, tuple)) and isinstance(mine, (list, tuple)):
        for a, b in zip(mine, ref):
            _check_errors(a, b)


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_against_jax(name, oracle, eight_devices):
    import fluxion
    mine = runner.run_case(name, fluxion, cases.CASES)
    ref = oracle[name]
    assert mine[0] == ref[0], f"fluxion: {mine!r}, JAX: {ref!r}"
    if ref[0] == "raises":
        assert mine[1] == ref[1], f"exception class {mine[1]} ({mine[2]}) != JAX's {ref[1]} ({ref[2]})"
        return
    _check_errors(mine[1], ref[1])
    jax_oracle.compare(_plain(mine[1]), _plain(ref[1]))


def test_unsharded_types_unchanged(eight_devices):
    """Avals without a sharding compare and hash as before; a sharded aval differs from the unsharded one."""
    import fluxion
    from fluxion._src.core import ShapedArray
    x = fluxion.device_put(np.ones((8, 4), np.float32),
                           fluxion.sharding.NamedSharding(fluxion.make_mesh((8,), ("d",)), fluxion.P("d")))
    plain = ShapedArray((8, 4), np.dtype(np.float32))
    assert hash(plain) == hash(((8, 4), np.dtype(np.float32), False))
    assert fluxion.typeof(x) != plain and fluxion.typeof(x).update(sharding=None) == plain
    assert fluxion.typeof(x).update(shape=(32,)).sharding is None  # a new shape drops the spec


def test_make_jaxpr_shows_types(eight_devices):
    """Jaxpr variables print their sharded types, and `reshard` is an equation that changes only the type."""
    import fluxion
    m = fluxion.make_mesh((4, 2), ("data", "model"))
    x = fluxion.device_put(np.ones((8, 4), np.float32), fluxion.sharding.NamedSharding(m, fluxion.P("data")))
    to = fluxion.sharding.NamedSharding(m, fluxion.P(None, "data"))
    text = str(fluxion.make_jaxpr(lambda a: fluxion.sharding.reshard(fluxion.numpy.sin(a), to))(x))
    assert "a:f32[8@data,4]" in text and "f32[8@data,4] = sin a" in text and "f32[8,4@data] = reshard" in text
    to = fluxion.sharding.NamedSharding(m, fluxion.P(None, "model"))
    grads = fluxion.grad(lambda a: fluxion.sharding.reshard(a, to).sum())(x)
    assert str(fluxion.typeof(grads)) == "float32[8@data,4]"
    np.testing.assert_array_equal(grads, np.ones((8, 4), np.float32))


def test_eager_path_untouched_until_explicit_mesh():
    """Until the process builds a NamedSharding over a mesh with an Explicit axis, eager operations run the plain
    dispatcher (no sharding work at all); Auto meshes do not switch it. Run in a fresh process: this one has long
    switched."""
    script = """
import fluxion, numpy as np
from fluxion._src import core, sharding
from fluxion.sharding import AxisType, NamedSharding, PartitionSpec as P
assert core.eager_apply is core._plain_eager_apply and not sharding.EXPLICIT_IN_USE[0]
auto = fluxion.make_mesh((2,), ("a",), axis_types=(AxisType.Auto,))
x = fluxion.device_put(np.ones((4, 2), np.float32), NamedSharding(auto, P("a")))
assert str(fluxion.typeof(x * 2)) == "float32[4,2]"
assert core.eager_apply is core._plain_eager_apply and not sharding.EXPLICIT_IN_USE[0]
explicit = fluxion.make_mesh((2,), ("a",))
y = fluxion.device_put(np.ones((4, 2), np.float32), NamedSharding(explicit, P("a")))
assert core.eager_apply is not core._plain_eager_apply and sharding.EXPLICIT_IN_USE[0]
assert str(fluxion.typeof(y * 2)) == "float32[4@a,2]"
print("ok")
"""
    env = dict(os.environ, FLUXION_NUM_CPU_DEVICES="2", PYTHONPATH=str(HERE.parent.parent))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, env=env, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == b"ok", proc.stderr.decode()[-2000:]
