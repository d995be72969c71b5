r"""Schedule-free optimization (Defazio et al., "The Road Less Scheduled", 2024,
arXiv:2405.15682).

The base optimizer steps a sequence :math:`z`; the averaged sequence
:math:`x_t = (1-c_t) x_{t-1} + c_t z_t` with weights
:math:`c_t = \eta_{max,t}^p / \sum_{i \le t} \eta_{max,i}^p` is the evaluation
point, and gradients are taken at the interpolation
:math:`y_t = \beta_1 x_t + (1-\beta_1) z_t` (the parameters the user holds).
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

import fluxion.numpy as jnp
from fluxion import tree_util

from .. import _numerics
from .._alias import sgd
from .._base import (GradientTransformation, GradientTransformationExtraArgs, OptState, Params,
                     ScalarOrSchedule, require_params, with_extra_args_support)
from .._combine import chain
from .._schedule import warmup_constant_schedule
from .._transform import add_decayed_weights, scale_by_learning_rate, scale_by_rms
from .._tree_math import tree_cast, tree_dtype


class ScheduleFreeState(NamedTuple):
    """State of :func:`schedule_free`.

    Attributes:
        b1: interpolation coefficient (scalar, params dtype).
        weight_sum: running sum of the averaging weights.
        step_count: int32 step, starting at 1.
        max_lr: largest learning rate seen so far.
        base_optimizer_state: the wrapped optimizer's state.
        z: the base optimizer's iterate.
    """
    b1: Any
    weight_sum: Any
    step_count: Any
    max_lr: Any
    base_optimizer_state: OptState
    z: Params


def schedule_free_eval_params(state: Any, params: Params) -> Params:
    r"""The averaged point :math:`x = (y - (1-\beta_1) z)/\beta_1` to evaluate the model at.

    Raises:
        ValueError: if ``state`` is not a ScheduleFreeState (no ``b1`` / ``z``).
    """
    b1 = getattr(state, 'b1', None)
    z = getattr(state, 'z', None)
    if b1 is None or z is None:
        raise ValueError('schedule_free_eval_params: `state` must be a ScheduleFreeState, got '
                         f'{type(state).__name__}.')
    return tree_util.tree_map(lambda y, zi: (y - (1.0 - b1) * zi) / b1, params, z)


def schedule_free(base_optimizer: GradientTransformation, learning_rate: ScalarOrSchedule,
                  b1: Any = 0.9, weight_lr_power: Any = 2.0,
                  state_dtype: Optional[Any] = None) -> GradientTransformationExtraArgs:
    """Turns ``base_optimizer`` into its schedule-free variant.

    ``learning_rate`` must be the one used by ``base_optimizer`` (it sets the
    averaging weights). The returned updates move the parameters to the new
    interpolation point :math:`y`; evaluate with :func:`schedule_free_eval_params`.

    Args:
        base_optimizer: e.g. ``sgd(lr)``.
        learning_rate: float or schedule.
        b1: interpolation coefficient :math:`\\beta_1`.
        weight_lr_power: exponent :math:`p` of the averaging weights.
        state_dtype: dtype of ``z`` (None: params dtype).

    Returns:
        State ``ScheduleFreeState``. Requires ``params``.
    """
    base_optimizer = with_extra_args_support(base_optimizer)

    def init_fn(params):
        dtype = tree_dtype(params, 'lowest')
        z = tree_cast(params, state_dtype) if state_dtype is not None else params
        return ScheduleFreeState(
            b1=jnp.asarray(b1, dtype=dtype), weight_sum=jnp.zeros([], dtype=dtype),
            step_count=jnp.ones([], dtype=jnp.int32), max_lr=jnp.zeros([], dtype=dtype),
            base_optimizer_state=base_optimizer.init(params),
            z=tree_util.tree_map(lambda t: jnp.array(t, copy=True), z))

    def update_fn(grads, state, params=None, **extra_args):
        require_params(params, 'schedule_free')
        lr = learning_rate
        if callable(learning_rate):
            lr = jnp.asarray(learning_rate(state.step_count), dtype=state.max_lr.dtype)
        max_lr = jnp.maximum(state.max_lr, lr)
        weight = max_lr ** weight_lr_power
        total = state.weight_sum + weight
        # c_t = weight / total; 0/0 at a zero learning rate (warmup) means "no averaging".
        ck = jnp.where(jnp.isnan(weight) | jnp.isnan(total), jnp.full(jnp.shape(weight), jnp.nan),
                       jnp.nan_to_num(weight / total, nan=0.0, posinf=jnp.inf))
        base_updates, base_state = base_optimizer.update(grads, state.base_optimizer_state, params,
                                                         **extra_args)
        z = tree_util.tree_map(lambda zi, u: jnp.asarray(zi + u).astype(jnp.asarray(zi).dtype),
                               state.z, base_updates)
        prev_x = tree_util.tree_map(lambda y, zi: (y - (1.0 - b1) * zi) / b1, params, state.z)
        x = tree_util.tree_map(lambda xi, zi: (1.0 - ck) * xi + ck * zi, prev_x, z)
        new_y = tree_util.tree_map(lambda xi, zi: b1 * xi + (1.0 - b1) * zi, x, z)
        updates = tree_util.tree_map(lambda n, p: n - p, new_y, params)
        return updates, ScheduleFreeState(
            b1=state.b1, weight_sum=total, step_count=_numerics.safe_increment(state.step_count),
            max_lr=max_lr, base_optimizer_state=base_state, z=z)

    return GradientTransformationExtraArgs(init_fn, update_fn)


def schedule_free_sgd(learning_rate: Any = 1.0, warmup_steps: Optional[int] = None,
                      b1: Any = 0.9, weight_decay: Optional[Any] = None,
                      weight_lr_power: Any = 2.0, state_dtype: Optional[Any] = None
                      ) -> GradientTransformationExtraArgs:
    """Schedule-free SGD, optionally with a linear warmup and L2 weight decay."""
    if warmup_steps is not None:
        learning_rate = warmup_constant_schedule(init_value=0, peak_value=learning_rate,
                                                 warmup_steps=warmup_steps)
    optimizer = sgd(learning_rate)
    if weight_decay is not None:
        optimizer = chain(add_decayed_weights(weight_decay), optimizer)
    return schedule_free(optimizer, learning_rate=learning_rate, b1=b1,
                         weight_lr_power=weight_lr_power, state_dtype=state_dtype)


def schedule_free_adamw(learning_rate: Any = 0.0025, warmup_steps: Optional[int] = None,
                        b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-8, weight_decay: Any = 0.0,
                        weight_lr_power: Any = 2.0, state_dtype: Optional[Any] = None
                        ) -> GradientTransformationExtraArgs:
    """Schedule-free AdamW: the base step is bias-corrected RMS scaling (no first
    moment: the interpolation plays its role), decoupled weight decay and the lr."""
    if warmup_steps is not None:
        learning_rate = warmup_constant_schedule(init_value=0, peak_value=learning_rate,
                                                 warmup_steps=warmup_steps)
    optimizer = chain(scale_by_rms(decay=b2, eps=eps, eps_in_sqrt=False, bias_correction=True),
                      add_decayed_weights(weight_decay), scale_by_learning_rate(learning_rate))
    return schedule_free(optimizer, learning_rate=learning_rate, b1=b1,
                         weight_lr_power=weight_lr_power, state_dtype=state_dtype)
