"""`fluxion.nn.dot_product_attention` and `log1mexp` against real JAX (values and gradients), jit and vmap."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.nn as fnn
from fluxion._src import test_util as tu

RNG = np.random.default_rng(0)
Q = RNG.standard_normal((2, 5, 4, 8)).astype(np.float32)
K = RNG.standard_normal((2, 6, 2, 8)).astype(np.float32)
V = RNG.standard_normal((2, 6, 2, 8)).astype(np.float32)
K4, V4 = np.repeat(K, 2, axis=2), np.repeat(V, 2, axis=2)
BIAS = RNG.standard_normal((1, 4, 5, 6)).astype(np.float32)
MASK = RNG.random((2, 1, 5, 6)) > 0.3

CASES = {
    "plain": ((Q, K4, V4), {}),
    "grouped_query": ((Q, K, V), {}),
    "unbatched": ((Q[0], K4[0], V4[0]), {}),
    "bias_mask_scale": ((Q, K4, V4, BIAS, MASK), {"scale": 0.3}),
    "causal": ((Q, K4, V4), {"is_causal": True}),
    "window": ((Q, K4, V4), {"local_window_size": (1, 2)}),
    "seq_lengths": ((Q, K4, V4), {"query_seq_lengths": np.array([3, 5], np.int32),
                                  "key_value_seq_lengths": np.array([6, 2], np.int32)}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_jax(name):
    jax = pytest.importorskip("jax")
    args, kwargs = CASES[name]
    got = fnn.dot_product_attention(*args, **kwargs)
    want = jax.nn.dot_product_attention(*args, **kwargs)
    tu.assert_allclose(got, np.asarray(want), atol=1e-5, rtol=1e-5)
    g = fluxion.grad(lambda q: (fnn.dot_product_attention(q, *args[1:], **kwargs) ** 2).sum())(args[0])
    g_jax = jax.grad(lambda q: (jax.nn.dot_product_attention(q, *args[1:], **kwargs) ** 2).sum())(args[0])
    tu.assert_allclose(g, np.asarray(g_jax), atol=1e-4, rtol=1e-4)


def test_residual_jit_and_vmap():
    jax = pytest.importorskip("jax")
    out, lse = fnn.dot_product_attention(Q, K, V, return_residual=True)
    out_j, lse_j = jax.nn.dot_product_attention(Q, K, V, return_residual=True)
    tu.assert_allclose(lse, np.asarray(lse_j), atol=1e-5)
    tu.check_jit(lambda q, k, v: fnn.dot_product_attention(q, k, v, is_causal=True), (Q, K, V), atol=1e-5)
    tu.check_batching(lambda q, k, v: fnn.dot_product_attention(q, k, v), (Q, K, V), atol=1e-5)


def test_errors_and_log1mexp():
    with pytest.raises(ValueError, match="multiple of key/value heads"):
        fnn.dot_product_attention(Q[:, :, :3], K, V)
    with pytest.raises(ValueError, match="mask dtype"):
        fnn.dot_product_attention(Q, K4, V4, mask=MASK.astype(np.float32))
    with pytest.raises(ValueError, match="not available"):
        fnn.dot_product_attention(Q, K4, V4, implementation="cudnn")
    x = np.array([1e-6, 0.1, 1.0, 10.0, 50.0], np.float32)
    tu.assert_allclose(fnn.log1mexp(x), np.log(-np.expm1(-x.astype(np.float64))).astype(np.float32), rtol=1e-5)
    jax = pytest.importorskip("jax")
    tu.assert_allclose(fnn.log1mexp(x), np.asarray(jax.nn.log1mexp(x)), rtol=1e-6)
