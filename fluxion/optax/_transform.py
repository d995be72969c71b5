r"""Elementary gradient transformations: scaling rules of adaptive optimizers.

Notation used in the docstrings: :math:`g_t` is the incoming update (gradient)
at step :math:`t = 1, 2, \dots`, :math:`\theta` the parameters, and all
operations are elementwise. Each transformation keeps optax 0.2.x's state
layout (NamedTuple name, field names and order; step counters are int32).
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple, Optional

import fluxion.numpy as jnp
from fluxion import lax, tree_util

from . import _numerics
from ._base import (EmptyState, GradientTransformation, MaskOrFn, ScalarOrSchedule,
                    Schedule, Updates, identity, init_empty_state, require_params)
from ._masking import masked
from ._tree_math import (tree_bias_correction, tree_cast, tree_cast_like, tree_full_like,
                         tree_mul, tree_update_moment, tree_update_moment_per_elem_norm,
                         tree_zeros_like)


def _count_zero() -> Any:
    return jnp.zeros([], jnp.int32)


def _is_none(x: Any) -> bool:
    return x is None


# ----------------------------------------------------------------------------
# Plain scaling.


def scale(step_size: Any) -> GradientTransformation:
    """Multiplies every update by the fixed scalar ``step_size``.

    Args:
        step_size: a scalar (Python number or 0-d array).

    Returns:
        A stateless transformation (state ``EmptyState()``).
    """

    def update_fn(updates, state, params=None):
        del params
        return tree_util.tree_map(lambda g: step_size * g, updates), state

    return GradientTransformation(init_empty_state, update_fn)


def scale_by_sign() -> GradientTransformation:
    """Replaces every update by its sign (signSGD, Bernstein et al. 2018)."""

    def update_fn(updates, state, params=None):
        del params
        return tree_util.tree_map(jnp.sign, updates), state

    return GradientTransformation(init_empty_state, update_fn)


class ScaleByScheduleState(NamedTuple):
    """Step counter of :func:`scale_by_schedule` (int32 scalar)."""
    count: Any


def scale_by_schedule(step_size_fn: Schedule) -> GradientTransformation:
    """Multiplies updates by ``step_size_fn(count)``, count = 0, 1, 2, ...

    Args:
        step_size_fn: a schedule, i.e. a function of the int32 step counter.

    Returns:
        A transformation with state ``ScaleByScheduleState(count)``. The step
        size is cast to each update's dtype before multiplying.
    """

    def init_fn(params):
        del params
        return ScaleByScheduleState(count=_count_zero())

    def update_fn(updates, state, params=None):
        del params
        step_size = step_size_fn(state.count)
        updates = tree_util.tree_map(
            lambda g: jnp.array(step_size, dtype=g.dtype) * g, updates)
        return updates, ScaleByScheduleState(count=_numerics.safe_increment(state.count))

    return GradientTransformation(init_fn, update_fn)


def scale_by_learning_rate(learning_rate: Optional[ScalarOrSchedule] = None, *,
                           flip_sign: bool = True) -> GradientTransformation:
    """Multiplies updates by ``-learning_rate`` (or ``+learning_rate``).

    Args:
        learning_rate: a scalar, a schedule (callable of the step count), or
            None for no scaling.
        flip_sign: multiply by the negated learning rate (gradient *descent*).

    Returns:
        ``scale(...)`` for a scalar (EmptyState), ``scale_by_schedule(...)``
        for a schedule (ScaleByScheduleState), ``identity()`` for None.
    """
    if learning_rate is None:
        return identity()
    sign = -1 if flip_sign else 1
    if callable(learning_rate):
        return scale_by_schedule(lambda count: sign * learning_rate(count))
    return scale(sign * learning_rate)


# ----------------------------------------------------------------------------
# Adaptive second-moment scaling.


class ScaleByAdamState(NamedTuple):
    """State of Adam: step ``count`` (int32), first moment ``mu``, second ``nu``."""
    count: Any
    mu: Updates
    nu: Updates


def scale_by_adam(b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-8,
                  eps_root: Any = 0.0, mu_dtype: Optional[Any] = None, *,
                  nesterov: bool = False) -> GradientTransformation:
    r"""Rescales updates with Adam's bias-corrected moment estimates.

    Kingma & Ba, "Adam: A Method for Stochastic Optimization", 2014
    (arXiv:1412.6980), Algorithm 1:

    .. math::
        m_t = \beta_1 m_{t-1} + (1-\beta_1) g_t, \quad
        v_t = \beta_2 v_{t-1} + (1-\beta_2) g_t^2, \\
        \hat m_t = m_t / (1-\beta_1^t), \quad \hat v_t = v_t / (1-\beta_2^t), \\
        u_t = \hat m_t / (\sqrt{\hat v_t + \epsilon_{root}} + \epsilon).

    With ``nesterov=True`` (NAdam, Dozat 2016) :math:`\hat m_t` is replaced by
    :math:`\beta_1 m_t/(1-\beta_1^{t+1}) + (1-\beta_1) g_t/(1-\beta_1^t)`.

    ``eps`` is added *outside* the square root of the bias-corrected
    :math:`\hat v_t`, as in the paper and optax; PyTorch's ``torch.optim.Adam``
    also adds eps outside the root but to :math:`\sqrt{v_t}/\sqrt{1-\beta_2^t}`,
    which is the same expression. TensorFlow/Keras' "epsilon hat" differs.

    Args:
        b1: decay of the first-moment EMA.
        b2: decay of the second-moment EMA.
        eps: added to the denominator outside the square root.
        eps_root: added inside the square root (useful when differentiating
            through the update, e.g. meta-learning).
        mu_dtype: dtype of the first moment (e.g. bfloat16 to save memory);
            None keeps the parameter dtype.
        nesterov: use Nesterov momentum (NAdam).

    Returns:
        A transformation with state ``ScaleByAdamState(count, mu, nu)``.
    """
    mu_dtype = _numerics.canonicalize_dtype(mu_dtype)

    def init_fn(params):
        return ScaleByAdamState(count=_count_zero(),
                                mu=tree_zeros_like(params, dtype=mu_dtype),
                                nu=tree_zeros_like(params))

    def update_fn(updates, state, params=None):
        del params
        mu = tree_update_moment(updates, state.mu, b1, 1)
        nu = tree_update_moment_per_elem_norm(updates, state.nu, b2, 2)
        count_inc = _numerics.safe_increment(state.count)
        if nesterov:
            mu_hat = tree_util.tree_map(
                lambda m, g: b1 * m + (1 - b1) * g,
                tree_bias_correction(mu, b1, _numerics.safe_increment(count_inc)),
                tree_bias_correction(updates, b1, count_inc))
        else:
            mu_hat = tree_bias_correction(mu, b1, count_inc)
        nu_hat = tree_bias_correction(nu, b2, count_inc)
        updates = tree_util.tree_map(
            lambda m, v: None if m is None else m / (jnp.sqrt(v + eps_root) + eps),
            mu_hat, nu_hat, is_leaf=_is_none)
        mu = tree_cast(mu, mu_dtype)
        nu = tree_cast_like(nu, state.nu)
        return updates, ScaleByAdamState(count=count_inc, mu=mu, nu=nu)

    return GradientTransformation(init_fn, update_fn)


class ScaleByRmsState(NamedTuple):
    """State of RMSProp without bias correction: second moment ``nu``."""
    nu: Updates


class ScaleByRmsWithCountState(NamedTuple):
    """State of RMSProp with bias correction: ``count`` (int32) and ``nu``."""
    count: Any
    nu: Updates


def _inverse_root(eps: Any, eps_in_sqrt: bool):
    if eps_in_sqrt:
        return lambda n: lax.rsqrt(n + eps)
    return lambda n: 1 / (jnp.sqrt(n) + eps)


def scale_by_rms(decay: Any = 0.9, eps: Any = 1e-8, initial_scale: Any = 0.0,
                 eps_in_sqrt: bool = True, bias_correction: bool = False
                 ) -> GradientTransformation:
    r"""Divides updates by the root of an EMA of their squares (RMSProp).

    Hinton, Lecture 6e of "Neural Networks for Machine Learning", 2012:

    .. math::
        v_t = \rho v_{t-1} + (1-\rho) g_t^2, \quad u_t = g_t / \sqrt{v_t + \epsilon}.

    By default ``eps`` sits *inside* the square root (optax's convention);
    PyTorch's ``RMSprop`` uses :math:`g_t / (\sqrt{v_t} + \epsilon)`, which is
    ``eps_in_sqrt=False``. PyTorch also starts ``v`` at 0 (``initial_scale=0``).

    Args:
        decay: EMA decay :math:`\rho`.
        eps: stabilising constant.
        initial_scale: initial value of :math:`v`.
        eps_in_sqrt: put ``eps`` inside (True) or outside (False) the root.
        bias_correction: divide :math:`v_t` by :math:`1-\rho^t` (adds a count).

    Returns:
        State ``ScaleByRmsState(nu)``, or ``ScaleByRmsWithCountState(count, nu)``
        with bias correction.
    """
    inv_root = _inverse_root(eps, eps_in_sqrt)

    def init_fn(params):
        nu = tree_full_like(params, initial_scale)
        if bias_correction:
            return ScaleByRmsWithCountState(count=_count_zero(), nu=nu)
        return ScaleByRmsState(nu=nu)

    def update_fn(updates, state, params=None):
        del params
        nu = tree_update_moment_per_elem_norm(updates, state.nu, decay, 2)
        nu_hat = nu
        if bias_correction:
            count_inc = _numerics.safe_increment(state.count)
            nu_hat = tree_bias_correction(nu, decay, count_inc)
        updates = tree_util.tree_map(lambda n, g: inv_root(n) * g, nu_hat, updates)
        if bias_correction:
            return updates, ScaleByRmsWithCountState(count=count_inc, nu=nu)
        return updates, ScaleByRmsState(nu=nu)

    return GradientTransformation(init_fn, update_fn)


class ScaleByRStdDevState(NamedTuple):
    """State of centered RMSProp: first moment ``mu`` and second ``nu``."""
    mu: Updates
    nu: Updates


class ScaleByRStdDevWithCountState(NamedTuple):
    """State of centered RMSProp with bias correction."""
    count: Any
    mu: Updates
    nu: Updates


def scale_by_stddev(decay: Any = 0.9, eps: Any = 1e-8, initial_scale: Any = 0.0,
                    eps_in_sqrt: bool = True, bias_correction: bool = False
                    ) -> GradientTransformation:
    r"""Divides updates by a running estimate of their standard deviation.

    Centered RMSProp (Graves, "Generating Sequences With Recurrent Neural
    Networks", 2013, eq. 38-45):

    .. math::
        m_t = \rho m_{t-1} + (1-\rho) g_t, \quad v_t = \rho v_{t-1} + (1-\rho) g_t^2,
        \quad u_t = g_t / \sqrt{v_t - m_t^2 + \epsilon}.

    Args:
        decay, eps, initial_scale, eps_in_sqrt, bias_correction: as in
            :func:`scale_by_rms`.

    Returns:
        State ``ScaleByRStdDevState(mu, nu)`` (or the ``WithCount`` variant).
    """
    inv_root = _inverse_root(eps, eps_in_sqrt)

    def init_fn(params):
        mu = tree_zeros_like(params)
        nu = tree_full_like(params, initial_scale)
        if bias_correction:
            return ScaleByRStdDevWithCountState(count=_count_zero(), mu=mu, nu=nu)
        return ScaleByRStdDevState(mu=mu, nu=nu)

    def update_fn(updates, state, params=None):
        del params
        mu = tree_update_moment(updates, state.mu, decay, 1)
        nu = tree_update_moment_per_elem_norm(updates, state.nu, decay, 2)
        mu_hat, nu_hat = mu, nu
        if bias_correction:
            count_inc = _numerics.safe_increment(state.count)
            mu_hat = tree_bias_correction(mu, decay, count_inc)
            nu_hat = tree_bias_correction(nu, decay, count_inc)
        updates = tree_util.tree_map(
            lambda m, n, g: inv_root(n - _numerics.abs_sq(m)) * g, mu_hat, nu_hat, updates)
        if bias_correction:
            return updates, ScaleByRStdDevWithCountState(count=count_inc, mu=mu, nu=nu)
        return updates, ScaleByRStdDevState(mu=mu, nu=nu)

    return GradientTransformation(init_fn, update_fn)


class ScaleByRssState(NamedTuple):
    """State of AdaGrad: running ``sum_of_squares`` of the gradients."""
    sum_of_squares: Updates


def scale_by_rss(initial_accumulator_value: Any = 0.1, eps: Any = 1e-7
                 ) -> GradientTransformation:
    r"""Divides updates by the root of the sum of all past squared gradients.

    AdaGrad (Duchi, Hazan & Singer, JMLR 2011):

    .. math::
        G_t = G_{t-1} + g_t^2, \quad u_t = g_t / \sqrt{G_t + \epsilon}

    (0 where :math:`G_t = 0`). Note ``eps`` is inside the square root, while
    PyTorch's ``Adagrad`` uses :math:`g_t / (\sqrt{G_t} + \epsilon)` and starts
    :math:`G` at 0 rather than 0.1.

    Args:
        initial_accumulator_value: initial :math:`G_0` (>= 0).
        eps: stabilising constant.

    Returns:
        State ``ScaleByRssState(sum_of_squares)``.
    """

    def init_fn(params):
        return ScaleByRssState(sum_of_squares=tree_full_like(params, initial_accumulator_value))

    def update_fn(updates, state, params=None):
        del params
        sum_of_squares = tree_util.tree_map(
            lambda g, t: _numerics.abs_sq(g) + t, updates, state.sum_of_squares)
        inv_sqrt = tree_util.tree_map(
            lambda t: jnp.where(t > 0, lax.rsqrt(t + eps), 0.0), sum_of_squares)
        return tree_mul(inv_sqrt, updates), ScaleByRssState(sum_of_squares=sum_of_squares)

    return GradientTransformation(init_fn, update_fn)


class ScaleByLionState(NamedTuple):
    """State of Lion: step ``count`` (int32) and momentum ``mu``."""
    count: Any
    mu: Updates


def scale_by_lion(b1: Any = 0.9, b2: Any = 0.99, mu_dtype: Optional[Any] = None, *,
                  mode: Literal['hard', 'smooth', 'refined'] = 'hard',
                  smooth_beta: float = 1.0) -> GradientTransformation:
    r"""Lion's sign-of-interpolation update (Chen et al. 2023, arXiv:2302.06675).

    .. math::
        u_t = \mathrm{sign}(\beta_1 m_{t-1} + (1-\beta_1) g_t), \quad
        m_t = \beta_2 m_{t-1} + (1-\beta_2) g_t.

    ``mode='smooth'`` uses ``tanh(smooth_beta * x)`` instead of the sign and
    ``mode='refined'`` keeps ``x`` where ``|x| < 1``.

    Args:
        b1: interpolation weight for the update direction.
        b2: decay of the momentum EMA.
        mu_dtype: dtype of the momentum (None: parameter dtype).
        mode: 'hard', 'smooth' or 'refined'.
        smooth_beta: slope for ``mode='smooth'``.

    Returns:
        State ``ScaleByLionState(count, mu)``.

    Raises:
        ValueError: for an unknown ``mode``.
    """
    if mode not in ('hard', 'smooth', 'refined'):
        raise ValueError(f"scale_by_lion: unknown mode={mode!r}; expected 'hard', "
                         "'smooth' or 'refined'.")
    mu_dtype = _numerics.canonicalize_dtype(mu_dtype)

    def direction(g, m):
        x = (1.0 - b1) * g + b1 * m
        if mode == 'hard':
            return jnp.sign(x)
        if mode == 'smooth':
            return jnp.tanh(smooth_beta * x)
        return jnp.where(jnp.abs(x) < 1.0, x, jnp.sign(x))

    def init_fn(params):
        return ScaleByLionState(count=_count_zero(), mu=tree_zeros_like(params, dtype=mu_dtype))

    def update_fn(updates, state, params=None):
        del params
        new_updates = tree_util.tree_map(direction, updates, state.mu)
        mu = tree_cast(tree_update_moment(updates, state.mu, b2, 1), mu_dtype)
        return new_updates, ScaleByLionState(count=_numerics.safe_increment(state.count), mu=mu)

    return GradientTransformation(init_fn, update_fn)


# ----------------------------------------------------------------------------
# Parameter-dependent scaling.


def scale_by_trust_ratio(min_norm: Any = 0.0, trust_coefficient: Any = 1.0,
                         eps: Any = 0.0) -> GradientTransformation:
    r"""Multiplies each leaf's update by the layer-wise trust ratio (LARS/LAMB).

    You, Gitman & Ginsburg 2017 (LARS, arXiv:1708.03888); You et al. 2020
    (LAMB, arXiv:1904.00962):

    .. math::
        u \leftarrow u \cdot c\,\frac{\|\theta\|}{\|u\| + \epsilon},

    with the ratio set to 1 when either norm is 0. Norms are clipped below at
    ``min_norm``.

    Args:
        min_norm: lower bound for both norms.
        trust_coefficient: the multiplier :math:`c`.
        eps: added to the update norm.

    Returns:
        A stateless transformation that requires ``params``.
    """

    def update_fn(updates, state, params=None):
        require_params(params, 'scale_by_trust_ratio')

        def scale_leaf(update, param):
            param_norm = _numerics.safe_norm(param, min_norm)
            update_norm = _numerics.safe_norm(update, min_norm)
            ratio = trust_coefficient * param_norm / (update_norm + eps)
            zero_norm = jnp.logical_or(param_norm == 0.0, update_norm == 0.0)
            return update * jnp.where(zero_norm, jnp.array(1.0, dtype=param.dtype), ratio)

        return tree_util.tree_map(scale_leaf, updates, params), state

    return GradientTransformation(init_empty_state, update_fn)


def scale_by_param_block_norm(min_scale: Any = 1e-3) -> GradientTransformation:
    """Multiplies each leaf's update by ``max(norm(param), min_scale)``."""

    def update_fn(updates, state, params=None):
        require_params(params, 'scale_by_param_block_norm')
        return tree_util.tree_map(
            lambda u, p: u * _numerics.safe_norm(p, min_scale), updates, params), state

    return GradientTransformation(init_empty_state, update_fn)


def scale_by_param_block_rms(min_scale: Any = 1e-3) -> GradientTransformation:
    """Multiplies each leaf's update by ``max(rms(param), min_scale)`` (Adafactor)."""

    def update_fn(updates, state, params=None):
        require_params(params, 'scale_by_param_block_rms')
        return tree_util.tree_map(
            lambda u, p: u * _numerics.safe_root_mean_squares(p, min_scale),
            updates, params), state

    return GradientTransformation(init_empty_state, update_fn)


class WeightDecaySchedule(NamedTuple):
    """State of :func:`add_decayed_weights` with a scheduled weight decay."""
    count: Any


def add_decayed_weights(weight_decay: ScalarOrSchedule = 0.0,
                        mask: MaskOrFn = None) -> GradientTransformation:
    r"""Adds ``weight_decay * params`` to the updates: :math:`u \leftarrow u + \lambda\theta`.

    Placed after an adaptive scaling (as in :func:`adamw`) this is the
    *decoupled* weight decay of Loshchilov & Hutter 2019; placed before, it is
    classic L2 regularisation of the gradient.

    Args:
        weight_decay: scalar :math:`\lambda`, or a schedule of the step count.
        mask: pytree of booleans (or function of params returning one) selecting
            which parameters are decayed; None decays all.

    Returns:
        A transformation that requires ``params``; its state is ``EmptyState()``
        (``WeightDecaySchedule(count)`` for a schedule), wrapped in
        ``MaskedState`` when ``mask`` is given.
    """
    scheduled = callable(weight_decay)

    def init_fn(params):
        del params
        return WeightDecaySchedule(count=_count_zero()) if scheduled else EmptyState()

    def update_fn(updates, state, params=None):
        require_params(params, 'add_decayed_weights')
        new_state = WeightDecaySchedule(_numerics.safe_increment(state.count)) if scheduled else state
        if isinstance(weight_decay, (int, float)) and weight_decay == 0.0:
            return updates, new_state
        decay = weight_decay(state.count) if scheduled else weight_decay
        updates = tree_util.tree_map(
            lambda g, p: None if g is None else g + decay * p,
            updates, params, is_leaf=_is_none)
        return updates, new_state

    tx = GradientTransformation(init_fn, update_fn)
    return masked(tx, mask) if mask is not None else tx
