"""fluxion.rlax: every op against a hand-computed value, under `jit` and `vmap`, gradient stopping on targets,
rank/dtype errors, and against real RLax (when installed) on random inputs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
import fluxion.rlax as rlax
from fluxion import random

f32 = np.float32

# name -> (args, hand-computed expected value). Values worked out by hand from the equations in the docstrings.
Q_TM1 = np.array([1., 2., 3.], f32)
Q_T = np.array([0.5, 4., -1.], f32)
HAND = {
    # target = 1 + 0.5 * max(q_t) = 3; error = 3 - q_tm1[0] = 2
    "q_learning": ((Q_TM1, 0, f32(1.), f32(0.5), Q_T), 2.0),
    # selector argmax = 2 -> q_t_value[2] = -1: target = 1 - 0.5 = 0.5; error = 0.5 - q_tm1[1] = -1.5
    "double_q_learning": ((Q_TM1, 1, f32(1.), f32(0.5), Q_T, np.array([0., 1., 2.], f32)), -1.5),
    # target = 1 + 0.5 * q_t[1] = 3; error = 3 - 3 = 0
    "sarsa": ((Q_TM1, 2, f32(1.), f32(0.5), Q_T, 1), 0.0),
    # E[q_t] = 0.5*0.5 + 0.25*4 + 0.25*(-1) = 1; target = 1 + 0.5 = 1.5; error = 1.5 - 2 = -0.5
    "expected_sarsa": ((Q_TM1, 1, f32(1.), f32(0.5), Q_T, np.array([.5, .25, .25], f32)), -0.5),
    # target = 1 + 0.9 * 2 = 2.8; error = 2.8 - 0.5 = 2.3
    "td_learning": ((f32(0.5), f32(1.), f32(0.9), f32(2.)), 2.3),
    # G_i = r_i + g_i ((1 - l) v_i + l G_{i+1}) backwards: G2 = 3 + 0 = 3; G1 = 2 + 1 (.5*2 + .5*3) = 4.5;
    # G0 = 1 + .5 (.5*1 + .5*4.5) = 2.375
    "lambda_returns": ((np.array([1., 2., 3.], f32), np.array([.5, 1., 0.], f32), np.array([1., 2., 5.], f32),
                        f32(0.5)), [2.375, 4.5, 3.]),
    # same returns minus v_tm1 = [0, 1, 2]
    "td_lambda": ((np.array([0., 1., 2.], f32), np.array([1., 2., 3.], f32), np.array([.5, 1., 0.], f32),
                   np.array([1., 2., 5.], f32), f32(0.5)), [2.375, 3.5, 1.]),
    # G2 = 3 + 0.5*10 = 8, G1 = 2 + 0.5*8 = 6, G0 = 1 + 0.5*6 = 4
    "discounted_returns": ((np.array([1., 2., 3.], f32), np.full(3, .5, f32), f32(10.)), [4., 6., 8.]),
    # n=2, lambda=1 (array index i holds r_{i+1}, g_{i+1}, v_{i+1}): G0 = r[0] + g[0] (r[1] + g[1] v[1]) =
    # 1 + .5 (2 + .5*5) = 3.25; G1 = 2 + .5 (3 + .5*6) = 5; G2 = 3 + .5 (0 + 1*6) = 6 (padded past the end with
    # zero reward, unit discount and the last value)
    "n_step_bootstrapped_returns": ((np.array([1., 2., 3.], f32), np.full(3, .5, f32),
                                     np.array([4., 5., 6.], f32), 2), [3.25, 5., 6.]),
    # rho = [2, 0.5], clip 1: c = [1, 0.5], rho' = [1, 0.5];
    # delta = rho' * (r + g v_t - v_tm1) = [1*(1 + .5*2 - 1), .5*(0 + 1*4 - 2)] = [1, 1]
    # e1 = 1; e0 = 1 + .5 * 1 * 1 = 1.5
    "vtrace": ((np.array([1., 2.], f32), np.array([2., 4.], f32), np.array([1., 0.], f32), np.array([.5, 1.], f32),
                np.array([2., .5], f32)), [1.5, 1.]),
    # uniform logits over 2 actions: log pi = log .5; loss = mean(-log .5 * adv * w) = log2 * mean([2*1, 1*.5])
    "policy_gradient_loss": ((np.zeros((2, 2), f32), np.array([0, 1]), np.array([2., 1.], f32),
                              np.array([1., .5], f32)), np.log(2) * 1.25),
    # entropy of uniform over 4 = log 4; loss = -mean(log4 * w)
    "entropy_loss": ((np.zeros((2, 4), f32), np.array([1., 3.], f32)), -np.log(4) * 2.),
    "l2_loss": ((np.array([1., -2., 0.], f32),), [0.5, 2., 0.]),
    # |x| <= 1: x^2/2; else 0.5 + (|x| - 1)
    "huber_loss": ((np.array([0.5, -3., 1.], f32),), [0.125, 2.5, 0.5]),
}


def _fl(args):
    return tuple(jnp.asarray(a) if isinstance(a, np.ndarray) or isinstance(a, np.floating) else a for a in args)


@pytest.mark.parametrize("name", sorted(HAND))
def test_hand_computed_value(name):
    args, expected = HAND[name]
    out = getattr(rlax, name)(*_fl(args))
    np.testing.assert_allclose(np.asarray(out), np.asarray(expected, f32), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(HAND))
def test_under_jit(name):
    args, expected = HAND[name]
    fn = getattr(rlax, name)
    if name == "n_step_bootstrapped_returns":  # n is a static Python int
        out = fluxion.jit(lambda *a: fn(*a, 2))(*_fl(args[:3]))
    else:
        out = fluxion.jit(fn)(*_fl(args))
    np.testing.assert_allclose(np.asarray(out), np.asarray(expected, f32), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(HAND))
def test_under_vmap(name):
    """Stacking the same example 3 times along a new batch axis gives 3 copies of the answer."""
    args, expected = HAND[name]
    fn = getattr(rlax, name)
    if name == "n_step_bootstrapped_returns":
        fn, args = (lambda *a: getattr(rlax, name)(*a, 2)), args[:3]
    batched = tuple(jnp.stack([jnp.asarray(a)] * 3) for a in args)
    out = fluxion.vmap(fn)(*batched)
    np.testing.assert_allclose(np.asarray(out), np.stack([np.asarray(expected, f32)] * 3), rtol=1e-5, atol=1e-6)


def test_batched_q_learning_matches_loop():
    rng = np.random.default_rng(0)
    q_tm1, q_t = rng.standard_normal((5, 3)).astype(f32), rng.standard_normal((5, 3)).astype(f32)
    a, r, g = rng.integers(0, 3, 5), rng.standard_normal(5).astype(f32), rng.uniform(size=5).astype(f32)
    out = fluxion.jit(fluxion.vmap(rlax.q_learning))(*map(jnp.asarray, (q_tm1, a, r, g, q_t)))
    expected = r + g * q_t.max(-1) - q_tm1[np.arange(5), a]
    np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-5)


def test_targets_stop_gradients():
    r, g = jnp.float32(1.), jnp.float32(0.5)
    q = jnp.asarray(Q_TM1)
    # Same array as both q_tm1 and q_t: only the -q_tm1[a] path carries gradient.
    grad = fluxion.grad(lambda q: rlax.q_learning(q, 0, r, g, q))(q)
    np.testing.assert_allclose(np.asarray(grad), [-1., 0., 0.])
    grad = fluxion.grad(lambda q: rlax.q_learning(q, 0, r, g, q, stop_target_gradients=False))(q)
    np.testing.assert_allclose(np.asarray(grad), [-1., 0., 0.5])
    v = jnp.asarray(np.array([1., 2.], f32))
    args = HAND["vtrace"][0]
    grad = fluxion.grad(lambda v: jnp.sum(rlax.vtrace(v, v, *_fl(args[2:]))))(v)
    np.testing.assert_allclose(np.asarray(grad), [-1., -1.])
    grad = fluxion.grad(lambda v: rlax.td_learning(v[0], r, g, v[1]))(v)
    np.testing.assert_allclose(np.asarray(grad), [-1., 0.])
    # Advantages in the policy-gradient loss are treated as constants.
    logits, a, adv, w = _fl(HAND["policy_gradient_loss"][0])
    grad = fluxion.grad(lambda adv: rlax.policy_gradient_loss(logits, a, adv, w))(adv)
    np.testing.assert_allclose(np.asarray(grad), [0., 0.])


def test_l2_and_huber_gradients():
    x = jnp.asarray(np.array([0.5, -3., 2.], f32))
    np.testing.assert_allclose(np.asarray(fluxion.grad(lambda x: jnp.sum(rlax.l2_loss(x)))(x)), [0.5, -3., 2.])
    np.testing.assert_allclose(np.asarray(fluxion.grad(lambda x: jnp.sum(rlax.huber_loss(x)))(x)), [0.5, -1., 1.])


@pytest.mark.parametrize("call,match", [
    (lambda: rlax.q_learning(jnp.ones((2, 3)), 0, 1., .5, jnp.ones(3)),
     r"q_learning: `q_tm1` must have rank 1, got rank 2 \(shape \(2, 3\)\)"),
    (lambda: rlax.q_learning(jnp.ones(3), 0.5, 1., .5, jnp.ones(3)),
     r"q_learning: `a_tm1` must have an integer dtype, got float32"),
    (lambda: rlax.sarsa(jnp.ones(3), 0, 1, .5, jnp.ones(3), 1), r"sarsa: `r_t` must have a floating dtype, got int32"),
    (lambda: rlax.td_lambda(jnp.ones(3), jnp.ones(3), jnp.ones(3), jnp.ones(3), jnp.ones((2, 2))),
     r"td_lambda: `lambda_` must have rank 0 or 1, got rank 2"),
    (lambda: rlax.lambda_returns(jnp.ones(3), jnp.ones(4), jnp.ones(3)),
     r"lambda_returns: arguments must have equal shapes, got `r_t` \(3,\), `discount_t` \(4,\), `v_t` \(3,\)"),
    (lambda: rlax.policy_gradient_loss(jnp.ones(3), jnp.ones(3, jnp.int32), jnp.ones(3), jnp.ones(3)),
     r"policy_gradient_loss: `logits_t` must have rank 2"),
    (lambda: rlax.huber_loss(jnp.ones(3, jnp.int32)), r"huber_loss: `x` must have a floating dtype"),
    (lambda: rlax.vtrace(jnp.ones(2), jnp.ones(2), jnp.ones(2), jnp.ones(2), jnp.ones(2),
                         sample_mask=jnp.ones(2)), r"vtrace: `sample_mask` must have bool"),
])
def test_bad_input_errors_name_the_argument(call, match):
    with pytest.raises(rlax.RLaxInputError, match=match) as info:
        call()
    assert isinstance(info.value, ValueError) and isinstance(info.value, AssertionError)


def test_checks_also_fire_under_jit():
    with pytest.raises(rlax.RLaxInputError, match="`q_t` must have rank 1"):
        fluxion.jit(rlax.q_learning)(jnp.ones(3), 0, 1., .5, jnp.ones((3, 1)))


# ---------------------------------------------------------------------------------------------------------------
# Action distributions.

PREFS = np.array([[1., 3., 3., 0.], [0.5, 0.1, -2., 0.4]], f32)


def test_greedy_and_epsilon_greedy_probs_logprob_entropy():
    probs = np.asarray(rlax.greedy().probs(jnp.asarray(PREFS)))
    np.testing.assert_allclose(probs, [[0, .5, .5, 0], [1, 0, 0, 0]])
    eps = rlax.epsilon_greedy(0.2)
    np.testing.assert_allclose(np.asarray(eps.probs(jnp.asarray(PREFS))),
                               [[.05, .45, .45, .05], [.85, .05, .05, .05]], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(eps.logprob(jnp.array([1, 3]), jnp.asarray(PREFS))),
                               np.log([.45, .05]), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(rlax.greedy().entropy(jnp.asarray(PREFS))), [np.log(2), 0.], atol=1e-6)
    np.testing.assert_allclose(np.asarray(rlax.greedy().logprob(jnp.array([0, 0]), jnp.asarray(PREFS))),
                               [-np.inf, 0.])
    # epsilon can be overridden per call (and traced under jit).
    p = fluxion.jit(lambda q, e: rlax.epsilon_greedy().probs(q, e))(jnp.asarray(PREFS[1]), jnp.float32(1.0))
    np.testing.assert_allclose(np.asarray(p), [.25] * 4, rtol=1e-6)


def test_softmax_distribution():
    logits = jnp.asarray(PREFS)
    d = rlax.softmax(temperature=2.)
    z = PREFS / 2. - np.log(np.exp(PREFS / 2.).sum(-1, keepdims=True))
    np.testing.assert_allclose(np.asarray(d.probs(logits)), np.exp(z), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(d.logprob(jnp.array([2, 0]), logits)), [z[0, 2], z[1, 0]], rtol=1e-5)
    np.testing.assert_allclose(np.asarray(d.entropy(logits)), -(np.exp(z) * z).sum(-1), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(d.kl(logits, logits)), [0., 0.], atol=1e-6)


def test_sampling_frequencies_and_determinism():
    keys = random.split(random.PRNGKey(0), 2000)
    q = jnp.asarray(np.array([0., 1., 0.5], f32))
    samples = np.asarray(fluxion.vmap(lambda k: rlax.epsilon_greedy(0.3).sample(k, q))(keys))
    freqs = np.bincount(samples, minlength=3) / len(samples)
    np.testing.assert_allclose(freqs, [0.1, 0.8, 0.1], atol=0.03)
    assert samples.dtype == np.int32
    greedy = np.asarray(fluxion.vmap(lambda k: rlax.greedy().sample(k, jnp.asarray(PREFS[0])))(keys[:400]))
    assert set(greedy.tolist()) == {1, 2}          # ties broken at random between the two maxima
    a1 = rlax.softmax().sample(random.PRNGKey(5), jnp.asarray(PREFS))
    a2 = rlax.softmax().sample(random.PRNGKey(5), jnp.asarray(PREFS))
    np.testing.assert_array_equal(np.asarray(a1), np.asarray(a2))
    assert a1.shape == (2,)
    invalid = rlax.categorical_sample(random.PRNGKey(0), jnp.asarray(np.array([-1., 2.], f32)))
    assert int(invalid) == -1


def test_periodic_update():
    new, old = {"w": jnp.ones(2)}, {"w": jnp.zeros(2)}
    assert float(rlax.periodic_update(new, old, jnp.int32(10), 5)["w"][0]) == 1.
    assert float(rlax.periodic_update(new, old, jnp.int32(11), 5)["w"][0]) == 0.
    out = fluxion.jit(lambda s: rlax.periodic_update(new, old, s, 5))(jnp.int32(15))
    assert float(out["w"][1]) == 1.


# ---------------------------------------------------------------------------------------------------------------
# Real RLax as an oracle (random inputs; identical PRNG draws for sampling).


def _real_rlax():
    real = pytest.importorskip("rlax")
    jax = pytest.importorskip("jax")
    warnings.simplefilter("ignore", PendingDeprecationWarning)
    return real, jax


def _random_case(name, rng):
    T, A = 7, 4
    n = lambda *s: rng.standard_normal(s).astype(f32)  # noqa: E731
    u = lambda *s: rng.uniform(0, 1, s).astype(f32)  # noqa: E731
    a = lambda *s: rng.integers(0, A, s).astype(np.int32)  # noqa: E731
    return {
        "q_learning": (n(A), a(), n(), u(), n(A)),
        "double_q_learning": (n(A), a(), n(), u(), n(A), n(A)),
        "sarsa": (n(A), a(), n(), u(), n(A), a()),
        "expected_sarsa": (n(A), a(), n(), u(), n(A), u(A)),
        "td_learning": (n(), n(), u(), n()),
        "td_lambda": (n(T), n(T), u(T), n(T), u()),
        "lambda_returns": (n(T), u(T), n(T), u(T)),
        "discounted_returns": (n(T), u(T), n(T)),
        "vtrace": (n(T), n(T), n(T), u(T), 2 * u(T), u()),
        "policy_gradient_loss": (n(T, A), a(T), n(T), u(T)),
        "entropy_loss": (n(T, A), u(T)),
        "l2_loss": (n(T), n(T)),
        "huber_loss": (3 * n(T), f32(1.5)),
    }[name]


@pytest.mark.parametrize("name", sorted(HAND))
def test_matches_real_rlax(name, rng):
    real, jax = _real_rlax()
    if name == "n_step_bootstrapped_returns":
        for n in (1, 3, 9):
            args = (rng.standard_normal(7).astype(f32), rng.uniform(size=7).astype(f32),
                    rng.standard_normal(7).astype(f32))
            np.testing.assert_allclose(np.asarray(rlax.n_step_bootstrapped_returns(*_fl(args), n, 0.7)),
                                       np.asarray(real.n_step_bootstrapped_returns(*args, n, 0.7)), rtol=1e-5,
                                       atol=1e-6)
        return
    args = _random_case(name, rng)
    ours = getattr(rlax, name)(*_fl(args))
    theirs = getattr(real, name)(*(jax.numpy.asarray(x) for x in args))
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dist", ["greedy", "epsilon_greedy", "softmax"])
def test_distributions_match_real_rlax(dist, rng):
    real, jax = _real_rlax()
    make = {"greedy": lambda m: m.greedy(), "epsilon_greedy": lambda m: m.epsilon_greedy(0.3),
            "softmax": lambda m: m.softmax(0.7)}[dist]
    ours, theirs = make(rlax), make(real)
    prefs = np.round(rng.standard_normal((3, 5)), 1).astype(f32)
    prefs[0, 1] = prefs[0, 3] = prefs[0].max() + 1   # a tie
    for seed in range(8):
        np.testing.assert_array_equal(np.asarray(ours.sample(random.PRNGKey(seed), jnp.asarray(prefs))),
                                      np.asarray(theirs.sample(jax.random.PRNGKey(seed), prefs)))
    acts = np.array([1, 0, 4])
    np.testing.assert_allclose(np.asarray(ours.probs(jnp.asarray(prefs))), np.asarray(theirs.probs(prefs)),
                               rtol=1e-6)
    np.testing.assert_allclose(np.asarray(ours.logprob(jnp.asarray(acts), jnp.asarray(prefs))),
                               np.asarray(theirs.logprob(acts, prefs)), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(ours.entropy(jnp.asarray(prefs))), np.asarray(theirs.entropy(prefs)),
                               rtol=1e-5, atol=1e-6)
