"""DQN (Mnih et al. 2015) learns bsuite's Catch with fluxion's Haiku, RLax and Optax.

    python -m fluxion.examples.dqn_catch                        # 2,000 episodes, seed 0
    python -m fluxion.examples.dqn_catch --episodes 500 --logdir runs/dqn

The agent is the one of the RLax examples, written with the libraries' public APIs: a Haiku MLP Q-network on the
flattened 10x5 board (`hk.Sequential([hk.Flatten(), hk.nets.MLP([hidden, 3])])`), the Q-learning TD error
`rlax.q_learning` batched with `vmap` and squared with `rlax.l2_loss`, `optax.adam`, epsilon-greedy exploration
(`rlax.epsilon_greedy`, epsilon decayed linearly per environment step), a uniform replay buffer and a target
network copied every `--target-period` updates. The policy and the update step are jitted. A progress bar shows
the running mean return of the last 100 episodes; at the end the episodes per second are printed.

The training loop takes its libraries as arguments (`Libs`), so the same code runs on real JAX + Haiku + RLax +
Optax for comparison (see `benchmarks/dqn_catch.py`); by default it uses fluxion's.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from typing import Any, NamedTuple, Sequence

import numpy as np
from tqdm import tqdm

from fluxion.examples.catch import Catch

__all__ = ["Config", "Libs", "fluxion_libs", "ReplayBuffer", "train", "main"]


class Libs(NamedTuple):
    """The five libraries the agent is written against (fluxion's by default)."""

    jax: Any
    jnp: Any
    hk: Any
    rlax: Any
    optax: Any


def fluxion_libs() -> Libs:
    import fluxion
    import fluxion.haiku as hk
    import fluxion.numpy as jnp
    import fluxion.optax as optax
    import fluxion.rlax as rlax
    return Libs(fluxion, jnp, hk, rlax, optax)


@dataclasses.dataclass
class Config:
    """Hyper-parameters (defaults reach a mean return >= 0.9 well within 2,000 episodes)."""

    episodes: int = 2000
    seed: int = 0
    hidden_units: int = 50
    batch_size: int = 32
    learning_rate: float = 3e-3
    discount: float = 0.99
    replay_capacity: int = 5000
    target_period: int = 50
    epsilon_begin: float = 1.0
    epsilon_end: float = 0.01
    epsilon_steps: int = 2000


class ReplayBuffer:
    """A fixed-capacity ring buffer of transitions `(obs_tm1, a_tm1, r_t, discount_t, obs_t)`, sampled uniformly
    with replacement by a seeded NumPy generator."""

    def __init__(self, capacity: int, obs_shape: Sequence[int], seed: int):
        self._obs_tm1 = np.zeros((capacity, *obs_shape), np.float32)
        self._obs_t = np.zeros((capacity, *obs_shape), np.float32)
        self._a_tm1 = np.zeros(capacity, np.int32)
        self._r_t = np.zeros(capacity, np.float32)
        self._discount_t = np.zeros(capacity, np.float32)
        self._capacity = capacity
        self._size = 0
        self._next = 0
        self._rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return self._size

    def add(self, obs_tm1: np.ndarray, a_tm1: int, r_t: float, discount_t: float, obs_t: np.ndarray) -> None:
        i = self._next
        self._obs_tm1[i], self._a_tm1[i], self._r_t[i] = obs_tm1, a_tm1, r_t
        self._discount_t[i], self._obs_t[i] = discount_t, obs_t
        self._next = (i + 1) % self._capacity
        self._size = min(self._size + 1, self._capacity)

    def sample(self, batch_size: int) -> tuple[np.ndarray, ...]:
        idx = self._rng.integers(0, self._size, size=batch_size)
        return (self._obs_tm1[idx], self._a_tm1[idx], self._r_t[idx], self._discount_t[idx], self._obs_t[idx])


def _build_agent(libs: Libs, num_actions: int, cfg: Config):
    """The Q-network and the jitted policy / update functions."""
    jax, jnp, hk, rlax, optax = libs

    def q_network(obs):
        return hk.Sequential([hk.Flatten(), hk.nets.MLP([cfg.hidden_units, num_actions])])(obs)

    network = hk.without_apply_rng(hk.transform(q_network))
    optimizer = optax.adam(cfg.learning_rate)

    @jax.jit
    def policy(params, key, obs, epsilon):
        q = network.apply(params, obs[None])[0]
        return rlax.epsilon_greedy(epsilon).sample(key, q)

    def loss_fn(params, target_params, obs_tm1, a_tm1, r_t, discount_t, obs_t):
        q_tm1 = network.apply(params, obs_tm1)
        q_t = network.apply(target_params, obs_t)
        td_error = jax.vmap(rlax.q_learning)(q_tm1, a_tm1, r_t, discount_t, q_t)
        return jnp.mean(rlax.l2_loss(td_error))

    @jax.jit
    def update(params, target_params, opt_state, obs_tm1, a_tm1, r_t, discount_t, obs_t):
        loss, grads = jax.value_and_grad(loss_fn)(params, target_params, obs_tm1, a_tm1, r_t, discount_t, obs_t)
        updates, opt_state = optimizer.update(grads, opt_state)
        return optax.apply_updates(params, updates), opt_state, loss

    return network, optimizer, policy, update


def train(cfg: Config, libs: Libs | None = None, progress: bool = True, logdir: str | None = None) -> dict:
    """Trains for `cfg.episodes` episodes.

    Returns:
        dict with `returns` (list of episode returns), `mean_return_last_100`, `episodes_per_second` (wall time
        of the whole loop, compilation included), `wall_time`, `episode_end_times` (seconds since the loop
        started, one per episode), `params`.
    """
    libs = libs or fluxion_libs()
    env = Catch(seed=cfg.seed)
    num_actions = env.action_spec().num_values
    network, optimizer, policy, update = _build_agent(libs, num_actions, cfg)
    keys = libs.hk.PRNGSequence(cfg.seed)
    params = network.init(next(keys), env.observation_spec().generate_value()[None])
    target_params = params
    opt_state = optimizer.init(params)
    replay = ReplayBuffer(cfg.replay_capacity, env.observation_spec().shape, seed=cfg.seed)
    writer = None
    if logdir:
        from tensorboardX import SummaryWriter
        writer = SummaryWriter(logdir)
        writer.add_text("config", str(dataclasses.asdict(cfg)))

    returns: list[float] = []
    episode_end_times: list[float] = []
    env_steps = num_updates = 0
    t0 = time.perf_counter()
    bar = tqdm(range(cfg.episodes), desc="DQN on Catch", disable=not progress, file=sys.stdout, mininterval=0.5)
    for episode in bar:
        timestep = env.reset()
        episode_return, losses = 0.0, []
        while not timestep.last():
            frac = min(env_steps / max(cfg.epsilon_steps, 1), 1.0)
            epsilon = cfg.epsilon_begin + frac * (cfg.epsilon_end - cfg.epsilon_begin)
            action = int(policy(params, next(keys), timestep.observation, np.float32(epsilon)))
            next_timestep = env.step(action)
            replay.add(timestep.observation, action, next_timestep.reward,
                       next_timestep.discount * cfg.discount, next_timestep.observation)
            episode_return += next_timestep.reward
            timestep = next_timestep
            env_steps += 1
            if len(replay) >= cfg.batch_size:
                params, opt_state, loss = update(params, target_params, opt_state, *replay.sample(cfg.batch_size))
                losses.append(loss)
                num_updates += 1
                if num_updates % cfg.target_period == 0:
                    target_params = params
        returns.append(episode_return)
        episode_end_times.append(time.perf_counter() - t0)
        mean_100 = float(np.mean(returns[-100:]))
        if episode % 10 == 0 or episode == cfg.episodes - 1:
            bar.set_postfix(mean_return=f"{mean_100:+.2f}", epsilon=f"{epsilon:.2f}")
        if writer is not None:
            writer.add_scalar("episode/return", episode_return, episode)
            writer.add_scalar("episode/mean_return_100", mean_100, episode)
            writer.add_scalar("train/epsilon", epsilon, episode)
            if losses:
                writer.add_scalar("train/loss", float(np.mean([float(v) for v in losses])), episode)
    wall = time.perf_counter() - t0
    if writer is not None:
        writer.close()
    return dict(returns=returns, mean_return_last_100=float(np.mean(returns[-100:])) if returns else float("nan"),
                episodes_per_second=len(returns) / wall if wall > 0 else float("nan"), wall_time=wall,
                episode_end_times=episode_end_times, params=params)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    defaults = Config()
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    for field in dataclasses.fields(Config):
        p.add_argument("--" + field.name.replace("_", "-"), type=type(getattr(defaults, field.name)),
                       default=getattr(defaults, field.name))
    p.add_argument("--logdir", default=None, help="write TensorBoard event files here")
    p.add_argument("--no-progress", action="store_true", help="disable the progress bar")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> dict:
    args = parse_args(argv)
    cfg = Config(**{f.name: getattr(args, f.name) for f in dataclasses.fields(Config)})
    result = train(cfg, progress=not args.no_progress, logdir=args.logdir)
    print(f"Done: {cfg.episodes} episodes, mean return over the last 100 episodes "
          f"{result['mean_return_last_100']:+.3f}, {result['episodes_per_second']:.1f} episodes/s "
          f"(wall time {result['wall_time']:.1f} s)")
    return result


if __name__ == "__main__":
    main()
