"""`jit`'s caches are keyed on the options that change a trace or its compilation (`config.JIT_KEY_OPTIONS`), as
JAX keys its jit cache on its trace context: `config.update` after a first call retraces, and going back to an
earlier value reuses the program made under it. Checked against real JAX where its behaviour is observable
(dtypes under x64, random bits under threefry_partitionable, the f16-reduction guard), and by counting traces for
every keyed option on every dispatch path (positional Arrays, pytrees, Python scalars, static arguments, a jitted
function called under grad, pmap)."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import lax, random
from fluxion._src.config import JIT_KEY_OPTIONS, config


@contextlib.contextmanager
def _option(m, name, value):
    """Sets option `name` of library `m` (fluxion or jax) for a block, restoring it after."""
    if m is fluxion:
        with config.override(name, value):
            yield
        return
    old = getattr(m.config, name)
    m.config.update(name, value)
    try:
        yield
    finally:
        m.config.update(name, old)


def _x64_zeros(m):
    return m.jit(lambda: m.numpy.zeros(3)), ()


def _x64_arange(m):
    return m.jit(lambda x: x + m.numpy.arange(3.0)), (np.ones(3, np.float32),)


def _partitionable_uniform(m):
    return m.jit(lambda k: m.random.uniform(k, (5,))), (m.random.PRNGKey(3),)


def _f16_sum(m):
    return m.jit(lambda x: m.lax.reduce_sum(x, (0,))), (np.ones(4, np.float16),)


# (name, option, other value, builder(m) -> (jitted function, args)): the same sequence of calls must give JAX's
# results (values and dtypes, or the error class) under both values, switching back and forth.
CASES = [
    ("x64_zeros", "jax_enable_x64", True, _x64_zeros),
    ("x64_arange", "jax_enable_x64", True, _x64_arange),
    ("threefry_partitionable", "jax_threefry_partitionable", False, _partitionable_uniform),
    ("f16_reductions", "jax_allow_f16_reductions", False, _f16_sum),
]


def _outcome(f, args):
    try:
        out = f(*args)
    except Exception as e:  # noqa: BLE001 -- the error class is the outcome compared with JAX's
        return type(e).__name__
    return (np.asarray(out).dtype.name, np.asarray(out).tolist())


@pytest.mark.parametrize("name, option, value, build", CASES, ids=[c[0] for c in CASES])
def test_config_update_after_a_first_call_retraces_as_in_jax(name, option, value, build):
    jax = pytest.importorskip("jax")
    runs = {}
    for m in (fluxion, jax):
        f, args = build(m)
        seq = [_outcome(f, args)]
        with _option(m, option, value):
            seq.append(_outcome(f, args))
            seq.append(_outcome(build(m)[0], args))  # a fresh jit under the option: the reference
        seq.append(_outcome(f, args))
        runs[m.__name__] = seq
    assert runs["fluxion"] == runs["jax"]
    assert runs["fluxion"][1] != runs["fluxion"][0]  # the option matters to this program
    assert runs["fluxion"][1] == runs["fluxion"][2] and runs["fluxion"][3] == runs["fluxion"][0]


def _other_value(name):
    """A valid value of option `name` other than its current one."""
    current = getattr(config, name)
    if isinstance(current, bool):
        return not current
    if isinstance(current, int):
        return current + 1
    return {"jax_numpy_rank_promotion": "warn", "jax_numpy_dtype_promotion": "strict",
            "jax_default_matmul_precision": "highest", "jax_default_device": fluxion.devices()[0],
            "jax_default_prng_impl": "rbg", "jax_legacy_prng_key": "warn"}[name]


def _dispatch_paths():
    """(name, call(f)) for each way a call reaches jit's caches."""
    return [
        ("arrays", lambda f: f(jnp.ones(3))),
        ("pytree", lambda f: f({"a": jnp.ones(3)})),
        ("python scalar", lambda f: f(1.5)),
        ("under grad", lambda f: fluxion.grad(lambda x: f(x).sum())(jnp.ones(3))),
    ]


@pytest.mark.parametrize("option", JIT_KEY_OPTIONS)
@pytest.mark.parametrize("path", range(4), ids=[p[0] for p in _dispatch_paths()])
def test_every_key_option_retraces_once_and_reuses_the_earlier_program(option, path):
    call = _dispatch_paths()[path][1]
    traces = []

    def g(x):
        traces.append(1)
        return fluxion.tree_util.tree_map(lambda v: v * 2, x)

    f = fluxion.jit(g)
    call(f)
    call(f)
    assert len(traces) == 1
    with config.override(option, _other_value(option)):
        call(f)
        call(f)
        assert len(traces) == 2
    call(f)  # back to the first value: its program is still cached
    assert len(traces) == 2


def test_static_arguments_and_update_outside_a_block_retrace():
    traces = []

    def g(x, n):
        traces.append(n)
        return x * n

    f = fluxion.jit(g, static_argnums=1)
    before = f(jnp.ones(2), 3)
    assert before.dtype == np.float32
    old = config.jax_enable_x64
    config.update("jax_enable_x64", True)
    try:
        after = f(np.ones(2), 3)
        assert after.dtype == np.float64
    finally:
        config.update("jax_enable_x64", old)
    assert f(jnp.ones(2), 3).dtype == np.float32
    assert traces == [3, 3]


def test_pmap_retraces_when_a_key_option_changes():
    f = fluxion.pmap(lambda k: random.uniform(k, (3,)))
    keys = random.split(random.PRNGKey(0), 1)
    first = np.asarray(f(keys))
    with config.override("jax_threefry_partitionable", not config.jax_threefry_partitionable):
        other = np.asarray(f(keys))
        fresh = np.asarray(fluxion.pmap(lambda k: random.uniform(k, (3,)))(keys))
    np.testing.assert_array_equal(other, fresh)
    assert not np.array_equal(first, other)
    np.testing.assert_array_equal(np.asarray(f(keys)), first)


def test_unhashable_values_of_recorded_options_do_not_break_jit():
    f = fluxion.jit(lambda x: x + 1)
    with config.override("jax_default_device", [fluxion.devices()[0]]):
        assert float(f(jnp.float32(1.0))) == 2.0
    assert float(lax.add(f(jnp.float32(1.0)), 0.0)) == 2.0


def test_a_malformed_environment_variable_fails_where_its_option_is_used_not_at_every_update(monkeypatch):
    monkeypatch.setenv("FLUXION_FUSE_MIN_ELEMENTS", "abc")
    with config.override("jax_enable_x64", config.jax_enable_x64):  # rebuilds the trace context: no error here
        with pytest.raises(ValueError, match="FLUXION_FUSE_MIN_ELEMENTS"):
            config.fluxion_fuse_min_elements
