"""Gradient clipping transformations."""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
from fluxion import tree_util

from . import _numerics
from ._base import GradientTransformation, init_empty_state
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
