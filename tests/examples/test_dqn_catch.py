"""The Catch environment (bsuite dynamics, dm_env-style time steps) and the DQN example.

Oracles: the bsuite task definition (hand-checked trajectories), NumPy's RandomState for ball placement, real
bsuite when installed, and the learning curve of a short fixed-seed DQN run.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from fluxion.examples import dqn_catch
from fluxion.examples.catch import Catch, StepType


def _ball_and_paddle(obs):
    ys, xs = np.nonzero(obs)
    cells = set(zip(ys.tolist(), xs.tolist()))
    return cells


def test_reset_places_ball_like_bsuite():
    env = Catch(seed=3)
    expected_columns = np.random.RandomState(3).randint(5, size=1)  # first ball column drawn by bsuite
    ts = env.reset()
    assert ts.step_type == StepType.FIRST and ts.first() and ts.reward is None and ts.discount is None
    assert ts.observation.shape == (10, 5) and ts.observation.dtype == np.float32
    assert _ball_and_paddle(ts.observation) == {(0, int(expected_columns[0])), (9, 2)}


def test_paddle_moves_and_clips_ball_falls():
    env = Catch(seed=0)
    ts = env.reset()
    ball_x = next(x for y, x in _ball_and_paddle(ts.observation) if y == 0)
    ts = env.step(2)                      # right: paddle 2 -> 3, ball row 0 -> 1
    assert _ball_and_paddle(ts.observation) == {(1, ball_x), (9, 3)}
    assert ts.step_type == StepType.MID and ts.reward == 0. and ts.discount == 1.
    env.step(2)
    ts = env.step(2)                      # clipped at the right edge
    assert (9, 4) in _ball_and_paddle(ts.observation) and (3, ball_x) in _ball_and_paddle(ts.observation)
    ts = env.step(0)                      # left
    assert (9, 3) in _ball_and_paddle(ts.observation)
    with pytest.raises(ValueError, match="`action` must be in"):
        env.step(3)


@pytest.mark.parametrize("seed", range(5))
def test_episode_length_rewards_and_catching_policy(seed):
    env = Catch(seed=seed)
    for _ in range(3):
        ts = env.reset()
        ball_x = next(x for y, x in _ball_and_paddle(ts.observation) if y == 0)
        steps = 0
        while not ts.last():
            paddle_x = next(x for y, x in _ball_and_paddle(ts.observation) if y == 9)
            ts = env.step(1 + int(np.sign(ball_x - paddle_x)))   # move toward the ball's column
            steps += 1
            if not ts.last():
                assert ts.reward == 0. and ts.discount == 1.
        assert steps == 9 and ts.reward == 1. and ts.discount == 0.
    # Staying put catches only balls dropped in the middle column.
    env = Catch(seed=seed)
    ts = env.reset()
    ball_x = next(x for y, x in _ball_and_paddle(ts.observation) if y == 0)
    while not ts.last():
        ts = env.step(1)
    assert ts.reward == (1. if ball_x == 2 else -1.)
    assert env.bsuite_info()["total_regret"] == (0. if ball_x == 2 else 2.)
    assert env.step(1).first()            # stepping after the end starts a new episode


def test_specs_and_determinism():
    env = Catch(seed=7)
    assert env.action_spec().num_values == 3
    spec = env.observation_spec()
    assert spec.shape == (10, 5) and spec.generate_value().shape == (10, 5)
    a, b = Catch(seed=7), Catch(seed=7)
    obs_a = [a.reset().observation for _ in range(20)]
    obs_b = [b.reset().observation for _ in range(20)]
    np.testing.assert_array_equal(np.stack(obs_a), np.stack(obs_b))
    assert len({int(np.argmax(o[0])) for o in obs_a}) > 1


def test_matches_bsuite_catch():
    catch = pytest.importorskip("bsuite.environments.catch")
    ours, theirs = Catch(seed=11), catch.Catch(seed=11)
    rng = np.random.default_rng(0)
    for _ in range(30):
        action = int(rng.integers(0, 3))
        t1, t2 = ours.step(action), theirs.step(action)
        assert int(t1.step_type) == int(t2.step_type) and t1.reward == t2.reward and t1.discount == t2.discount
        np.testing.assert_array_equal(t1.observation, t2.observation)


def test_replay_buffer_ring_and_sampling():
    buf = dqn_catch.ReplayBuffer(capacity=3, obs_shape=(2,), seed=0)
    for i in range(5):
        buf.add(np.full(2, i), i, float(i), 0.99, np.full(2, i + 1))
    assert len(buf) == 3
    obs_tm1, a_tm1, r_t, discount_t, obs_t = buf.sample(50)
    assert set(a_tm1.tolist()) == {2, 3, 4}             # the two oldest transitions were overwritten
    np.testing.assert_array_equal(obs_t[:, 0], obs_tm1[:, 0] + 1)
    np.testing.assert_array_equal(r_t, a_tm1.astype(np.float32))


def test_short_dqn_run_learns():
    """250 episodes with the default hyper-parameters and seed 0: the mean return rises from about -0.6
    (random play) to well above 0.5 (the 2,000-episode run reaches 1.0)."""
    result = dqn_catch.train(dqn_catch.Config(episodes=250, seed=0), progress=False)
    returns = np.asarray(result["returns"])
    assert len(returns) == 250 and set(np.unique(returns)) <= {-1., 1.}
    first, last = returns[:50].mean(), returns[-50:].mean()
    assert first < 0.0, first
    assert last > 0.5, last
    assert result["episodes_per_second"] > 0


def test_main_cli_prints_rate_and_writes_tensorboard(tmp_path, capsys):
    pytest.importorskip("tensorboardX")
    result = dqn_catch.main(["--episodes", "5", "--no-progress", "--logdir", str(tmp_path)])
    out = capsys.readouterr().out
    assert "episodes/s" in out and "mean return over the last 100 episodes" in out
    assert len(result["returns"]) == 5
    assert any(name.startswith("events.out.tfevents") for name in os.listdir(tmp_path))
