"""fluxion.haiku modules: parameter names/shapes (Haiku's conventions), values against NumPy formulas, and
parameters + outputs against real Haiku on JAX (same seed -> same numbers) when installed."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import fluxion
import fluxion.haiku as hk
import fluxion.numpy as jnp
from fluxion import random

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # haiku_testing.py is here
from haiku_testing import assert_trees_close, needs_lax, run, shapes  # noqa: E402

X = np.random.default_rng(0).standard_normal((2, 8, 8, 3)).astype(np.float32)

# name -> builder(hk, jnp) of a function of X. Each is run on fluxion and (if installed) real Haiku.
BUILDERS = {
    "linear": lambda hk_, jnp_: lambda x: hk_.Linear(3)(x),
    "linear_no_bias": lambda hk_, jnp_: lambda x: hk_.Linear(3, with_bias=False)(x),
    "mlp": lambda hk_, jnp_: lambda x: hk_.nets.MLP([5, 4, 3])(x.reshape(2, -1)),
    "mlp_dropout": lambda hk_, jnp_: lambda x: hk_.nets.MLP([5, 3], activate_final=True)(
        x.reshape(2, -1), dropout_rate=0.3, rng=hk_.next_rng_key()),
    "layer_norm": lambda hk_, jnp_: lambda x: hk_.LayerNorm(-1, True, True)(x),
    "layer_norm_axes": lambda hk_, jnp_: lambda x: hk_.LayerNorm((1, 2), True, False, param_axis=-1)(x),
    "rms_norm": lambda hk_, jnp_: lambda x: hk_.RMSNorm(-1)(x),
    "embed": lambda hk_, jnp_: lambda x: hk_.Embed(10, 4)(jnp_.array([[1, 2], [9, 0]])),
    "embed_one_hot": lambda hk_, jnp_: lambda x: hk_.Embed(10, 4, lookup_style="ONE_HOT")(jnp_.array([3, 7])),
    "mha": lambda hk_, jnp_: lambda x: hk_.MultiHeadAttention(2, 3, w_init=hk_.initializers.VarianceScaling(1.0))(
        x[:, 0], x[:, 1], x[:, 2]),
    "sequential_flatten": lambda hk_, jnp_: lambda x: hk_.Sequential([hk_.Flatten(), hk_.Linear(3)])(x),
    "dropout": lambda hk_, jnp_: lambda x: hk_.dropout(hk_.next_rng_key(), 0.5, x),
}
CONV_BUILDERS = {
    "conv2d": lambda hk_, jnp_: lambda x: hk_.Conv2D(4, 3, stride=2)(x),
    "conv2d_valid_dilated": lambda hk_, jnp_: lambda x: hk_.Conv2D(4, (3, 2), padding="VALID", rate=2)(x),
    "conv2d_unbatched": lambda hk_, jnp_: lambda x: hk_.Conv2D(2, 1)(x[0]),
    "conv1d": lambda hk_, jnp_: lambda x: hk_.Conv1D(4, 3)(x[:, 0]),
    "conv2d_transpose": lambda hk_, jnp_: lambda x: hk_.Conv2DTranspose(4, 3, stride=2)(x),
    "conv2d_transpose_output_shape": lambda hk_, jnp_: lambda x: hk_.Conv2DTranspose(
        4, 3, stride=2, output_shape=(16, 16))(x),
}
POOL_BUILDERS = {
    "max_pool": lambda hk_, jnp_: lambda x: hk_.max_pool(x, (1, 3, 3, 1), (1, 2, 2, 1), "SAME"),
    "avg_pool_same": lambda hk_, jnp_: lambda x: hk_.avg_pool(x, (1, 3, 3, 1), (1, 2, 2, 1), "SAME"),
    "avg_pool_valid": lambda hk_, jnp_: lambda x: hk_.AvgPool((2, 2, 1), (2, 2, 1), "VALID")(x),
}
INITIALIZERS = {
    "variance_scaling": lambda i: i.VarianceScaling(),
    "variance_scaling_avg_uniform": lambda i: i.VarianceScaling(2.0, "fan_avg", "uniform"),
    "variance_scaling_out_normal": lambda i: i.VarianceScaling(1.0, "fan_out", "normal"),
    "random_normal": lambda i: i.RandomNormal(2., 1.),
    "random_uniform": lambda i: i.RandomUniform(-1., 3.),
    "truncated_normal": lambda i: i.TruncatedNormal(0.5, 1.0),
    "orthogonal": lambda i: i.Orthogonal(2.0),
    "identity": lambda i: i.Identity(3.),
    "uniform_scaling": lambda i: i.UniformScaling(2.),
    "constant": lambda i: i.Constant(2.5),
}


def _init_builder(make):
    return lambda hk_, jnp_: lambda x: hk_.get_parameter("p", (4, 5, 6), init=make(hk_.initializers))


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_module_matches_real_haiku(name):
    ours = run("fluxion", BUILDERS[name], [X])
    theirs = run("haiku", BUILDERS[name], [X])
    assert_trees_close(ours, theirs)


@needs_lax("conv_general_dilated", "conv_transpose")
@pytest.mark.parametrize("name", sorted(CONV_BUILDERS))
def test_conv_matches_real_haiku(name):
    assert_trees_close(run("fluxion", CONV_BUILDERS[name], [X]), run("haiku", CONV_BUILDERS[name], [X]))


@needs_lax("reduce_window")
@pytest.mark.parametrize("name", sorted(POOL_BUILDERS))
def test_pool_matches_real_haiku(name):
    assert_trees_close(run("fluxion", POOL_BUILDERS[name], [X]), run("haiku", POOL_BUILDERS[name], [X]))


@pytest.mark.parametrize("name", sorted(INITIALIZERS))
def test_initializer_matches_real_haiku(name):
    builder = _init_builder(INITIALIZERS[name])
    assert_trees_close(run("fluxion", builder, [X]), run("haiku", builder, [X]), rtol=1e-5, atol=1e-5)


def _init(make, shape=(200, 300), seed=0):
    return np.asarray(hk.transform(lambda: hk.get_parameter("p", shape, init=make(hk.initializers))).init(
        random.PRNGKey(seed))["~"]["p"])


def test_initializer_statistics():
    # VarianceScaling(fan_in, truncated normal): std sqrt(1/fan_in) after the 0.8796 correction, within [-2s', 2s'].
    w = _init(lambda i: i.VarianceScaling())
    np.testing.assert_allclose(w.std(), np.sqrt(1 / 200), rtol=0.03)
    assert np.abs(w).max() <= 2 * np.sqrt(1 / 200) / .87962566103423978 + 1e-6
    u = _init(lambda i: i.VarianceScaling(2.0, "fan_avg", "uniform"))
    limit = np.sqrt(3 * 2.0 / 250)
    assert -limit <= u.min() and u.max() <= limit and u.max() > 0.95 * limit
    n = _init(lambda i: i.RandomNormal(2., 1.))
    np.testing.assert_allclose([n.mean(), n.std()], [1., 2.], rtol=0.03, atol=0.02)
    q = _init(lambda i: i.Orthogonal(), shape=(30, 20))
    np.testing.assert_allclose(q.T @ q, np.eye(20), atol=1e-5)
    np.testing.assert_array_equal(_init(lambda i: i.Constant(2.5), shape=(2, 2)), np.full((2, 2), 2.5, np.float32))
    np.testing.assert_array_equal(_init(lambda i: i.Identity(3.), shape=(2, 3)), 3 * np.eye(2, 3))


def test_conventional_parameter_shapes():
    def f(x):
        hk.nets.MLP([16, 2])(x.reshape(2, -1))
        hk.LayerNorm(-1, True, True)(x)
        hk.Embed(7, 5)(jnp.array([1]))
        hk.MultiHeadAttention(2, 4, w_init=hk.initializers.VarianceScaling())(x[:, 0], x[:, 0], x[:, 0])
        return hk.BatchNorm(True, True, 0.9)(x, is_training=True)

    params, state = hk.transform_with_state(f).init(random.PRNGKey(0), jnp.asarray(X))
    assert shapes(params) == {
        "mlp/~/linear_0": {"w": (192, 16), "b": (16,)},
        "mlp/~/linear_1": {"w": (16, 2), "b": (2,)},
        "layer_norm": {"scale": (3,), "offset": (3,)},
        "embed": {"embeddings": (7, 5)},
        "multi_head_attention/query": {"w": (3, 8), "b": (8,)},
        "multi_head_attention/key": {"w": (3, 8), "b": (8,)},
        "multi_head_attention/value": {"w": (3, 8), "b": (8,)},
        "multi_head_attention/linear": {"w": (8, 8), "b": (8,)},
        "batch_norm": {"scale": (1, 1, 1, 3), "offset": (1, 1, 1, 3)},
    }
    assert shapes(state) == {"batch_norm/~/mean_ema": {"counter": (), "hidden": (1, 1, 1, 3), "average": (1, 1, 1, 3)},
                             "batch_norm/~/var_ema": {"counter": (), "hidden": (1, 1, 1, 3), "average": (1, 1, 1, 3)}}


def test_linear_and_layer_norm_formulas():
    x = jnp.asarray(X.reshape(2, -1))
    f = hk.transform(lambda x: hk.Linear(4)(x))
    p = f.init(random.PRNGKey(0), x)
    w, b = np.asarray(p["linear"]["w"]), np.asarray(p["linear"]["b"])
    np.testing.assert_allclose(np.asarray(f.apply(p, None, x)), X.reshape(2, -1) @ w + b, rtol=1e-5, atol=1e-5)
    # Default w init: truncated normal with stddev 1/sqrt(fan_in) -> |w| <= 2/sqrt(192); b = 0.
    assert np.abs(w).max() <= 2 / np.sqrt(192) and not b.any()
    ln = hk.without_apply_rng(hk.transform(lambda x: hk.LayerNorm(-1, True, True, eps=1e-3)(x)))
    out = np.asarray(ln.apply(ln.init(None, jnp.asarray(X)), jnp.asarray(X)))
    expected = (X - X.mean(-1, keepdims=True)) / np.sqrt(X.var(-1, keepdims=True) + 1e-3)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)


def test_batch_norm_train_and_eval():
    x = np.random.default_rng(1).standard_normal((16, 5)).astype(np.float32) * 3 + 2
    f = hk.transform_with_state(lambda x, is_training: hk.BatchNorm(True, True, decay_rate=0.9, eps=1e-5)(
        x, is_training))
    params, state = f.init(None, jnp.asarray(x), is_training=True)
    assert int(state["batch_norm/~/mean_ema"]["counter"]) == 0      # init returns the initial state
    out, state = f.apply(params, state, None, jnp.asarray(x), is_training=True)
    mean, var = x.mean(0, keepdims=True), (x ** 2).mean(0, keepdims=True) - x.mean(0, keepdims=True) ** 2
    np.testing.assert_allclose(np.asarray(out), (x - mean) / np.sqrt(var + 1e-5), rtol=1e-4, atol=1e-4)
    ema = state["batch_norm/~/mean_ema"]
    assert int(ema["counter"]) == 1
    np.testing.assert_allclose(np.asarray(ema["hidden"]), 0.1 * mean, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(ema["average"]), 0.1 * mean / (1 - 0.9), rtol=1e-5)  # zero-debiased
    # Eval: normalizes with the moving averages and leaves the state unchanged.
    y = x[:4] + 1.0
    out_eval, state_eval = f.apply(params, state, None, jnp.asarray(y), is_training=False)
    avg_m = np.asarray(state["batch_norm/~/mean_ema"]["average"])
    avg_v = np.asarray(state["batch_norm/~/var_ema"]["average"])
    np.testing.assert_allclose(np.asarray(out_eval), (y - avg_m) / np.sqrt(avg_v + 1e-5), rtol=1e-4, atol=1e-4)
    for m in state:
        for k in state[m]:
            np.testing.assert_array_equal(np.asarray(state_eval[m][k]), np.asarray(state[m][k]))


def test_batch_norm_matches_real_haiku_over_steps():
    build = lambda hk_, jnp_: lambda x, is_training: hk_.BatchNorm(True, True, 0.9)(x, is_training)  # noqa: E731
    assert_trees_close(run("fluxion", build, [X], state=True, is_training=True),
                       run("haiku", build, [X], state=True, is_training=True))


def _resnet_expected_names(depth_name: str, blocks, bottleneck: bool, projection) -> set:
    names = {f"{depth_name}/~/initial_conv", f"{depth_name}/~/initial_batchnorm", f"{depth_name}/~/logits"}
    for g, n in enumerate(blocks):
        for b in range(n):
            prefix = f"{depth_name}/~/block_group_{g}/~/block_{b}/~/"
            for i in range(3 if bottleneck else 2):
                names |= {prefix + f"conv_{i}", prefix + f"batchnorm_{i}"}
            if b == 0 and projection[g]:
                names |= {prefix + "shortcut_conv", prefix + "shortcut_batchnorm"}
    return names


def _abstract_init(f, *args, **kwargs):
    """Parameter/state shapes of `init` without computing anything (`eval_shape`)."""
    return fluxion.eval_shape(lambda: f.init(random.PRNGKey(0), *args, **kwargs))


@needs_lax("conv_general_dilated", "reduce_window")
def test_resnet18_names_shapes_and_state_tree():
    x = jnp.zeros((2, 32, 32, 3))
    f = hk.transform_with_state(lambda x, is_training: hk.nets.ResNet18(10)(x, is_training))
    params, state = _abstract_init(f, x, is_training=True)
    assert set(params) == _resnet_expected_names("res_net18", (2, 2, 2, 2), False, (False, True, True, True))
    assert shapes(params)["res_net18/~/initial_conv"] == {"w": (7, 7, 3, 64)}
    assert shapes(params)["res_net18/~/initial_batchnorm"] == {"scale": (1, 1, 1, 64), "offset": (1, 1, 1, 64)}
    assert shapes(params)["res_net18/~/block_group_1/~/block_0/~/shortcut_conv"] == {"w": (1, 1, 64, 128)}
    assert shapes(params)["res_net18/~/block_group_3/~/block_1/~/conv_1"] == {"w": (3, 3, 512, 512)}
    assert shapes(params)["res_net18/~/logits"] == {"w": (512, 10), "b": (10,)}
    # torchvision's ResNet-18 count (same layers) with the 1000-way classifier swapped for a 10-way one.
    assert hk.data_structures.tree_size(params) == 11_689_512 - 513 * 1000 + 513 * 10
    # One mean and one variance EMA per batch norm: initial + 2 per block x 8 blocks + 3 shortcuts.
    assert len(state) == 2 * (1 + 2 * 8 + 3)
    assert shapes(state)["res_net18/~/block_group_0/~/block_0/~/batchnorm_0/~/var_ema"] == {
        "counter": (), "hidden": (1, 1, 1, 64), "average": (1, 1, 1, 64)}


@needs_lax("conv_general_dilated", "reduce_window")
@pytest.mark.parametrize("depth,blocks,bottleneck,proj", [
    (34, (3, 4, 6, 3), False, (False, True, True, True)),
    (50, (3, 4, 6, 3), True, (True, True, True, True)),
])
def test_resnet34_50_names(depth, blocks, bottleneck, proj):
    cls = getattr(hk.nets, f"ResNet{depth}")
    params, _ = _abstract_init(hk.transform_with_state(lambda x: cls(5)(x, is_training=True)),
                               jnp.zeros((1, 32, 32, 3)))
    assert set(params) == _resnet_expected_names(f"res_net{depth}", blocks, bottleneck, proj)
    if bottleneck:
        assert params["res_net50/~/block_group_3/~/block_2/~/conv_2"]["w"].shape == (1, 1, 512, 2048)


def _small_resnet(hk_, resnet_v2=False):
    """A narrow ResNet (one block per group) running the same code as ResNet18/50, fast enough for tests."""
    return lambda x, is_training: hk_.nets.ResNet(
        blocks_per_group=(1, 1, 1, 1), num_classes=3, channels_per_group=(4, 8, 8, 8), bottleneck=False,
        use_projection=(True, True, False, False), resnet_v2=resnet_v2,
        initial_conv_config=dict(output_channels=4, kernel_shape=3))(x, is_training)


@needs_lax("conv_general_dilated", "reduce_window")
def test_resnet_train_and_eval_state():
    x = jnp.asarray(np.random.default_rng(2).standard_normal((2, 16, 16, 3)).astype(np.float32))
    f = hk.transform_with_state(_small_resnet(hk))
    params, state = f.init(random.PRNGKey(0), x, is_training=True)
    assert not np.asarray(params["res_net/~/logits"]["w"]).any()          # zero-initialised logits
    key = "res_net/~/initial_batchnorm/~/mean_ema"
    assert int(state[key]["counter"]) == 0
    logits, new_state = f.apply(params, state, None, x, is_training=True)
    assert logits.shape == (2, 3) and int(new_state[key]["counter"]) == 1
    assert np.abs(np.asarray(new_state[key]["average"])).sum() > 0
    eval_logits, eval_state = f.apply(params, new_state, None, x, is_training=False)
    assert eval_logits.shape == (2, 3)
    for m in new_state:            # evaluation does not touch the moving averages
        for k in new_state[m]:
            np.testing.assert_array_equal(np.asarray(eval_state[m][k]), np.asarray(new_state[m][k]))


@needs_lax("conv_general_dilated", "reduce_window")
@pytest.mark.parametrize("resnet_v2", [False, True])
def test_resnet_matches_real_haiku(resnet_v2):
    x = np.random.default_rng(3).standard_normal((2, 16, 16, 3)).astype(np.float32)
    build = lambda hk_, jnp_: _small_resnet(hk_, resnet_v2)  # noqa: E731
    assert_trees_close(run("fluxion", build, [x], state=True, is_training=True),
                       run("haiku", build, [x], state=True, is_training=True), rtol=1e-4, atol=1e-4)


def test_module_errors():
    with pytest.raises(ValueError, match="Input must not be scalar"):
        hk.transform(lambda: hk.Linear(2)(jnp.float32(1.))).init(random.PRNGKey(0))
    with pytest.raises(ValueError, match="Cannot set `scale_init` if `create_scale=False`"):
        hk.transform(lambda: hk.BatchNorm(False, True, 0.9, scale_init=jnp.ones)).init(None)
    with pytest.raises(ValueError, match="rate must be in \\[0, 1\\)"):
        hk.dropout(random.PRNGKey(0), 1.0, jnp.ones(3))
    with pytest.raises(ValueError, match="When using dropout an rng key must be passed"):
        hk.transform(lambda x: hk.nets.MLP([2])(x, dropout_rate=0.1)).init(random.PRNGKey(0), jnp.ones((1, 2)))
    with pytest.raises(ValueError, match="Please provide a weight initializer"):
        hk.transform(lambda: hk.MultiHeadAttention(2, 2)).init(None)
    with pytest.raises(ValueError, match="must take an array of integer dtype"):
        hk.transform(lambda: hk.Embed(3, 2)(jnp.ones(2))).init(random.PRNGKey(0))
    with pytest.raises(ValueError, match="Input to ConvND needs to have rank in \\[3, 4\\]"):
        hk.transform(lambda: hk.Conv2D(2, 3)(jnp.ones((2, 3)))).init(random.PRNGKey(0))
    with pytest.raises(ValueError, match="not a valid module name"):
        hk.transform(lambda: hk.Linear(2, name="bad name")).init(None)


def test_batch_norm_cross_replica_statistics_under_vmap():
    """With `cross_replica_axis`, the batch statistics are averaged over the mapped axis (`lax.pmean`), so two
    replicas of 4 examples normalize exactly like one batch of 8."""
    x = np.random.default_rng(4).standard_normal((2, 4, 3)).astype(np.float32)
    f = hk.transform_with_state(lambda x: hk.BatchNorm(True, True, 0.9, cross_replica_axis="i")(x, True))
    init = fluxion.vmap(f.init, in_axes=(None, 0), axis_name="i")
    params, state = init(None, jnp.asarray(x))
    apply = fluxion.vmap(f.apply, in_axes=(0, 0, None, 0), axis_name="i")
    out, _ = apply(params, state, None, jnp.asarray(x))
    flat = x.reshape(8, 3)
    expected = (flat - flat.mean(0)) / np.sqrt(flat.var(0) + 1e-5)
    np.testing.assert_allclose(np.asarray(out).reshape(8, 3), expected, rtol=1e-4, atol=1e-4)
