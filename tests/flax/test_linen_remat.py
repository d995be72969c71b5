"""`nn.remat` / `nn.checkpoint` / `nn.remat_scan`: Flax's parameter trees, values, dropout masks and gradients for
the same keys, and fewer residuals kept by reverse mode than without rematerialization."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.flax.linen as fnn
from fluxion import ad_checkpoint
from fluxion._src import test_util as tu

X = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)


def remat_model(nn, policy=None):
    class Block(nn.Module):
        @nn.compact
        def __call__(self, x):
            h = nn.Dropout(0.5, deterministic=False)(x)
            return nn.Dense(3)(nn.tanh(nn.Dense(8)(h)))

    class Model(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.remat(Block, policy=policy)()(x)

    return Model()


def remat_scan_model(nn):
    class Block(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.tanh(nn.Dense(4)(x))

    class Model(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.remat_scan(Block, lengths=(2, 3))()(x)

    return Model()


def _keys(m, seed=0):
    return {"params": m.random.PRNGKey(seed), "dropout": m.random.PRNGKey(seed + 1)}


@pytest.mark.parametrize("build", [remat_model, remat_scan_model], ids=["remat", "remat_scan"])
def test_matches_flax(build):
    jax = pytest.importorskip("jax")
    flax_nn = pytest.importorskip("flax.linen")
    ours, theirs = build(fnn), build(flax_nn)
    p_ours, p_theirs = ours.init(_keys(fluxion), X), theirs.init(_keys(jax), X)
    tu.assert_allclose(p_ours, fluxion.tree_util.tree_map(np.asarray, jax.tree.map(np.asarray, p_theirs)),
                       atol=1e-7)
    rngs_ours, rngs_theirs = {"dropout": fluxion.random.PRNGKey(5)}, {"dropout": jax.random.PRNGKey(5)}
    y_ours = ours.apply(p_ours, X, rngs=rngs_ours)
    y_theirs = theirs.apply(p_theirs, X, rngs=rngs_theirs)
    tu.assert_allclose(y_ours, np.asarray(y_theirs), atol=1e-6)
    g_ours = fluxion.grad(lambda p: ours.apply(p, X, rngs=rngs_ours).sum())(p_ours)
    g_theirs = jax.grad(lambda p: theirs.apply(p, X, rngs=rngs_theirs).sum())(p_theirs)
    tu.assert_allclose(g_ours, jax.tree.map(np.asarray, g_theirs), atol=1e-5, rtol=1e-5)


def test_rematerialization_keeps_fewer_residuals():
    def build_model(nn, remat: bool):
        class Block(nn.Module):
            @nn.compact
            def __call__(self, x):
                return nn.Dense(3)(nn.tanh(nn.Dense(8)(x)))

        class Model(nn.Module):
            @nn.compact
            def __call__(self, x):
                return (nn.remat(Block) if remat else Block)()(x)
        return Model()

    plain = lambda nn: build_model(nn, False)
    rematted = lambda nn: build_model(nn, True)

    counts = {}
    for name, build in (("plain", plain), ("remat", rematted)):
        model = build(fnn)
        params = model.init(fluxion.random.PRNGKey(0), X)
        loss = lambda p, x, model=model: model.apply(p, x).sum()
        counts[name] = [what for _, what in ad_checkpoint.saved_residuals(loss, params, X)]
    assert not any(w.startswith("output of") for w in counts["remat"]), counts["remat"]
    assert any(w.startswith("output of") for w in counts["plain"])
    # Values and gradients are unchanged by the transform (same parameter values under both names).
    a, b = plain(fnn), rematted(fnn)
    pa = a.init(fluxion.random.PRNGKey(0), X)
    pb = {"params": {"CheckpointBlock_0": pa["params"]["Block_0"]}}
    tu.assert_allclose(a.apply(pa, X), b.apply(pb, X), atol=1e-6)


def test_nnx_remat_keeps_no_intermediates():
    import fluxion.numpy as jnp
    from fluxion.flax import nnx
    x = jnp.ones((2, 4))

    def loss(remat):
        def body(m, v):
            return jnp.tanh(jnp.tanh(m(v)))

        def f(v):
            layer = nnx.Linear(4, 8, rngs=nnx.Rngs(0))  # a fresh module per trace: nothing traced outlives it
            return jnp.sum((nnx.remat(body) if remat else body)(layer, v))
        return f

    kept_plain = [w for _, w in ad_checkpoint.saved_residuals(loss(False), x)]
    kept_remat = [w for _, w in ad_checkpoint.saved_residuals(loss(True), x)]
    # The body's intermediates (the 1 - tanh^2 factors of tanh's derivative, computed in the forward pass) are kept
    # only without remat; the parameters, computed outside the body, are its inputs either way.
    assert kept_plain.count("output of sub") == 2, kept_plain
    assert "output of sub" not in kept_remat, kept_remat
    tu.assert_allclose(fluxion.grad(loss(True))(x), fluxion.grad(loss(False))(x), atol=1e-6)
