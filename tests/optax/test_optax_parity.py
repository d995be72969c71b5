"""Conformance of fluxion.optax against the real optax (the oracle).

Every case is a factory ``make(ox)`` that builds the same transformation from
either module (the APIs are identical). For each case we check that
* the initial state has the same layout (NamedTuple names, fields, nesting,
  leaf shapes and dtypes) as optax's,
* several update steps on a random pytree give the same updates, states and
  parameters (rtol 1e-6),
* ``fluxion.jit(tx.update)`` gives the same results as the eager update.
"""

import os
import sys
import numpy as np
import pytest

optax = pytest.importorskip('optax')
jax = pytest.importorskip('jax')

import fluxion  # noqa: E402
import fluxion.numpy as fjnp  # noqa: E402
import fluxion.optax as fox  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # optax_testing.py is here
from optax_testing import (assert_trees_close, convert, describe, random_tree,  # noqa: E402
                           run_optimizer)

N_STEPS = 4
# float32 parity tolerance. Bias corrections divide by 1 - b2**t, which for
# b2 = 0.999 and small t is ~3e-3: a one-ulp (6e-8) difference in b2**t between
# two correct pow implementations becomes a ~2e-5 relative difference.
RTOL = 3e-5
ATOL = 1e-7
# Parameters are O(1) and receive O(1) updates in the unit-step-size cases
# (e.g. scale_by_adam alone), so the updates' relative tolerance becomes an
# absolute one for the parameters; cancellation makes rtol alone meaningless.
ATOL_PARAMS = RTOL


def ndim_mask(tree):
    """Mask selecting arrays with ndim > 1 (works on any library's arrays)."""
    if isinstance(tree, dict):
        return {k: ndim_mask(v) for k, v in tree.items()}
    return tree.ndim > 1


def labels_fn(tree):
    """Labels: matrices -> 'adam', vectors -> 'sgd', scalars -> 'frozen'."""
    if isinstance(tree, dict):
        return {k: labels_fn(v) for k, v in tree.items()}
    return {0: 'frozen', 1: 'sgd'}.get(tree.ndim, 'adam')


STATIC_MASK = {'params': {'dense': {'kernel': True, 'bias': False}, 'conv': True},
               'temperature': False}

# (id, factory). Each factory receives the optax-like module.
CASES = [
    # Aliases.
    ('sgd', lambda ox: ox.sgd(0.1)),
    ('sgd_momentum', lambda ox: ox.sgd(0.1, momentum=0.9)),
    ('sgd_nesterov', lambda ox: ox.sgd(0.1, momentum=0.9, nesterov=True)),
    ('sgd_schedule', lambda ox: ox.sgd(ox.exponential_decay(0.1, 2, 0.5), momentum=0.5)),
    ('adam', lambda ox: ox.adam(1e-2)),
    ('adam_args', lambda ox: ox.adam(3e-2, b1=0.5, b2=0.9, eps=1e-4, eps_root=1e-6)),
    ('adam_nesterov', lambda ox: ox.adam(1e-2, nesterov=True)),
    ('adam_schedule', lambda ox: ox.adam(ox.linear_schedule(1e-2, 1e-3, 3))),
    ('nadam', lambda ox: ox.nadam(1e-2)),
    ('adamw', lambda ox: ox.adamw(1e-2, weight_decay=0.1)),
    ('adamw_mask_fn', lambda ox: ox.adamw(1e-2, weight_decay=0.1, mask=ndim_mask)),
    ('adamw_mask_tree', lambda ox: ox.adamw(1e-2, weight_decay=0.1, mask=STATIC_MASK)),
    ('adamw_schedules', lambda ox: ox.adamw(ox.cosine_decay_schedule(1e-2, 5),
                                            weight_decay=ox.linear_schedule(0.1, 0.0, 4))),
    ('nadamw', lambda ox: ox.nadamw(1e-2, weight_decay=0.05)),
    ('rmsprop', lambda ox: ox.rmsprop(1e-2)),
    ('rmsprop_centered_momentum', lambda ox: ox.rmsprop(1e-2, centered=True, momentum=0.9)),
    ('rmsprop_torch_like', lambda ox: ox.rmsprop(1e-2, decay=0.99, eps_in_sqrt=False,
                                                 bias_correction=True, momentum=0.5,
                                                 nesterov=True)),
    ('adagrad', lambda ox: ox.adagrad(0.1)),
    ('adagrad_args', lambda ox: ox.adagrad(0.1, initial_accumulator_value=0.0, eps=1e-3)),
    ('adafactor', lambda ox: ox.adafactor(1e-2)),
    ('adafactor_factored', lambda ox: ox.adafactor(1e-2, min_dim_size_to_factor=2,
                                                   momentum=0.9, weight_decay_rate=1e-3)),
    ('adafactor_no_lr', lambda ox: ox.adafactor(min_dim_size_to_factor=3,
                                                multiply_by_parameter_scale=False,
                                                clipping_threshold=None)),
    ('lamb', lambda ox: ox.lamb(1e-2)),
    ('lamb_wd', lambda ox: ox.lamb(1e-2, weight_decay=0.01, mask=ndim_mask)),
    ('lion', lambda ox: ox.lion(1e-3)),
    ('lion_schedule', lambda ox: ox.lion(ox.constant_schedule(1e-3), b1=0.95, weight_decay=0.0)),
    # Elementary transformations.
    ('identity', lambda ox: ox.identity()),
    ('set_to_zero', lambda ox: ox.set_to_zero()),
    ('scale', lambda ox: ox.scale(-0.5)),
    ('scale_by_adam', lambda ox: ox.scale_by_adam(b1=0.8, eps_root=1e-8)),
    ('scale_by_rms', lambda ox: ox.scale_by_rms(decay=0.8, initial_scale=0.1)),
    ('scale_by_rms_bias', lambda ox: ox.scale_by_rms(eps_in_sqrt=False, bias_correction=True)),
    ('scale_by_stddev', lambda ox: ox.scale_by_stddev(decay=0.7, initial_scale=1.0)),
    # With bias correction the first centered variance is exactly 0, so the
    # result is rounding noise unless eps dominates it.
    ('scale_by_stddev_bias', lambda ox: ox.scale_by_stddev(eps=1.0, bias_correction=True)),
    ('scale_by_rss', lambda ox: ox.scale_by_rss()),
    ('scale_by_lion', lambda ox: ox.scale_by_lion(b1=0.8, b2=0.9)),
    ('scale_by_lion_smooth', lambda ox: ox.scale_by_lion(mode='smooth', smooth_beta=2.0)),
    ('scale_by_lion_refined', lambda ox: ox.scale_by_lion(mode='refined')),
    ('scale_by_sign', lambda ox: ox.scale_by_sign()),
    ('scale_by_schedule', lambda ox: ox.scale_by_schedule(ox.polynomial_schedule(1.0, 0.1, 2, 3))),
    ('scale_by_learning_rate', lambda ox: ox.scale_by_learning_rate(0.3)),
    ('scale_by_learning_rate_sched', lambda ox: ox.scale_by_learning_rate(
        ox.piecewise_constant_schedule(1.0, {1: 0.5, 3: 0.1}), flip_sign=False)),
    ('scale_by_trust_ratio', lambda ox: ox.scale_by_trust_ratio(min_norm=0.1, eps=1e-3)),
    ('scale_by_param_block_rms', lambda ox: ox.scale_by_param_block_rms()),
    ('scale_by_param_block_norm', lambda ox: ox.scale_by_param_block_norm()),
    ('scale_by_factored_rms', lambda ox: ox.scale_by_factored_rms(min_dim_size_to_factor=2)),
    ('trace', lambda ox: ox.trace(0.9)),
    ('trace_nesterov', lambda ox: ox.trace(0.5, nesterov=True)),
    ('ema', lambda ox: ox.ema(0.9)),
    ('ema_no_debias', lambda ox: ox.ema(0.8, debias=False)),
    ('add_decayed_weights', lambda ox: ox.add_decayed_weights(0.1)),
    ('add_decayed_weights_zero', lambda ox: ox.add_decayed_weights()),
    ('add_decayed_weights_sched_mask', lambda ox: ox.add_decayed_weights(
        ox.linear_schedule(0.2, 0.0, 3), mask=ndim_mask)),
    ('clip', lambda ox: ox.clip(0.5)),
    ('clip_by_global_norm_active', lambda ox: ox.clip_by_global_norm(1.0)),
    ('clip_by_global_norm_inactive', lambda ox: ox.clip_by_global_norm(1e3)),
    ('clip_by_block_rms', lambda ox: ox.clip_by_block_rms(0.5)),
    # Combinators and wrappers.
    ('chain', lambda ox: ox.chain(ox.clip_by_global_norm(1.0), ox.scale_by_adam(),
                                  ox.scale_by_learning_rate(1e-2))),
    ('named_chain', lambda ox: ox.named_chain(('clip', ox.clip(0.1)), ('adam', ox.adam(1e-2)))),
    ('masked_fn', lambda ox: ox.masked(ox.adam(1e-2), ndim_mask)),
    ('masked_tree', lambda ox: ox.masked(ox.sgd(0.1, momentum=0.9), STATIC_MASK)),
    ('multi_transform', lambda ox: ox.multi_transform(
        {'adam': ox.adam(1e-2), 'sgd': ox.sgd(0.1, momentum=0.9), 'frozen': ox.set_to_zero()},
        labels_fn)),
    ('inject_hyperparams', lambda ox: ox.inject_hyperparams(ox.adam)(
        learning_rate=ox.linear_schedule(1e-2, 1e-3, 3), b1=0.8)),
    ('inject_hyperparams_static', lambda ox: ox.inject_hyperparams(
        ox.sgd, static_args='momentum')(learning_rate=0.1, momentum=0.9, nesterov=True)),
    ('multi_steps', lambda ox: ox.MultiSteps(ox.adam(1e-2), every_k_schedule=2)),
    ('multi_steps_sum', lambda ox: ox.MultiSteps(ox.sgd(0.1, momentum=0.9), 3,
                                                 use_grad_mean=False)),
    ('multi_steps_schedule', lambda ox: ox.MultiSteps(ox.adam(1e-2), lambda step: 2)),
    ('multi_steps_skip', lambda ox: ox.MultiSteps(ox.adam(1e-2), 2,
                                                  should_skip_update_fn=ox.skip_not_finite)),
]

IDS = [name for name, _ in CASES]
FACTORIES = [factory for _, factory in CASES]


def _problem(seed=0):
    params = random_tree(seed)
    grads = [random_tree(100 + seed + i, scale=0.5, offset=0.1 * i) for i in range(N_STEPS)]
    return params, grads


def _run_fluxion(factory, params, grads, jit=None):
    return run_optimizer(factory(fox), convert(params, fjnp.asarray),
                         [convert(g, fjnp.asarray) for g in grads],
                         jit=jit, apply_updates=fox.apply_updates)


def _run_optax(factory, params, grads):
    with np.errstate(all='ignore'):
        return run_optimizer(factory(optax), convert(params, jax.numpy.asarray),
                             [convert(g, jax.numpy.asarray) for g in grads],
                             apply_updates=optax.apply_updates)


@pytest.mark.parametrize('factory', FACTORIES, ids=IDS)
def test_init_state_layout_matches_optax(factory):
    params = random_tree(0)
    ours = factory(fox).init(convert(params, fjnp.asarray))
    theirs = factory(optax).init(convert(params, jax.numpy.asarray))
    assert describe(ours) == describe(theirs)


@pytest.mark.parametrize('factory', FACTORIES, ids=IDS)
def test_updates_match_optax(factory):
    params, grads = _problem()
    our_updates, our_state, our_params = _run_fluxion(factory, params, grads)
    ref_updates, ref_state, ref_params = _run_optax(factory, params, grads)
    for ours, theirs in zip(our_updates, ref_updates):
        assert_trees_close(ours, theirs, rtol=RTOL, atol=ATOL)
    assert_trees_close(our_state, ref_state, rtol=RTOL, atol=ATOL)
    assert_trees_close(our_params, ref_params, rtol=RTOL, atol=ATOL_PARAMS)


@pytest.mark.parametrize('factory', FACTORIES, ids=IDS)
def test_jit_matches_eager(factory):
    params, grads = _problem(seed=1)
    eager_updates, eager_state, eager_params = _run_fluxion(factory, params, grads)
    jit_updates, jit_state, jit_params = _run_fluxion(factory, params, grads, jit=fluxion.jit)
    for ours, theirs in zip(jit_updates, eager_updates):
        assert_trees_close(ours, theirs, rtol=RTOL, atol=ATOL)
    assert_trees_close(jit_state, eager_state, rtol=RTOL, atol=ATOL)
    assert_trees_close(jit_params, eager_params, rtol=RTOL, atol=ATOL_PARAMS)


def test_state_field_access_like_optax():
    params = convert(random_tree(0), fjnp.asarray)
    state = fox.adam(1e-3).init(params)
    assert isinstance(state[0], fox.ScaleByAdamState)
    assert isinstance(state[1], fox.EmptyState)
    assert state[0].mu['params']['dense']['kernel'].shape == (4, 3)
    assert np.asarray(state[0].count).dtype == np.int32
    assert state[0]._fields == ('count', 'mu', 'nu')
    assert fox.ScaleByAdamState._fields == optax.ScaleByAdamState._fields


def test_state_class_fields_match_optax():
    names = ['EmptyState', 'ScaleByAdamState', 'ScaleByRmsState', 'ScaleByRStdDevState',
             'ScaleByRssState', 'ScaleByLionState', 'ScaleByScheduleState', 'TraceState',
             'EmaState', 'FactoredState', 'MaskedState', 'MaskedNode', 'PartitionState',
             'MultiStepsState', 'InjectHyperparamsState', 'InjectStatefulHyperparamsState',
             'GradientTransformation', 'GradientTransformationExtraArgs']
    for name in names:
        assert getattr(fox, name)._fields == getattr(optax, name)._fields, name


def test_multi_steps_skips_non_finite_like_optax():
    params = random_tree(0)
    grads = [random_tree(10 + i) for i in range(5)]
    grads[1]['params']['dense']['bias'][0] = np.nan
    grads[3]['temperature'] = np.float32(np.inf)

    def factory(ox):
        return ox.MultiSteps(ox.sgd(0.1), 2, should_skip_update_fn=ox.skip_not_finite)

    ours = _run_fluxion(factory, params, grads)
    theirs = _run_optax(factory, params, grads)
    for a, b in zip(ours[0], theirs[0]):
        assert_trees_close(a, b, rtol=RTOL, atol=ATOL)
    assert_trees_close(ours[1], theirs[1], rtol=RTOL, atol=ATOL)
    assert int(ours[1].gradient_step) == 1  # 5 steps, 2 skipped -> 3 used -> 1 emit
    assert np.all(np.isfinite(np.asarray(ours[2]['params']['dense']['bias'])))


def test_multi_steps_has_updated_and_gradient_transformation():
    params = convert(random_tree(0), fjnp.asarray)
    ms = fox.MultiSteps(fox.sgd(1.0), every_k_schedule=3)
    tx = ms.gradient_transformation()
    state = tx.init(params)
    flags = []
    for i in range(6):
        _, state = tx.update(convert(random_tree(i), fjnp.asarray), state, params)
        flags.append(bool(ms.has_updated(state)))
    assert flags == [False, False, True, False, False, True]


def test_inject_hyperparams_state_is_mutable_like_optax():
    params, grads = _problem()

    def run(ox, asarray):
        tx = ox.inject_hyperparams(ox.sgd)(learning_rate=0.1)
        p = convert(params, asarray)
        state = tx.init(p)
        out = []
        for i, g in enumerate(grads):
            state.hyperparams['learning_rate'] = asarray(np.float32(0.1 * (i + 1)))
            u, state = tx.update(convert(g, asarray), state, p)
            out.append(u)
        return out, state

    ours, our_state = run(fox, fjnp.asarray)
    theirs, their_state = run(optax, jax.numpy.asarray)
    for a, b in zip(ours, theirs):
        assert_trees_close(a, b)
    assert_trees_close(our_state, their_state)
    np.testing.assert_allclose(np.asarray(our_state.hyperparams['learning_rate']), 0.4,
                               rtol=1e-6)


def test_extra_args_are_forwarded_through_chain():
    seen = {}

    def update(updates, state, params=None, **extra):
        seen.update(extra)
        return updates, state

    probe = fox.GradientTransformationExtraArgs(fox.init_empty_state, update)
    tx = fox.chain(fox.scale(2.0), probe)
    params = convert(random_tree(0), fjnp.asarray)
    tx.update(params, tx.init(params), params, value=3.0)
    assert seen == {'value': 3.0}


def test_mu_dtype_bfloat16_state_matches_optax():
    params = random_tree(0)

    def factory(ox):
        return ox.adam(1e-2, mu_dtype='bfloat16')

    ours = factory(fox).init(convert(params, fjnp.asarray))
    theirs = factory(optax).init(convert(params, jax.numpy.asarray))
    assert describe(ours) == describe(theirs)
    assert np.asarray(ours[0].mu['temperature']).dtype.name == 'bfloat16'


def test_apply_updates_keeps_param_dtype():
    params = {'a': fjnp.ones((2,), dtype=fjnp.bfloat16), 'b': fjnp.ones((2,), dtype=fjnp.float32)}
    updates = {'a': fjnp.full((2,), 0.5, dtype=fjnp.float32), 'b': fjnp.full((2,), 0.25)}
    new = fox.apply_updates(params, updates)
    assert np.asarray(new['a']).dtype.name == 'bfloat16'
    np.testing.assert_array_equal(np.asarray(new['a']).astype(np.float32), [1.5, 1.5])
    np.testing.assert_array_equal(np.asarray(new['b']), [1.25, 1.25])


def test_incremental_and_periodic_update_match_optax():
    new, old = random_tree(1), random_tree(2)
    ours = fox.incremental_update(convert(new, fjnp.asarray), convert(old, fjnp.asarray), 0.3)
    theirs = optax.incremental_update(convert(new, jax.numpy.asarray),
                                      convert(old, jax.numpy.asarray), 0.3)
    assert_trees_close(ours, theirs)
    for step in (0, 1, 4, 5):
        ours = fox.periodic_update(convert(new, fjnp.asarray), convert(old, fjnp.asarray),
                                   fjnp.asarray(step), 2)
        expected = new if step % 2 == 0 else old
        assert_trees_close(ours, convert(expected, np.asarray))


def test_global_norm_matches_optax():
    tree = random_tree(3)
    with pytest.warns(DeprecationWarning):
        expected = optax.global_norm(convert(tree, jax.numpy.asarray))
    np.testing.assert_allclose(np.asarray(fox.global_norm(convert(tree, fjnp.asarray))),
                               np.asarray(expected), rtol=1e-6)


@pytest.mark.parametrize('count', [0, 1, 5, 2**31 - 2, 2**31 - 1])
def test_safe_increment_matches_optax(count):
    ours = fox.safe_increment(fjnp.asarray(count, dtype=fjnp.int32))
    theirs = optax.safe_increment(jax.numpy.asarray(count, dtype=jax.numpy.int32))
    assert np.asarray(ours).dtype == np.int32
    assert int(ours) == int(theirs) == min(count + 1, 2**31 - 1)


def test_safe_norm_gradient_is_finite_at_zero():
    grad = fluxion.grad(lambda x: fox.safe_norm(x, 1e-3))(fjnp.zeros((3,)))
    np.testing.assert_array_equal(np.asarray(grad), np.zeros(3))
    np.testing.assert_allclose(np.asarray(fox.safe_norm(fjnp.asarray([3.0, 4.0]), 1.0)), 5.0)
    np.testing.assert_allclose(np.asarray(fox.safe_norm(fjnp.asarray([0.3, 0.4]), 1.0)), 1.0)
