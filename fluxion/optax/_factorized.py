r"""Adafactor's factored second-moment estimate (``scale_by_factored_rms``).

Shazeer & Stern, "Adafactor: Adaptive Learning Rates with Sublinear Memory
Cost", ICML 2018 (arXiv:1804.04235), Algorithm 4. For a matrix gradient
:math:`G_t` (two largest dimensions at least ``min_dim_size_to_factor``) only
row and column means of :math:`G_t^2 + \epsilon_1` are stored:

.. math::
    \hat\beta_{2t} = 1 - t^{-c}, \\
    R_t = \hat\beta_{2t} R_{t-1} + (1-\hat\beta_{2t})\,\mathrm{mean}_{cols}(G_t^2 + \epsilon_1), \\
    C_t = \hat\beta_{2t} C_{t-1} + (1-\hat\beta_{2t})\,\mathrm{mean}_{rows}(G_t^2 + \epsilon_1), \\
    U_t = G_t \,/\, \sqrt{(R_t / \mathrm{mean}(R_t)) \otimes C_t}.

Other arrays keep a full :math:`V_t` and use :math:`U_t = G_t/\sqrt{V_t}`.
Placeholders of shape ``(1,)`` fill the unused fields, as in optax.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, Optional

import numpy as np

import fluxion.numpy as jnp
from fluxion import tree_util

from . import _numerics
from ._base import ArrayTree, GradientTransformation, require_params


def _decay_rate_pow(i: Any, exponent: Any = 0.8) -> Any:
    """Adafactor's increasing decay :math:`1 - (i+1)^{-c}`."""
    t = jnp.array(i + 1, jnp.float32)
    return 1.0 - t ** (-exponent)


def _factored_dims(shape: tuple[int, ...], factored: bool,
                   min_dim_size_to_factor: int) -> Optional[tuple[int, int]]:
    """Returns (second largest axis, largest axis), or None if not factored."""
    if not factored or len(shape) < 2:
        return None
    # np.argsort is used (not a stable sort) so ties pick the same axes as optax.
    sorted_dims = np.argsort(shape)
    if shape[sorted_dims[-2]] < min_dim_size_to_factor:
        return None
    return int(sorted_dims[-2]), int(sorted_dims[-1])


def _zeros_without_axis(x: Any, axis: int) -> Any:
    shape = tuple(d for i, d in enumerate(x.shape) if i != axis)
    return jnp.zeros(shape, dtype=x.dtype)


class FactoredState(NamedTuple):
    """State of :func:`scale_by_factored_rms`.

    Attributes:
        count: int32 step counter.
        v_row: per-leaf row statistics (``(1,)`` placeholder if unfactored).
        v_col: per-leaf column statistics (``(1,)`` placeholder if unfactored).
        v: per-leaf full second moment (``(1,)`` placeholder if factored).
    """
    count: Any
    v_row: ArrayTree
    v_col: ArrayTree
    v: ArrayTree


class _Stats:
    """Opaque per-leaf result holder; not a pytree, so tree_map treats it as a leaf."""
    __slots__ = ('update', 'v_row', 'v_col', 'v')

    def __init__(self, update, v_row, v_col, v):
        self.update, self.v_row, self.v_col, self.v = update, v_row, v_col, v


def _unzip(count: Any, stats_tree: Any) -> FactoredState:
    return FactoredState(
        count=count,
        v_row=tree_util.tree_map(lambda s: s.v_row, stats_tree),
        v_col=tree_util.tree_map(lambda s: s.v_col, stats_tree),
        v=tree_util.tree_map(lambda s: s.v, stats_tree))


def scale_by_factored_rms(factored: bool = True, decay_rate: Any = 0.8,
                          step_offset: Any = 0, min_dim_size_to_factor: int = 128,
                          epsilon: Any = 1e-30,
                          decay_rate_fn: Callable[[Any, Any], Any] = _decay_rate_pow
                          ) -> GradientTransformation:
    """Scales updates by Adafactor's factored estimate of the gradient RMS.

    Args:
        factored: factor the second moment of matrices (False: full moment).
        decay_rate: exponent :math:`c` of the decay schedule.
        step_offset: subtracted from the step count (for fine-tuning).
        min_dim_size_to_factor: only factor if the two largest dims are at
            least this large.
        epsilon: :math:`\\epsilon_1` added to squared gradients.
        decay_rate_fn: ``f(step, decay_rate) -> beta2``.

    Returns:
        A transformation that requires ``params``; state :class:`FactoredState`.
    """

    def init_fn(params):
        def init_leaf(param):
            dims = _factored_dims(param.shape, factored, min_dim_size_to_factor)
            placeholder = jnp.zeros((1,), dtype=param.dtype)
            if dims is not None:
                d1, d0 = dims
                return _Stats(placeholder, _zeros_without_axis(param, d0),
                              _zeros_without_axis(param, d1), placeholder)
            return _Stats(placeholder, placeholder, placeholder, jnp.zeros_like(param))

        return _unzip(jnp.zeros([], jnp.int32), tree_util.tree_map(init_leaf, params))

    def update_fn(grads, state, params=None):
        require_params(params, 'scale_by_factored_rms')
        decay_t = decay_rate_fn(state.count - step_offset, decay_rate)

        def update_leaf(grad, v_row, v_col, v, param):
            dtype = param.dtype
            placeholder = jnp.zeros((1,), dtype=dtype)
            grad_sqr = _numerics.abs_sq(grad) + epsilon
            dims = _factored_dims(param.shape, factored, min_dim_size_to_factor)
            if dims is None:
                new_v = (decay_t * v + (1.0 - decay_t) * grad_sqr).astype(dtype)
                return _Stats(grad * new_v ** -0.5, placeholder, placeholder, new_v)
            d1, d0 = dims
            new_v_row = (decay_t * v_row + (1.0 - decay_t) * jnp.mean(grad_sqr, axis=d0)).astype(dtype)
            new_v_col = (decay_t * v_col + (1.0 - decay_t) * jnp.mean(grad_sqr, axis=d1)).astype(dtype)
            # v_row lost axis d0, so axis d1 moved left by one if it came after d0.
            reduced_d1 = d1 - 1 if d1 > d0 else d1
            row_col_mean = jnp.mean(new_v_row, axis=reduced_d1, keepdims=True)
            row_factor = (new_v_row / row_col_mean) ** -0.5
            col_factor = new_v_col ** -0.5
            update = (grad * jnp.expand_dims(row_factor, axis=d0)
                      * jnp.expand_dims(col_factor, axis=d1))
            return _Stats(update, new_v_row, new_v_col, placeholder)

        stats = tree_util.tree_map(update_leaf, grads, state.v_row, state.v_col, state.v, params)
        updates = tree_util.tree_map(lambda s: s.update, stats)
        return updates, _unzip(_numerics.safe_increment(state.count), stats)

    return GradientTransformation(init_fn, update_fn)
