"""Breadth of fluxion.haiku against real Haiku 0.0.17: one record per module/function.

Each record builds the same function with fluxion.haiku and with Haiku, runs `init` and `apply` with the same key
and compares the parameter/state trees (names, shapes, values) and the outputs. NamedTuples (e.g. `LSTMState`)
are compared by type name and fields, since the two libraries define their own classes.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import fluxion
import fluxion.haiku as hk

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # haiku_testing.py is here
from haiku_testing import assert_trees_close, run  # noqa: E402

_rng = np.random.default_rng(0)
SEQ = _rng.standard_normal((5, 2, 3)).astype(np.float32)      # [T, B, D]
IMG = _rng.standard_normal((2, 6, 6, 4)).astype(np.float32)   # NHWC
VEC = _rng.standard_normal((4, 3)).astype(np.float32)         # [B, D]


def plain(tree):
    """NamedTuples -> {"TypeName": {field: value}} so both libraries' state tuples compare equal."""
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return {type(tree).__name__: {f: plain(x) for f, x in zip(tree._fields, tree)}}
    if isinstance(tree, (tuple, list)):
        return type(tree)(plain(x) for x in tree)
    if isinstance(tree, dict):
        return {k: plain(v) for k, v in tree.items()}
    return tree


def _unroll(make_core, unroll="dynamic", batch=2, **kwargs):
    def build(hk_, jnp_):
        def f(x):
            core = make_core(hk_, jnp_)
            fn = hk_.dynamic_unroll if unroll == "dynamic" else hk_.static_unroll
            return fn(core, x, core.initial_state(batch), **kwargs)
        return f
    return build


def _both(hk_, jnp_, ms, x):
    # Create every module's parameters unconditionally, as Haiku requires around cond/switch.
    return [m(x) for m in ms]


# name -> (builder(hk, jnp) -> f(*inputs), inputs, uses state)
CASES = {
    # (1) recurrent cores
    "lstm_dynamic_unroll": (_unroll(lambda hk_, jnp_: hk_.LSTM(4)), [SEQ], False),
    "lstm_static_unroll": (_unroll(lambda hk_, jnp_: hk_.LSTM(4), "static"), [SEQ], False),
    "gru_batch_major_all_states": (_unroll(lambda hk_, jnp_: hk_.GRU(4), batch=5, time_major=False,
                                           return_all_states=True), [SEQ], False),
    "gru_reverse": (_unroll(lambda hk_, jnp_: hk_.GRU(3), reverse=True), [SEQ], False),
    "vanilla_rnn": (_unroll(lambda hk_, jnp_: hk_.VanillaRNN(4)), [SEQ], False),
    "vanilla_rnn_single_bias": (_unroll(lambda hk_, jnp_: hk_.VanillaRNN(4, double_bias=False), "static"), [SEQ],
                                False),
    "deep_rnn": (_unroll(lambda hk_, jnp_: hk_.DeepRNN([hk_.LSTM(3), hk_.nets.MLP([2]), hk_.GRU(2)])), [SEQ],
                 False),
    "deep_rnn_skip": (_unroll(lambda hk_, jnp_: hk_.deep_rnn_with_skip_connections([hk_.LSTM(3), hk_.GRU(2)])),
                      [SEQ], False),
    "reset_core": (lambda hk_, jnp_: lambda x: (lambda c: hk_.dynamic_unroll(
        c, (x, x[..., 0] > 0), c.initial_state(2)))(hk_.ResetCore(hk_.LSTM(3))), [SEQ], False),
    "identity_core": (lambda hk_, jnp_: lambda x: hk_.dynamic_unroll(hk_.IdentityCore(), x, ()), [SEQ], False),
    "conv1d_lstm": (lambda hk_, jnp_: lambda x: (lambda c: hk_.static_unroll(
        c, x[:, :, :, None], c.initial_state(2)))(hk_.Conv1DLSTM([3], 2, 3)), [SEQ], False),
    "conv2d_lstm_step": (lambda hk_, jnp_: lambda x: (lambda c: c(x, c.initial_state(2)))(
        hk_.Conv2DLSTM([6, 6], 3, 3)), [IMG], False),
    # (2) Haiku-aware transforms
    "cond": (lambda hk_, jnp_: lambda x: (lambda ms: (_both(hk_, jnp_, ms, x), hk_.cond(
        x.sum() > 0, ms[0], ms[1], x)))([hk_.Linear(2), hk_.Linear(2, name="other")]), [VEC], False),
    "switch_with_rng": (lambda hk_, jnp_: lambda x: (lambda ms: (_both(hk_, jnp_, ms[:2], x), hk_.switch(
        2, ms, x)))([hk_.Linear(2), hk_.Linear(2),
                     lambda y: hk_.dropout(hk_.next_rng_key(), .5, y[..., :2])]), [VEC], False),
    "vmap_split_rng": (lambda hk_, jnp_: lambda x: (lambda m: (m(x[0]), hk_.vmap(
        lambda y: m(y) + hk_.dropout(hk_.next_rng_key(), .5, jnp_.ones(2)), split_rng=True)(x)))(
            hk_.Linear(2)), [VEC], False),
    "vmap_shared_rng": (lambda hk_, jnp_: lambda x: hk_.vmap(
        lambda y: hk_.Linear(2)(y) + hk_.dropout(hk_.next_rng_key(), .5, jnp_.ones(2)), split_rng=False)(x),
        [VEC], False),
    "scan_with_state_and_rng": (lambda hk_, jnp_: lambda x: (lambda m: hk_.scan(
        lambda c, y: (m(c) + hk_.dropout(hk_.next_rng_key(), .3, y), c.sum()), x[0], x))(
            hk_.Linear(3)), [SEQ], False),
    "scan_batch_norm_state": (lambda hk_, jnp_: lambda x: (lambda bn: hk_.scan(
        lambda c, y: (c + bn(y, is_training=True).sum(), ()), 0., x))(
            hk_.BatchNorm(True, True, 0.9)), [SEQ], True),
    "map": (lambda hk_, jnp_: lambda x: (lambda m: hk_.map(m, x))(hk_.Linear(3)), [SEQ], False),
    "fori_loop": (lambda hk_, jnp_: lambda x: (lambda m: hk_.fori_loop(
        0, 3, lambda i, v: m(v) + hk_.dropout(hk_.next_rng_key(), .5, v), x))(hk_.Linear(3)), [VEC], False),
    "grad_inside": (lambda hk_, jnp_: lambda x: hk_.grad(lambda y: hk_.Linear(1)(y).sum())(x), [VEC], False),
    "value_and_grad_with_state": (lambda hk_, jnp_: lambda x: hk_.value_and_grad(
        lambda y: (hk_.set_state("last", y.sum()), hk_.Linear(1)(y).sum())[1])(x), [VEC], True),
    "remat": (lambda hk_, jnp_: lambda x: hk_.remat(lambda y: hk_.nets.MLP([4, 2])(y))(x), [VEC], False),
    "eval_shape": (lambda hk_, jnp_: lambda x: (lambda m: (m(x), hk_.eval_shape(m, x).shape))(hk_.Linear(5)),
                   [VEC], False),
    # (3) layers
    "group_norm": (lambda hk_, jnp_: lambda x: hk_.GroupNorm(2)(x), [IMG], False),
    "group_norm_channels_first": (lambda hk_, jnp_: lambda x: hk_.GroupNorm(
        3, data_format="channels_first", create_offset=False)(x), [IMG], False),
    "instance_norm": (lambda hk_, jnp_: lambda x: hk_.InstanceNorm(True, True)(x), [IMG], False),
    "spectral_norm": (lambda hk_, jnp_: lambda x: hk_.SpectralNorm(n_steps=2)(x[0, 0]), [IMG], True),
    "sn_params_tree": (lambda hk_, jnp_: lambda x: hk_.SNParamsTree(ignore_regex=".*b$")(
        {"lin": {"w": x[0, 0], "b": x[0, 0, 0]}}), [IMG], True),
    "ema_params_tree": (lambda hk_, jnp_: lambda x: hk_.EMAParamsTree(0.9)(
        {"mlp/~/lin": {"w": x[0], "b": x[1, 0]}}), [VEC], True),
    "depthwise_conv2d": (lambda hk_, jnp_: lambda x: hk_.DepthwiseConv2D(2, 3, stride=2)(x), [IMG], False),
    "depthwise_conv1d_valid": (lambda hk_, jnp_: lambda x: hk_.DepthwiseConv1D(1, 2, padding="VALID")(x[:, 0]),
                               [IMG], False),
    "depthwise_conv3d": (lambda hk_, jnp_: lambda x: hk_.DepthwiseConv3D(1, 2)(x[None]), [IMG], False),
    "separable_depthwise_conv2d": (lambda hk_, jnp_: lambda x: hk_.SeparableDepthwiseConv2D(2, 3)(x), [IMG],
                                   False),
    "bias": (lambda hk_, jnp_: lambda x: hk_.Bias()(x), [IMG], False),
    "bias_dims": (lambda hk_, jnp_: lambda x: hk_.Bias(bias_dims=[-1], b_init=jnp_.ones)(x, multiplier=2.), [IMG],
                  False),
    "batch_apply": (lambda hk_, jnp_: lambda x: hk_.BatchApply(hk_.Linear(2))(x), [SEQ], False),
    "expand_apply": (lambda hk_, jnp_: lambda x: hk_.expand_apply(hk_.Linear(2))(x[0, 0]), [SEQ], False),
    "one_hot": (lambda hk_, jnp_: lambda x: hk_.one_hot(jnp_.array([0, 2, 5]), 4), [VEC], False),
    "multinomial": (lambda hk_, jnp_: lambda x: hk_.multinomial(hk_.next_rng_key(), x, 3), [VEC], False),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_real_haiku(name):
    build, inputs, state = CASES[name]
    ours = run("fluxion", build, inputs, state=state)
    theirs = run("haiku", build, inputs, state=state)
    assert_trees_close(plain(ours), plain(theirs))


JIT_CASES = ["lstm_dynamic_unroll", "gru_batch_major_all_states", "deep_rnn_skip", "cond", "vmap_split_rng",
             "scan_with_state_and_rng", "group_norm", "spectral_norm", "depthwise_conv2d"]


@pytest.mark.parametrize("name", JIT_CASES)
def test_apply_composes_with_jit(name):
    build, inputs, state = CASES[name]
    key = fluxion.random.PRNGKey(1)
    f = build(hk, fluxion.numpy)
    if state:
        t = hk.transform_with_state(f)
        p, s = t.init(key, *inputs)
        eager, jitted = t.apply(p, s, key, *inputs), fluxion.jit(t.apply)(p, s, key, *inputs)
    else:
        t = hk.transform(f)
        p = t.init(key, *inputs)
        eager, jitted = t.apply(p, key, *inputs), fluxion.jit(t.apply)(p, key, *inputs)
    assert_trees_close(plain(eager), plain(jitted))


GRAD_CASES = ["lstm_dynamic_unroll", "gru_reverse", "group_norm", "depthwise_conv2d", "scan_with_state_and_rng"]


def _param_grads(framework, name):
    build, inputs, _ = CASES[name]
    if framework == "fluxion":
        hk_, jax = hk, fluxion
    else:
        hk_, jax = pytest.importorskip("haiku"), pytest.importorskip("jax")
    t = hk_.transform(build(hk_, jax.numpy))
    key = jax.random.PRNGKey(0)
    args = [jax.numpy.asarray(a) for a in inputs]
    params = t.init(key, *args)

    def loss(p):
        leaves = jax.tree_util.tree_leaves(t.apply(p, key, *args))
        return sum(jax.numpy.sum(jax.numpy.sin(leaf)) for leaf in leaves if jax.numpy.issubdtype(leaf.dtype,
                                                                                            jax.numpy.floating))

    return jax.tree_util.tree_map(np.asarray, jax.grad(loss)(params))


@pytest.mark.parametrize("name", GRAD_CASES)
def test_parameter_gradients_match_real_haiku(name):
    assert_trees_close(_param_grads("fluxion", name), _param_grads("haiku", name), rtol=1e-4, atol=1e-5)
