"""Bad inputs raise clear errors naming the offending argument."""

import numpy as np
import pytest

import fluxion.numpy as jnp
import fluxion.optax as optax

PARAMS = {'w': jnp.ones((2, 3)), 'b': jnp.zeros((3,))}


@pytest.mark.parametrize('tx', [
    optax.add_decayed_weights(0.1),
    optax.scale_by_trust_ratio(),
    optax.scale_by_param_block_rms(),
    optax.scale_by_factored_rms(),
    optax.lamb(1e-3),
    optax.adafactor(1e-3),
], ids=['add_decayed_weights', 'trust_ratio', 'param_block_rms', 'factored_rms', 'lamb',
        'adafactor'])
def test_transformations_needing_params_say_so(tx):
    with pytest.raises(ValueError, match='params'):
        tx.update(PARAMS, tx.init(PARAMS))


def test_chain_rejects_foreign_state_and_non_transformations():
    tx = optax.chain(optax.scale(1.0), optax.scale(2.0))
    with pytest.raises(ValueError, match='2 transformations'):
        tx.update(PARAMS, (optax.EmptyState(),), PARAMS)
    with pytest.raises(TypeError, match='GradientTransformation'):
        optax.chain(optax.scale(1.0), 0.1)


def test_multi_transform_reports_missing_labels():
    tx = optax.multi_transform({'a': optax.sgd(0.1)}, {'w': 'a', 'b': 'missing'})
    with pytest.raises(ValueError, match='missing'):
        tx.init(PARAMS)


def test_argument_validation():
    with pytest.raises(ValueError, match='mode'):
        optax.scale_by_lion(mode='soft')
    with pytest.raises(ValueError, match='static_args'):
        optax.inject_hyperparams(optax.adam, static_args=('no_such_arg',))
    with pytest.raises(ValueError, match='every_k_schedule'):
        optax.MultiSteps(optax.sgd(0.1), every_k_schedule=0)
    with pytest.raises(ValueError, match='unique'):
        optax.named_chain(('a', optax.scale(1.0)), ('a', optax.scale(2.0)))
    with pytest.raises(ValueError, match='count'):
        optax.safe_increment(jnp.asarray(True))


def test_multi_steps_checks_skip_function_output():
    def bad_skip(updates, step, params):
        return jnp.asarray(1), ()

    ms = optax.MultiSteps(optax.sgd(0.1), 2, should_skip_update_fn=bad_skip)
    with pytest.raises(ValueError, match='boolean scalar'):
        ms.update(PARAMS, ms.init(PARAMS), PARAMS)


def test_masked_leaves_unmasked_updates_untouched():
    tx = optax.masked(optax.scale(10.0), {'w': True, 'b': False})
    grads = {'w': jnp.ones((2, 3)), 'b': jnp.full((3,), 2.0)}
    updates, state = tx.update(grads, tx.init(PARAMS), PARAMS)
    np.testing.assert_array_equal(np.asarray(updates['w']), np.full((2, 3), 10.0))
    np.testing.assert_array_equal(np.asarray(updates['b']), np.full((3,), 2.0))
    assert isinstance(state, optax.MaskedState)
