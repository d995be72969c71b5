"""Deprecated second-order helpers of ``optax.second_order`` (removed in optax 0.2.9).

Each takes ``loss(params, inputs, targets)`` and works on the parameters
flattened into one vector (leaves concatenated in pytree order).
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import fluxion
import fluxion.numpy as jnp

from ._projections import _ravel


def _warn(name: str) -> None:
    warnings.warn(f'optax.second_order.{name} is deprecated (removed in optax 0.2.9).',
                  DeprecationWarning, stacklevel=3)


def _hvp(loss: Callable[..., Any], v: Any, params: Any, inputs: Any, targets: Any) -> Any:
    _, unravel = _ravel(params)
    return fluxion.jvp(fluxion.grad(lambda p: loss(p, inputs, targets)), (params,),
                       (unravel(v),))[1]


def hvp(loss: Callable[..., Any], v: Any, params: Any, inputs: Any, targets: Any) -> Any:
    """Hessian-vector product :math:`H v` (``v`` flat; result a params-shaped tree).

    Forward-over-reverse: the JVP of the gradient in direction ``v``.
    """
    _warn('hvp')
    return _hvp(loss, v, params, inputs, targets)


def hessian_diag(loss: Callable[..., Any], params: Any, inputs: Any, targets: Any) -> Any:
    """Exact Hessian diagonal (flat vector): one HVP per parameter, O(n) products."""
    _warn('hessian_diag')
    flat, _ = _ravel(params)
    basis = jnp.eye(flat.size)
    return fluxion.vmap(
        lambda v: jnp.vdot(v, _ravel(_hvp(loss, v, params, inputs, targets))[0]))(basis)


def fisher_diag(negative_log_likelihood: Callable[..., Any], params: Any, inputs: Any,
                targets: Any) -> Any:
    """Empirical Fisher diagonal: the squared gradient of the NLL (flat vector)."""
    _warn('fisher_diag')
    return jnp.square(_ravel(fluxion.grad(negative_log_likelihood)(params, inputs, targets))[0])
