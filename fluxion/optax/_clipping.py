"""Gradient clipping transformations."""

from __future__ import annotations

from typing import Any

import numpy as np

import fluxion.numpy as jnp
from fluxion import tree_util

from . import _numerics
from ._base import EmptyState, GradientTransformation, init_empty_state, require_params
from ._tree_math import tree_clip, tree_norm


def global_norm(updates: Any) -> Any:
    r"""Euclidean norm of all leaves concatenated: :math:`\sqrt{\sum_i \|x_i\|^2}`.

    Args:
        updates: pytree of arrays.

    Returns:
        A scalar array (0 for an empty tree).
    """
    return tree_norm(updates)


def clip(max_delta: Any) -> GradientTransformation:
    """Clips every update element to ``[-max_delta, max_delta]``.

    Args:
        max_delta: positive scalar bound.

    Returns:
        A stateless transformation.
    """

    def update_fn(updates, state, params=None):
        del params
        return tree_clip(updates, -max_delta, max_delta), state

    return GradientTransformation(init_empty_state, update_fn)


def clip_by_global_norm(max_norm: Any) -> GradientTransformation:
    r"""Rescales all updates jointly so their global norm is at most ``max_norm``.

    Pascanu, Mikolov & Bengio, "On the difficulty of training recurrent neural
    networks", ICML 2013: :math:`g \leftarrow g \cdot \text{max\_norm}/\|g\|`
    when :math:`\|g\| \ge \text{max\_norm}`. Same rule as PyTorch's
    ``clip_grad_norm_`` except PyTorch adds 1e-6 to the norm.

    Args:
        max_norm: positive scalar.

    Returns:
        A stateless transformation.
    """

    def update_fn(updates, state, params=None):
        del params
        g_norm = tree_norm(updates)
        keep = jnp.squeeze(g_norm < max_norm)
        updates = tree_util.tree_map(
            lambda t: jnp.where(keep, t, (t / g_norm.astype(t.dtype)) * max_norm), updates)
        return updates, state

    return GradientTransformation(init_empty_state, update_fn)


def clip_by_block_rms(threshold: Any) -> GradientTransformation:
    """Rescales each leaf so its root-mean-square is at most ``threshold`` (Adafactor).

    Args:
        threshold: positive scalar.

    Returns:
        A stateless transformation.
    """

    def clip_leaf(u):
        denom = jnp.maximum(1.0, jnp.sqrt(jnp.mean(_numerics.abs_sq(u))) / threshold)
        return u / denom

    def update_fn(updates, state, params=None):
        del params
        return tree_util.tree_map(clip_leaf, updates), state

    return GradientTransformation(init_empty_state, update_fn)


def unitwise_norm(x: Any, axis: Any = None) -> Any:
    """Per-unit (per output neuron) Euclidean norm, broadcast back to ``x.shape``.

    Without ``axis``: vectors and scalars use their whole norm; 2-d/3-d arrays
    reduce axis 0; 4-d reduce axes (0, 1, 2) (HWIO convolutions); 5-d reduce
    (0, 1, 2, 3).

    Raises:
        ValueError: for other ranks when ``axis`` is None.
    """
    if axis is not None:
        sq = jnp.sum(_numerics.abs_sq(x), axis=axis, keepdims=True)
    elif jnp.squeeze(x).ndim <= 1:
        sq = jnp.sum(_numerics.abs_sq(x), keepdims=True)
    elif x.ndim in (2, 3):
        sq = jnp.sum(_numerics.abs_sq(x), axis=0, keepdims=True)
    elif x.ndim in (4, 5):
        sq = jnp.sum(_numerics.abs_sq(x), axis=tuple(range(x.ndim - 1)), keepdims=True)
    else:
        raise ValueError(f'unitwise_norm: expected an array of rank 1 to 5, got shape {x.shape}; '
                         'pass `axis` to choose the reduction axes.')
    return jnp.broadcast_to(jnp.sqrt(sq), x.shape)


def unitwise_clip(g_norm: Any, max_norm: Any, grad: Any, div_eps: Any = 1e-6) -> Any:
    """Rescales ``grad`` to norm ``max_norm`` where ``g_norm >= max_norm`` (same shapes).

    Raises:
        ValueError: if the three shapes differ.
    """
    shapes = {jnp.shape(g_norm), jnp.shape(max_norm), jnp.shape(grad)}
    if len(shapes) != 1:
        raise ValueError('unitwise_clip: g_norm, max_norm and grad must have the same shape, got '
                         f'{jnp.shape(g_norm)}, {jnp.shape(max_norm)}, {jnp.shape(grad)}.')
    clipped = grad * (max_norm / jnp.maximum(g_norm, div_eps))
    return jnp.where(g_norm < max_norm, grad, clipped)


AdaptiveGradClipState = EmptyState


def adaptive_grad_clip(clipping: Any, eps: Any = 1e-3, axis: Any = None
                       ) -> GradientTransformation:
    r"""Adaptive gradient clipping (Brock et al., "High-Performance Large-Scale Image
    Recognition Without Normalization", 2021, arXiv:2102.06171).

    Each unit's gradient is rescaled so that
    :math:`\|g_i\| \le \lambda \max(\|\theta_i\|, \epsilon)` (norms from
    :func:`unitwise_norm`).

    Returns:
        A stateless transformation that requires ``params``.
    """

    def update_fn(updates, state, params=None):
        require_params(params, 'adaptive_grad_clip')
        g_norm = tree_util.tree_map(lambda x: unitwise_norm(x, axis=axis), updates)
        p_norm = tree_util.tree_map(lambda x: unitwise_norm(x, axis=axis), params)
        max_norm = tree_util.tree_map(lambda x: clipping * jnp.maximum(x, eps), p_norm)
        return tree_util.tree_map(unitwise_clip, g_norm, max_norm, updates), state

    return GradientTransformation(init_empty_state, update_fn)


def _check_batched(grads: Any, name: str) -> None:
    leaves = tree_util.tree_leaves(grads)
    if not leaves or any(jnp.ndim(g) < 1 for g in leaves) or \
            len({jnp.shape(g)[0] for g in leaves}) != 1:
        raise ValueError(f'{name}: expects per-example `grads` whose leaves all share a batch '
                         f'dimension on axis 0; got shapes '
                         f'{[jnp.shape(g) for g in leaves]}.')


def per_example_global_norm_clip(grads: Any, l2_norm_clip: Any) -> tuple[Any, Any]:
    """Clips each example's gradient to global norm ``l2_norm_clip`` and sums over examples.

    Used by DP-SGD (Abadi et al. 2016). ``grads`` leaves have a leading batch axis.

    Returns:
        ``(clipped_sum, num_clipped)``: the summed tree (batch axis removed) and
        the number of examples that were clipped.

    Raises:
        ValueError: if the leaves do not share a leading batch axis.
    """
    _check_batched(grads, 'per_example_global_norm_clip')
    sq = [jnp.sum(_numerics.abs_sq(g), axis=tuple(range(1, g.ndim)))
          for g in tree_util.tree_leaves(grads)]
    norms = jnp.sqrt(sum(sq[1:], sq[0]))
    multipliers = jnp.nan_to_num(jnp.minimum(l2_norm_clip / norms, 1.0), nan=1.0)
    num_clipped = jnp.sum(multipliers < 1.0)
    clipped_sum = tree_util.tree_map(lambda g: jnp.tensordot(multipliers, g, axes=1), grads)
    return clipped_sum, num_clipped


def per_example_layer_norm_clip(grads: Any, global_l2_norm_clip: Any, uniform: bool = True
                                ) -> tuple[Any, Any]:
    """Per-layer variant of :func:`per_example_global_norm_clip`.

    Each leaf gets its own clip norm: ``C / sqrt(num_layers)`` with ``uniform``,
    else ``C * sqrt(layer_size / total_size)``, so the clipped global norm is
    at most ``C``.

    Returns:
        ``(clipped_sums, num_clipped)``: two trees with the structure of ``grads``.

    Raises:
        ValueError: if the leaves do not share a leading batch axis.
    """
    _check_batched(grads, 'per_example_layer_norm_clip')
    leaves, treedef = tree_util.tree_flatten(grads)
    if uniform:
        clips = [global_l2_norm_clip * (1.0 / len(leaves)) ** 0.5 for _ in leaves]
    else:
        total = sum(int(np.prod(g.shape[1:])) for g in leaves)
        clips = [global_l2_norm_clip * (int(np.prod(g.shape[1:])) / total) ** 0.5 for g in leaves]
    results = [per_example_global_norm_clip(g, c) for g, c in zip(leaves, clips)]
    return (tree_util.tree_unflatten(treedef, [r[0] for r in results]),
            tree_util.tree_unflatten(treedef, [r[1] for r in results]))
