"""Epoch-based learning-rate schedules, mirroring ``flax.training.lr_schedule`` (which Flax deprecates in favour of
Optax schedules: `fluxion.optax.schedules`).

Each factory returns `f(step) -> learning rate`, with an optional linear warmup from 0 to 1 over the first
`warmup_length` epochs (Goyal et al. 2017, "Accurate, Large Minibatch SGD", https://arxiv.org/abs/1706.02677).
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

import fluxion.numpy as jnp


def _with_warmup(lr, step, steps_per_epoch, warmup_length):
    if warmup_length > 0.0:
        return lr * jnp.minimum(1.0, step / float(warmup_length) / steps_per_epoch)
    return lr


def create_constant_learning_rate_schedule(base_learning_rate: float, steps_per_epoch: int,
                                           warmup_length: float = 0.0) -> Callable:
    """`base_learning_rate` at every step (after the warmup)."""
    return lambda step: _with_warmup(base_learning_rate, step, steps_per_epoch, warmup_length)


def create_stepped_learning_rate_schedule(base_learning_rate: float, steps_per_epoch: int,
                                          lr_sched_steps: Sequence[Sequence[float]],
                                          warmup_length: float = 0.0) -> Callable:
    """`base_learning_rate` times the factor of the last `[epoch, factor]` pair of `lr_sched_steps` whose epoch has
    been passed (1 before the first), e.g. `[[30, 0.1], [60, 0.01]]`."""
    boundaries = np.round(np.array([s[0] for s in lr_sched_steps]) * steps_per_epoch).astype(int)
    values = np.array([1.0] + [s[1] for s in lr_sched_steps]) * base_learning_rate

    def learning_rate_fn(step):
        index = jnp.sum(jnp.asarray(boundaries) < step)
        return _with_warmup(jnp.take(jnp.asarray(values), index), step, steps_per_epoch, warmup_length)

    return learning_rate_fn


def create_cosine_learning_rate_schedule(base_learning_rate: float, steps_per_epoch: int, halfcos_epochs: float,
                                         warmup_length: float = 0.0) -> Callable:
    """`base_learning_rate * (1 + cos(pi * step / (halfcos_epochs * steps_per_epoch))) / 2`: half a cosine wave from
    the base rate to 0 over `halfcos_epochs` epochs."""
    half_wave = halfcos_epochs * steps_per_epoch

    def learning_rate_fn(step):
        lr = base_learning_rate * (jnp.cos(step * jnp.pi / half_wave) * 0.5 + 0.5)
        return _with_warmup(lr, step, steps_per_epoch, warmup_length)

    return learning_rate_fn
