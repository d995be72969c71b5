"""`checkpoint` / `remat`: same values and derivatives as the function, residuals limited to what the policy saves.

Derivatives are checked against the un-checkpointed function, finite differences (second order), real JAX and under
`jit`/`vmap`; what reverse mode keeps is checked with `saved_residuals` (and against JAX's
`print_saved_residuals` where installed).
"""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import ad_checkpoint
from fluxion._src import test_util as tu

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 4)).astype(np.float32)
W = (RNG.standard_normal((4, 4)) * 0.5).astype(np.float32)


def mlp(m):
    def f(x, w):
        h = m.numpy.sin(x @ w)
        return m.numpy.sum(m.numpy.cos(h @ w))
    return f


def named(m):
    from_names = m.ad_checkpoint.checkpoint_name

    def f(x, w):
        h = from_names(m.numpy.sin(x @ w), "h")
        return m.numpy.sum(m.numpy.cos(h @ w) * h)
    return f


POLICIES = {
    "default": lambda m: None,
    "nothing_saveable": lambda m: m.checkpoint_policies.nothing_saveable,
    "everything_saveable": lambda m: m.checkpoint_policies.everything_saveable,
    "dots_saveable": lambda m: m.checkpoint_policies.dots_saveable,
    "dots_with_no_batch_dims_saveable": lambda m: m.checkpoint_policies.dots_with_no_batch_dims_saveable,
    "save_only_h": lambda m: m.checkpoint_policies.save_only_these_names("h"),
    "save_anything_except_h": lambda m: m.checkpoint_policies.save_anything_except_these_names("h"),
}

# Residuals kept (abstract values and origin, arguments first) per policy, for `named`.
EXPECTED_RESIDUALS = {
    "default": ["f32[4,4] from the argument x", "f32[4,4] from the argument w"],
    "nothing_saveable": ["f32[4,4] from the argument x", "f32[4,4] from the argument w"],
    "save_only_h": ["f32[4,4] from the argument x", "f32[4,4] from the argument w", "f32[4,4] named 'h'"],
    "dots_saveable": ["f32[4,4] from the argument x", "f32[4,4] from the argument w",
                      "f32[4,4] output of dot_general", "f32[4,4] output of dot_general"],
}


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("make", [mlp, named], ids=["mlp", "named"])
def test_gradients_equal_the_unchecheckpointed_function(make, policy):
    f = make(fluxion)
    g = fluxion.checkpoint(f, policy=POLICIES[policy](fluxion))
    want = fluxion.grad(f, argnums=(0, 1))(X, W)
    for fn in (fluxion.grad(g, argnums=(0, 1)), fluxion.jit(fluxion.grad(g, argnums=(0, 1)))):
        tu.assert_allclose(fn(X, W), want, atol=1e-5, rtol=1e-5)
    tu.assert_allclose(g(X, W), f(X, W), atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("policy", ["default", "dots_saveable", "save_only_h"])
def test_second_order_and_batching(policy):
    g = fluxion.checkpoint(named(fluxion), policy=POLICIES[policy](fluxion))
    x64, w64 = X.astype(np.float64), W.astype(np.float64)
    with tu.enable_x64():
        tu.check_grads(g, (x64, w64), order=2, modes=("fwd", "rev"), atol=1e-6, rtol=1e-6)
    tu.check_batching(fluxion.grad(g), (np.stack([X, -X, 2 * X]), W), in_axes=(0, None), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("policy", sorted(EXPECTED_RESIDUALS))
def test_saved_residuals(policy):
    g = fluxion.checkpoint(named(fluxion), policy=POLICIES[policy](fluxion))
    got = [f"{a.str_short()} {what}" for a, what in ad_checkpoint.saved_residuals(g, X, W)]
    assert got == EXPECTED_RESIDUALS[policy]


def test_without_checkpoint_intermediates_are_kept():
    kept = [what for _, what in ad_checkpoint.saved_residuals(mlp(fluxion), X, W)]
    assert kept[:2] == ["from the argument x", "from the argument w"] and len(kept) > 2


def _jax():
    jax = pytest.importorskip("jax")
    pytest.importorskip("jax.ad_checkpoint")  # makes the submodule an attribute of jax
    return jax


def test_print_saved_residuals_matches_jax(capsys):
    jax = _jax()
    for policy in ("default", "dots_saveable", "save_only_h"):
        ad_checkpoint.print_saved_residuals(fluxion.checkpoint(named(fluxion), policy=POLICIES[policy](fluxion)),
                                            X, W)
        ours = capsys.readouterr().out.splitlines()
        jax.ad_checkpoint.print_saved_residuals(jax.checkpoint(named(jax), policy=POLICIES[policy](jax)), X, W)
        theirs = [line.split(" from /")[0] for line in capsys.readouterr().out.splitlines()]  # no source lines
        assert sorted(ours) == sorted(theirs), policy


def test_gradients_match_jax():
    jax = _jax()
    g = fluxion.grad(fluxion.checkpoint(named(fluxion)), argnums=(0, 1))(X, W)
    g_jax = jax.grad(jax.checkpoint(named(jax)), argnums=(0, 1))(X, W)
    tu.assert_allclose(g, tuple(np.asarray(v) for v in g_jax), atol=1e-5, rtol=1e-5)


def test_decorator_forms_static_argnums_and_closures():
    @fluxion.remat
    def f(x):
        return jnp.sum(jnp.sin(x) ** 2)

    @fluxion.checkpoint(static_argnums=(1,))
    def g(x, n):
        for _ in range(n):
            x = jnp.sin(x)
        return jnp.sum(x)

    w = jnp.asarray(W)

    def closure(x):
        return fluxion.checkpoint(lambda v: jnp.sum(jnp.tanh(v @ w)))(x)

    tu.assert_allclose(fluxion.grad(f)(X), 2 * np.sin(X) * np.cos(X), atol=1e-5, rtol=1e-5)
    tu.assert_allclose(fluxion.grad(g)(X, 2), np.cos(np.sin(X)) * np.cos(X), atol=1e-5, rtol=1e-5)
    tu.assert_allclose(fluxion.grad(closure)(X), fluxion.grad(lambda v: jnp.sum(jnp.tanh(v @ w)))(X), atol=1e-6)
    # The closed-over array is an operand: differentiating with respect to it works too.
    tu.assert_allclose(fluxion.grad(lambda w_: fluxion.checkpoint(lambda v: jnp.sum(jnp.tanh(v @ w_)))(X))(W),
                       fluxion.grad(lambda w_: jnp.sum(jnp.tanh(X @ w_)))(W), atol=1e-5, rtol=1e-5)
    with pytest.raises(TypeError, match="policy must be callable"):
        fluxion.checkpoint(f, policy="dots")


def test_jaxpr_shows_the_call():
    text = str(fluxion.make_jaxpr(fluxion.checkpoint(mlp(fluxion)))(X, W))
    assert "checkpoint[" in text and "prevent_cse=True" in text and "policy=None" in text
