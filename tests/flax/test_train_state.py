"""``fluxion.flax.training.train_state.TrainState`` against Flax's TrainState + optax (oracle)."""

import os
import sys
import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import tree_util
from fluxion.flax import linen as nn
from fluxion.flax import serialization, struct
from fluxion.flax.training import train_state

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # linen_testing.py is here
from linen_testing import assert_trees_close, fkey, to_fluxion, to_numpy  # noqa: E402

foptax = pytest.importorskip('fluxion.optax')

PARAMS = {'w': np.array([[1.0, -2.0], [0.5, 3.0]], np.float32), 'b': np.array([0.1, -0.2], np.float32)}
GRADS = [{'w': np.full((2, 2), g, np.float32), 'b': np.array([g, -g], np.float32)}
         for g in (0.5, -1.0, 2.0)]


def _apply(params, x):
    return x @ params['w'] + params['b']


def test_create_initializes_step_and_optimizer_state():
    tx = foptax.sgd(0.1, momentum=0.9)
    state = train_state.TrainState.create(apply_fn=_apply, params=to_fluxion(PARAMS), tx=tx)
    assert state.step == 0 and state.apply_fn is _apply and state.tx is tx
    assert_trees_close(to_numpy(tree_util.tree_leaves(state.opt_state)),
                       to_numpy(tree_util.tree_leaves(tx.init(to_fluxion(PARAMS)))))


def test_apply_gradients_by_hand_sgd():
    state = train_state.TrainState.create(apply_fn=_apply, params=to_fluxion(PARAMS),
                                          tx=foptax.sgd(0.1))
    state = state.apply_gradients(grads=to_fluxion(GRADS[0]))
    assert int(state.step) == 1
    np.testing.assert_allclose(np.asarray(state.params['w']), PARAMS['w'] - 0.05, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(state.params['b']), PARAMS['b'] - [0.05, -0.05],
                               rtol=1e-6)


def test_static_fields_are_not_leaves_and_state_passes_through_jit():
    state = train_state.TrainState.create(apply_fn=_apply, params=to_fluxion(PARAMS),
                                          tx=foptax.adam(1e-2))
    leaves, treedef = tree_util.tree_flatten(state)
    assert not any(callable(leaf) for leaf in leaves)
    assert len(leaves) == 1 + 2 + len(tree_util.tree_leaves(state.opt_state))

    @fluxion.jit
    def step(state, x):
        grads = fluxion.grad(lambda p: jnp.sum(state.apply_fn(p, x) ** 2))(state.params)
        return state.apply_gradients(grads=grads)

    x = jnp.ones((3, 2))
    new = step(step(state, x), x)
    assert int(new.step) == 2 and new.apply_fn is _apply
    assert float(jnp.abs(new.params['w'] - state.params['w']).max()) > 0


def test_replace_and_subclass_with_extra_fields():
    class BNState(train_state.TrainState):
        batch_stats: dict = struct.field(pytree_node=True, default=None)

    model = nn.BatchNorm(use_running_average=False)
    variables = model.init(fkey(0), jnp.ones((4, 2)))
    state = BNState.create(apply_fn=model.apply, params=variables['params'],
                           tx=foptax.sgd(0.1), batch_stats=variables['batch_stats'])
    _, updates = model.apply({'params': state.params, 'batch_stats': state.batch_stats},
                             jnp.arange(8.0).reshape(4, 2), mutable=['batch_stats'])
    grads = tree_util.tree_map(jnp.ones_like, state.params)
    new = state.apply_gradients(grads=grads, batch_stats=updates['batch_stats'])
    assert int(new.step) == 1
    np.testing.assert_allclose(np.asarray(new.batch_stats['mean']), [0.03, 0.04], rtol=1e-5)
    assert state.replace(step=5).step == 5 and state.step == 0


def test_state_dict_has_flax_layout():
    state = train_state.TrainState.create(apply_fn=_apply, params=to_fluxion(PARAMS),
                                          tx=foptax.sgd(0.1))
    assert sorted(serialization.to_state_dict(state)) == ['opt_state', 'params', 'step']


@pytest.mark.parametrize('make_tx', [lambda o: o.adam(1e-2), lambda o: o.sgd(0.1, momentum=0.9),
                                     lambda o: o.chain(o.clip_by_global_norm(1.0), o.adamw(1e-2))])
def test_training_steps_equal_flax_train_state(make_tx):
    optax = pytest.importorskip('optax')
    flax_ts = pytest.importorskip('flax.training.train_state')
    jax = pytest.importorskip('jax')
    ours = train_state.TrainState.create(apply_fn=_apply, params=to_fluxion(PARAMS),
                                         tx=make_tx(foptax))
    theirs = flax_ts.TrainState.create(apply_fn=_apply,
                                       params=jax.tree_util.tree_map(jax.numpy.asarray, PARAMS),
                                       tx=make_tx(optax))
    for g in GRADS:
        ours = ours.apply_gradients(grads=to_fluxion(g))
        theirs = theirs.apply_gradients(grads=jax.tree_util.tree_map(jax.numpy.asarray, g))
    assert int(ours.step) == int(theirs.step) == 3
    assert_trees_close(to_numpy(ours.params), to_numpy(theirs.params), rtol=1e-5, atol=1e-6)
    assert_trees_close(to_numpy(tree_util.tree_leaves(ours.opt_state)),
                       to_numpy(jax.tree_util.tree_leaves(theirs.opt_state)), rtol=1e-5,
                       atol=1e-6)
