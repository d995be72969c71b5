"""The Haiku and RLax snippets of the reference tutorial (tutorials/002: DeepMind's Haiku/RLax announcement) run
after the import swap `haiku` -> `fluxion.haiku`, `rlax` -> `fluxion.rlax`, `jax` -> `fluxion` (and the
`optix` optimizer module -> `fluxion.optax`, bsuite's `catch` -> `fluxion.examples.catch`).

The snippets are kept as written, including the pre-0.0.3 `apply(params, x)` calls without an rng; the only edits
are the import lines, definitions the article leaves out (inputs, FLAGS, the dataset, the update rule), and the
article's `hk.nets.MLP(...)(x)` typo for `(inputs)`.

The article predates Haiku 0.0.3: its `hk.transform(f).apply` took no rng argument. Today that function is
`hk.without_apply_rng(hk.transform(f))`, and today's `hk.transform(f).apply(params, x)` raises Haiku's ValueError
(as `fluxion.haiku` does: `test_todays_transform_rejects_the_articles_apply_call`). So, like `optix` -> `optax`,
the article's `hk` is mapped at import: it is `fluxion.haiku` with that one substitution for `transform`.
"""

from __future__ import annotations

import os
import sys

import types

import numpy as np
import pytest

import fluxion as jax
import fluxion.numpy as jnp
import fluxion.optax as optix
import fluxion.rlax as rlax
from fluxion import haiku
from fluxion.examples import catch
from fluxion.haiku import nets

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # haiku_testing.py is here
from haiku_testing import needs_lax, shapes  # noqa: E402

# The article's (Haiku 0.0.2) API: `transform(f).apply(params, *args)` without an rng.
hk = types.SimpleNamespace(**{n: getattr(haiku, n) for n in dir(haiku) if not n.startswith("__")})
hk.transform = lambda f: haiku.without_apply_rng(haiku.transform(f))


class MyLinear(hk.Module):
    def __init__(self, output_size, name=None):
        super(MyLinear, self).__init__(name=name)
        self.output_size = output_size

    def __call__(self, x):
        j, k = x.shape[-1], self.output_size
        w_init = hk.initializers.TruncatedNormal(1. / np.sqrt(j))
        w = hk.get_parameter("w", shape=[j, k], dtype=x.dtype, init=w_init)
        b = hk.get_parameter("b", shape=[k], dtype=x.dtype, init=jnp.zeros)
        return jnp.dot(x, w) + b


def test_custom_module_snippet():
    def forward_fn(x):
        model = MyLinear(10)
        return model(x)

    # Turn `forward_fn` into an object with `init` and `apply` methods.
    forward = hk.transform(forward_fn)
    x = jnp.ones([1, 1])
    key = hk.PRNGSequence(42)
    params = forward.init(next(key), x)
    y = forward.apply(params, x)
    assert shapes(params) == {"my_linear": {"w": (1, 10), "b": (10,)}}
    np.testing.assert_allclose(np.asarray(y), np.asarray(params["my_linear"]["w"]), rtol=1e-6)


@needs_lax("conv_general_dilated", "reduce_window")
def test_transform_with_state_resnet50_snippet():
    """Run abstractly (`eval_shape`) to keep the suite fast: initializing ResNet-50's 25M parameters eagerly takes
    ~15 s here (about as long as eager JAX + Haiku); small ResNets run numerically in test_haiku_modules.py."""
    rng = jax.random.PRNGKey(0)
    x = jnp.ones([1, 32, 32, 3])

    def forward(x, is_training):
        net = hk.nets.ResNet50(1000)
        return net(x, is_training)

    forward = hk.transform_with_state(forward)

    def snippet():
        # The `init` function now returns parameters **and** state.
        params, state = forward.init(rng, x, is_training=True)
        logits, state = forward.apply(params, state, rng, x, is_training=True)
        return params, logits, state

    params, logits, state = jax.eval_shape(snippet)
    assert logits.shape == (1, 1000)
    assert hk.data_structures.tree_size(params) == 25_557_032    # torchvision's ResNet-50 count
    assert state["res_net50/~/initial_batchnorm/~/mean_ema"]["counter"].shape == ()


def test_pmap_data_parallel_snippet():
    if not hasattr(jax, "pmap"):
        pytest.skip("core gap: fluxion.pmap is not available")
    data_rng = np.random.default_rng(0)

    def batches():
        while True:
            images = data_rng.standard_normal((4, 6)).astype(np.float32)
            labels = np.eye(2, dtype=np.float32)[data_rng.integers(0, 2, 4)]
            yield images, labels

    input_dataset = batches()

    def softmax_cross_entropy(logits, labels):
        return -jnp.sum(labels * jax.nn.log_softmax(logits), axis=-1)

    def my_update_rule(params, grads):
        return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)

    # --- the article's code ---
    def loss_fn(inputs, labels):
        logits = hk.nets.MLP([8, 4, 2])(inputs)
        return jnp.mean(softmax_cross_entropy(logits, labels))

    loss_obj = hk.transform(loss_fn)
    # Initialize the model on a single device.
    rng = jax.random.PRNGKey(428)
    sample_image, sample_label = next(input_dataset)
    params = loss_obj.init(rng, sample_image, sample_label)
    # Replicate params onto all devices.
    num_devices = jax.local_device_count()
    params = jax.tree_util.tree_map(lambda x: np.stack([x] * num_devices), params)

    def make_superbatch():
        """Constructs a superbatch, i.e. one batch of data per device."""
        superbatch = [next(input_dataset) for _ in range(num_devices)]
        superbatch_images, superbatch_labels = zip(*superbatch)
        superbatch_images = np.stack(superbatch_images)
        superbatch_labels = np.stack(superbatch_labels)
        return superbatch_images, superbatch_labels

    def update(params, inputs, labels, axis_name='i'):
        """Updates params based on performance on inputs and labels."""
        grads = jax.grad(loss_obj.apply)(params, inputs, labels)
        # Take the mean of the gradients across all data-parallel replicas.
        grads = jax.lax.pmean(grads, axis_name)
        new_params = my_update_rule(params, grads)
        return new_params

    losses = []
    for _ in range(10):
        superbatch_images, superbatch_labels = make_superbatch()
        params = jax.pmap(update, axis_name='i')(params, superbatch_images, superbatch_labels)
        first = jax.tree_util.tree_map(lambda p: p[0], params)
        losses.append(float(loss_obj.apply(first, superbatch_images[0], superbatch_labels[0])))
    # --- end of the article's code ---
    assert shapes(params)["mlp/~/linear_0"] == {"w": (num_devices, 6, 8), "b": (num_devices, 8)}
    assert all(np.isfinite(losses))


def test_rlax_q_learning_snippet():
    FLAGS = types.SimpleNamespace(hidden_units=20, seed=1, learning_rate=1e-2, epsilon=0.1, train_episodes=3)

    def build_network(num_actions: int) -> hk.Transformed:
        def q(obs):
            flatten = lambda x: jnp.reshape(x, (-1,))  # noqa: E731
            network = hk.Sequential(
                [flatten, nets.MLP([FLAGS.hidden_units, num_actions])])
            return network(obs)
        return hk.transform(q)

    # --- the article's code ---
    env = catch.Catch(seed=FLAGS.seed)
    rng = hk.PRNGSequence(jax.random.PRNGKey(FLAGS.seed))
    # Build and initialize Q-network.
    num_actions = env.action_spec().num_values
    network = build_network(num_actions)
    sample_input = env.observation_spec().generate_value()
    net_params = network.init(next(rng), sample_input)
    # Build and initialize optimizer.
    optimizer = optix.adam(FLAGS.learning_rate)
    opt_state = optimizer.init(net_params)

    @jax.jit
    def policy(net_params, key, obs):
        """Sample action from epsilon-greedy policy."""
        q = network.apply(net_params, obs)
        a = rlax.epsilon_greedy(epsilon=FLAGS.epsilon).sample(key, q)
        return q, a

    @jax.jit
    def eval_policy(net_params, key, obs):
        """Sample action from greedy policy."""
        q = network.apply(net_params, obs)
        return rlax.greedy().sample(key, q)

    @jax.jit
    def update(net_params, opt_state, obs_tm1, a_tm1, r_t, discount_t, q_t):
        """Update network weights wrt Q-learning loss."""

        def q_learning_loss(net_params, obs_tm1, a_tm1, r_t, discount_t, q_t):
            q_tm1 = network.apply(net_params, obs_tm1)
            td_error = rlax.q_learning(q_tm1, a_tm1, r_t, discount_t, q_t)
            return rlax.l2_loss(td_error)

        dloss_dtheta = jax.grad(q_learning_loss)(net_params, obs_tm1, a_tm1, r_t, discount_t, q_t)
        updates, opt_state = optimizer.update(dloss_dtheta, opt_state)
        net_params = optix.apply_updates(net_params, updates)
        return net_params, opt_state

    print(f"Training agent for {FLAGS.train_episodes} episodes...")
    # --- end of the article's code; a minimal online Q-learning loop around it ---
    returns = []
    for _ in range(FLAGS.train_episodes):
        timestep = env.reset()
        while not timestep.last():
            q_tm1, a_tm1 = policy(net_params, next(rng), timestep.observation)
            new_timestep = env.step(int(a_tm1))
            q_t, _ = policy(net_params, next(rng), new_timestep.observation)
            net_params, opt_state = update(net_params, opt_state, timestep.observation, a_tm1,
                                           jnp.float32(new_timestep.reward), jnp.float32(new_timestep.discount),
                                           q_t)
            timestep = new_timestep
        returns.append(timestep.reward)
    assert set(returns) <= {-1., 1.}
    a = eval_policy(net_params, next(rng), env.reset().observation)
    assert int(a) in (0, 1, 2)
    assert shapes(net_params) == {"mlp/~/linear_0": {"w": (50, 20), "b": (20,)},
                                  "mlp/~/linear_1": {"w": (20, 3), "b": (3,)}}


def test_todays_transform_rejects_the_articles_apply_call():
    """With today's `hk.transform`, the article's `apply(params, x)` takes `x` for the rng: Haiku's ValueError."""
    forward = haiku.transform(lambda x: MyLinear(2)(x))
    params = forward.init(jax.random.PRNGKey(0), jnp.ones([1, 1]))
    with pytest.raises(ValueError, match=r"^Apply must be called with an RNG as the second argument, the required "
                                         r"signature is: `apply\(params, rng, \*a, \*\*k\)`\. The object was of type"):
        forward.apply(params, jnp.ones([1, 1]))
    np.testing.assert_allclose(np.asarray(hk.transform(lambda x: MyLinear(2)(x)).apply(params, jnp.ones([1, 1]))),
                               np.asarray(forward.apply(params, None, jnp.ones([1, 1]))))
