"""jnp, nn and linalg functions appear in jaxprs as the named `jit` calls JAX shows (`jit[name=clip ...]`), with
the same values as inline evaluation.

Oracle: the outermost call names of JAX 0.10.2's `make_jaxpr` for the same programs (hard-coded; with JAX installed
the table is checked against it too).
"""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp

_X = np.linspace(0.1, 0.9, 12, dtype=np.float32).reshape(3, 4)
_SQ = (np.eye(3) * 2 + 0.1).astype(np.float32)

# name -> (program over a library module `m` and x, argument, JAX's outermost call names)
PROGRAMS = {
    "where": (lambda m, x: m.numpy.where(x > 0.5, x, 0.0), _X, ["_where"]),
    "clip": (lambda m, x: m.numpy.clip(x, 0.2, 0.8), _X, ["clip"]),
    "var": (lambda m, x: m.numpy.var(x, axis=0), _X, ["_var"]),
    "std": (lambda m, x: m.numpy.std(x), _X, ["_std"]),
    "cumsum": (lambda m, x: m.numpy.cumsum(x, axis=1), _X, ["cumsum"]),
    "sort": (lambda m, x: m.numpy.sort(x, axis=0), _X, ["sort"]),
    "argsort": (lambda m, x: m.numpy.argsort(x), _X, ["argsort"]),
    "tril": (lambda m, x: m.numpy.tril(x), _X, ["tril"]),
    "round": (lambda m, x: m.numpy.round(x, 1), _X, ["round"]),
    "remainder": (lambda m, x: x % 0.3, _X, ["remainder"]),
    "floor_divide": (lambda m, x: m.numpy.floor_divide(x, 0.3), _X, ["floor_divide"]),
    "isclose": (lambda m, x: m.numpy.isclose(x, x + 1e-9), _X, ["isclose"]),
    "linspace": (lambda m, x: m.numpy.linspace(0.0, x[0, 0], 5), _X, ["_linspace"]),
    "diff": (lambda m, x: m.numpy.diff(x), _X, ["diff"]),
    "nan_to_num": (lambda m, x: m.numpy.nan_to_num(x), _X, ["nan_to_num"]),
    "hstack": (lambda m, x: m.numpy.hstack([x, x]), _X, ["atleast_1d", "atleast_1d"]),
    "median": (lambda m, x: m.numpy.median(x), _X, ["median"]),
    "take": (lambda m, x: m.numpy.take(x, np.array([0, 2]), axis=1), _X, ["_take"]),
    "pad": (lambda m, x: m.numpy.pad(x, 1), _X, ["_pad"]),
    "log_softmax": (lambda m, x: m.nn.log_softmax(x), _X, ["log_softmax"]),
    "silu": (lambda m, x: m.nn.silu(x), _X, ["silu"]),
    "one_hot": (lambda m, x: m.nn.one_hot(m.numpy.argmax(x, axis=1), 4), _X, ["_one_hot"]),
    "standardize": (lambda m, x: m.nn.standardize(x), _X, ["standardize"]),
    "inv": (lambda m, x: m.numpy.linalg.inv(x), _SQ, ["inv"]),
    "norm": (lambda m, x: m.numpy.linalg.norm(x), _SQ, ["norm"]),
    "slogdet": (lambda m, x: m.numpy.linalg.slogdet(x), _SQ, ["slogdet"]),
    "eigh": (lambda m, x: m.numpy.linalg.eigh(x), _SQ, ["eigh"]),
    # Functions JAX does not wrap stay inline.
    "mean": (lambda m, x: m.numpy.mean(x), _X, []),
    "matmul": (lambda m, x: x @ x.T, _X, []),
    "tanh": (lambda m, x: m.numpy.tanh(x), _X, []),
}


def _call_names(lib, prog, x) -> list:
    closed = lib.make_jaxpr(lambda x: prog(lib, x))(x)
    return [e.params["name"] for e in closed.jaxpr.eqns if e.primitive.name in ("jit", "pjit")]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_call_names_match_jax(name):
    prog, x, want = PROGRAMS[name]
    assert _call_names(fluxion, prog, x) == want


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_table_matches_real_jax(name):
    jax = pytest.importorskip("jax")
    prog, x, want = PROGRAMS[name]
    assert _call_names(jax, prog, x) == want


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_staged_values_equal_eager(name):
    prog, x, _ = PROGRAMS[name]
    eager = fluxion.tree_util.tree_leaves(prog(fluxion, fnp.asarray(x)))
    jitted = fluxion.tree_util.tree_leaves(fluxion.jit(lambda x: prog(fluxion, x))(x))
    for a, b in zip(eager, jitted):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-6)


def test_grad_and_vmap_through_staged_calls():
    f = lambda x: fnp.sum(fnp.clip(x, 0.2, 0.8) * fnp.var(x, axis=0))  # noqa: E731
    eager = fluxion.grad(f)(fnp.asarray(_X))
    np.testing.assert_allclose(np.asarray(fluxion.jit(fluxion.grad(f))(_X)), np.asarray(eager), rtol=1e-6)
    batched = fluxion.jit(fluxion.vmap(lambda r: fnp.where(r > 0.5, r, 0.0)))(_X)
    np.testing.assert_array_equal(np.asarray(batched), np.where(_X > 0.5, _X, 0.0))


def test_eager_calls_are_not_staged():
    from fluxion._src.numpy import ufuncs
    staged = ufuncs._where.staged
    staged.clear_cache()
    fnp.where(fnp.asarray(_X) > 0.5, fnp.asarray(_X), 0.0)
    fluxion.grad(lambda x: fnp.sum(fnp.where(x > 0.5, x, 0.0)))(fnp.asarray(_X))
    assert len(staged._traces) == 0
    fluxion.make_jaxpr(lambda x: fnp.where(x > 0.5, x, 0.0))(_X)
    assert len(staged._traces) == 1
