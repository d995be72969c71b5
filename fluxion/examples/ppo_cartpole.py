"""PPO (Schulman et al. 2017, "Proximal Policy Optimization Algorithms") solves CartPole-v1 with fluxion's Haiku,
RLax and Optax.

    python -m fluxion.examples.ppo_cartpole                 # seed 0, stops once solved
    python -m fluxion.examples.ppo_cartpole --seed 3 --total-steps 300000

The agent follows the usual PPO recipe for classic control (as in CleanRL's `ppo.py`): `--num-envs` CartPole
environments (`fluxion.examples.cartpole`, NumPy) run `--rollout-steps` steps with the current stochastic policy;
advantages come from `rlax.truncated_generalized_advantage_estimation` (GAE, Schulman et al. 2016), batched over the
environments with `vmap`; then `--epochs` passes over the rollout in `--minibatches` shuffled minibatches minimise
`rlax.clipped_surrogate_pg_loss` on the normalised advantages, plus a squared value error and an entropy bonus
(`rlax.entropy_loss`). Actor and critic are separate Haiku MLPs (`hk.nets.MLP`, tanh, orthogonal initialisation)
inside one `hk.transform`; the optimiser is `optax.chain(clip_by_global_norm, adam)` with a linearly (or cosine)
decayed learning rate. Acting, GAE and the minibatch update are `fluxion.jit`-compiled.

Episodes cut by the 500-step time limit are not treated as failures: the value of the last observation is added
to the final reward (discounted), so the critic does not learn that good states are terminal.

The task counts as solved when the greedy (argmax) policy's mean return over `--eval-episodes` (100) evaluation
episodes, run in separate environments seeded `--seed + 10000`, reaches 475 (Gymnasium's threshold); training stops
there (or at `--total-steps`) and the wall time and the number of training environment steps (evaluation steps not
counted) are printed. To keep evaluation cheap it runs every `--eval-every` updates, and only once the mean return
of the last 20 training episodes has reached `--eval-after-return`.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import time
from typing import Sequence

import numpy as np

import fluxion
import fluxion.haiku as hk
import fluxion.numpy as jnp
from fluxion import optax, random, rlax
from fluxion.examples.cartpole import MAX_EPISODE_STEPS, SOLVED_RETURN, CartPole

__all__ = ["Config", "make_network", "make_optimizer", "gae", "time_limit_rewards", "evaluate", "train", "main"]

NUM_ACTIONS = 2
OBS_SIZE = 4


@dataclasses.dataclass
class Config:
    """Hyper-parameters (CleanRL-like PPO settings for CartPole; see the README for a measured run)."""

    seed: int = 0
    total_steps: int = 500_000
    num_envs: int = 8
    rollout_steps: int = 128
    epochs: int = 4
    minibatches: int = 4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_epsilon: float = 0.2
    learning_rate: float = 1e-3
    schedule: str = "linear"
    entropy_coef: float = 0.01
    value_coef: float = 0.5
    max_grad_norm: float = 0.5
    hidden_units: int = 64
    eval_episodes: int = 100
    eval_every: int = 5
    eval_after_return: float = 200.0


def make_network(hidden_units: int) -> hk.Transformed:
    """`apply(params, obs (N, 4)) -> (logits (N, 2), values (N,))`: separate tanh actor and critic MLPs."""

    def actor_critic(obs):
        torso_init = hk.initializers.Orthogonal(math.sqrt(2.0))
        actor = hk.nets.MLP([hidden_units, hidden_units], w_init=torso_init, activation=jnp.tanh,
                            activate_final=True, name="actor_torso")
        critic = hk.nets.MLP([hidden_units, hidden_units], w_init=torso_init, activation=jnp.tanh,
                             activate_final=True, name="critic_torso")
        # Small policy-head weights start the policy near uniform; unit-scale value head (Andrychowicz et al. 2021).
        logits = hk.Linear(NUM_ACTIONS, w_init=hk.initializers.Orthogonal(0.01), name="policy_head")(actor(obs))
        values = hk.Linear(1, w_init=hk.initializers.Orthogonal(1.0), name="value_head")(critic(obs))
        return logits, values[..., 0]

    return hk.without_apply_rng(hk.transform(actor_critic))


def make_optimizer(cfg: Config, num_updates: int) -> optax.GradientTransformation:
    """Global-norm clipping then Adam, with the learning rate decayed to 0 over all minibatch steps."""
    total = max(num_updates * cfg.epochs * cfg.minibatches, 1)
    if cfg.schedule == "linear":
        lr = optax.linear_schedule(cfg.learning_rate, 0.0, total)
    elif cfg.schedule == "cosine":
        lr = optax.cosine_decay_schedule(cfg.learning_rate, total)
    elif cfg.schedule == "constant":
        lr = cfg.learning_rate
    else:
        raise ValueError(f"schedule must be 'linear', 'cosine' or 'constant', got {cfg.schedule!r}")
    return optax.chain(optax.clip_by_global_norm(cfg.max_grad_norm), optax.adam(lr, eps=1e-5))


def gae(rewards, discounts, values, lambda_):
    """GAE for a `(T, N)` rollout of N environments: `values` is `(T + 1, N)` (bootstrap last); returns `(T, N)`."""
    per_env = fluxion.vmap(rlax.truncated_generalized_advantage_estimation, in_axes=(1, 1, None, 1), out_axes=1)
    return per_env(rewards, discounts, lambda_, values)


def time_limit_rewards(reward: np.ndarray, truncated: np.ndarray, final_values: np.ndarray,
                       gamma: float) -> np.ndarray:
    """Adds `gamma * V(final observation)` to the rewards of episodes cut by the time limit (not by failure).

    GAE then sees a zero discount at the cut, as for a real ending, but the bootstrapped reward carries the value
    the episode would have had (Pardo et al. 2018, "Time Limits in Reinforcement Learning"). All arrays `(N,)`.
    """
    return np.where(truncated, reward + gamma * final_values, reward).astype(reward.dtype)


def _build(cfg: Config, network: hk.Transformed, optimizer: optax.GradientTransformation):
    """The jitted acting, greedy-acting, advantage and minibatch-update functions."""

    @fluxion.jit
    def act(params, key, obs):
        logits, values = network.apply(params, obs)
        actions = random.categorical(key, logits)
        logp = jnp.take_along_axis(fluxion.nn.log_softmax(logits), actions[:, None], axis=-1)[:, 0]
        return actions, logp, values

    @fluxion.jit
    def greedy(params, obs):
        return jnp.argmax(network.apply(params, obs)[0], axis=-1)

    @fluxion.jit
    def value(params, obs):
        return network.apply(params, obs)[1]

    @fluxion.jit
    def advantages(rewards, discounts, values):
        adv = gae(rewards, discounts, values, cfg.gae_lambda)
        return adv, adv + values[:-1]

    def loss_fn(params, obs, actions, old_logp, adv, returns):
        logits, values = network.apply(params, obs)
        logp = jnp.take_along_axis(fluxion.nn.log_softmax(logits), actions[:, None], axis=-1)[:, 0]
        ratio = jnp.exp(logp - old_logp)
        adv = (adv - jnp.mean(adv)) / (jnp.std(adv) + 1e-8)
        pg_loss = rlax.clipped_surrogate_pg_loss(ratio, adv, cfg.clip_epsilon)
        value_loss = 0.5 * jnp.mean(jnp.square(values - returns))
        entropy_loss = rlax.entropy_loss(logits, jnp.ones_like(adv))
        total = pg_loss + cfg.value_coef * value_loss + cfg.entropy_coef * entropy_loss
        return total, (pg_loss, value_loss, -entropy_loss)

    @fluxion.jit
    def update(params, opt_state, obs, actions, old_logp, adv, returns):
        (loss, aux), grads = fluxion.value_and_grad(loss_fn, has_aux=True)(params, obs, actions, old_logp, adv,
                                                                           returns)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss, aux

    return act, greedy, value, advantages, update


def evaluate(greedy, params, num_episodes: int, seed: int) -> np.ndarray:
    """Returns of `num_episodes` episodes of the greedy policy, run side by side (one episode per environment)."""
    env = CartPole(num_episodes, seed=seed)
    obs = env.reset()
    returns = np.zeros(num_episodes, np.float32)
    running = np.ones(num_episodes, bool)
    for _ in range(MAX_EPISODE_STEPS):
        step = env.step(np.asarray(greedy(params, obs)).astype(np.int32))
        returns += running * step.reward
        running &= ~(step.terminated | step.truncated)
        if not running.any():
            break
        obs = step.obs
    return returns


def train(cfg: Config, verbose: bool = True) -> dict:
    """Trains until the greedy policy solves the task or `cfg.total_steps` environment steps have been taken.

    Returns:
        dict with `solved` (bool), `env_steps` (training steps taken), `wall_time` (seconds, compilation and
        evaluations included), `eval_return` (last evaluation's mean return, NaN if none), `evaluations` (list of
        `(env_steps, mean_return)`), `episode_returns` (finished training episodes, in order), `losses` (mean
        loss per update), `params`.
    """
    steps_per_update = cfg.num_envs * cfg.rollout_steps
    if steps_per_update % cfg.minibatches:
        raise ValueError(f"num_envs * rollout_steps ({steps_per_update}) must be divisible by minibatches "
                         f"({cfg.minibatches})")
    num_updates = max(cfg.total_steps // steps_per_update, 1)
    network = make_network(cfg.hidden_units)
    optimizer = make_optimizer(cfg, num_updates)
    act, greedy, value, advantages, update = _build(cfg, network, optimizer)

    t0 = time.perf_counter()
    key, init_key = random.split(random.PRNGKey(cfg.seed))
    params = network.init(init_key, np.zeros((1, OBS_SIZE), np.float32))
    opt_state = optimizer.init(params)
    env = CartPole(cfg.num_envs, seed=cfg.seed)
    shuffle_rng = np.random.default_rng(cfg.seed)
    obs = env.reset()

    T, N = cfg.rollout_steps, cfg.num_envs
    buf_obs = np.zeros((T, N, OBS_SIZE), np.float32)
    buf_act = np.zeros((T, N), np.int32)
    buf_logp = np.zeros((T, N), np.float32)
    buf_val = np.zeros((T + 1, N), np.float32)
    buf_rew = np.zeros((T, N), np.float32)
    buf_disc = np.zeros((T, N), np.float32)
    episode_len = np.zeros(N, np.int64)
    episode_returns: list[float] = []
    evaluations: list[tuple[int, float]] = []
    losses: list[float] = []
    env_steps = 0
    solved = False
    eval_return = float("nan")
    mb_size = steps_per_update // cfg.minibatches

    for update_i in range(1, num_updates + 1):
        for t in range(T):
            key, act_key = random.split(key)
            actions, logp, values = act(params, act_key, obs)
            actions = np.asarray(actions).astype(np.int32)
            step = env.step(actions)
            reward = step.reward
            if step.truncated.any():
                reward = time_limit_rewards(reward, step.truncated, np.asarray(value(params, step.final_obs)),
                                            cfg.gamma)
            buf_obs[t], buf_act[t], buf_logp[t], buf_val[t] = obs, actions, np.asarray(logp), np.asarray(values)
            buf_rew[t] = reward
            buf_disc[t] = cfg.gamma * ~(step.terminated | step.truncated)
            episode_len += 1
            for i in np.flatnonzero(step.terminated | step.truncated):
                episode_returns.append(float(episode_len[i]))  # reward 1 per step
                episode_len[i] = 0
            obs = step.obs
        env_steps += steps_per_update
        buf_val[T] = np.asarray(value(params, obs))
        adv, returns = advantages(buf_rew, buf_disc, buf_val)

        flat = [a.reshape(T * N, *a.shape[2:]) for a in (buf_obs, buf_act, buf_logp, np.asarray(adv),
                                                            np.asarray(returns))]
        update_losses = []
        for _ in range(cfg.epochs):
            perm = shuffle_rng.permutation(T * N)
            for m in range(cfg.minibatches):
                idx = perm[m * mb_size:(m + 1) * mb_size]
                params, opt_state, loss, _ = update(params, opt_state, *(a[idx] for a in flat))
                update_losses.append(float(loss))
        losses.append(float(np.mean(update_losses)))

        recent = float(np.mean(episode_returns[-20:])) if episode_returns else 0.0
        evaluated = recent >= cfg.eval_after_return and (update_i % cfg.eval_every == 0 or update_i == num_updates)
        if evaluated:
            eval_return = float(np.mean(evaluate(greedy, params, cfg.eval_episodes, seed=cfg.seed + 10_000)))
            evaluations.append((env_steps, eval_return))
            solved = eval_return >= SOLVED_RETURN
        if verbose and (update_i % 5 == 0 or solved):
            last = f", greedy eval {eval_return:.1f}" if evaluated else ""
            print(f"update {update_i:4d} | env steps {env_steps:7d} | mean training return (last 20) "
                  f"{recent:6.1f} | loss {losses[-1]:+.4f}{last} | {time.perf_counter() - t0:6.1f} s", flush=True)
        if solved:
            break
    wall = time.perf_counter() - t0
    return dict(solved=solved, env_steps=env_steps, wall_time=wall, eval_return=eval_return,
                evaluations=evaluations, episode_returns=episode_returns, losses=losses, params=params)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    defaults = Config()
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    for field in dataclasses.fields(Config):
        kwargs = dict(type=type(getattr(defaults, field.name)), default=getattr(defaults, field.name))
        if field.name == "schedule":
            kwargs["choices"] = ["linear", "cosine", "constant"]
        p.add_argument("--" + field.name.replace("_", "-"), **kwargs)
    p.add_argument("--quiet", action="store_true", help="print only the final line")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> dict:
    args = parse_args(argv)
    cfg = Config(**{f.name: getattr(args, f.name) for f in dataclasses.fields(Config)})
    result = train(cfg, verbose=not args.quiet)
    status = "Solved" if result["solved"] else "Not solved"
    print(f"{status}: greedy mean return {result['eval_return']:.1f} over {cfg.eval_episodes} evaluation episodes "
          f"after {result['env_steps']} environment steps, wall time {result['wall_time']:.1f} s")
    return result


if __name__ == "__main__":
    main()
