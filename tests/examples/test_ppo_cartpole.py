"""The CartPole-v1 environment and the PPO example.

Oracles: the equations of motion as published by Barto, Sutton & Anderson (1983) (written here in their own form,
scalar, with `math`), one step worked out by hand in exact fractions, a NumPy backward recursion and RLax for GAE,
and the learning curve of a short fixed-seed PPO run.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import fluxion
from fluxion.examples import cartpole, ppo_cartpole
from fluxion.examples.cartpole import CartPole


def published_step(state, action):
    """One Euler step of Barto et al. (1983), eqs. for theta'' and x'' without friction, Gymnasium's constants."""
    x, x_dot, th, th_dot = (float(v) for v in state)
    g, mc, m, half_l, tau = 9.8, 1.0, 0.1, 0.5, 0.02
    force = 10.0 if action == 1 else -10.0
    th_acc = ((g * math.sin(th) + math.cos(th) * (-force - m * half_l * th_dot ** 2 * math.sin(th)) / (mc + m))
              / (half_l * (4.0 / 3.0 - m * math.cos(th) ** 2 / (mc + m))))
    x_acc = (force + m * half_l * (th_dot ** 2 * math.sin(th) - th_acc * math.cos(th))) / (mc + m)
    return [x + tau * x_dot, x_dot + tau * x_acc, th + tau * th_dot, th_dot + tau * th_acc]


def test_first_push_from_rest_matches_hand_computation():
    # From rest, pushing right: theta'' = -600/41 and x'' = 4400/451 exactly, so after one Euler step
    # x_dot = 0.02 * 4400/451 = 88/451 and theta_dot = -0.02 * 600/41 = -12/41; positions are unchanged.
    nxt = cartpole.dynamics(np.zeros(4), np.array(1))
    np.testing.assert_allclose(nxt, [0.0, 88 / 451, 0.0, -12 / 41], rtol=1e-14, atol=1e-15)
    # Pushing left mirrors it.
    np.testing.assert_allclose(cartpole.dynamics(np.zeros(4), np.array(0)), [0.0, -88 / 451, 0.0, 12 / 41],
                               rtol=1e-14, atol=1e-15)


def test_dynamics_follow_published_equations_along_a_trajectory():
    rng = np.random.default_rng(0)
    state = np.array([0.1, -0.3, 0.05, 0.4])
    for _ in range(30):
        action = int(rng.integers(2))
        expected = published_step(state, action)
        state = cartpole.dynamics(state, np.array(action))
        np.testing.assert_allclose(state, expected, rtol=1e-12, atol=1e-12)


def test_vectorised_step_equals_per_env_dynamics_and_reports_rewards():
    env = CartPole(num_envs=5, seed=1)
    obs = env.reset()
    assert obs.shape == (5, 4) and obs.dtype == np.float32 and np.all(np.abs(obs) <= 0.05)
    before = env.state.copy()
    actions = np.array([0, 1, 1, 0, 1])
    res = env.step(actions)
    for i in range(5):
        np.testing.assert_allclose(env.state[i], published_step(before[i], actions[i]), rtol=1e-12, atol=1e-12)
    assert res.reward.dtype == np.float32 and np.all(res.reward == 1.0)
    assert not res.terminated.any() and not res.truncated.any()
    np.testing.assert_array_equal(res.obs, res.final_obs)


@pytest.mark.parametrize("index,value", [(2, 0.2095), (2, -0.2095), (0, 2.399), (0, -2.399)])
def test_termination_beyond_12_degrees_or_2_4_metres_then_reset(index, value):
    env = CartPole(num_envs=2, seed=0)
    env.reset()
    env.state[0] = 0.0
    env.state[0, index] = value
    # Moving further out: the velocity of the same sign carries the state past the limit in one step.
    env.state[0, index + 1] = math.copysign(5.0, value)
    res = env.step(np.array([1, 1]))
    assert res.terminated.tolist() == [True, False] and not res.truncated.any()
    assert abs(res.final_obs[0, index]) > (cartpole.THETA_LIMIT if index == 2 else cartpole.X_LIMIT)
    assert np.all(np.abs(res.obs[0]) <= 0.05) and env.elapsed[0] == 0  # the finished env was reset


def test_limits_are_strict_inequalities():
    assert cartpole.THETA_LIMIT == pytest.approx(12 * math.pi / 180)
    env = CartPole(num_envs=1, seed=0)
    env.reset()
    env.state[0] = [2.4, 0.0, 0.0, 0.0]  # zero velocity: x stays exactly at 2.4 this step, which is allowed
    res = env.step(np.array([1]))
    assert res.final_obs[0, 0] == np.float32(2.4) and not res.terminated[0]


def test_truncation_at_the_time_limit():
    env = CartPole(num_envs=3, seed=2, max_episode_steps=4)
    env.reset()
    for _ in range(4):
        res = env.step(np.array([0, 1, 0]))
    assert res.truncated.all() and not res.terminated.any()
    assert np.all(env.elapsed == 0)
    assert not np.array_equal(res.obs, res.final_obs)
    assert CartPole().max_episode_steps == 500


def test_bad_actions_and_sizes_raise():
    env = CartPole(num_envs=2, seed=0)
    env.reset()
    with pytest.raises(ValueError, match="shape"):
        env.step(np.array([1]))
    with pytest.raises(ValueError, match="0 or 1"):
        env.step(np.array([0, 2]))
    with pytest.raises(ValueError, match="num_envs"):
        CartPole(num_envs=0)


def _gae_numpy(r, d, v, lam):
    adv = np.zeros_like(r)
    acc = np.zeros(r.shape[1], r.dtype)
    for t in reversed(range(len(r))):
        acc = r[t] + d[t] * v[t + 1] - v[t] + d[t] * lam * acc
        adv[t] = acc
    return adv


def _rollout(seed, T=7, N=3):
    rng = np.random.default_rng(seed)
    r = rng.normal(size=(T, N)).astype(np.float32)
    d = (0.99 * (rng.random((T, N)) > 0.2)).astype(np.float32)
    v = rng.normal(size=(T + 1, N)).astype(np.float32)
    return r, d, v


def test_gae_over_environments_matches_backward_recursion():
    r, d, v = _rollout(0)
    expected = _gae_numpy(r, d, v, 0.95)
    np.testing.assert_allclose(np.asarray(ppo_cartpole.gae(r, d, v, 0.95)), expected, rtol=1e-5, atol=1e-5)
    jitted = fluxion.jit(ppo_cartpole.gae)
    np.testing.assert_allclose(np.asarray(jitted(r, d, v, np.float32(0.95))), expected, rtol=1e-5, atol=1e-5)


def test_gae_matches_rlax():
    rlax = pytest.importorskip("rlax")
    r, d, v = _rollout(1)
    expected = np.stack([np.asarray(rlax.truncated_generalized_advantage_estimation(r[:, i], d[:, i], 0.95, v[:, i]))
                         for i in range(r.shape[1])], axis=1)
    np.testing.assert_allclose(np.asarray(ppo_cartpole.gae(r, d, v, 0.95)), expected, rtol=1e-5, atol=1e-6)


def test_time_limit_rewards_bootstrap_only_truncated_episodes():
    out = ppo_cartpole.time_limit_rewards(np.ones(3, np.float32), np.array([False, True, False]),
                                          np.array([5.0, 10.0, 20.0], np.float32), 0.9)
    assert out.dtype == np.float32 and out.tolist() == [1.0, 10.0, 1.0]


def test_training_through_time_limits(monkeypatch):
    """With a 6-step limit every episode is truncated and bootstrapped; training still runs and counts episodes."""
    monkeypatch.setattr(ppo_cartpole, "CartPole", lambda n, seed: CartPole(n, seed=seed, max_episode_steps=6))
    out = ppo_cartpole.train(ppo_cartpole.Config(num_envs=2, rollout_steps=12, minibatches=2, total_steps=48,
                                                 eval_after_return=1e9), verbose=False)
    assert out["env_steps"] == 48 and all(r <= 6 for r in out["episode_returns"])
    assert len(out["episode_returns"]) >= 8 and all(np.isfinite(out["losses"]))


def test_evaluate_counts_each_episode_once():
    # Always pushing right topples the pole after the same few steps from any reset state near 0.
    def push_right(params, obs):
        return np.ones(len(obs), np.int32)

    returns = ppo_cartpole.evaluate(push_right, None, num_episodes=4, seed=0)
    env = CartPole(num_envs=4, seed=0)
    env.reset()
    lengths = np.zeros(4)
    alive = np.ones(4, bool)
    while alive.any():
        res = env.step(np.ones(4, np.int32))
        lengths += alive
        alive &= ~res.terminated
    np.testing.assert_array_equal(returns, lengths)
    assert np.all((returns > 5) & (returns < 30))


SMOKE = ["--num-envs", "4", "--rollout-steps", "64", "--total-steps", "3072", "--learning-rate", "2.5e-3",
         "--quiet", "--eval-after-return", "1e9"]


def test_short_ppo_run_improves_the_return_and_is_reproducible(capsys):
    a = ppo_cartpole.main(SMOKE)
    rets = a["episode_returns"]
    assert a["env_steps"] == 3072 and len(a["losses"]) == 12 and not a["solved"]
    assert np.mean(rets[-10:]) > 1.5 * np.mean(rets[:10]), rets
    assert "Not solved" in capsys.readouterr().out
    b = ppo_cartpole.main(SMOKE)
    assert a["episode_returns"] == b["episode_returns"] and a["losses"] == b["losses"]


def test_config_errors():
    with pytest.raises(ValueError, match="divisible"):
        ppo_cartpole.train(ppo_cartpole.Config(num_envs=3, rollout_steps=5, minibatches=4), verbose=False)
    with pytest.raises(ValueError, match="schedule"):
        ppo_cartpole.make_optimizer(ppo_cartpole.Config(schedule="step"), 10)
