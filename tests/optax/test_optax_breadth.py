"""Breadth conformance of fluxion.optax against optax 0.2.8 (the oracle).

One record per optimizer / transformation. Each record builds the same
transformation from either module (``make(ox)``), runs a few update steps on
the same random pytree and checks, step by step, the updates and the final
state (layout: NamedTuple names, fields, nesting, shapes, dtypes; and values)
against optax, and that ``fluxion.jit(tx.update)`` matches the eager update.
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
from optax_testing import assert_trees_close, convert, describe, random_tree  # noqa: E402

N_STEPS = 4
RTOL = 3e-5
ATOL = 1e-6


def ndim_mask(tree):
    if isinstance(tree, dict):
        return {k: ndim_mask(v) for k, v in tree.items()}
    return tree.ndim > 1


def no_scalars(tree):
    """Drops the scalar leaf (SM3 needs an axis per parameter, in optax too)."""
    return {'params': tree['params']}


def matrices_only(tree):
    """Keeps the 2-d leaf (for transformations defined on matrices only)."""
    return {'params': {'dense': {'kernel': tree['params']['dense']['kernel']}}}


def MATRIX_DIMS(ox):  # noqa: N802  (a constant per library)
    return {'params': {'dense': {'kernel': ox.contrib.MuonDimensionNumbers()}}}


def positive(tree):
    if isinstance(tree, dict):
        return {k: positive(v) for k, v in tree.items()}
    return np.abs(tree) + np.float32(0.1)


def _value_of(grads):
    """A loss value to pass as ``value=`` (Polyak step sizes need one)."""
    return np.float32(sum(float(np.sum(np.square(x))) for x in _np_leaves(grads)))


def _np_leaves(tree):
    if isinstance(tree, dict):
        return [leaf for k in sorted(tree) for leaf in _np_leaves(tree[k])]
    return [tree]


# (id, factory, options). Options: 'params' maps the numpy param tree,
# 'value': pass value=<loss> to update, 'rtol': tolerance override.
CASES = [
    # Adam family.
    ('amsgrad', lambda ox: ox.amsgrad(1e-2), {}),
    ('amsgrad_nobias', lambda ox: ox.amsgrad(1e-2, bias_correction_nu=False), {}),
    ('scale_by_amsgrad', lambda ox: ox.scale_by_amsgrad(b1=0.5, eps_root=1e-8), {}),
    ('adamax', lambda ox: ox.adamax(1e-2), {}),
    ('adamaxw', lambda ox: ox.adamaxw(1e-2, weight_decay=0.1, mask=ndim_mask), {}),
    ('scale_by_adamax', lambda ox: ox.scale_by_adamax(b1=0.8), {}),
    ('adabelief', lambda ox: ox.adabelief(1e-2), {}),
    ('adabelief_nesterov', lambda ox: ox.adabelief(1e-2, nesterov=True), {}),
    ('scale_by_belief', lambda ox: ox.scale_by_belief(eps=1e-6), {}),
    ('yogi', lambda ox: ox.yogi(1e-2), {}),
    ('scale_by_yogi', lambda ox: ox.scale_by_yogi(b1=0.5, initial_accumulator_value=0.1), {}),
    ('radam', lambda ox: ox.radam(1e-2), {}),
    ('radam_low_threshold', lambda ox: ox.radam(1e-2, b2=0.9, threshold=1.0), {}),
    ('radam_nesterov', lambda ox: ox.radam(1e-2, b2=0.5, threshold=0.0, nesterov=True), {}),
    ('scale_by_radam', lambda ox: ox.scale_by_radam(b2=0.9, threshold=2.0), {}),
    ('adadelta', lambda ox: ox.adadelta(1.0), {}),
    ('adadelta_wd', lambda ox: ox.adadelta(0.5, rho=0.8, weight_decay=0.1), {}),
    ('scale_by_adadelta', lambda ox: ox.scale_by_adadelta(), {}),
    ('adan', lambda ox: ox.adan(1e-2), {}),
    ('adan_wd', lambda ox: ox.adan(1e-2, weight_decay=0.1, mask=ndim_mask), {}),
    ('scale_by_adan', lambda ox: ox.scale_by_adan(), {}),
    ('novograd', lambda ox: ox.novograd(1e-2), {}),
    ('novograd_wd', lambda ox: ox.novograd(1e-2, weight_decay=0.1), {}),
    ('scale_by_novograd', lambda ox: ox.scale_by_novograd(b2=0.5), {}),
    ('sm3', lambda ox: ox.sm3(0.1), {'params': no_scalars}),
    ('scale_by_sm3', lambda ox: ox.scale_by_sm3(b2=0.9), {'params': no_scalars}),
    ('optimistic_adam_v2', lambda ox: ox.optimistic_adam_v2(1e-2, alpha=0.5, beta=0.3), {}),
    # Sign / step-size rules.
    ('sign_sgd', lambda ox: ox.sign_sgd(0.1), {}),
    ('signum', lambda ox: ox.signum(0.1, beta=0.5), {}),
    ('polyak_sgd', lambda ox: ox.polyak_sgd(max_learning_rate=0.5), {'value': True}),
    ('polyak_sgd_plus', lambda ox: ox.polyak_sgd(f_min=1e3, variant='sps+', eps=1e-3),
     {'value': True}),
    ('optimistic_gradient_descent', lambda ox: ox.optimistic_gradient_descent(0.1, alpha=0.5),
     {}),
    ('scale_by_optimistic_gradient', lambda ox: ox.scale_by_optimistic_gradient(beta=0.3), {}),
    ('scale_by_distance_over_gradients',
     lambda ox: ox.scale_by_distance_over_gradients(reps_rel=1e-2), {}),
    ('normalize_by_update_norm', lambda ox: ox.normalize_by_update_norm(2.0), {}),
    ('centralize', lambda ox: ox.centralize(), {}),
    ('apply_every', lambda ox: ox.apply_every(3), {}),
    ('fromage', lambda ox: ox.fromage(0.1), {}),
    ('fromage_schedule', lambda ox: ox.fromage(ox.linear_schedule(0.1, 0.01, 3)), {}),
    ('lars', lambda ox: ox.lars(0.1, weight_decay=1e-2), {}),
    ('lars_masked', lambda ox: ox.lars(0.1, trust_ratio_mask=ndim_mask, nesterov=True), {}),
    ('lbfgs_no_linesearch', lambda ox: ox.lbfgs(0.5, memory_size=3, linesearch=None), {}),
    ('scale_by_lbfgs', lambda ox: ox.scale_by_lbfgs(memory_size=2), {}),
    ('scale_by_lbfgs_noscale',
     lambda ox: ox.scale_by_lbfgs(memory_size=5, scale_init_precond=False), {}),
    # Wrappers and constraints.
    ('apply_if_finite', lambda ox: ox.apply_if_finite(ox.adam(1e-2), 2), {}),
    ('conditionally_mask', lambda ox: ox.conditionally_mask(
        ox.sgd(0.1, momentum=0.9), lambda step: step % 2 == 0), {}),
    ('conditionally_transform', lambda ox: ox.conditionally_transform(
        ox.adam(1e-2), lambda step: step >= 1), {}),
    ('flatten', lambda ox: ox.flatten(ox.adam(1e-2)), {}),
    ('freeze', lambda ox: ox.freeze(ndim_mask), {}),
    ('selective_transform', lambda ox: ox.selective_transform(
        ox.adam(1e-2), freeze_mask={'params': {'dense': {'kernel': True, 'bias': False},
                                               'conv': {'kernel': False}},
                                    'temperature': True}), {}),
    ('keep_params_nonnegative', lambda ox: ox.chain(ox.sgd(1.0), ox.keep_params_nonnegative()),
     {'params': positive}),
    ('zero_nans', lambda ox: ox.zero_nans(), {}),
    ('adaptive_grad_clip', lambda ox: ox.adaptive_grad_clip(0.1), {}),
    ('snapshot', lambda ox: ox.snapshot('norm', ox.tree.norm), {}),
    ('monitor', lambda ox: ox.monitor({
        'norm': ox.tree.norm,
        'ema_norm': ox.measure_with_ema(ox.tree.norm, 0.9)}), {}),
    # optax.contrib.
    ('acprop', lambda ox: ox.contrib.acprop(1e-2, weight_decay=0.1), {}),
    ('scale_by_acprop', lambda ox: ox.contrib.scale_by_acprop(eps=1e-8, eps_root=1e-8), {}),
    ('ademamix', lambda ox: ox.contrib.ademamix(1e-2), {}),
    ('ademamix_schedules', lambda ox: ox.contrib.ademamix(
        1e-2, b3=ox.linear_schedule(0.9, 0.999, 3), alpha=ox.linear_schedule(0.0, 5.0, 3)), {}),
    ('simplified_ademamix', lambda ox: ox.contrib.simplified_ademamix(1e-2, alpha=2.0), {}),
    ('adopt', lambda ox: ox.contrib.adopt(1e-2), {}),
    ('adopt_nesterov_noclip', lambda ox: ox.contrib.adopt(1e-2, nesterov=True,
                                                          use_clipping=False), {}),
    ('cocob', lambda ox: ox.contrib.cocob(), {}),
    ('cocob_wd', lambda ox: ox.contrib.cocob(alpha=10.0, weight_decay=1e-2), {}),
    ('dadapt_adamw', lambda ox: ox.contrib.dadapt_adamw(estim_lr0=1e-2), {}),
    ('dadapt_adamw_wd', lambda ox: ox.contrib.dadapt_adamw(
        ox.linear_schedule(1.0, 0.5, 3), weight_decay=1e-2, estim_lr0=1e-3), {}),
    ('prodigy', lambda ox: ox.contrib.prodigy(estim_lr0=1e-2), {}),
    ('prodigy_safeguard', lambda ox: ox.contrib.prodigy(
        0.5, beta3=0.9, weight_decay=1e-2, safeguard_warmup=True, estim_lr0=1e-3), {}),
    ('dog', lambda ox: ox.contrib.dog(), {}),
    ('dog_distance_wd', lambda ox: ox.contrib.dog(init_step=('distance', 1e-2),
                                                  weight_decay=1e-3), {}),
    ('dog_learning_rate', lambda ox: ox.contrib.dog(init_step=('learning_rate', 0.1)), {}),
    ('dowg', lambda ox: ox.contrib.dowg(), {}),
    ('dowg_init', lambda ox: ox.contrib.dowg(init_estim_sq_dist=1e-2, weight_decay=1e-3), {}),
    ('madgrad', lambda ox: ox.contrib.madgrad(1e-2), {}),
    ('madgrad_schedule', lambda ox: ox.contrib.madgrad(ox.linear_schedule(1e-2, 1e-3, 3),
                                                       weight_decay=1e-2), {}),
    ('mechanize', lambda ox: ox.contrib.mechanize(ox.adam(1e-2)), {}),
    ('momo', lambda ox: ox.contrib.momo(), {'value': True}),
    ('momo_adaptive_lb', lambda ox: ox.contrib.momo(0.5, weight_decay=1e-2,
                                                    adapt_lower_bound=True), {'value': True}),
    ('momo_adam', lambda ox: ox.contrib.momo_adam(), {'value': True}),
    ('momo_adam_adaptive_lb', lambda ox: ox.contrib.momo_adam(
        0.1, weight_decay=1e-2, adapt_lower_bound=True, lower_bound=1.0), {'value': True}),
    ('reduce_on_plateau', lambda ox: ox.chain(ox.sgd(0.1), ox.contrib.reduce_on_plateau(
        factor=0.5, patience=1, accumulation_size=1)), {'value': True}),
    ('reduce_on_plateau_cooldown', lambda ox: ox.chain(ox.sgd(0.1), ox.contrib.reduce_on_plateau(
        factor=0.5, patience=0, cooldown=1, rtol=0.0, atol=1e-3, min_scale=0.3)),
     {'value': True}),
    ('sam', lambda ox: ox.contrib.sam(ox.sgd(0.1), ox.chain(ox.contrib.normalize(),
                                                          ox.sgd(0.05)), sync_period=2), {}),
    ('sam_no_reset', lambda ox: ox.contrib.sam(ox.adam(1e-2), ox.sgd(0.05), sync_period=3,
                                               reset_state=False), {}),
    ('schedule_free_sgd', lambda ox: ox.contrib.schedule_free_sgd(0.1), {}),
    ('schedule_free_sgd_warmup', lambda ox: ox.contrib.schedule_free_sgd(
        0.1, warmup_steps=2, weight_decay=1e-2), {}),
    ('schedule_free_adamw', lambda ox: ox.contrib.schedule_free_adamw(1e-2, weight_decay=1e-2),
     {}),
    ('muon', lambda ox: ox.contrib.muon(1e-2), {}),
    ('muon_dion_aol', lambda ox: ox.contrib.muon(1e-2, ns_coeffs='dion', preconditioning='aol',
                                                 consistent_rms=0.2, weight_decay=1e-2), {}),
    ('scale_by_muon_spectral', lambda ox: ox.contrib.scale_by_muon(
        preconditioning='spectral', nesterov=False,
        weight_dimension_numbers=MATRIX_DIMS(ox)), {'params': matrices_only}),
    ('scale_by_muon_schatten_adaptive', lambda ox: ox.contrib.scale_by_muon(
        preconditioning='schatten', adaptive=True, weight_dimension_numbers=MATRIX_DIMS(ox)),
     {'params': matrices_only}),
    ('muon_dimension_numbers', lambda ox: ox.contrib.muon(
        1e-2, muon_weight_dimension_numbers={
            'params': {'dense': {'kernel': ox.contrib.MuonDimensionNumbers(),
                                 'bias': None},
                       'conv': {'kernel': ox.contrib.MuonDimensionNumbers((0, 1, 2), 3)}},
            'temperature': None}), {}),
    ('galore', lambda ox: ox.contrib.galore(1e-2, rank=2, update_proj_gap=2), {}),
    ('galore_dims_sgd', lambda ox: ox.contrib.galore(
        1e-2, rank=3, update_proj_gap=3, scale=0.5, base_optimizer=ox.sgd(1.0, momentum=0.9),
        weight_dimension_numbers={
            'params': {'dense': {'kernel': ox.contrib.GaLoreDimensionNumbers(1, 0), 'bias': None},
                       'conv': {'kernel': ox.contrib.GaLoreDimensionNumbers((0, 1, 2), 3)}},
            'temperature': None}), {}),
]

IDS = [c[0] for c in CASES]


def _problem(seed, params_fn=None):
    params = random_tree(seed)
    grads = [random_tree(100 + seed + i, scale=0.5, offset=0.1 * i) for i in range(N_STEPS)]
    if params_fn is not None:
        params = params_fn(params)
        grads = [params_fn(g) if params_fn in (no_scalars, matrices_only) else g for g in grads]
    return params, grads


def _run(ox, asarray, factory, options, params, grads, jit=None):
    tx = factory(ox)
    p = convert(params, asarray)
    state = tx.init(p)
    update = jit(tx.update) if jit is not None else tx.update
    all_updates = []
    for g in grads:
        kwargs = {'value': asarray(_value_of(g))} if options.get('value') else {}
        u, state = update(convert(g, asarray), state, p, **kwargs)
        all_updates.append(u)
        p = ox.apply_updates(p, u)
    return all_updates, state, p


@pytest.mark.parametrize('factory,options', [c[1:] for c in CASES], ids=IDS)
def test_matches_optax_step_by_step(factory, options):
    params, grads = _problem(0, options.get('params'))
    ours = _run(fox, fjnp.asarray, factory, options, params, grads)
    with np.errstate(all='ignore'):
        theirs = _run(optax, jax.numpy.asarray, factory, options, params, grads)
    rtol = options.get('rtol', RTOL)
    assert describe(factory(fox).init(convert(params, fjnp.asarray))) == \
        describe(factory(optax).init(convert(params, jax.numpy.asarray)))
    for step, (a, b) in enumerate(zip(ours[0], theirs[0])):
        try:
            assert_trees_close(a, b, rtol=rtol, atol=ATOL)
        except AssertionError as e:
            raise AssertionError(f'updates differ at step {step}') from e
    assert_trees_close(ours[1], theirs[1], rtol=rtol, atol=ATOL)
    assert_trees_close(ours[2], theirs[2], rtol=rtol, atol=ATOL)


JIT_PARAMS = [pytest.param(*c[1:], id=c[0]) for c in CASES]


@pytest.mark.parametrize('factory,options', JIT_PARAMS)
def test_jit_matches_eager(factory, options):
    params, grads = _problem(1, options.get('params'))
    eager = _run(fox, fjnp.asarray, factory, options, params, grads)
    jitted = _run(fox, fjnp.asarray, factory, options, params, grads, jit=fluxion.jit)
    for a, b in zip(jitted[0], eager[0]):
        assert_trees_close(a, b, rtol=RTOL, atol=ATOL)
    assert_trees_close(jitted[1], eager[1], rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize('make', [
    lambda ox: ox.rprop(0.1),
    lambda ox: ox.scale_by_rprop(0.1, eta_minus=0.4, max_step_size=0.15),
], ids=['rprop', 'scale_by_rprop'])
def test_rprop_is_optax_without_its_one_step_lag(make):
    # optax 0.2.8 emits the previous call's Rprop step, zeroed where the sign
    # just flipped (PR #1725); ours emits the current step. Rprop ignores
    # params, so where optax[t+1] is non-zero it must equal ours[t], and the
    # states (which optax computes correctly) must agree.
    params, grads = _problem(0)
    grads = grads + [random_tree(7, scale=0.5)]
    ours = _run(fox, fjnp.asarray, make, {}, params, grads)
    theirs = _run(optax, jax.numpy.asarray, make, {}, params, grads)
    for t in range(len(grads) - 1):
        a = np.concatenate([np.ravel(x) for x in jax.tree.leaves(convert(ours[0][t], np.asarray))])
        b = np.concatenate([np.ravel(np.asarray(x)) for x in jax.tree.leaves(theirs[0][t + 1])])
        np.testing.assert_allclose(a[b != 0], b[b != 0], rtol=RTOL)
    assert_trees_close(ours[1], theirs[1], rtol=RTOL, atol=ATOL)


def test_rprop_matches_torch_reference_sequence():
    # iRprop- on one element, as torch.optim.Rprop computes it (step sizes
    # 0.1 * 1.2**k, zero step after a sign flip, step size kept after it).
    tx = fox.scale_by_rprop(learning_rate=0.1, eta_minus=0.5, eta_plus=1.2)
    p = fjnp.zeros((1,))
    state = tx.init(p)
    out = []
    for g in [1.0, 1.0, 1.0, -1.0, 1.0]:
        u, state = tx.update(fjnp.asarray([g]), state, p)
        out.append(float(u[0]))
    np.testing.assert_allclose(out, [0.1, 0.12, 0.144, 0.0, 0.072], rtol=1e-6)


# ----------------------------------------------------------------------------
# Optimizers driven by a value function (line searches, L-BFGS).


def _objective(np_mod):
    """A smooth non-quadratic objective written against either library's numpy."""

    def f(params):
        leaves = [params['params']['dense']['kernel'], params['params']['dense']['bias'],
                  params['params']['conv']['kernel'], params['temperature']]
        total = 0.0
        for i, x in enumerate(leaves):
            total = total + np_mod.sum((x - 0.1 * i) ** 2) + 0.05 * np_mod.sum(x ** 4)
        return total
    return f


LINESEARCH_CASES = [
    ('lbfgs', lambda ox: ox.lbfgs()),
    ('lbfgs_memory2_keep', lambda ox: ox.lbfgs(memory_size=2, linesearch=ox.scale_by_zoom_linesearch(
        max_linesearch_steps=10, initial_guess_strategy='keep'))),
    ('lbfgs_backtracking', lambda ox: ox.lbfgs(linesearch=ox.scale_by_backtracking_linesearch(
        max_backtracking_steps=15, store_grad=True))),
    ('sgd_backtracking', lambda ox: ox.chain(ox.sgd(1.0), ox.scale_by_backtracking_linesearch(
        max_backtracking_steps=15, decrease_factor=0.5, store_grad=True))),
    ('sgd_zoom_maxlr', lambda ox: ox.chain(ox.sgd(1.0), ox.scale_by_zoom_linesearch(
        max_linesearch_steps=15, max_learning_rate=0.3))),
]


def _run_linesearch(ox, np_mod, asarray, make, n_steps=4, jit=None):
    f = _objective(np_mod)
    tx = make(ox)
    params = convert(random_tree(3), asarray)
    state = tx.init(params)
    value_and_grad = ox.value_and_grad_from_state(f)

    def step(params, state):
        value, grad = value_and_grad(params, state=state)
        updates, state = tx.update(grad, state, params, value=value, grad=grad, value_fn=f)
        return ox.apply_updates(params, updates), state, value

    if jit is not None:
        step = jit(step)
    values = []
    for _ in range(n_steps):
        params, state, value = step(params, state)
        values.append(float(value))
    return params, state, values


@pytest.mark.parametrize('make', [c[1] for c in LINESEARCH_CASES],
                         ids=[c[0] for c in LINESEARCH_CASES])
def test_linesearch_optimizers_match_optax(make):
    ours = _run_linesearch(fox, fjnp, fjnp.asarray, make)
    # The oracle is jitted: eager JAX recompiles its while loops at every call.
    theirs = _run_linesearch(optax, jax.numpy, jax.numpy.asarray, make, jit=jax.jit)
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-4)
    assert_trees_close(ours[0], theirs[0], rtol=1e-3, atol=1e-5)
    assert_trees_close(ours[1], theirs[1], rtol=1e-3, atol=1e-5)
    assert ours[2][-1] < ours[2][0]


@pytest.mark.parametrize('make', [LINESEARCH_CASES[0][1], LINESEARCH_CASES[2][1]],
                         ids=['lbfgs', 'lbfgs_backtracking'])
def test_linesearch_step_under_jit(make):
    eager = _run_linesearch(fox, fjnp, fjnp.asarray, make, n_steps=3)
    jitted = _run_linesearch(fox, fjnp, fjnp.asarray, make, n_steps=3, jit=fluxion.jit)
    np.testing.assert_allclose(jitted[2], eager[2], rtol=1e-5)
    assert_trees_close(jitted[0], eager[0], rtol=1e-4, atol=1e-6)


def test_linesearch_rejects_unknown_extra_args():
    tx = fox.scale_by_backtracking_linesearch(max_backtracking_steps=3)
    params = fjnp.ones(3)
    with pytest.raises(TypeError, match='not accepted by `value_fn`'):
        tx.update(params, tx.init(params), params, value=fjnp.asarray(1.0), grad=params,
                  value_fn=lambda p: fjnp.sum(p ** 2), bogus=1)


# ----------------------------------------------------------------------------
# Transformations needing special inputs (objective functions, keys,
# per-example gradients, complex or Lookahead params).


def _sophia_run(ox, np_mod, asarray, make, jit=None):
    f = _objective(np_mod)
    tx = make(ox)
    params = convert(random_tree(5), asarray)
    state = tx.init(params)

    def step(params, state):
        grads = (jax.grad if ox is optax else fluxion.grad)(f)(params)
        updates, state = tx.update(grads, state, params, obj_fn=f)
        return ox.apply_updates(params, updates), state, updates

    if jit is not None:
        step = jit(step)
    out = []
    for _ in range(4):
        params, state, updates = step(params, state)
        out.append(updates)
    return out, state, params


SOPHIA_CASES = [
    ('sophia', lambda ox: ox.contrib.sophia(1e-2, update_interval=2)),
    ('sophia_key_noclip', lambda ox: ox.contrib.sophia(
        1e-2, update_interval=3, clip_threshold=None, weight_decay=0.0,
        hessian_diagonal_fn=ox.contrib.hutchinson_estimator_diag_hessian(
            (jax.random if ox is optax else fluxion.random).PRNGKey(7)))),
]


@pytest.mark.parametrize('make', [c[1] for c in SOPHIA_CASES], ids=[c[0] for c in SOPHIA_CASES])
def test_sophia_matches_optax(make):
    ours = _sophia_run(fox, fjnp, fjnp.asarray, make)
    theirs = _sophia_run(optax, jax.numpy, jax.numpy.asarray, make, jit=jax.jit)
    for a, b in zip(ours[0], theirs[0]):
        assert_trees_close(a, b, rtol=1e-4, atol=1e-6)
    assert_trees_close(ours[1], theirs[1], rtol=1e-4, atol=1e-6)
    jitted = _sophia_run(fox, fjnp, fjnp.asarray, make, jit=fluxion.jit)
    assert_trees_close(jitted[2], ours[2], rtol=1e-5, atol=1e-6)


def _key_data(ox, key):
    return np.asarray((jax.random if ox is optax else fluxion.random).key_data(key))


@pytest.mark.parametrize('make', [
    lambda ox, key: ox.add_noise(0.1, 0.55, key),
    lambda ox, key: ox.noisy_sgd(0.1, eta=0.5, key=key),
], ids=['add_noise', 'noisy_sgd'])
def test_noise_draws_match_optax(make):
    params, grads = _problem(0)

    def run(ox, rnd, asarray):
        tx = make(ox, rnd.key(42))
        p = convert(params, asarray)
        state = tx.init(p)
        out = []
        for g in grads:
            u, state = tx.update(convert(g, asarray), state, p)
            out.append(u)
        return out, state

    ours, our_state = run(fox, fluxion.random, fjnp.asarray)
    theirs, their_state = run(optax, jax.random, jax.numpy.asarray)
    for a, b in zip(ours, theirs):
        assert_trees_close(a, b, rtol=1e-5, atol=1e-6)
    noise_state = our_state if hasattr(our_state, 'rng_key') else our_state[0]
    their_noise = their_state if hasattr(their_state, 'rng_key') else their_state[0]
    np.testing.assert_array_equal(_key_data(fox, noise_state.rng_key),
                                  _key_data(optax, their_noise.rng_key))
    assert int(noise_state.count) == int(their_noise.count) == len(grads)


def _per_example(seed, batch=5):
    rng = np.random.default_rng(seed)
    return {'w': rng.standard_normal((batch, 3, 2)).astype(np.float32),
            'b': (3 * rng.standard_normal((batch, 2))).astype(np.float32)}


def test_dpsgd_matches_optax():
    def run(ox, asarray):
        tx = ox.contrib.dpsgd(0.1, l2_norm_clip=1.0, noise_multiplier=0.5, seed=3, momentum=0.9)
        params = {'w': asarray(np.zeros((3, 2), np.float32)), 'b': asarray(np.zeros(2, np.float32))}
        state = tx.init(params)
        out = []
        for i in range(3):
            u, state = tx.update(convert(_per_example(i), asarray), state, params)
            out.append(u)
        return out, state

    with pytest.warns(DeprecationWarning):
        theirs, their_state = run(optax, jax.numpy.asarray)
    ours, our_state = run(fox, fjnp.asarray)
    for a, b in zip(ours, theirs):
        assert_trees_close(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(_key_data(fox, our_state[0].rng_key),
                                  _key_data(optax, their_state[0].rng_key))


@pytest.mark.parametrize('fn,kwargs', [
    ('per_example_global_norm_clip', {'l2_norm_clip': 1.5}),
    ('per_example_layer_norm_clip', {'global_l2_norm_clip': 1.5}),
    ('per_example_layer_norm_clip', {'global_l2_norm_clip': 2.0, 'uniform': False}),
])
def test_per_example_clipping_matches_optax(fn, kwargs):
    grads = _per_example(9)
    ours = getattr(fox, fn)(convert(grads, fjnp.asarray), **kwargs)
    theirs = getattr(optax, fn)(convert(grads, jax.numpy.asarray), **kwargs)
    assert_trees_close(ours, theirs, rtol=1e-5, atol=1e-6, check_dtypes=False)
    with pytest.raises(ValueError, match='batch'):
        getattr(fox, fn)({'a': fjnp.ones((2, 3)), 'b': fjnp.ones((3,))}, *kwargs.values())


def test_split_real_and_imaginary_matches_optax():
    rng = np.random.default_rng(0)
    params = {'z': (rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2))).astype(
        np.complex64), 'r': rng.standard_normal(4).astype(np.float32)}
    grads = [{'z': (rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2))).astype(
        np.complex64), 'r': rng.standard_normal(4).astype(np.float32)} for _ in range(3)]

    def run(ox, asarray):
        tx = ox.contrib.split_real_and_imaginary(ox.adam(1e-2))
        p = convert(params, asarray)
        state = tx.init(p)
        for g in grads:
            u, state = tx.update(convert(g, asarray), state, p)
            p = ox.apply_updates(p, u)
        return p, state

    ours, theirs = run(fox, fjnp.asarray), run(optax, jax.numpy.asarray)
    assert_trees_close(ours, theirs, rtol=1e-5, atol=1e-6)


def test_lookahead_matches_optax():
    params, grads = _problem(0)

    def run(ox, asarray):
        tx = ox.lookahead(ox.adam(1e-2), sync_period=2, slow_step_size=0.5, reset_state=True)
        p = ox.LookaheadParams.init_synced(convert(params, asarray))
        state = tx.init(p)
        for g in grads + grads[:1]:
            u, state = tx.update(convert(g, asarray), state, p)
            p = ox.apply_updates(p, u)
        return p, state

    ours, theirs = run(fox, fjnp.asarray), run(optax, jax.numpy.asarray)
    assert isinstance(ours[0], fox.LookaheadParams)
    assert_trees_close(ours, theirs, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match='sync_period'):
        fox.lookahead(fox.sgd(0.1), sync_period=0, slow_step_size=0.5)


def test_schedule_free_eval_params_matches_optax():
    params, grads = _problem(2)

    def run(ox, asarray):
        tx = ox.contrib.schedule_free_adamw(1e-2, warmup_steps=2)
        p = convert(params, asarray)
        state = tx.init(p)
        for g in grads:
            u, state = tx.update(convert(g, asarray), state, p)
            p = ox.apply_updates(p, u)
        return ox.contrib.schedule_free_eval_params(state, p)

    assert_trees_close(run(fox, fjnp.asarray), run(optax, jax.numpy.asarray), rtol=1e-5,
                       atol=1e-6)
    with pytest.raises(ValueError, match='ScheduleFreeState'):
        fox.contrib.schedule_free_eval_params(fox.EmptyState(), {})


def test_sam_opaque_mode_matches_optax():
    def run(ox, np_mod, asarray, grad):
        f = _objective(np_mod)
        tx = ox.contrib.sam(ox.sgd(0.1), ox.chain(ox.contrib.normalize(), ox.sgd(0.05)),
                            sync_period=3, opaque_mode=True)
        p = convert(random_tree(1), asarray)
        state = tx.init(p)
        for _ in range(2):
            u, state = tx.update(grad(f)(p), state, p, grad_fn=lambda q, _: grad(f)(q))
            p = ox.apply_updates(p, u)
        return p, state

    ours = run(fox, fjnp, fjnp.asarray, fluxion.grad)
    theirs = run(optax, jax.numpy, jax.numpy.asarray, jax.grad)
    assert_trees_close(ours, theirs, rtol=1e-5, atol=1e-6)


def test_polyak_requires_value_and_rejects_bad_variant():
    tx = fox.scale_by_polyak()
    params = fjnp.ones(3)
    with pytest.raises(TypeError):
        tx.update(params, tx.init(params), params)
    with pytest.raises(ValueError, match='variant'):
        fox.scale_by_polyak(variant='bogus')


def test_sm3_rejects_scalars_and_lbfgs_memory():
    with pytest.raises(ValueError, match='0-d'):
        fox.sm3(0.1).init({'a': fjnp.ones(()), 'b': fjnp.ones(2)})
    with pytest.raises(ValueError, match='memory_size'):
        fox.scale_by_lbfgs(memory_size=0)


# ----------------------------------------------------------------------------
# Functions: losses, projections, schedules, tree utilities. One record per
# call: (id, fn(ox) -> callable, args builder(np) -> tuple of numpy inputs,
# kwargs, differentiate-wrt-first-argument?).


def _rng(seed):
    return np.random.default_rng(seed)


def _logits(seed=0, shape=(4, 5)):
    return _rng(seed).standard_normal(shape).astype(np.float32)


def _probs(seed=1, shape=(4, 5)):
    x = np.exp(_logits(seed, shape))
    return (x / x.sum(-1, keepdims=True)).astype(np.float32)


FUNCTION_CASES = [
    ('safe_softmax_cross_entropy', lambda ox: ox.losses.safe_softmax_cross_entropy,
     lambda: (np.where(np.eye(4, 5) > 0, -np.inf, _logits()).astype(np.float32) * 1,
              np.eye(4, 5, k=1).astype(np.float32)), {}, False),
    ('safe_softmax_cross_entropy_finite', lambda ox: ox.losses.safe_softmax_cross_entropy,
     lambda: (_logits(), _probs()), {}, True),
    ('sigmoid_focal_loss', lambda ox: ox.losses.sigmoid_focal_loss,
     lambda: (_logits(), (_probs() > 0.2).astype(np.float32)), {'alpha': 0.25}, True),
    ('sigmoid_focal_loss_gamma', lambda ox: ox.losses.sigmoid_focal_loss,
     lambda: (_logits(), _probs()), {'gamma': 1.5}, True),
    ('hinge_loss', lambda ox: ox.losses.hinge_loss,
     lambda: (_logits(), np.sign(_logits(3))), {}, True),
    ('perceptron_loss', lambda ox: ox.losses.perceptron_loss,
     lambda: (_logits(), np.sign(_logits(3))), {}, True),
    ('multiclass_hinge_loss', lambda ox: ox.losses.multiclass_hinge_loss,
     lambda: (_logits(), np.array([0, 2, 4, 1])), {}, True),
    ('multiclass_perceptron_loss', lambda ox: ox.losses.multiclass_perceptron_loss,
     lambda: (_logits(), np.array([0, 2, 4, 1])), {}, True),
    ('sparsemax_loss', lambda ox: ox.losses.sparsemax_loss,
     lambda: (_logits(), (_probs() > 0.2)), {}, True),
    ('poly_loss_cross_entropy', lambda ox: ox.losses.poly_loss_cross_entropy,
     lambda: (_logits(), _probs()), {'epsilon': 1.5}, True),
    ('poly_loss_cross_entropy_where', lambda ox: ox.losses.poly_loss_cross_entropy,
     lambda: (_logits(), _probs()), {'where': np.arange(20).reshape(4, 5) % 3 != 0}, False),
    ('kl_divergence', lambda ox: ox.losses.kl_divergence,
     lambda: (np.log(_probs(2)), np.where(_probs() > 0.3, 0, _probs()).astype(np.float32)), {},
     True),
    ('kl_divergence_with_log_targets', lambda ox: ox.losses.kl_divergence_with_log_targets,
     lambda: (np.log(_probs(2)), np.log(_probs())), {}, True),
    ('generalized_kl_divergence', lambda ox: ox.losses.generalized_kl_divergence,
     lambda: (_logits(2), _probs()), {'axis': None}, True),
    ('cosine_similarity', lambda ox: ox.losses.cosine_similarity,
     lambda: (_logits(), _logits(1)), {'epsilon': 1e-3}, True),
    ('cosine_distance', lambda ox: ox.losses.cosine_distance,
     lambda: (_logits(), _logits(1)), {'axis': 0}, True),
    ('ntxent', lambda ox: ox.losses.ntxent,
     lambda: (_logits(shape=(6, 3)), np.array([0, 1, 0, 1, 2, 2])), {'temperature': 0.5}, True),
    ('triplet_margin_loss', lambda ox: ox.losses.triplet_margin_loss,
     lambda: (_logits(), _logits(1), _logits(2)), {'margin': 2.0}, True),
    ('multiclass_sparsemax_loss', lambda ox: ox.losses.multiclass_sparsemax_loss,
     lambda: (_logits(), np.array([0, 2, 4, 1])), {}, True),
    ('fenchel_young_logsumexp', lambda ox: ox.losses.make_fenchel_young_loss(
        (jax.nn if ox is optax else fluxion.nn).logsumexp),
     lambda: (_logits(shape=(2, 3, 5)), _probs(shape=(2, 3, 5))), {}, True),
    ('ranking_softmax_loss', lambda ox: ox.losses.ranking_softmax_loss,
     lambda: (_logits(), _probs()), {}, True),
    ('ranking_softmax_loss_where', lambda ox: ox.losses.ranking_softmax_loss,
     lambda: (_logits(), _probs()), {'where': np.arange(20).reshape(4, 5) % 4 != 1,
                                     'weights': _probs(7)}, False),
    ('ranking_softmax_loss_sum', lambda ox: lambda a, b: ox.losses.ranking_softmax_loss(
        a, b, reduce_fn=None), lambda: (_logits(), _probs()), {}, True),
    ('dice_loss', lambda ox: ox.losses.dice_loss,
     lambda: (_logits(shape=(2, 4, 4, 3)), np.eye(3, dtype=np.float32)[
         _rng(0).integers(0, 3, (2, 4, 4))]), {'alpha': 0.3, 'beta': 0.7}, True),
    ('dice_loss_weights', lambda ox: ox.losses.dice_loss,
     lambda: (_logits(shape=(2, 4, 4, 3)), np.eye(3, dtype=np.float32)[
         _rng(1).integers(0, 3, (2, 4, 4))]),
     {'class_weights': np.array([0.2, 1.0, 2.0], np.float32), 'ignore_background': True,
      'reduction': 'sum'}, True),
    ('multiclass_generalized_dice_loss', lambda ox: ox.losses.multiclass_generalized_dice_loss,
     lambda: (_logits(shape=(2, 4, 4, 3)), np.eye(3, dtype=np.float32)[
         _rng(2).integers(0, 3, (2, 4, 4))]), {}, True),
    ('binary_dice_loss', lambda ox: ox.losses.binary_dice_loss,
     lambda: (_logits(shape=(2, 4, 4)), (_logits(3, shape=(2, 4, 4)) > 0).astype(np.float32)),
     {}, True),
    # Projections (pytree in, pytree out).
    ('projection_non_negative', lambda ox: ox.projections.projection_non_negative,
     lambda: (random_tree(0),), {}, False),
    ('projection_box', lambda ox: ox.projections.projection_box,
     lambda: (random_tree(0), random_tree(1, offset=-1.0), random_tree(2, offset=1.0)), {},
     False),
    ('projection_hypercube', lambda ox: ox.projections.projection_hypercube,
     lambda: (_logits(),), {'scale': 0.5}, False),
    ('projection_simplex', lambda ox: ox.projections.projection_simplex,
     lambda: (random_tree(0),), {'scale': 2.0}, True),
    ('projection_l1_sphere', lambda ox: ox.projections.projection_l1_sphere,
     lambda: (random_tree(0),), {'scale': 2.0}, True),
    ('projection_l1_ball_inside', lambda ox: ox.projections.projection_l1_ball,
     lambda: (random_tree(0, scale=0.01),), {}, False),
    ('projection_l1_ball_outside', lambda ox: ox.projections.projection_l1_ball,
     lambda: (random_tree(0),), {'scale': 3.0}, True),
    ('projection_l2_sphere', lambda ox: ox.projections.projection_l2_sphere,
     lambda: (random_tree(0),), {'scale': 2.0}, True),
    ('projection_l2_ball', lambda ox: ox.projections.projection_l2_ball,
     lambda: (random_tree(0),), {'scale': 2.0}, True),
    ('projection_linf_ball', lambda ox: ox.projections.projection_linf_ball,
     lambda: (random_tree(0),), {'scale': 0.5}, False),
    ('projection_vector', lambda ox: ox.projections.projection_vector,
     lambda: (random_tree(0), random_tree(1)), {}, True),
    ('projection_hyperplane', lambda ox: ox.projections.projection_hyperplane,
     lambda: (random_tree(0), random_tree(1), np.float32(0.5)), {}, True),
    ('projection_halfspace', lambda ox: ox.projections.projection_halfspace,
     lambda: (random_tree(0), random_tree(1), np.float32(-1.0)), {}, True),
    # Tree utilities.
    ('tree_random_like', lambda ox: lambda seed, t: ox.tree.random_like(
        (jax.random if ox is optax else fluxion.random).key(int(seed)), t),
     lambda: (np.int32(3), random_tree(0)), {}, False),
    ('tree_split_key_like', lambda ox: lambda seed, t: ox.tree_utils.tree_unwrap_random_key_data(
        ox.tree_utils.tree_split_key_like(
            (jax.random if ox is optax else fluxion.random).key(int(seed)), t)),
     lambda: (np.int32(5), random_tree(0)), {}, False),
]


def _to(asarray, x):
    if isinstance(x, dict):
        return convert(x, asarray)
    return asarray(x)


def _scalar_sum(np_mod, out):
    leaves = out if isinstance(out, list) else [out]
    if isinstance(out, dict):
        leaves = list(_np_leaves_lib(out))
    return sum(np_mod.sum(x) for x in leaves)


def _np_leaves_lib(tree):
    if isinstance(tree, dict):
        for k in sorted(tree):
            yield from _np_leaves_lib(tree[k])
    else:
        yield tree


@pytest.mark.parametrize('case', FUNCTION_CASES, ids=[c[0] for c in FUNCTION_CASES])
def test_function_matches_optax(case):
    _, fn, make_args, kwargs, differentiate = case
    args = make_args()
    with np.errstate(all='ignore'):
        theirs = fn(optax)(*[_to(jax.numpy.asarray, a) for a in args],
                           **{k: _to(jax.numpy.asarray, v) if isinstance(v, np.ndarray) else v
                              for k, v in kwargs.items()})
    f_kwargs = {k: _to(fjnp.asarray, v) if isinstance(v, np.ndarray) else v
                for k, v in kwargs.items()}
    ours = fn(fox)(*[_to(fjnp.asarray, a) for a in args], **f_kwargs)
    assert_trees_close(ours, theirs, rtol=1e-5, atol=1e-6, check_dtypes=False)
    jitted = fluxion.jit(lambda *a: fn(fox)(*a, **f_kwargs))(*[_to(fjnp.asarray, a) for a in args]) \
        if case[0] not in ('tree_random_like', 'tree_split_key_like') else ours
    assert_trees_close(jitted, ours, rtol=1e-5, atol=1e-6, check_dtypes=False)
    if differentiate:
        rest = args[1:]

        def g_ours(x):
            return _scalar_sum(fjnp, fn(fox)(x, *[_to(fjnp.asarray, a) for a in rest], **f_kwargs))

        def g_theirs(x):
            return _scalar_sum(jax.numpy, fn(optax)(
                x, *[_to(jax.numpy.asarray, a) for a in rest],
                **{k: _to(jax.numpy.asarray, v) if isinstance(v, np.ndarray) else v
                   for k, v in kwargs.items()}))

        ours_g = fluxion.grad(g_ours)(_to(fjnp.asarray, args[0]))
        theirs_g = jax.grad(g_theirs)(_to(jax.numpy.asarray, args[0]))
        assert_trees_close(ours_g, theirs_g, rtol=1e-4, atol=1e-5, check_dtypes=False)


@pytest.mark.parametrize('name,kwargs,steps', [
    ('piecewise_interpolate_schedule', dict(interpolate_type='linear', init_value=1.0,
                                            boundaries_and_scales={3: 0.5, 6: 2.0}), 9),
    ('piecewise_interpolate_schedule', dict(interpolate_type='cosine', init_value=2.0,
                                            boundaries_and_scales={2: 0.1, 5: 0.5}), 8),
    ('piecewise_interpolate_schedule', dict(interpolate_type='linear', init_value=3.0), 3),
    ('linear_onecycle_schedule', dict(transition_steps=20, peak_value=0.1), 24),
    ('cosine_onecycle_schedule', dict(transition_steps=20, peak_value=0.1, pct_start=0.25), 24),
])
def test_schedule_matches_optax(name, kwargs, steps):
    ours = getattr(fox.schedules, name)(**kwargs)
    theirs = getattr(optax.schedules, name)(**kwargs)
    jitted = fluxion.jit(ours)
    for step in range(steps):
        np.testing.assert_allclose(float(ours(step)), float(theirs(step)), rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(float(jitted(fjnp.asarray(step))), float(ours(step)),
                                   rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError):
        getattr(fox.schedules, name)(**{**kwargs, **(
            {'interpolate_type': 'quadratic'} if 'interpolate_type' in kwargs
            else {'transition_steps': 0})})


def test_inject_stateful_hyperparams_warns_and_works():
    params = convert(random_tree(0), fjnp.asarray)
    with pytest.warns(DeprecationWarning):
        tx = fox.inject_stateful_hyperparams(fox.sgd)(learning_rate=0.1)
    state = tx.init(params)
    assert float(state.hyperparams['learning_rate']) == pytest.approx(0.1)


def test_tree_get_set_and_map_params_match_optax():
    def run(ox, asarray):
        tx = ox.chain(ox.adam(1e-2), ox.inject_hyperparams(ox.sgd)(learning_rate=0.1))
        params = convert(random_tree(0), asarray)
        state = tx.init(params)
        counts = ox.tree_utils.tree_get_all_with_path(state, 'count')
        lr = ox.tree_utils.tree_get(state, 'learning_rate')
        state = ox.tree_utils.tree_set(state, learning_rate=asarray(np.float32(0.5)))
        mapped = ox.tree_utils.tree_map_params(tx, lambda p: p * 2 + 1, state,
                                               transform_non_params=lambda x: x)
        return ([str(p[-1]) for p, _ in counts], float(lr),
                float(ox.tree_utils.tree_get(state, 'learning_rate')), mapped)

    ours, theirs = run(fox, fjnp.asarray), run(optax, jax.numpy.asarray)
    assert ours[:3] == theirs[:3]
    assert_trees_close(ours[3], theirs[3])
    with pytest.raises(KeyError):
        fox.tree_utils.tree_get(fox.adam(1e-2).init({'a': fjnp.ones(2)}) * 2, 'count')
    with pytest.raises(KeyError):
        fox.tree_utils.tree_set(fox.EmptyState(), missing=1)


def test_second_order_helpers_match_optax():
    def loss(np_mod):
        def f(params, inputs, targets):
            pred = np_mod.tanh(inputs @ params['w'] + params['b'])
            return np_mod.sum((pred - targets) ** 2)
        return f

    rng = _rng(0)
    params = {'w': rng.standard_normal((3, 2)).astype(np.float32),
              'b': rng.standard_normal(2).astype(np.float32)}
    inputs = rng.standard_normal((5, 3)).astype(np.float32)
    targets = rng.standard_normal((5, 2)).astype(np.float32)
    v = rng.standard_normal(8).astype(np.float32)
    for name, extra in (('hessian_diag', ()), ('fisher_diag', ()), ('hvp', (v,))):
        with pytest.warns(DeprecationWarning):
            theirs = getattr(optax.second_order, name)(
                loss(jax.numpy), *[jax.numpy.asarray(e) for e in extra],
                convert(params, jax.numpy.asarray), jax.numpy.asarray(inputs),
                jax.numpy.asarray(targets))
        with pytest.warns(DeprecationWarning):
            ours = getattr(fox.second_order, name)(
                loss(fjnp), *[fjnp.asarray(e) for e in extra], convert(params, fjnp.asarray),
                fjnp.asarray(inputs), fjnp.asarray(targets))
        assert_trees_close(ours, theirs, rtol=1e-4, atol=1e-5, check_dtypes=False)


@pytest.mark.parametrize('noise', ['Gumbel', 'Normal'])
def test_make_perturbed_fun_matches_optax(noise):
    def argmax_one_hot(np_mod, nn):
        return lambda x: nn.one_hot(np_mod.argmax(x), x.shape[0])

    x = _logits(shape=(1, 5))[0]

    def run(ox, np_mod, nn, rnd, asarray, grad):
        f = ox.perturbations.make_perturbed_fun(argmax_one_hot(np_mod, nn), num_samples=64,
                                                sigma=0.5, noise=getattr(ox.perturbations, noise)())
        key = rnd.PRNGKey(0)
        value = f(key, asarray(x))
        g = grad(lambda y: np_mod.sum(f(key, y) * asarray(np.arange(5, dtype=np.float32))))(
            asarray(x))
        return value, g

    ours = run(fox, fjnp, fluxion.nn, fluxion.random, fjnp.asarray, fluxion.grad)
    theirs = run(optax, jax.numpy, jax.nn, jax.random, jax.numpy.asarray, jax.grad)
    assert_trees_close(list(ours), list(theirs), rtol=1e-4, atol=1e-5, check_dtypes=False)


# ----------------------------------------------------------------------------
# Coverage of optax's public names.

# Names of optax 0.2.8 (top level and optax.contrib) that fluxion.optax does
# not provide, and why. Currently none: every public name is present.
MISSING_WITH_REASON: dict[str, str] = {}


def _public(module):
    return sorted(n for n in dir(module) if not n.startswith('_'))


def test_public_name_coverage():
    import optax.contrib  # noqa: F401, PLC0415

    names = [('', n) for n in _public(optax)] + [('contrib.', n) for n in _public(optax.contrib)]
    missing = [p + n for p, n in names
               if not hasattr(fox.contrib if p else fox, n)]
    assert sorted(missing) == sorted(MISSING_WITH_REASON), (
        'update MISSING_WITH_REASON: missing names are ' + str(sorted(missing)))
    coverage = 1 - len(missing) / len(names)
    assert coverage >= 0.95, coverage


@pytest.mark.parametrize('sub', ['tree_utils', 'tree', 'losses', 'schedules', 'transforms',
                                 'projections', 'second_order', 'perturbations', 'assignment',
                                 'microbatching', 'experimental.aggregating'])
def test_submodule_names_exist(sub):
    import importlib  # noqa: PLC0415

    theirs = importlib.import_module('optax.' + sub.split('.')[0])
    for part in sub.split('.')[1:]:
        theirs = getattr(theirs, part)
    ours = fox
    for part in sub.split('.'):
        ours = getattr(ours, part)
    known_gaps = {                  # Modules optax's submodules happen to import.
                  'tree_utils': {'functools', 'typing'},
                  'experimental.aggregating': {'base', 'jax', 'tree', 'utils'}}
    missing = {n for n in _public(theirs) if not hasattr(ours, n)}
    assert missing == known_gaps.get(sub, set())


def test_state_classes_have_optax_fields():
    import optax.contrib  # noqa: F401, PLC0415

    for module, ours in ((optax, fox), (optax.contrib, fox.contrib)):
        for name in _public(module):
            obj = getattr(module, name)
            if isinstance(obj, type) and issubclass(obj, tuple) and hasattr(obj, '_fields') \
                    and hasattr(ours, name):
                assert getattr(ours, name)._fields == obj._fields, name


# ----------------------------------------------------------------------------
# Linear algebra and gradient utilities.


def _spd(n, seed=0):
    a = _rng(seed).standard_normal((n, n)).astype(np.float32)
    return (a @ a.T / n + np.eye(n, dtype=np.float32)).astype(np.float32)


def test_power_iteration_matches_optax():
    m = _spd(5)
    ours = fox.power_iteration(fjnp.asarray(m), num_iters=200)
    theirs = optax.power_iteration(jax.numpy.asarray(m), num_iters=200)
    np.testing.assert_allclose(float(ours[0]), float(theirs[0]), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(ours[1]), np.asarray(theirs[1]), rtol=1e-4, atol=1e-5)
    jitted = fluxion.jit(lambda x: fox.power_iteration(x, num_iters=200))(fjnp.asarray(m))
    np.testing.assert_allclose(float(jitted[0]), float(ours[0]), rtol=1e-6)
    # Matrix-free form on a pytree.
    v0 = {'a': fjnp.ones(5)}
    eig, vec = fox.power_iteration(lambda v: {'a': fjnp.asarray(m) @ v['a']}, v0=v0)
    np.testing.assert_allclose(float(eig), float(np.linalg.eigvalsh(m)[-1]), rtol=1e-4)
    with pytest.raises(ValueError, match='v0'):
        fox.power_iteration(lambda v: v)


@pytest.mark.parametrize('p', [2, 4])
def test_matrix_inverse_pth_root_matches_optax(p):
    m = _spd(4, seed=p)
    ours, our_err = fox.matrix_inverse_pth_root(fjnp.asarray(m), p)
    theirs, their_err = optax.matrix_inverse_pth_root(jax.numpy.asarray(m), p)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-4, atol=1e-5)
    root = np.linalg.matrix_power(np.asarray(ours, np.float64), p)
    np.testing.assert_allclose(root @ m, np.eye(4), atol=1e-3)


def test_nnls_matches_optax():
    rng = _rng(4)
    a = rng.standard_normal((6, 4)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    ours = fox.nnls(fjnp.asarray(a), fjnp.asarray(b), iters=50)
    theirs = optax.nnls(jax.numpy.asarray(a), jax.numpy.asarray(b), iters=50)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-4, atol=1e-5)
    assert np.all(np.asarray(ours) >= 0)


@pytest.mark.parametrize('scale', [0.0, 1.0, 0.3])
def test_scale_gradient_matches_optax(scale):
    x = _logits()
    ours = fluxion.grad(lambda y: fjnp.sum(fox.scale_gradient(y, scale) ** 2))(fjnp.asarray(x))
    theirs = jax.grad(lambda y: jax.numpy.sum(optax.scale_gradient(y, scale) ** 2))(
        jax.numpy.asarray(x))
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(fox.scale_gradient(fjnp.asarray(x), scale)), x)


def test_multi_normal_matches_optax():
    loc, log_scale = _logits(shape=(3,))[0], 0.1 * _logits(1, shape=(3,))[0]
    ours = fox.multi_normal(fjnp.asarray(loc), fjnp.asarray(log_scale))
    theirs = optax.multi_normal(jax.numpy.asarray(loc), jax.numpy.asarray(log_scale))
    s_ours = ours.sample((4,), fluxion.random.PRNGKey(1))
    s_theirs = theirs.sample((4,), jax.random.PRNGKey(1))
    np.testing.assert_allclose(np.asarray(s_ours), np.asarray(s_theirs), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(ours.log_prob(s_ours)),
                               np.asarray(theirs.log_prob(s_theirs)), rtol=1e-5)
    assert len(ours.params) == 2


@pytest.mark.parametrize('shape', [(5, 5), (4, 7), (7, 4), (1, 3), (0, 3)])
def test_hungarian_algorithm_matches_optax(shape):
    cost = _rng(sum(shape)).standard_normal(shape).astype(np.float32)
    for name in ('hungarian_algorithm', 'base_hungarian_algorithm'):
        ours = getattr(fox.assignment, name)(fjnp.asarray(cost))
        theirs = getattr(optax.assignment, name)(jax.numpy.asarray(cost))
        for a, b in zip(ours, theirs):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    if 0 not in shape:
        i, j = fluxion.jit(fox.assignment.hungarian_algorithm)(fjnp.asarray(cost))
        scipy_optimize = pytest.importorskip('scipy.optimize')
        ri, rj = scipy_optimize.linear_sum_assignment(cost)
        assert np.isclose(cost[np.asarray(i), np.asarray(j)].sum(), cost[ri, rj].sum())


@pytest.mark.parametrize('blank_id', [0, 3])
def test_ctc_loss_matches_optax(blank_id):
    rng = _rng(blank_id)
    logits = rng.standard_normal((2, 6, 5)).astype(np.float32)
    logit_paddings = np.array([[0] * 6, [0] * 4 + [1] * 2], np.float32)
    labels = np.array([[1, 1, 2], [4, 2, 0]], np.int32)
    label_paddings = np.array([[0, 0, 0], [0, 0, 1]], np.float32)

    def run(ox, asarray, grad):
        args = [asarray(a) for a in (logits, logit_paddings, labels, label_paddings)]
        full = ox.losses.ctc_loss_with_forward_probs(*args, blank_id=blank_id)
        g = grad(lambda z: ox.losses.ctc_loss(z, *args[1:], blank_id=blank_id).sum())(args[0])
        return list(full) + [g]

    ours = run(fox, fjnp.asarray, fluxion.grad)
    theirs = run(optax, jax.numpy.asarray, jax.grad)
    assert_trees_close(ours, theirs, rtol=1e-4, atol=1e-4, check_dtypes=False)
    jitted = fluxion.jit(lambda z: fox.ctc_loss(z, fjnp.asarray(logit_paddings),
                                                fjnp.asarray(labels),
                                                fjnp.asarray(label_paddings), blank_id=blank_id))
    np.testing.assert_allclose(np.asarray(jitted(fjnp.asarray(logits))), np.asarray(ours[0]),
                               rtol=1e-5)
    with pytest.raises(ValueError, match='rank'):
        fox.ctc_loss(fjnp.asarray(logits[0]), logit_paddings, labels, label_paddings)


def _mb_fun(np_mod):
    def f(w, x, y):
        return {'loss': np_mod.sum((x @ w - y) ** 2, axis=-1), 'mean': np_mod.mean(x, axis=-1)}
    return f


@pytest.mark.parametrize('acc', ['SUM', 'MEAN', 'RUNNING_MEAN', 'CONCAT'])
def test_microbatch_matches_optax(acc):
    rng = _rng(0)
    w = rng.standard_normal((3, 2)).astype(np.float32)
    x = rng.standard_normal((8, 3)).astype(np.float32)
    y = rng.standard_normal((8, 2)).astype(np.float32)

    def run(ox, np_mod, asarray):
        f = ox.microbatching.microbatch(_mb_fun(np_mod), argnums=(1, 2), microbatch_size=2,
                                        accumulator=getattr(ox.microbatching.AccumulationType,
                                                            acc))
        return f(asarray(w), asarray(x), asarray(y))

    ours = run(fox, fjnp, fjnp.asarray)
    theirs = run(optax, jax.numpy, jax.numpy.asarray)
    assert_trees_close(ours, theirs, rtol=1e-5, atol=1e-6, check_dtypes=False)
    if acc == 'CONCAT':  # original example order is restored
        np.testing.assert_allclose(np.asarray(ours['mean']), x.mean(-1), rtol=1e-6)
    jitted = fluxion.jit(lambda a, b, c: fox.microbatch(
        _mb_fun(fjnp), argnums=(1, 2), microbatch_size=2,
        accumulator=getattr(fox.microbatching.AccumulationType, acc))(a, b, c))(
        fjnp.asarray(w), fjnp.asarray(x), fjnp.asarray(y))
    assert_trees_close(jitted, ours, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match='divisible'):
        fox.microbatch(_mb_fun(fjnp), argnums=(1, 2), microbatch_size=3)(
            fjnp.asarray(w), fjnp.asarray(x), fjnp.asarray(y))


def test_micro_grad_matches_optax():
    rng = _rng(1)
    w = rng.standard_normal((3, 2)).astype(np.float32)
    x = rng.standard_normal((6, 3)).astype(np.float32)
    y = rng.standard_normal((6, 2)).astype(np.float32)

    def run(ox, np_mod, asarray):
        def loss(w, x, y):
            return np_mod.sum((x @ w - y) ** 2)

        g = ox.microbatching.micro_grad(loss, batch_argnums=(1, 2), microbatch_size=3,
                                        transform_fn=lambda t: t * 0.5)
        grads, aux = g(asarray(w), asarray(x), asarray(y))
        return grads, aux.values

    ours, theirs = run(fox, fjnp, fjnp.asarray), run(optax, jax.numpy, jax.numpy.asarray)
    assert_trees_close(list(ours), list(theirs), rtol=1e-5, atol=1e-5, check_dtypes=False)


@pytest.mark.parametrize('steps', [1, 2])
def test_experimental_add_mean_variance_matches_optax(steps):
    rng = _rng(steps)
    params = {'w': rng.standard_normal((3, 2)).astype(np.float32)}
    per_example = [{'w': rng.standard_normal((4, 3, 2)).astype(np.float32)} for _ in range(4)]

    def run(ox, asarray):
        agg = ox.experimental.aggregating
        tx = agg.add_mean_variance_to_opt(ox.sgd(0.1), ema_decay=0.8,
                                          accumulation_steps=steps)
        p = convert(params, asarray)
        state = tx.init(p)
        outs = []
        for g in per_example:
            u, state = tx.update(convert(g, asarray), state, p)
            p = ox.apply_updates(p, u)
            outs.append(u)
        return outs, list(agg.get_unbiased_mean_and_variance_ema(state))

    ours, theirs = run(fox, fjnp.asarray), run(optax, jax.numpy.asarray)
    assert_trees_close(ours[0], theirs[0], rtol=1e-5, atol=1e-6)
    assert_trees_close(ours[1], theirs[1], rtol=1e-5, atol=1e-6)


def test_experimental_average_incrementally_matches_optax():
    rng = _rng(3)
    per_example = [{'w': rng.standard_normal((5, 2)).astype(np.float32)} for _ in range(3)]

    def run(ox, asarray):
        agg = ox.experimental.aggregating
        tx = agg.process(ox.identity(), agg.average_incrementally_updates(0, 3), ox.sgd(1.0))
        p = {'w': asarray(np.zeros(2, np.float32))}
        state = tx.init(p)
        outs = []
        for g in per_example:
            u, state = tx.update(convert(g, asarray), state, p)
            outs.append(u)
        return outs

    assert_trees_close(run(fox, fjnp.asarray), run(optax, jax.numpy.asarray), rtol=1e-5,
                       atol=1e-6)
