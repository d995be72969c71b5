"""`fluxion.ops.segment_*`: against a NumPy loop, real JAX, finite differences, jit and vmap."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
from fluxion import ops
from fluxion._src import test_util as tu

RNG = np.random.default_rng(0)
IDS = np.array([0, 0, 1, 3, 3, 7, -1, 2], np.int32)  # 7 and -1 fall outside 4 segments: dropped
DATA = RNG.standard_normal((8, 3)).astype(np.float32)

IDENTITY = {"sum": 0.0, "prod": 1.0, "max": -np.inf, "min": np.inf}
REDUCE = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}


def _reference(kind, data, ids, n):
    out = np.full((n,) + data.shape[1:], IDENTITY[kind], data.dtype)
    for row, i in zip(data, ids):
        if 0 <= i < n:
            out[i] = REDUCE[kind](out[i], row)
    return out


@pytest.mark.parametrize("kind", sorted(REDUCE))
def test_values_against_a_loop_eager_and_jit(kind):
    f = getattr(ops, f"segment_{kind}")
    want = _reference(kind, DATA, IDS, 4)
    tu.assert_allclose(f(DATA, IDS, 4), want, atol=1e-6)
    tu.check_jit(lambda d, i: f(d, i, num_segments=4), (DATA, IDS), atol=1e-6)
    tu.check_batching(lambda d: f(d, IDS, 4), (np.stack([DATA, -DATA]),), atol=1e-6)


@pytest.mark.parametrize("kind", sorted(REDUCE))
def test_values_match_jax(kind):
    jax = pytest.importorskip("jax")
    for data in (DATA, np.arange(16, dtype=np.int32).reshape(8, 2)):
        got = getattr(ops, f"segment_{kind}")(data, IDS, 4)
        want = getattr(jax.ops, f"segment_{kind}")(data, IDS, 4)
        assert got.dtype == want.dtype
        tu.assert_allclose(got, np.asarray(want))
    # Without num_segments: max(ids) + 1 segments (concrete ids only).
    assert ops.segment_sum(DATA[:6], IDS[:6]).shape == jax.ops.segment_sum(DATA[:6], IDS[:6]).shape


@pytest.mark.parametrize("kind", ["sum", "prod", "max", "min"])
def test_derivatives(kind):
    f = getattr(ops, f"segment_{kind}")
    ids = np.array([0, 0, 1, 2, 2, 2], np.int32)
    x = RNG.standard_normal((6, 2))  # distinct values: max/min are differentiable there
    with tu.enable_x64():
        tu.check_grads(lambda d: f(d, ids, 3), (x,), order=2, modes=("fwd", "rev"), atol=1e-6, rtol=1e-6)


def test_errors():
    with pytest.raises(ValueError, match="num_segments"):
        fluxion.jit(lambda d, i: ops.segment_sum(d, i))(DATA, IDS)
    with pytest.raises(TypeError, match="integers"):
        ops.segment_sum(DATA, IDS.astype(np.float32), 4)
    with pytest.raises(ValueError, match="one id per row"):
        ops.segment_sum(DATA, IDS[:3], 4)
