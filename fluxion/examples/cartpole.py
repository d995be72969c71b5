"""CartPole-v1 (Barto, Sutton & Anderson 1983, "Neuronlike adaptive elements that can solve difficult learning
control problems") in NumPy, vectorised over N independent environments.

The dynamics, constants, termination and time limit are those of Gymnasium's `CartPole-v1`: gravity 9.8 m/s^2,
cart mass 1.0 kg, pole mass 0.1 kg, pole half-length 0.5 m, push force 10 N (action 0 pushes left, 1 right), time
step 0.02 s with explicit Euler integration (positions updated with the old velocities). An episode terminates when
|theta| > 12 degrees or |x| > 2.4 m and is truncated after 500 steps; every step, the last one included, gives
reward 1. Resets draw the four state variables uniformly from [-0.05, 0.05]. The state is kept in float64 (as
Gymnasium does) and observations are float32 `(N, 4)` rows `(x, x_dot, theta, theta_dot)`.

Finished environments reset themselves inside `step` (the observation returned for them is the first one of the
new episode); the last observation of the finished episode is returned separately (`final_obs`) so that an agent
can bootstrap from it when the episode was only truncated.

    env = CartPole(num_envs=8, seed=0)
    obs = env.reset()                              # (8, 4) float32
    obs, reward, terminated, truncated, final_obs = env.step(np.ones(8, np.int32))
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

__all__ = ["CartPole", "StepResult", "dynamics", "GRAVITY", "MASS_CART", "MASS_POLE", "HALF_LENGTH", "FORCE_MAG",
           "TAU", "THETA_LIMIT", "X_LIMIT", "MAX_EPISODE_STEPS", "SOLVED_RETURN"]

GRAVITY = 9.8
MASS_CART = 1.0
MASS_POLE = 0.1
HALF_LENGTH = 0.5  # half the pole's length: the distance from the pivot to the pole's centre of mass
FORCE_MAG = 10.0
TAU = 0.02
THETA_LIMIT = 12 * 2 * math.pi / 360  # radians
X_LIMIT = 2.4
MAX_EPISODE_STEPS = 500
SOLVED_RETURN = 475.0  # Gymnasium's reward_threshold for CartPole-v1


def dynamics(state: np.ndarray, action: np.ndarray) -> np.ndarray:
    """One Euler step of the cart-pole equations of motion.

    Args:
        state: float `(..., 4)` array of `(x, x_dot, theta, theta_dot)`.
        action: int array broadcastable to `state.shape[:-1]`; 1 pushes right, anything else left.

    Returns:
        The next state, same shape and dtype as `state`.
    """
    x, x_dot, theta, theta_dot = np.moveaxis(state, -1, 0)
    force = np.where(action == 1, FORCE_MAG, -FORCE_MAG)
    cos, sin = np.cos(theta), np.sin(theta)
    total_mass = MASS_CART + MASS_POLE
    polemass_length = MASS_POLE * HALF_LENGTH
    temp = (force + polemass_length * theta_dot ** 2 * sin) / total_mass
    theta_acc = (GRAVITY * sin - cos * temp) / (HALF_LENGTH * (4.0 / 3.0 - MASS_POLE * cos ** 2 / total_mass))
    x_acc = temp - polemass_length * theta_acc * cos / total_mass
    return np.stack([x + TAU * x_dot, x_dot + TAU * x_acc, theta + TAU * theta_dot, theta_dot + TAU * theta_acc],
                    axis=-1).astype(state.dtype, copy=False)


class StepResult(NamedTuple):
    """What `CartPole.step` returns; all arrays have leading dimension `num_envs`."""

    obs: np.ndarray         # float32 (N, 4): next observation (the reset one where an episode ended)
    reward: np.ndarray      # float32 (N,): always 1
    terminated: np.ndarray  # bool (N,): the pole fell or the cart left the track
    truncated: np.ndarray   # bool (N,): the time limit was reached (and not terminated)
    final_obs: np.ndarray   # float32 (N, 4): the observation reached by this step, before any reset


class CartPole:
    """`num_envs` CartPole-v1 environments stepped together (see the module docstring).

    Args:
        num_envs: number of environments (>= 1).
        seed: seed of the NumPy generator that draws the reset states.
        max_episode_steps: time limit (500 for CartPole-v1).

    Raises:
        ValueError: `num_envs < 1`; `step` with actions of the wrong shape or outside {0, 1}.
    """

    def __init__(self, num_envs: int = 1, seed: int | None = None, max_episode_steps: int = MAX_EPISODE_STEPS):
        if num_envs < 1:
            raise ValueError(f"CartPole: num_envs must be >= 1, got {num_envs}")
        self.num_envs = num_envs
        self.max_episode_steps = max_episode_steps
        self._rng = np.random.default_rng(seed)
        self.state = np.zeros((num_envs, 4), np.float64)
        self.elapsed = np.zeros(num_envs, np.int64)

    def _draw(self, n: int) -> np.ndarray:
        return self._rng.uniform(-0.05, 0.05, size=(n, 4))

    def reset(self) -> np.ndarray:
        """Resets every environment; returns the float32 `(N, 4)` observations."""
        self.state = self._draw(self.num_envs)
        self.elapsed[:] = 0
        return self.state.astype(np.float32)

    def step(self, action: np.ndarray) -> StepResult:
        """Applies one action per environment and resets those whose episode ended."""
        action = np.asarray(action)
        if action.shape != (self.num_envs,):
            raise ValueError(f"CartPole.step: `action` must have shape ({self.num_envs},), got {action.shape}")
        if np.any((action != 0) & (action != 1)):
            raise ValueError(f"CartPole.step: `action` values must be 0 or 1, got {np.unique(action)}")
        self.state = dynamics(self.state, action)
        self.elapsed += 1
        x, theta = self.state[:, 0], self.state[:, 2]
        terminated = (np.abs(x) > X_LIMIT) | (np.abs(theta) > THETA_LIMIT)
        truncated = ~terminated & (self.elapsed >= self.max_episode_steps)
        final_obs = self.state.astype(np.float32)
        done = terminated | truncated
        if done.any():
            self.state[done] = self._draw(int(done.sum()))
            self.elapsed[done] = 0
        return StepResult(self.state.astype(np.float32), np.ones(self.num_envs, np.float32), terminated, truncated,
                          final_obs)
