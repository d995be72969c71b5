r"""Ready-made optimizers, each a :func:`chain` of elementary transformations.

The chain composition (and therefore the state layout, a tuple of the inner
states) is the same as optax 0.2.x, e.g. ``adam(lr).init(params)`` is
``(ScaleByAdamState(count, mu, nu), EmptyState())`` for a constant learning
rate and ``(ScaleByAdamState(...), ScaleByScheduleState(count))`` for a
schedule. Every ``learning_rate`` may be a float or a schedule (a function of
the int32 step count).
"""

from __future__ import annotations

from typing import Any, Optional

import fluxion.numpy as jnp

from ._accumulation import ema, trace
from ._base import GradientTransformationExtraArgs, MaskOrFn, ScalarOrSchedule, identity
from ._clipping import clip_by_block_rms
from ._combine import chain
from ._factorized import scale_by_factored_rms
from ._transform import (add_decayed_weights, scale, scale_by_adam, scale_by_learning_rate,
                         scale_by_lion, scale_by_param_block_rms, scale_by_rms, scale_by_rss,
                         scale_by_stddev, scale_by_trust_ratio)


def sgd(learning_rate: ScalarOrSchedule, momentum: Optional[float] = None,
        nesterov: bool = False, accumulator_dtype: Optional[Any] = None
        ) -> GradientTransformationExtraArgs:
    r"""Stochastic gradient descent, optionally with (Nesterov) momentum.

    Without momentum :math:`\theta \leftarrow \theta - \eta g`. With momentum
    :math:`\mu`: :math:`t_k = g_k + \mu t_{k-1}` and :math:`\theta \leftarrow
    \theta - \eta t_k` (Polyak 1964; Sutskever et al. 2013), or
    :math:`\theta \leftarrow \theta - \eta (g_k + \mu t_k)` with
    ``nesterov=True``. Matches PyTorch ``SGD`` with ``dampening=0``.

    Args:
        learning_rate: :math:`\eta` (float or schedule).
        momentum: :math:`\mu`, or None for plain SGD.
        nesterov: use Nesterov momentum.
        accumulator_dtype: dtype of the momentum buffer.

    Returns:
        ``chain(trace(...) or identity(), scale_by_learning_rate(lr))``; state
        ``(TraceState(trace) | EmptyState(), EmptyState() | ScaleByScheduleState)``.
    """
    first = (trace(decay=momentum, nesterov=nesterov, accumulator_dtype=accumulator_dtype)
             if momentum is not None else identity())
    return chain(first, scale_by_learning_rate(learning_rate))


def adam(learning_rate: ScalarOrSchedule, b1: float = 0.9, b2: float = 0.999,
         eps: float = 1e-8, eps_root: float = 0.0, mu_dtype: Optional[Any] = None, *,
         nesterov: bool = False) -> GradientTransformationExtraArgs:
    r"""Adam (Kingma & Ba, "Adam: A Method for Stochastic Optimization", 2014).

    .. math::
        m_t = \beta_1 m_{t-1} + (1-\beta_1) g_t,\quad
        v_t = \beta_2 v_{t-1} + (1-\beta_2) g_t^2,\\
        \theta_t = \theta_{t-1} - \eta\,
        \frac{m_t/(1-\beta_1^t)}{\sqrt{v_t/(1-\beta_2^t) + \epsilon_{root}} + \epsilon}.

    ``eps`` is outside the square root, as in the paper and PyTorch's
    ``torch.optim.Adam`` (TensorFlow 1's Adam uses an "epsilon hat" variant).

    Args:
        learning_rate: :math:`\eta` (float or schedule).
        b1, b2: moment decays. eps, eps_root: stabilisers.
        mu_dtype: dtype of the first moment.
        nesterov: NAdam variant (Dozat 2016).

    Returns:
        ``chain(scale_by_adam(...), scale_by_learning_rate(lr))``.
    """
    return chain(scale_by_adam(b1=b1, b2=b2, eps=eps, eps_root=eps_root, mu_dtype=mu_dtype,
                               nesterov=nesterov),
                 scale_by_learning_rate(learning_rate))


def nadam(learning_rate: ScalarOrSchedule, b1: float = 0.9, b2: float = 0.999,
          eps: float = 1e-8, eps_root: float = 0.0, mu_dtype: Optional[Any] = None
          ) -> GradientTransformationExtraArgs:
    """NAdam (Dozat 2016): :func:`adam` with ``nesterov=True``."""
    return adam(learning_rate, b1, b2, eps, eps_root, mu_dtype, nesterov=True)


def adamw(learning_rate: ScalarOrSchedule, b1: float = 0.9, b2: float = 0.999,
          eps: float = 1e-8, eps_root: float = 0.0, mu_dtype: Optional[Any] = None,
          weight_decay: ScalarOrSchedule = 1e-4, mask: MaskOrFn = None, *,
          nesterov: bool = False) -> GradientTransformationExtraArgs:
    r"""AdamW: Adam with decoupled weight decay (Loshchilov & Hutter, ICLR 2019).

    .. math::
        \theta_t = \theta_{t-1} - \eta\,(\hat m_t / (\sqrt{\hat v_t + \epsilon_{root}}
        + \epsilon) + \lambda\,\theta_{t-1}).

    The decay is multiplied by the learning rate :math:`\eta`, as in PyTorch's
    ``AdamW`` (and unlike the paper's separate schedule multiplier). Note the
    default :math:`\lambda` is 1e-4, while PyTorch's default is 1e-2.

    Args:
        learning_rate: :math:`\eta` (float or schedule).
        b1, b2, eps, eps_root, mu_dtype, nesterov: as in :func:`adam`.
        weight_decay: :math:`\lambda` (float or schedule).
        mask: which parameters to decay (pytree of bools or function of params).

    Returns:
        ``chain(scale_by_adam, add_decayed_weights, scale_by_learning_rate)``.
    """
    return chain(scale_by_adam(b1=b1, b2=b2, eps=eps, eps_root=eps_root, mu_dtype=mu_dtype,
                               nesterov=nesterov),
                 add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))


def nadamw(learning_rate: ScalarOrSchedule, b1: float = 0.9, b2: float = 0.999,
           eps: float = 1e-8, eps_root: float = 0.0, mu_dtype: Optional[Any] = None,
           weight_decay: ScalarOrSchedule = 1e-4, mask: MaskOrFn = None
           ) -> GradientTransformationExtraArgs:
    """NAdamW: :func:`adamw` with ``nesterov=True``."""
    return adamw(learning_rate, b1, b2, eps, eps_root, mu_dtype, weight_decay, mask,
                 nesterov=True)


def rmsprop(learning_rate: ScalarOrSchedule, decay: float = 0.9, eps: float = 1e-8,
            initial_scale: float = 0.0, eps_in_sqrt: bool = True, centered: bool = False,
            momentum: Optional[float] = None, nesterov: bool = False,
            bias_correction: bool = False) -> GradientTransformationExtraArgs:
    r"""RMSProp (Hinton 2012), optionally centered (Graves 2013) and with momentum.

    :math:`v_t = \rho v_{t-1} + (1-\rho) g_t^2`, update
    :math:`-\eta\, g_t / \sqrt{v_t + \epsilon}` (centered: :math:`v_t - m_t^2`).
    Momentum accumulates the already learning-rate-scaled step (the same as
    PyTorch for a constant learning rate). Unlike
    PyTorch (``alpha=0.99``, eps outside the root) the defaults are
    ``decay=0.9`` and eps inside the root; use ``eps_in_sqrt=False`` to match
    PyTorch's placement.

    Returns:
        ``chain(scale_by_rms | scale_by_stddev, scale_by_learning_rate,
        trace | identity)``.
    """
    scaler = scale_by_stddev if centered else scale_by_rms
    return chain(
        scaler(decay=decay, eps=eps, initial_scale=initial_scale, eps_in_sqrt=eps_in_sqrt,
               bias_correction=bias_correction),
        scale_by_learning_rate(learning_rate),
        trace(decay=momentum, nesterov=nesterov) if momentum is not None else identity())


def adagrad(learning_rate: ScalarOrSchedule, initial_accumulator_value: float = 0.1,
            eps: float = 1e-7) -> GradientTransformationExtraArgs:
    r"""AdaGrad (Duchi, Hazan & Singer, JMLR 2011).

    :math:`G_t = G_{t-1} + g_t^2`, update :math:`-\eta\, g_t / \sqrt{G_t + \epsilon}`.
    PyTorch's ``Adagrad`` puts eps outside the root and starts :math:`G` at 0.

    Returns:
        ``chain(scale_by_rss(...), scale_by_learning_rate(lr))``.
    """
    return chain(scale_by_rss(initial_accumulator_value=initial_accumulator_value, eps=eps),
                 scale_by_learning_rate(learning_rate))


def adafactor(learning_rate: Optional[ScalarOrSchedule] = None,
              min_dim_size_to_factor: int = 128, decay_rate: float = 0.8,
              decay_offset: int = 0, multiply_by_parameter_scale: bool = True,
              clipping_threshold: Optional[float] = 1.0, momentum: Optional[float] = None,
              dtype_momentum: Any = jnp.float32,
              weight_decay_rate: Optional[ScalarOrSchedule] = None, eps: float = 1e-30,
              factored: bool = True, weight_decay_mask: MaskOrFn = None
              ) -> GradientTransformationExtraArgs:
    r"""Adafactor (Shazeer & Stern, ICML 2018, arXiv:1804.04235).

    Factored second-moment scaling (:func:`scale_by_factored_rms`), then
    optionally: update clipping by block RMS (``clipping_threshold``), the
    learning rate, relative step sizes (multiply by the parameter RMS), an EMA
    momentum, weight decay, and finally a sign flip for descent.

    Returns:
        A chain whose state has one entry per enabled component, in that order.
    """
    tx = [scale_by_factored_rms(factored, decay_rate, decay_offset, min_dim_size_to_factor, eps)]
    if clipping_threshold is not None:
        tx.append(clip_by_block_rms(clipping_threshold))
    if learning_rate is not None:
        tx.append(scale_by_learning_rate(learning_rate, flip_sign=False))
    if multiply_by_parameter_scale:
        tx.append(scale_by_param_block_rms())
    if momentum is not None:
        tx.append(ema(momentum, debias=False, accumulator_dtype=dtype_momentum))
    if weight_decay_rate is not None:
        tx.append(add_decayed_weights(weight_decay_rate, mask=weight_decay_mask))
    tx.append(scale(-1))
    return chain(*tx)


def lamb(learning_rate: ScalarOrSchedule, b1: float = 0.9, b2: float = 0.999,
         eps: float = 1e-6, eps_root: float = 0.0, weight_decay: float = 0.0,
         mask: MaskOrFn = None) -> GradientTransformationExtraArgs:
    r"""LAMB (You et al., "Large Batch Optimization for Deep Learning", ICLR 2020).

    Adam direction plus weight decay, rescaled per parameter block by the trust
    ratio :math:`\|\theta\| / \|u\|`, then by :math:`-\eta`.

    Returns:
        ``chain(scale_by_adam, add_decayed_weights, scale_by_trust_ratio,
        scale_by_learning_rate)``.
    """
    return chain(scale_by_adam(b1=b1, b2=b2, eps=eps, eps_root=eps_root),
                 add_decayed_weights(weight_decay=weight_decay, mask=mask),
                 scale_by_trust_ratio(),
                 scale_by_learning_rate(learning_rate))


def lion(learning_rate: ScalarOrSchedule, b1: float = 0.9, b2: float = 0.99,
         mu_dtype: Optional[Any] = None, weight_decay: ScalarOrSchedule = 1e-3,
         mask: MaskOrFn = None) -> GradientTransformationExtraArgs:
    r"""Lion (Chen et al., "Symbolic Discovery of Optimization Algorithms", 2023).

    :math:`\theta \leftarrow \theta - \eta(\mathrm{sign}(\beta_1 m + (1-\beta_1) g)
    + \lambda\theta)`, :math:`m \leftarrow \beta_2 m + (1-\beta_2) g`. Use a
    learning rate 3-10x smaller than for AdamW.

    Returns:
        ``chain(scale_by_lion, add_decayed_weights, scale_by_learning_rate)``.
    """
    return chain(scale_by_lion(b1=b1, b2=b2, mu_dtype=mu_dtype),
                 add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))
