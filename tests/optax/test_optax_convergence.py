"""Every optimizer minimises a parabola and the Rosenbrock function.

Targets and tolerances follow optax's own alias tests (start points, minima,
rtol = atol = 3e-2); learning rates and step budgets are chosen so each run
converges within the budget while keeping the file fast. No oracle needed:
the known minimum is the reference.
"""

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
import fluxion.optax as optax

PARABOLA_START, PARABOLA_MIN = [-1.0, 10.0, 1.0], [1.0, -1.0, 1.0]
ROSENBROCK_START, ROSENBROCK_MIN = [0.0, 0.0], [1.0, 1.0]


def parabola(x):
    return jnp.sum((x - jnp.asarray(PARABOLA_MIN)) ** 2)


def rosenbrock(x):
    return (1.0 - x[0]) ** 2 + 100.0 * (x[1] - x[0] ** 2) ** 2


# (optimizer, kwargs, steps on the parabola, steps on Rosenbrock)
CASES = [
    ('sgd', dict(learning_rate=3e-2), 300, None),
    ('sgd', dict(learning_rate=2e-3), None, 3500),
    ('sgd', dict(learning_rate=1e-3, momentum=0.9), 400, 800),
    ('sgd', dict(learning_rate=1e-3, momentum=0.9, nesterov=True), 400, 800),
    ('adam', dict(learning_rate=1e-1), 400, 400),
    ('adamw', dict(learning_rate=1e-1), 400, 400),
    ('nadam', dict(learning_rate=3e-2), 1300, 600),
    ('rmsprop', dict(learning_rate=5e-2), 400, None),
    ('rmsprop', dict(learning_rate=1e-2), None, 3000),
    ('rmsprop', dict(learning_rate=5e-3, momentum=0.9), 500, 300),
    ('rmsprop', dict(learning_rate=1e-2, centered=True), 500, 3000),
    ('adagrad', dict(learning_rate=2.0), 200, None),
    ('adagrad', dict(learning_rate=0.5), None, 3000),
    ('adafactor', dict(learning_rate=5e-2), 500, None),
    ('adafactor', dict(learning_rate=5e-3), None, 5000),
    # LAMB and Lion take steps of a fixed size (trust ratio / sign), so with a
    # constant rate they orbit the minimum of the parabola at a distance ~lr:
    # a decaying schedule makes the end point robust to rounding differences.
    ('lamb', dict(learning_rate=optax.cosine_decay_schedule(0.05, 300)), 300, None),
    ('lamb', dict(learning_rate=3e-3), None, 3000),
    ('lion', dict(learning_rate=optax.cosine_decay_schedule(0.1, 800), weight_decay=1e-4),
     800, None),
    ('lion', dict(learning_rate=1e-2, weight_decay=1e-4), None, 1000),
]

PARAMS = []
for name, kwargs, parabola_steps, rosenbrock_steps in CASES:
    label = name + ''.join(f'-{k}={v if not callable(v) else "schedule"}'
                           for k, v in kwargs.items())
    if parabola_steps:
        PARAMS.append(pytest.param(name, kwargs, 'parabola', parabola_steps,
                                   id=label + '-parabola'))
    if rosenbrock_steps:
        PARAMS.append(pytest.param(name, kwargs, 'rosenbrock', rosenbrock_steps,
                                   id=label + '-rosenbrock'))

TARGETS = {
    'parabola': (parabola, PARABOLA_START, PARABOLA_MIN),
    'rosenbrock': (rosenbrock, ROSENBROCK_START, ROSENBROCK_MIN),
}


@pytest.mark.parametrize('name, kwargs, target, steps', PARAMS)
def test_optimizer_converges(name, kwargs, target, steps):
    objective, start, minimum = TARGETS[target]
    opt = getattr(optax, name)(**kwargs)

    @fluxion.jit
    def step(params, state):
        grads = fluxion.grad(objective)(params)
        updates, state = opt.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    params = jnp.asarray(start, dtype=jnp.float32)
    state = opt.init(params)
    for _ in range(steps):
        params, state = step(params, state)
    np.testing.assert_allclose(np.asarray(params), minimum, rtol=3e-2, atol=3e-2)
    assert np.asarray(params).dtype == np.float32


def test_loss_decreases_with_schedule_and_clipping():
    """A realistic chain: clipping + AdamW with warmup-cosine schedule."""
    schedule = optax.warmup_cosine_decay_schedule(0.0, 0.1, 20, 300, end_value=1e-3)
    opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(schedule, weight_decay=0.0))
    params = {'x': jnp.asarray(PARABOLA_START)}
    state = opt.init(params)

    @fluxion.jit
    def step(params, state):
        loss, grads = fluxion.value_and_grad(lambda p: parabola(p['x']))(params)
        updates, state = opt.update(grads, state, params)
        return optax.apply_updates(params, updates), state, loss

    losses = []
    for _ in range(300):
        params, state, loss = step(params, state)
        losses.append(float(loss))
    assert losses[-1] < 1e-3 * losses[0]
    np.testing.assert_allclose(np.asarray(params['x']), PARABOLA_MIN, atol=3e-2)
