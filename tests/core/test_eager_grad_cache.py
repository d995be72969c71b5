"""Eager `grad` replayed from a traced program (`_src/grad_cache.py`, proofs in `_src/pure_functions.py`).

Oracles: the plain eager path (the cache switched off), which the replay must match bit for bit -- values, dtypes,
weak types and tree structure -- since it runs the same primitives on the same NumPy code; JAX and finite
differences for the values themselves. The behavioural tests check what a cache must never change: closures and
globals that are rebound between calls, Python control flow on argument values, Python side effects, configuration
changes, and concurrent calls from several threads.
"""

from __future__ import annotations

import functools
import threading
from typing import Any, NamedTuple

import numpy as np
import pytest

import fluxion as jax
import fluxion.numpy as jnp
from fluxion._src import grad_cache
from fluxion._src.pure_functions import prove_pure

# -- helpers ---------------------------------------------------------------------------------------------------


def _count_replays(monkeypatch) -> list:
    """Counts programs replayed by the cache (so a test can tell the cached path actually ran)."""
    calls = [0]
    original = grad_cache._Program.__call__

    def counting(self, dyn):
        calls[0] += 1
        return original(self, dyn)

    monkeypatch.setattr(grad_cache._Program, "__call__", counting)
    return calls


def _plain(monkeypatch):
    monkeypatch.setattr(grad_cache.EagerGradCache, "call", lambda self, impl, args, kwargs: grad_cache.NOT_CACHED)


def _leaves_equal(a, b) -> None:
    la, ta = jax.tree_util.tree_flatten(a)
    lb, tb = jax.tree_util.tree_flatten(b)
    assert ta == tb
    for x, y in zip(la, lb):
        assert type(x) is type(y)
        assert x.dtype == y.dtype and x.shape == y.shape and x.weak_type == y.weak_type
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def _helper(w, x):  # a user function the proofs follow into
    return jnp.tanh(x @ w)


_RNG = np.random.default_rng(0)
_X = jnp.asarray(_RNG.standard_normal(7).astype(np.float32))
_M = jnp.asarray(_RNG.standard_normal((5, 3)).astype(np.float32))
_W = jnp.asarray(_RNG.standard_normal((3, 4)).astype(np.float32))
_LABELS = jnp.asarray(np.array([0, 3, 1, 2, 3], np.int32))

# (name, make the transformed function, arguments); every function here is provably pure.
CASES = [
    ("tanh_sq", lambda: jax.grad(lambda x: jnp.sum(jnp.tanh(x) ** 2)), (_X,)),
    ("python_float", lambda: jax.grad(lambda x: x ** 3 + 2 * x), (2.0,)),
    ("third_derivative", lambda: jax.grad(jax.grad(jax.grad(lambda x: x ** 3 + 2 * x))), (2.0,)),
    ("mean_var", lambda: jax.grad(lambda m: jnp.sum(jnp.var(m, axis=0) + jnp.mean(m, axis=1).sum())), (_M,)),
    ("nn_activations", lambda: jax.grad(lambda x: jnp.sum(jax.nn.relu(x) + jax.nn.gelu(x) * jax.nn.sigmoid(x))),
     (_X,)),
    ("cross_entropy_nondiff_int", lambda: jax.grad(
        lambda w, m, y: -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(_helper(w, m)), y[:, None], 1))),
     (_W, _M, _LABELS)),
    ("dict_params_aux_argnums", lambda: jax.value_and_grad(
        lambda p, s, m: (jnp.sum(_helper(p["w"], m) * s) + p["b"] ** 2, {"n": jnp.linalg.norm(p["w"])}),
        argnums=(0, 1), has_aux=True), ({"w": _W, "b": jnp.float32(0.5)}, jnp.float32(3.0), _M)),
    ("static_python_args", lambda: jax.grad(lambda x, k, name: jnp.sum(x ** k) if name == "pow" else 0.0),
     (_X, 3, "pow")),
    ("comprehension_and_where", lambda: jax.grad(
        lambda x: sum(jnp.sum(jnp.where(x > 0, x * c, -x)) for c in (1.0, 2.0, 3.0))), (_X,)),
    ("scan_with_lambda", lambda: jax.grad(
        lambda x: jax.lax.scan(lambda c, v: (c * 0.5 + v, c), 0.0, x)[0]), (_X,)),
]


@pytest.mark.parametrize("name,make,args", CASES, ids=[c[0] for c in CASES])
def test_replay_matches_plain_path_bitwise(monkeypatch, name, make, args):
    replays = _count_replays(monkeypatch)
    f = make()
    cached = [f(*args) for _ in range(4)]
    assert replays[0] >= 2, "the cache never replayed: the function was expected to be provably pure"
    monkeypatch.undo()
    _plain(monkeypatch)
    plain = make()(*args)
    for c in cached:
        _leaves_equal(c, plain)


@pytest.mark.parametrize("name,make,args", CASES[:6], ids=[c[0] for c in CASES[:6]])
def test_replay_matches_jax(name, make, args):
    real = pytest.importorskip("jax")
    real_jnp = pytest.importorskip("jax.numpy")
    globals_map = {"jnp": real_jnp}
    del globals_map  # (the cases use fluxion; JAX runs the same formulas written out below)
    f = make()
    ours = [f(*args) for _ in range(3)][-1]
    oracle = {
        "tanh_sq": lambda: real.grad(lambda x: real_jnp.sum(real_jnp.tanh(x) ** 2))(np.asarray(_X)),
        "python_float": lambda: real.grad(lambda x: x ** 3 + 2 * x)(2.0),
        "third_derivative": lambda: real.grad(real.grad(real.grad(lambda x: x ** 3 + 2 * x)))(2.0),
        "mean_var": lambda: real.grad(lambda m: real_jnp.sum(real_jnp.var(m, axis=0)
                                                             + real_jnp.mean(m, axis=1).sum()))(np.asarray(_M)),
        "nn_activations": lambda: real.grad(lambda x: real_jnp.sum(
            real.nn.relu(x) + real.nn.gelu(x) * real.nn.sigmoid(x)))(np.asarray(_X)),
        "cross_entropy_nondiff_int": lambda: real.grad(lambda w, m, y: -real_jnp.mean(real_jnp.take_along_axis(
            real.nn.log_softmax(real_jnp.tanh(m @ w)), y[:, None], 1)))(
                np.asarray(_W), np.asarray(_M), np.asarray(_LABELS)),
    }[name]()
    np.testing.assert_allclose(np.asarray(ours), np.asarray(oracle), rtol=2e-5, atol=1e-6)


def test_replay_matches_finite_differences():
    f = lambda x: jnp.sum(jnp.sin(x) * jnp.exp(0.3 * x))  # noqa: E731
    g = jax.grad(f)
    x = np.linspace(-1, 1, 5)
    [g(jnp.asarray(x, np.float32)) for _ in range(3)]
    for _ in range(2):
        ours = np.asarray(g(jnp.asarray(x, np.float32)), np.float64)
    eps = 1e-3
    fd = [(np.sum(np.sin(x + eps * e) * np.exp(0.3 * (x + eps * e)))
           - np.sum(np.sin(x - eps * e) * np.exp(0.3 * (x - eps * e)))) / (2 * eps) for e in np.eye(5)]
    np.testing.assert_allclose(ours, fd, rtol=1e-4, atol=1e-5)


# -- what a cache must not change ------------------------------------------------------------------------------

def test_closure_over_a_rebound_value():
    c = jnp.float32(1.0)

    def f(x):
        return jnp.sum(x * c)

    g = jax.grad(f)
    for value in (1.0, 2.0, 2.0, 2.0, -3.0, -3.0, -3.0, 0.5):
        c = jnp.float32(value)
        np.testing.assert_array_equal(np.asarray(g(_X)), np.full(7, value, np.float32))


_SCALE = jnp.float32(1.0)


def test_global_rebound_between_calls():
    global _SCALE
    g = jax.grad(lambda x: jnp.sum(x * _SCALE))
    try:
        for value in (1.0, 1.0, 1.0, 4.0, 4.0, 4.0, 1.0):
            _SCALE = jnp.float32(value)
            np.testing.assert_array_equal(np.asarray(g(_X)), np.full(7, value, np.float32))
    finally:
        _SCALE = jnp.float32(1.0)


def test_module_attribute_patched_between_calls(monkeypatch):
    g = jax.grad(lambda x: jnp.sum(jnp.sin(x)))
    [g(_X) for _ in range(3)]
    monkeypatch.setattr(jnp, "sin", jnp.cos)
    np.testing.assert_allclose(np.asarray(g(_X)), -np.sin(np.asarray(_X)), rtol=1e-6)


def test_python_control_flow_on_values():
    def f(x):
        if x[0] > 0:
            return jnp.sum(x ** 2)
        return jnp.sum(x ** 3)

    g = jax.grad(f)
    for sign in (1, 1, 1, -1, -1, -1, 1):
        x = jnp.asarray(sign * np.array([1.0, 2.0], np.float32))
        want = 2 * np.asarray(x) if sign > 0 else 3 * np.asarray(x) ** 2
        np.testing.assert_allclose(np.asarray(g(x)), want)


def test_side_effects_run_every_call(capsys):
    log = []

    def appends(x):
        log.append(1)
        return jnp.sum(x)

    def prints(x):
        print("called")
        return jnp.sum(x)

    for _ in range(4):
        jax.grad(appends)(_X)
        g = jax.grad(prints)
        g(_X)
    same_g = jax.grad(appends)
    for _ in range(4):
        same_g(_X)
    assert len(log) == 8
    assert capsys.readouterr().out.count("called") == 4


def test_configuration_change_retraces():
    g = jax.grad(lambda x: jnp.sum(x * jnp.arange(7.0)))
    [g(_X) for _ in range(3)]
    with jax.enable_x64(True):
        inside = g(_X)
        inside = g(_X)
        want = jax.grad(lambda x: jnp.sum(x * jnp.arange(7.0)))(_X)
    _leaves_equal(inside, want)
    assert g(_X).dtype == np.float32


def test_every_trace_option_is_part_of_the_key(monkeypatch):
    """An option that makes a trace raise (`jax_allow_f16_reductions=False`: a float16 `reduce_sum` is refused)
    is honoured by a cached gradient as by the plain path."""
    replays = _count_replays(monkeypatch)
    g = jax.grad(lambda x: jax.lax.reduce_sum(x * x, (0,)).astype(jnp.float32))
    x = jnp.asarray(np.arange(4, dtype=np.float16))
    [g(x) for _ in range(3)]
    assert replays[0] >= 1
    with jax.config.override("jax_allow_f16_reductions", False):
        with pytest.raises(ValueError, match="allow_f16_reductions"):
            g(x)


def test_threads_get_their_own_answers():
    g = jax.grad(lambda x: jnp.sum(jnp.tanh(x) ** 2))
    inputs = [jnp.asarray(np.linspace(-1, 1, 9).astype(np.float32) * (i + 1)) for i in range(4)]
    want = [2 * np.tanh(np.asarray(x)) * (1 - np.tanh(np.asarray(x)) ** 2) for x in inputs]
    errors = []

    def work(i):
        try:
            for _ in range(60):
                np.testing.assert_allclose(np.asarray(g(inputs[i])), want[i], rtol=1e-5, atol=1e-6)
        except Exception as e:  # noqa: BLE001 -- reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


class _Params(NamedTuple):
    w: Any

    def scaled(self):
        _LOG.append("scaled")  # a side effect in a method of an argument: the proof cannot see it
        return self.w * 2.0


_LOG: list = []


def test_methods_of_custom_pytree_arguments_run_every_call():
    g = jax.grad(lambda p: jnp.sum(p.scaled()))
    _LOG.clear()
    for _ in range(4):
        g(_Params(_X))
    assert _LOG == ["scaled"] * 4


def test_inplace_operators_on_list_arguments_run_every_call():
    def f(x, acc):
        acc += [1]  # extends the caller's list
        return jnp.sum(x * len(acc))

    g = jax.grad(f)
    for _ in range(4):
        acc: list = []  # the same (empty) structure every call
        grad = g(_X, acc)
        assert acc == [1]
        np.testing.assert_array_equal(np.asarray(grad), np.ones(7, np.float32))


def test_inplace_operators_on_arrays_still_cached(monkeypatch):
    replays = _count_replays(monkeypatch)

    def f(x):
        total = jnp.sum(x)
        total += jnp.sum(x ** 2)
        return total

    g = jax.grad(f)
    for _ in range(3):
        g(_X)
    assert replays[0] >= 1


def test_constant_aux_output(monkeypatch):
    # The aux output does not depend on the input (a constant of the traced program): replayed as the plain path
    # returns it (a weakly typed int32 Array).
    g = jax.grad(lambda x: (jnp.sum(x), 3), has_aux=True)
    cached = [g(_X) for _ in range(3)]
    _plain(monkeypatch)
    plain = jax.grad(lambda x: (jnp.sum(x), 3), has_aux=True)(_X)
    for c in cached:
        _leaves_equal(c, plain)


def test_errors_still_raised_on_every_call():
    g = jax.grad(lambda x: x * 2.0)  # non-scalar output
    for _ in range(3):
        with pytest.raises(TypeError, match="grad requires scalar output"):
            g(_X)


def test_under_jit_and_vmap():
    g = jax.grad(lambda x: jnp.sum(jnp.tanh(x) ** 2))
    eager = [g(_X) for _ in range(3)][-1]
    np.testing.assert_allclose(np.asarray(jax.jit(g)(_X)), np.asarray(eager), rtol=1e-6)
    batched = jax.vmap(g)(jnp.stack([_X, 2 * _X]))
    np.testing.assert_allclose(np.asarray(batched[0]), np.asarray(eager), rtol=1e-6)


# -- the proofs ------------------------------------------------------------------------------------------------

_NP_GLOBAL = np.ones(3, np.float32)
_COUNTER = 0


class _Holder:
    w = jnp.float32(2.0)


def _impure_functions():
    log = []
    holder = _Holder()
    n = 0

    def appends(x):
        log.append(x)
        return x

    def nonlocal_write(x):
        nonlocal n
        n += 1
        return x

    def global_write(x):
        global _COUNTER
        _COUNTER += 1
        return x

    def try_block(x):
        try:
            return float(x)
        except Exception:  # noqa: BLE001
            return x

    @functools.wraps(jnp.sum)
    def disguised(x):  # claims to be jnp.sum (module and name copied) but prints
        print(x)
        return x

    @jax.custom_jvp
    def custom_impure(x):
        print(x)
        return x

    custom_impure.defjvp(lambda p, t: (p[0], t[0]))
    return {
        "print": lambda x: print(x),
        "list_append": appends,
        "nonlocal_write": nonlocal_write,
        "global_write": global_write,
        "try_block": try_block,
        "numpy_global": lambda x: x * _NP_GLOBAL,
        "numpy_random": lambda x: x * np.random.normal(),
        "object_attribute": lambda x: x * holder.w,
        "disguised_wrapper": lambda x: disguised(x),
        "impure_custom_jvp": lambda x: custom_impure(x),
        "generator": lambda x: sum(jnp.sum(v) for v in (yield x)),
        "module_escapes": lambda x: jnp.linalg,
        "debug_print": lambda x: jax.debug.print("{}", x),
        "jnp_save": lambda x: jnp.save("/dev/null", x),
    }


@pytest.mark.parametrize("name", sorted(_impure_functions()))
def test_impure_functions_are_not_proven(name):
    assert prove_pure(_impure_functions()[name]) is None


def test_pure_functions_are_proven():
    scale = jnp.float32(2.0)
    for f in (lambda x: jnp.sum(jnp.tanh(x) ** 2), lambda x: _helper(_W, x) * scale,
              jax.grad(jax.grad(lambda x: x ** 3)), lambda x: jax.nn.relu(x) + jnp.linalg.norm(x)):
        assert prove_pure(f) is not None
