"""The Catch environment of bsuite (Osband et al. 2020, "Behaviour Suite for Reinforcement Learning"), with a
`dm_env`-style interface, in pure NumPy.

A `rows x columns` board (default 10 x 5). At reset a ball appears in the top row in a uniformly random column
(`numpy.random.RandomState(seed).randint(columns)`, as bsuite draws it) and the paddle sits in the middle of the
bottom row (`columns // 2`). Each step the paddle moves by `(-1, 0, +1)[action]` (clipped to the board) and the
ball falls one row; when it reaches the bottom row the episode ends with reward +1 if the paddle is under the
ball, else -1. Intermediate rewards are 0, so an episode lasts `rows - 1` steps. Observations are float32
`(rows, columns)` boards with 1 at the ball and the paddle. The same seed gives the same episodes as bsuite's
`Catch(seed=...)`.

    env = Catch(seed=0)
    ts = env.reset()                 # ts.first(); ts.observation.shape == (10, 5)
    while not ts.last():
        ts = env.step(1)             # stay
    ts.reward                        # +1.0 or -1.0
"""

from __future__ import annotations

import enum
from typing import Any, NamedTuple

import numpy as np

__all__ = ["StepType", "TimeStep", "BoundedArray", "DiscreteArray", "Catch", "restart", "transition",
           "termination"]

_ACTIONS = (-1, 0, 1)  # left, stay, right


class StepType(enum.IntEnum):
    """Where a time step sits in an episode (values as in `dm_env.StepType`)."""

    FIRST = 0
    MID = 1
    LAST = 2


class TimeStep(NamedTuple):
    """What the environment returns: `reward`/`discount` are None on the first step (as in dm_env)."""

    step_type: StepType
    reward: float | None
    discount: float | None
    observation: np.ndarray

    def first(self) -> bool:
        return self.step_type == StepType.FIRST

    def mid(self) -> bool:
        return self.step_type == StepType.MID

    def last(self) -> bool:
        return self.step_type == StepType.LAST


def restart(observation: np.ndarray) -> TimeStep:
    return TimeStep(StepType.FIRST, None, None, observation)


def transition(reward: float, observation: np.ndarray, discount: float = 1.0) -> TimeStep:
    return TimeStep(StepType.MID, reward, discount, observation)


def termination(reward: float, observation: np.ndarray) -> TimeStep:
    return TimeStep(StepType.LAST, reward, 0.0, observation)


class BoundedArray(NamedTuple):
    """Observation spec: shape, dtype and bounds (`dm_env.specs.BoundedArray` fields)."""

    shape: tuple
    dtype: np.dtype
    minimum: float
    maximum: float
    name: str = "observation"

    def generate_value(self) -> np.ndarray:
        """A valid observation (all at the minimum), e.g. to initialize a network."""
        return np.full(self.shape, self.minimum, dtype=self.dtype)


class DiscreteArray(NamedTuple):
    """Action spec: `num_values` discrete actions `0 .. num_values - 1`."""

    num_values: int
    dtype: Any = np.int32
    name: str = "action"
    shape: tuple = ()

    def generate_value(self) -> np.ndarray:
        return np.zeros((), dtype=self.dtype)


class Catch:
    """bsuite's Catch task (see the module docstring).

    Args:
        rows: board height (>= 2).
        columns: board width (>= 1).
        seed: seed of the NumPy RandomState that places the ball.

    Raises:
        ValueError: board too small; `step` with an action outside {0, 1, 2}.
    """

    def __init__(self, rows: int = 10, columns: int = 5, seed: int | None = None):
        if rows < 2 or columns < 1:
            raise ValueError(f"Catch needs rows >= 2 and columns >= 1, got rows={rows}, columns={columns}")
        self._rows = rows
        self._columns = columns
        self._rng = np.random.RandomState(seed)
        self._board = np.zeros((rows, columns), dtype=np.float32)
        self._ball_x = self._ball_y = self._paddle_x = self._paddle_y = None
        self._reset_next_step = True
        self._total_regret = 0.0

    def _observation(self) -> np.ndarray:
        self._board.fill(0.)
        self._board[self._ball_y, self._ball_x] = 1.
        self._board[self._paddle_y, self._paddle_x] = 1.
        return self._board.copy()

    def reset(self) -> TimeStep:
        """Starts an episode: new ball column, paddle in the middle of the bottom row."""
        self._reset_next_step = False
        self._ball_x = int(self._rng.randint(self._columns))
        self._ball_y = 0
        self._paddle_x = self._columns // 2
        self._paddle_y = self._rows - 1
        return restart(self._observation())

    def step(self, action: int) -> TimeStep:
        """Moves the paddle by `(-1, 0, +1)[action]`, drops the ball; after a LAST step, resets instead."""
        if self._reset_next_step:
            return self.reset()
        action = int(action)
        if not 0 <= action < len(_ACTIONS):
            raise ValueError(f"Catch.step: `action` must be in [0, {len(_ACTIONS)}), got {action}")
        self._paddle_x = int(np.clip(self._paddle_x + _ACTIONS[action], 0, self._columns - 1))
        self._ball_y += 1
        if self._ball_y == self._paddle_y:
            reward = 1. if self._paddle_x == self._ball_x else -1.
            self._reset_next_step = True
            self._total_regret += 1. - reward
            return termination(reward, self._observation())
        return transition(0., self._observation())

    def observation_spec(self) -> BoundedArray:
        return BoundedArray(shape=self._board.shape, dtype=self._board.dtype, minimum=0., maximum=1.)

    def action_spec(self) -> DiscreteArray:
        return DiscreteArray(num_values=len(_ACTIONS))

    def bsuite_info(self) -> dict:
        """`{"total_regret": sum over episodes of (1 - reward)}`."""
        return dict(total_regret=self._total_regret)
