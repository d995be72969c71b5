"""fluxion.haiku transforms: naming, parameters, state, random keys, errors, and composition with jit/grad/vmap.

Oracles: Haiku's documented conventions (hand-written expected trees and messages), NumPy, and real Haiku when
installed (`pytest.importorskip("haiku")`).
"""

from __future__ import annotations

import os
import sys

import warnings

import numpy as np
import pytest

import fluxion
import fluxion.haiku as hk
import fluxion.numpy as jnp
from fluxion import random

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # haiku_testing.py is here
from haiku_testing import shapes  # noqa: E402


class MyLinear(hk.Module):
    """The tutorial's module."""

    def __init__(self, output_size, name=None):
        super().__init__(name=name)
        self.output_size = output_size

    def __call__(self, x):
        j, k = x.shape[-1], self.output_size
        w_init = hk.initializers.TruncatedNormal(1. / np.sqrt(j))
        w = hk.get_parameter("w", shape=[j, k], dtype=x.dtype, init=w_init)
        b = hk.get_parameter("b", shape=[k], dtype=x.dtype, init=jnp.zeros)
        return jnp.dot(x, w) + b


def _naming_fn(hk_, jnp_):
    class Inner(hk_.Module):
        def __call__(self, x):
            return hk_.Linear(2)(x) + hk_.Linear(2)(x)

    class Outer(hk_.Module):
        def __init__(self, name=None):
            super().__init__(name=name)
            self.a = Inner()

        def __call__(self, x):
            return self.a(x) + Inner(name="b")(x) + self.encode(x)

        def encode(self, x):
            return hk_.Linear(2)(x)

    def f(x):
        outer = Outer()
        y = outer(x) + outer(x)            # a second call reuses the names created inside __call__
        y = y + Inner()(x) + Inner(name="inner")(x) + Inner(name="foo_3")(x) + Inner(name="foo")(x)
        return y + hk_.get_parameter("w", [2], init=jnp_.ones)

    return f


def test_naming_follows_haiku_rules():
    x = jnp.ones((1, 3))
    params = hk.transform(_naming_fn(hk, jnp)).init(random.PRNGKey(0), x)
    assert sorted(params) == sorted([
        "outer/~/inner/linear", "outer/~/inner/linear_1",
        "outer/b/linear", "outer/b/linear_1",
        "outer/~encode/linear",
        "inner/linear", "inner/linear_1",
        "inner_1/linear", "inner_1/linear_1",
        "foo_3/linear", "foo_3/linear_1",
        "foo_4/linear", "foo_4/linear_1",
        "~",
    ])
    assert shapes(params)["outer/b/linear"] == {"w": (3, 2), "b": (2,)}
    assert shapes(params)["~"] == {"w": (2,)}


def test_naming_matches_real_haiku():
    rhk = pytest.importorskip("haiku")
    jax = pytest.importorskip("jax")
    ours = hk.transform(_naming_fn(hk, jnp)).init(random.PRNGKey(0), jnp.ones((1, 3)))
    theirs = rhk.transform(_naming_fn(rhk, jax.numpy)).init(jax.random.PRNGKey(0), jax.numpy.ones((1, 3)))
    assert shapes(ours) == shapes(theirs)
    for m in theirs:
        for k in theirs[m]:
            np.testing.assert_allclose(np.asarray(ours[m][k]), np.asarray(theirs[m][k]), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("cls_name,expected", [("MyLinear", "my_linear"), ("MLP", "mlp"), ("ResNet18", "res_net18"),
                                               ("Conv2D", "conv2_d"), ("Conv2DTranspose", "conv2_d_transpose"),
                                               ("RMSNorm", "rms_norm"), ("HTTPServer2Go", "http_server2_go"),
                                               ("MultiHeadAttention", "multi_head_attention")])
def test_default_module_names_are_snake_case(cls_name, expected):
    cls = type(cls_name, (hk.Module,), {"__call__": lambda self: self.module_name})
    assert hk.transform(lambda: cls()()).apply({}, None) == expected


def test_tutorial_linear_module():
    forward = hk.transform(lambda x: MyLinear(10)(x))
    x = jnp.ones([1, 1])
    key = hk.PRNGSequence(42)
    params = forward.init(next(key), x)
    assert shapes(params) == {"my_linear": {"w": (1, 10), "b": (10,)}}
    expected = np.asarray(x) @ np.asarray(params["my_linear"]["w"]) + np.asarray(params["my_linear"]["b"])
    np.testing.assert_allclose(np.asarray(forward.apply(params, None, x)), expected, rtol=1e-6)


def _linear_fn(hk_, jnp_):
    return lambda x: hk_.Linear(3)(x)


def _noisy_fn(hk_, jnp_):
    import fluxion.random as frandom
    rand = frandom if hk_ is hk else pytest.importorskip("jax").random
    return lambda x: hk_.Linear(3)(x + rand.normal(hk_.next_rng_key(), x.shape))


def _apply_without_rng_error(hk_, jnp_, key, build, with_state: bool) -> str:
    """The message of the ValueError that `apply(params, [state,] x)` (no rng) raises."""
    x = jnp_.ones((2, 4))
    if with_state:
        t = hk_.transform_with_state(build(hk_, jnp_))
        params, state = t.init(key, x)
        args = (params, state, x)
    else:
        t = hk_.transform(build(hk_, jnp_))
        args = (t.init(key, x), x)
    with pytest.raises(ValueError) as info:
        t.apply(*args)
    return str(info.value).split(". The object was of type")[0]


@pytest.mark.parametrize("build", [_linear_fn, _noisy_fn], ids=["no_rng_use", "next_rng_key"])
@pytest.mark.parametrize("with_state", [False, True])
def test_apply_without_rng_raises_haikus_value_error(build, with_state):
    """`apply(params, x)`: Haiku takes `x` for the rng and raises before `f` runs, whether or not `f` needs keys."""
    real_hk = pytest.importorskip("haiku")
    jax = pytest.importorskip("jax")
    ours = _apply_without_rng_error(hk, jnp, random.PRNGKey(0), build, with_state)
    theirs = _apply_without_rng_error(real_hk, jax.numpy, jax.random.PRNGKey(0), build, with_state)
    assert ours == theirs
    position = "third" if with_state else "second"
    assert ours.startswith(f"Apply must be called with an RNG as the {position} argument")


def _keyword_calls(hk_, jnp_, rand, x):
    """Output of `apply` with params/rng by position, by keyword and mixed (all must agree)."""
    def f(x, scale=1.0):
        return hk_.Linear(3)(x + scale * rand.normal(hk_.next_rng_key(), x.shape))

    x = jnp_.asarray(x)
    key = rand.PRNGKey(1)
    t = hk_.transform(f)
    params = t.init(rand.PRNGKey(0), x)
    by_position = np.asarray(t.apply(params, key, x, scale=2.0))
    np.testing.assert_array_equal(np.asarray(t.apply(params=params, x=x, rng=key, scale=2.0)), by_position)
    np.testing.assert_array_equal(np.asarray(t.apply(params, x=x, rng=key, scale=2.0)), by_position)
    ts = hk_.transform_with_state(f)
    params_s, state = ts.init(rand.PRNGKey(0), x)
    out_s, _ = ts.apply(params=params_s, state=state, rng=key, x=x, scale=2.0)
    np.testing.assert_array_equal(np.asarray(out_s), by_position)
    with pytest.raises(TypeError, match="pass them positionally"):
        t.apply(params, state={}, rng=key, x=x)
    return by_position


def test_apply_takes_params_and_rng_by_keyword_as_haiku_does():
    real_hk = pytest.importorskip("haiku")
    jax = pytest.importorskip("jax")
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    np.testing.assert_allclose(_keyword_calls(hk, jnp, random, x),
                               _keyword_calls(real_hk, jax.numpy, jax.random, x), rtol=1e-6, atol=1e-6)


def test_apply_with_wrong_rng_argument_raises_haiku_error():
    f = hk.transform(lambda x: x)
    with pytest.raises(ValueError, match=r"Apply must be called with an RNG as the second argument"):
        f.apply({}, jnp.ones((2,)), 1.)  # not a key, and (x, 1.) does not fit f's signature


def test_init_and_apply_are_deterministic_and_key_dependent():
    f = hk.transform(lambda x: hk.nets.MLP([4, 3])(x))
    x = jnp.ones((2, 5))
    p1, p2 = f.init(random.PRNGKey(1), x), f.init(random.PRNGKey(1), x)
    p3 = f.init(random.PRNGKey(2), x)
    w = lambda p: np.asarray(p["mlp/~/linear_0"]["w"])  # noqa: E731
    np.testing.assert_array_equal(w(p1), w(p2))
    assert not np.allclose(w(p1), w(p3))
    assert shapes(p1) == {"mlp/~/linear_0": {"w": (5, 4), "b": (4,)}, "mlp/~/linear_1": {"w": (4, 3), "b": (3,)}}
    # An int seed works as in Haiku.
    np.testing.assert_array_equal(w(f.init(1, x)), w(p1))


def test_errors_outside_transform():
    with pytest.raises(ValueError, match=r"^`hk.get_parameter` must be used as part of an `hk.transform`$"):
        hk.get_parameter("w", [1], init=jnp.zeros)
    for fn in (lambda: hk.get_state("s"), lambda: hk.set_state("s", 1), hk.next_rng_key):
        with pytest.raises(ValueError, match="must be used as part of an `hk.transform`"):
            fn()
    with pytest.raises(ValueError, match=r"All `hk.Module`s must be initialized inside an `hk.transform`"):
        hk.Linear(2)


def test_transform_of_jitted_function_raises():
    with pytest.raises(ValueError, match="already jit"):
        hk.transform(fluxion.jit(lambda x: x))


def test_module_without_super_init_raises():
    class Bad(hk.Module):
        def __init__(self):
            pass

    with pytest.raises(ValueError, match="without calling the super constructor"):
        hk.transform(lambda: Bad()).init(None)


def test_nested_init_requires_lift():
    inner = hk.transform(lambda x: hk.Linear(2)(x))
    x = jnp.ones((1, 3))

    def bad(x):
        return inner.apply(inner.init(hk.next_rng_key(), x), None, x)

    with pytest.raises(ValueError, match=r"hk.lift"):
        hk.transform(bad).init(random.PRNGKey(0), x)

    def good(x):
        p = hk.lift(inner.init, name="inner")(hk.maybe_next_rng_key(), x)
        return hk.Linear(1)(inner.apply(p, None, x))

    outer = hk.transform(good)
    params = outer.init(random.PRNGKey(0), x)
    assert shapes(params) == {"inner/linear": {"w": (3, 2), "b": (2,)}, "linear": {"w": (2, 1), "b": (1,)}}
    out = outer.apply(params, None, x)
    w, b = np.asarray(params["inner/linear"]["w"]), np.asarray(params["inner/linear"]["b"])
    w2, b2 = np.asarray(params["linear"]["w"]), np.asarray(params["linear"]["b"])
    np.testing.assert_allclose(np.asarray(out), (np.ones((1, 3)) @ w + b) @ w2 + b2, rtol=1e-6)


def test_missing_rng_and_missing_param_and_shape_mismatch():
    f = hk.transform(lambda x: hk.Linear(2)(x))
    x = jnp.ones((1, 3))
    with pytest.raises(hk.MissingRNGError, match="You must pass a non-None PRNGKey"):
        f.init(None, x)
    with pytest.raises(ValueError, match=r"Unable to retrieve parameter 'w' for module 'linear'"):
        f.apply({}, None, x)

    def g():
        return hk.get_parameter("w", [3], init=jnp.ones) + hk.get_parameter("w", [4], init=jnp.ones)

    with pytest.raises(ValueError, match=r"'~/w' with retrieved shape \(3,\) does not match shape=\[4\]"):
        hk.transform(g).init(None)
    with pytest.raises(TypeError, match="params argument does not appear valid"):
        f.apply([1, 2], None, x)


def test_transform_rejects_state_and_transform_with_state_returns_initial_state():
    def counter():
        c = hk.get_state("count", [], jnp.int32, init=jnp.zeros)
        hk.set_state("count", c + 1)
        return c

    with pytest.raises(hk.NonEmptyStateError, match="use `hk.transform_with_state`"):
        hk.transform(counter).init(None)
    f = hk.transform_with_state(counter)
    params, state = f.init(None)
    assert params == {} and int(state["~"]["count"]) == 0     # init returns the *initial* state
    out, state = f.apply(params, state, None)
    assert int(out) == 0 and int(state["~"]["count"]) == 1
    out, state = f.apply(params, state, None)
    assert int(out) == 1 and int(state["~"]["count"]) == 2
    with pytest.raises(ValueError, match="No value for 'missing' in '~'"):
        hk.transform_with_state(lambda: hk.get_state("missing")).init(None)


def test_without_apply_rng_and_running_init():
    seen = []

    def f(x):
        seen.append(hk.running_init())
        return hk.Linear(2)(x)

    t = hk.without_apply_rng(hk.transform(f))
    x = jnp.ones((1, 3))
    params = t.init(random.PRNGKey(0), x)
    t.apply(params, x)
    assert seen == [True, False]
    with pytest.raises(TypeError, match="pass them positionally"):
        t.apply(params, x, rng=None)
    with pytest.raises(ValueError, match="Must be called with the result of"):
        hk.without_apply_rng(lambda: 0)


def test_rng_keys_inside_transform_follow_prng_sequence():
    def f():
        return hk.next_rng_key(), hk.maybe_next_rng_key(), hk.next_rng_keys(2)

    k1, k2, ks = hk.transform(f).apply({}, random.PRNGKey(3))
    seq = hk.PRNGSequence(random.PRNGKey(3))
    np.testing.assert_array_equal(np.asarray(k1), np.asarray(next(seq)))
    np.testing.assert_array_equal(np.asarray(k2), np.asarray(next(seq)))
    np.testing.assert_array_equal(np.asarray(ks), np.stack([np.asarray(k) for k in seq.take(2)]))
    assert hk.transform(lambda: hk.maybe_next_rng_key()).apply({}, None) is None


def test_prng_sequence_is_a_split_chain():
    seq = hk.PRNGSequence(7)
    keys = [np.asarray(next(seq)) for _ in range(3)]
    key = random.PRNGKey(7)
    for k in keys:                      # each next(): key, sub = split(key)
        key, sub = random.split(key)
        np.testing.assert_array_equal(k, np.asarray(sub))
    seq2 = hk.PRNGSequence(7)
    np.testing.assert_array_equal(np.stack([np.asarray(k) for k in seq2.take(3)][:1]), keys[:1])
    # reserve(n) splits n+1 ways at once.
    seq3 = hk.PRNGSequence(7)
    seq3.reserve(2)
    expected = random.split(random.PRNGKey(7), 3)
    np.testing.assert_array_equal(np.asarray(next(seq3)), np.asarray(expected[1]))
    np.testing.assert_array_equal(np.asarray(next(seq3)), np.asarray(expected[2]))
    with pytest.raises(ValueError, match="Provided key did not have expected shape and/or dtype"):
        hk.PRNGSequence(jnp.ones((3,), jnp.float32))


def test_prng_sequence_matches_real_haiku():
    rhk = pytest.importorskip("haiku")
    ours, theirs = hk.PRNGSequence(42), rhk.PRNGSequence(42)
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(next(ours)), np.asarray(next(theirs)))
    np.testing.assert_array_equal(np.stack([np.asarray(k) for k in ours.take(4)]),
                                  np.stack([np.asarray(k) for k in theirs.take(4)]))


def test_multi_transform_shares_modules():
    def f():
        encoder, decoder = hk.Linear(2, name="encoder"), hk.Linear(3, name="decoder")

        def init(x):
            return decoder(encoder(x))

        return init, (encoder, decoder)

    t = hk.multi_transform(f)
    x = jnp.ones((1, 3))
    params = t.init(random.PRNGKey(0), x)
    assert shapes(params) == {"encoder": {"w": (3, 2), "b": (2,)}, "decoder": {"w": (2, 3), "b": (3,)}}
    encode, decode = t.apply
    z = encode(params, None, x)
    np.testing.assert_allclose(np.asarray(decode(params, None, z)),
                               np.asarray(z) @ np.asarray(params["decoder"]["w"]) + np.asarray(params["decoder"]["b"]),
                               rtol=1e-6)
    enc2, _ = hk.without_apply_rng(t).apply
    np.testing.assert_allclose(np.asarray(enc2(params, x)), np.asarray(z))


def test_params_dict_and_current_name():
    class Block(hk.Module):
        def __call__(self, x):
            assert hk.current_name() == "block"
            y = hk.Linear(2)(x)
            return y, self.params_dict()

    _, pd = hk.transform(lambda x: Block()(x)).apply(
        hk.transform(lambda x: Block()(x)[0]).init(random.PRNGKey(0), jnp.ones((1, 3))), None, jnp.ones((1, 3)))
    assert sorted(pd) == ["block/linear/b", "block/linear/w"]


def _mlp_loss_setup():
    net = hk.without_apply_rng(hk.transform(lambda x: hk.nets.MLP([8, 1])(x)))
    x = jnp.asarray(np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32))
    y = jnp.asarray(np.random.default_rng(1).standard_normal((6, 1)).astype(np.float32))
    params = net.init(random.PRNGKey(0), x)
    return net, params, x, y


def test_composes_with_jit_grad_vmap():
    net, params, x, y = _mlp_loss_setup()
    np.testing.assert_allclose(np.asarray(fluxion.jit(net.apply)(params, x)), np.asarray(net.apply(params, x)),
                               rtol=1e-6)
    per_example = fluxion.vmap(net.apply, in_axes=(None, 0))(params, x)
    np.testing.assert_allclose(np.asarray(per_example), np.asarray(net.apply(params, x)), rtol=1e-6)

    def loss(p):
        return jnp.mean((net.apply(p, x) - y) ** 2)

    grads = fluxion.grad(loss)(params)
    assert shapes(grads) == shapes(params)
    # Finite-difference check of one weight's gradient.
    w = np.asarray(params["mlp/~/linear_1"]["w"]).copy()
    eps = 1e-3
    bumped = dict(params)
    w_plus = w.copy()
    w_plus[3, 0] += eps
    bumped["mlp/~/linear_1"] = {"w": jnp.asarray(w_plus), "b": params["mlp/~/linear_1"]["b"]}
    fd = (float(loss(bumped)) - float(loss(params))) / eps
    np.testing.assert_allclose(float(np.asarray(grads["mlp/~/linear_1"]["w"])[3, 0]), fd, rtol=2e-2, atol=2e-3)
    # init itself is jittable (params come out with the same values).
    jitted = fluxion.jit(hk.transform(lambda x: hk.nets.MLP([8, 1])(x)).init)(random.PRNGKey(0), x)
    np.testing.assert_allclose(np.asarray(jitted["mlp/~/linear_0"]["w"]),
                               np.asarray(params["mlp/~/linear_0"]["w"]), rtol=1e-6)


def test_data_parallel_pmap_pattern():
    """The announcement's pattern: stacked params, `pmap(update, axis_name='i')`, `lax.pmean` of the grads."""
    if not hasattr(fluxion, "pmap"):
        pytest.skip("core gap: fluxion.pmap is not available")
    from fluxion import lax
    net, params, x, y = _mlp_loss_setup()
    n = fluxion.local_device_count()
    replicated = fluxion.tree_util.tree_map(lambda a: jnp.stack([a] * n), params)
    xs = jnp.stack([x] * n)
    ys = jnp.stack([y] * n)

    def update(p, xb, yb):
        grads = fluxion.grad(lambda q: jnp.mean((net.apply(q, xb) - yb) ** 2))(p)
        grads = lax.pmean(grads, axis_name="i")
        return fluxion.tree_util.tree_map(lambda a, g: a - 0.1 * g, p, grads)

    new = fluxion.pmap(update, axis_name="i")(replicated, xs, ys)
    single = fluxion.tree_util.tree_map(
        lambda a, g: a - 0.1 * g, params, fluxion.grad(lambda q: jnp.mean((net.apply(q, x) - y) ** 2))(params))
    for m in params:
        for k in params[m]:
            for r in range(n):
                np.testing.assert_allclose(np.asarray(new[m][k])[r], np.asarray(single[m][k]), rtol=1e-5, atol=1e-6)


def test_data_structures_helpers():
    params = {"a/linear": {"w": jnp.ones((2, 3)), "b": jnp.zeros(3)}, "b": {"w": jnp.ones(4)}}
    left, right = hk.data_structures.partition(lambda m, n, v: n == "w", params)
    assert shapes(left) == {"a/linear": {"w": (2, 3)}, "b": {"w": (4,)}}
    assert shapes(right) == {"a/linear": {"b": (3,)}}
    assert shapes(hk.data_structures.merge(left, right)) == shapes(params)
    assert hk.data_structures.tree_size(params) == 13
    assert hk.data_structures.tree_bytes(params) == 52


def test_no_deprecation_warning_on_normal_apply():
    f = hk.transform(lambda x: hk.Linear(2)(x))
    x = jnp.ones((1, 3))
    params = f.init(random.PRNGKey(0), x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out1 = f.apply(params, None, x)
        out2 = f.apply(params, random.PRNGKey(1), x)
    assert out1.shape == out2.shape == (1, 2)
