"""Helpers shared by the fluxion.haiku tests: run the same model builder on fluxion and on real Haiku."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as fjnp
from fluxion import lax as flax_


def needs_lax(*names: str):
    """Skip marker for tests that need a fluxion.lax primitive the core does not export yet (a core gap)."""
    missing = [n for n in names if not hasattr(flax_, n)]
    return pytest.mark.skipif(bool(missing), reason=f"core gap: fluxion.lax lacks {', '.join(missing)}")


def shapes(tree) -> dict:
    """`{module: {name: shape}}` of a Haiku parameter/state tree."""
    return {m: {k: tuple(np.shape(v)) for k, v in bundle.items()} for m, bundle in tree.items()}


def to_numpy(tree):
    return fluxion.tree_util.tree_map(np.asarray, tree)


def run(framework: str, build, args, *, state: bool = False, seed: int = 0, **kwargs):
    """Runs `build(hk, jnp)` (a function of the inputs) through init + apply on `framework`.

    Returns numpy trees: `(params, out)` or `(params, state, out, new_state)`.
    """
    if framework == "fluxion":
        import fluxion.haiku as hk
        jax, jnp = fluxion, fjnp
    else:
        hk = pytest.importorskip("haiku")
        jax = pytest.importorskip("jax")
        jnp = jax.numpy
    f = build(hk, jnp)
    key = jax.random.PRNGKey(seed)
    args = [jnp.asarray(a) for a in args]
    if state:
        t = hk.transform_with_state(f)
        p, s = t.init(key, *args, **kwargs)
        out, s2 = t.apply(p, s, key, *args, **kwargs)
        result = (p, s, out, s2)
    else:
        t = hk.transform(f)
        p = t.init(key, *args, **kwargs)
        result = (p, t.apply(p, key, *args, **kwargs))
    return jax.tree_util.tree_map(np.asarray, result)


def assert_trees_close(a, b, rtol=2e-5, atol=2e-5):
    la, ta = fluxion.tree_util.tree_flatten(a)
    lb, tb = fluxion.tree_util.tree_flatten(b)
    assert ta == tb, f"tree structures differ:\n{ta}\n{tb}"
    for x, y in zip(la, lb):
        assert np.shape(x) == np.shape(y)
        np.testing.assert_allclose(x, y, rtol=rtol, atol=atol)
