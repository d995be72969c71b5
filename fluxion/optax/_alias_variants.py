r"""More ready-made optimizers: Adam variants, sign methods, Rprop, Polyak, LARS...

Each is a :func:`chain` with the same components (and so the same state
layout) as the optax 0.2.x alias of the same name. ``learning_rate`` may be a
float or a schedule unless stated otherwise.
"""

from __future__ import annotations

import warnings
from typing import Any, Optional

from ._accumulation import ema, trace
from ._alias import sgd
from ._base import GradientTransformationExtraArgs, MaskOrFn, ScalarOrSchedule
from ._combine import chain
from ._masking import masked
from ._moments import (scale_by_adadelta, scale_by_adamax, scale_by_adan, scale_by_amsgrad,
                       scale_by_belief, scale_by_novograd, scale_by_radam, scale_by_sm3,
                       scale_by_yogi)
from ._stepsize import scale_by_optimistic_gradient, scale_by_polyak, scale_by_rprop
from ._transform import (add_decayed_weights, scale, scale_by_adam, scale_by_learning_rate,
                         scale_by_sign, scale_by_trust_ratio)
from ._wrappers import add_noise


def adabelief(learning_rate: ScalarOrSchedule, b1: Any = 0.9, b2: Any = 0.999,
              eps: Any = 1e-16, eps_root: Any = 1e-16, *, nesterov: bool = False
              ) -> GradientTransformationExtraArgs:
    """AdaBelief (Zhuang et al. 2020): ``chain(scale_by_belief, scale_by_learning_rate)``."""
    return chain(scale_by_belief(b1=b1, b2=b2, eps=eps, eps_root=eps_root, nesterov=nesterov),
                 scale_by_learning_rate(learning_rate))


def adadelta(learning_rate: Optional[ScalarOrSchedule] = None, rho: Any = 0.9, eps: Any = 1e-6,
             weight_decay: ScalarOrSchedule = 0.0, weight_decay_mask: MaskOrFn = None
             ) -> GradientTransformationExtraArgs:
    """AdaDelta (Zeiler 2012) with optional L2 weight decay applied to the gradient first.

    Returns:
        ``chain(add_decayed_weights, scale_by_adadelta, scale_by_learning_rate)``.
    """
    return chain(add_decayed_weights(weight_decay, mask=weight_decay_mask),
                 scale_by_adadelta(rho=rho, eps=eps), scale_by_learning_rate(learning_rate))


def adamax(learning_rate: ScalarOrSchedule, b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-8
           ) -> GradientTransformationExtraArgs:
    """AdaMax (Kingma & Ba 2014, section 7.1): ``chain(scale_by_adamax, lr)``."""
    return chain(scale_by_adamax(b1=b1, b2=b2, eps=eps), scale_by_learning_rate(learning_rate))


def adamaxw(learning_rate: ScalarOrSchedule, b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-8,
            weight_decay: ScalarOrSchedule = 1e-4, mask: MaskOrFn = None
            ) -> GradientTransformationExtraArgs:
    """AdaMax with decoupled weight decay (as AdamW is to Adam)."""
    return chain(scale_by_adamax(b1=b1, b2=b2, eps=eps), add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))


def adan(learning_rate: ScalarOrSchedule, b1: Any = 0.98, b2: Any = 0.92, b3: Any = 0.99,
         eps: Any = 1e-8, eps_root: Any = 1e-8, weight_decay: ScalarOrSchedule = 0.0,
         mask: MaskOrFn = None) -> GradientTransformationExtraArgs:
    """Adan (Xie et al. 2022): ``chain(scale_by_adan, add_decayed_weights, lr)``.

    Note the default ``eps_root`` is 1e-8 here but 0 in :func:`scale_by_adan`
    (as in optax).
    """
    return chain(scale_by_adan(b1=b1, b2=b2, b3=b3, eps=eps, eps_root=eps_root),
                 add_decayed_weights(weight_decay, mask), scale_by_learning_rate(learning_rate))


def amsgrad(learning_rate: ScalarOrSchedule, b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-8,
            eps_root: Any = 0.0, mu_dtype: Optional[Any] = None, bias_correction_mu: bool = True,
            bias_correction_nu: bool = True) -> GradientTransformationExtraArgs:
    """AMSGrad (Reddi et al. 2018): ``chain(scale_by_amsgrad, scale_by_learning_rate)``."""
    return chain(scale_by_amsgrad(b1=b1, b2=b2, eps=eps, eps_root=eps_root, mu_dtype=mu_dtype,
                                  bias_correction_mu=bias_correction_mu,
                                  bias_correction_nu=bias_correction_nu),
                 scale_by_learning_rate(learning_rate))


def fromage(learning_rate: ScalarOrSchedule, min_norm: Any = 1e-6
            ) -> GradientTransformationExtraArgs:
    r"""Fromage (Bernstein et al., "On the distance between two neural networks and
    the stability of learning", NeurIPS 2020).

    The step is the trust-ratio-scaled gradient times :math:`\eta/\sqrt{1+\eta^2}`
    and the weights shrink by the factor :math:`1/\sqrt{1+\eta^2}`.

    Returns:
        ``chain(scale_by_trust_ratio, scale_by_learning_rate, add_decayed_weights)``.
    """
    if callable(learning_rate):
        def mult(count):
            return 1 / (1 + learning_rate(count) ** 2) ** 0.5
        return chain(scale_by_trust_ratio(min_norm),
                     scale_by_learning_rate(lambda c: mult(c) * learning_rate(c)),
                     add_decayed_weights(lambda c: mult(c) - 1))
    mult = 1 / (1 + learning_rate ** 2) ** 0.5
    return chain(scale_by_trust_ratio(min_norm), scale_by_learning_rate(learning_rate * mult),
                 add_decayed_weights(mult - 1))


def lars(learning_rate: ScalarOrSchedule, weight_decay: ScalarOrSchedule = 0.0,
         weight_decay_mask: MaskOrFn = True, trust_coefficient: Any = 0.001, eps: Any = 0.0,
         trust_ratio_mask: MaskOrFn = True, momentum: Any = 0.9, nesterov: bool = False
         ) -> GradientTransformationExtraArgs:
    """LARS (You, Gitman & Ginsburg 2017, arXiv:1708.03888): layer-wise trust ratio + momentum.

    Returns:
        ``chain(add_decayed_weights, masked(scale_by_trust_ratio), lr, trace)``.
    """
    return chain(add_decayed_weights(weight_decay, mask=weight_decay_mask),
                 masked(scale_by_trust_ratio(trust_coefficient=trust_coefficient, eps=eps),
                        trust_ratio_mask),
                 scale_by_learning_rate(learning_rate), trace(decay=momentum, nesterov=nesterov))


def noisy_sgd(learning_rate: ScalarOrSchedule, eta: Any = 0.01, gamma: Any = 0.55,
              key: Any = None, *, seed: Optional[int] = None) -> GradientTransformationExtraArgs:
    """SGD with annealed Gaussian gradient noise (Neelakantan et al. 2015).

    Returns:
        ``chain(add_noise(eta, gamma, key), scale_by_learning_rate)``.
    """
    return chain(add_noise(eta, gamma, key, seed=seed), scale_by_learning_rate(learning_rate))


def novograd(learning_rate: ScalarOrSchedule, b1: Any = 0.9, b2: Any = 0.25, eps: Any = 1e-6,
             eps_root: Any = 0.0, weight_decay: Any = 0.0) -> GradientTransformationExtraArgs:
    """NovoGrad (Ginsburg et al. 2019): ``chain(scale_by_novograd, lr)``; needs ``params``."""
    return chain(scale_by_novograd(b1=b1, b2=b2, eps=eps, eps_root=eps_root,
                                   weight_decay=weight_decay),
                 scale_by_learning_rate(learning_rate))


def optimistic_gradient_descent(learning_rate: ScalarOrSchedule, alpha: Any = 1.0,
                                beta: Any = 1.0) -> GradientTransformationExtraArgs:
    """Optimistic gradient descent (Mokhtari et al. 2020) for min-max problems."""
    return chain(scale_by_optimistic_gradient(alpha=alpha, beta=beta),
                 scale_by_learning_rate(learning_rate))


def optimistic_adam(learning_rate: Any, optimism: Optional[Any] = None, b1: Any = 0.9,
                    b2: Any = 0.999, eps: Any = 1e-8, eps_root: Any = 0.0,
                    mu_dtype: Optional[Any] = None, *, nesterov: bool = True
                    ) -> GradientTransformationExtraArgs:
    """Deprecated optimistic Adam (Daskalakis et al. 2018); use :func:`optimistic_adam_v2`.

    ``learning_rate`` is the optimistic gradient's ``alpha`` and ``optimism``
    (default: the learning rate) its ``beta``; the final step is ``-1``.

    Raises:
        ValueError: if ``learning_rate`` is a schedule.
    """
    warnings.warn('optimistic_adam is deprecated, use optimistic_adam_v2.', DeprecationWarning,
                  stacklevel=2)
    if callable(learning_rate):
        raise ValueError('optimistic_adam: learning-rate schedules are not supported; use '
                         'optimistic_adam_v2.')
    if optimism is None:
        optimism = learning_rate
    return chain(scale_by_adam(b1=b1, b2=b2, eps=eps, eps_root=eps_root, mu_dtype=mu_dtype,
                               nesterov=nesterov),
                 scale_by_optimistic_gradient(alpha=learning_rate, beta=optimism),
                 scale_by_learning_rate(1.0))


def optimistic_adam_v2(learning_rate: ScalarOrSchedule, *, alpha: Any = 1.0, beta: Any = 1.0,
                       b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-8, eps_root: Any = 0.0,
                       mu_dtype: Optional[Any] = None, nesterov: bool = True
                       ) -> GradientTransformationExtraArgs:
    """Optimistic Adam (Daskalakis et al., ICLR 2018): Adam, then optimistic gradient, then lr."""
    return chain(scale_by_adam(b1=b1, b2=b2, eps=eps, eps_root=eps_root, mu_dtype=mu_dtype,
                               nesterov=nesterov),
                 scale_by_optimistic_gradient(alpha=alpha, beta=beta),
                 scale_by_learning_rate(learning_rate))


def polyak_sgd(max_learning_rate: Any = 1.0, scaling: ScalarOrSchedule = 1.0, f_min: Any = 0.0,
               eps: Any = 0.0, variant: str = 'sps') -> GradientTransformationExtraArgs:
    """SGD with the Polyak step size (Loizou et al. 2021); pass ``value=loss`` to update.

    Returns:
        ``chain(sgd(scaling), scale_by_polyak(...))``.
    """
    return chain(sgd(learning_rate=scaling),
                 scale_by_polyak(max_learning_rate=max_learning_rate, f_min=f_min, eps=eps,
                                 variant=variant))


def radam(learning_rate: ScalarOrSchedule, b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-8,
          eps_root: Any = 0.0, threshold: Any = 5.0, *, nesterov: bool = False
          ) -> GradientTransformationExtraArgs:
    """Rectified Adam (Liu et al. 2020): ``chain(scale_by_radam, lr)``."""
    return chain(scale_by_radam(b1=b1, b2=b2, eps=eps, eps_root=eps_root, threshold=threshold,
                                nesterov=nesterov),
                 scale_by_learning_rate(learning_rate))


def rprop(learning_rate: Any, eta_minus: Any = 0.5, eta_plus: Any = 1.2,
          min_step_size: Any = 1e-6, max_step_size: Any = 50.0
          ) -> GradientTransformationExtraArgs:
    """Rprop (Riedmiller & Braun 1993): ``chain(scale_by_rprop, scale(-1))``.

    ``learning_rate`` is the initial per-element step size (a float).
    """
    return chain(scale_by_rprop(learning_rate=learning_rate, eta_minus=eta_minus,
                                eta_plus=eta_plus, min_step_size=min_step_size,
                                max_step_size=max_step_size),
                 scale(-1.0))


def sign_sgd(learning_rate: ScalarOrSchedule) -> GradientTransformationExtraArgs:
    """signSGD (Bernstein et al. 2018): ``chain(scale_by_sign, lr)``."""
    return chain(scale_by_sign(), scale_by_learning_rate(learning_rate))


def signum(learning_rate: ScalarOrSchedule, beta: Any = 0.9,
           accumulator_dtype: Optional[Any] = None) -> GradientTransformationExtraArgs:
    """Signum (Bernstein et al. 2018): sign of an (un-debiased) EMA of the gradients."""
    return chain(ema(beta, debias=False, accumulator_dtype=accumulator_dtype), scale_by_sign(),
                 scale_by_learning_rate(learning_rate))


def sm3(learning_rate: Any, momentum: Any = 0.9) -> GradientTransformationExtraArgs:
    """SM3 (Anil et al. 2019): ``chain(scale_by_sm3(momentum), scale(-learning_rate))``.

    ``learning_rate`` must be a float (as in optax).
    """
    return chain(scale_by_sm3(momentum), scale(-learning_rate))


def yogi(learning_rate: ScalarOrSchedule, b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-3
         ) -> GradientTransformationExtraArgs:
    """Yogi (Zaheer et al. 2018): ``chain(scale_by_yogi, lr)``."""
    return chain(scale_by_yogi(b1=b1, b2=b2, eps=eps), scale_by_learning_rate(learning_rate))
