r"""GaLore: gradient low-rank projection (Zhao et al., "GaLore: Memory-Efficient
LLM Training by Gradient Low-Rank Projection", ICML 2024, arXiv:2403.03507).

Each matrix gradient :math:`G` (m x n) is projected to rank :math:`r` with
the top singular vectors of a recent gradient (:math:`P^T G` with the left
vectors when m >= n, else :math:`G Q` with the right ones), the base
optimizer runs on the small matrices, and its update is projected back and
multiplied by ``scale``. The projector is recomputed every
``update_proj_gap`` steps.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple, Optional, Union

import fluxion.numpy as jnp
from fluxion import lax, tree_util

from .. import _numerics
from .._base import GradientTransformation, MaskOrFn, OptState, ScalarOrSchedule, Updates
from .._combine import chain
from .._transform import add_decayed_weights, scale_by_adam, scale_by_learning_rate


class GaLoreDimensionNumbers(NamedTuple):
    """Axes forming the rows (``reduction_axis``) and columns (``output_axis``) of
    the matrix view of a parameter; together they must cover every axis."""
    reduction_axis: Union[Sequence[int], int] = 0
    output_axis: Union[Sequence[int], int] = 1


def _is_dim_nums(x: Any) -> bool:
    return isinstance(x, GaLoreDimensionNumbers)


def _is_dim_leaf(x: Any) -> bool:
    return x is None or _is_dim_nums(x)


def _matrix_view(x: Any, dim_nums: GaLoreDimensionNumbers):
    """``(to_2d, from_2d)`` for the (rows, cols) view of ``x``."""
    if x.ndim < 2:
        raise ValueError(f'galore: projected parameters need rank >= 2, got shape {x.shape}.')

    def norm(axes):
        return (axes % x.ndim,) if isinstance(axes, int) else tuple(a % x.ndim for a in axes)

    red, out = norm(dim_nums.reduction_axis), norm(dim_nums.output_axis)
    if set(red) & set(out):
        raise ValueError(f'galore: reduction axes {red} and output axes {out} overlap '
                         f'(shape {x.shape}).')
    if len(set(red) | set(out)) != x.ndim:
        raise ValueError(f'galore: every axis must be a reduction or output axis; got {red}, '
                         f'{out} for shape {x.shape}.')
    perm = red + out
    inv = tuple(sorted(range(x.ndim), key=lambda i: perm[i]))
    rows = math.prod(x.shape[a] for a in red)
    cols = math.prod(x.shape[a] for a in out)
    permuted = tuple(x.shape[a] for a in perm)
    return (lambda y: y.transpose(perm).reshape(rows, cols),
            lambda y: y.reshape(permuted).transpose(inv))


class GaLoreState(NamedTuple):
    """State of GaLore: ``count``, the base optimizer's state (on the projected
    matrices) and one ``projector`` per leaf (a (0, 0) array for unprojected leaves)."""
    count: Any
    base_optimizer_state: OptState
    projector: Updates


def scale_by_galore(rank: int = 128, update_proj_gap: int = 200, scale: float = 1.0,
                    base_optimizer: Optional[GradientTransformation] = None,
                    weight_dimension_numbers: Any = None) -> GradientTransformation:
    """GaLore projection around ``base_optimizer`` (default ``scale_by_adam()``).

    Args:
        rank: target rank (capped by the matrix sizes).
        weight_dimension_numbers: None (project every 2-d leaf), one
            ``GaLoreDimensionNumbers`` (for every leaf of rank >= 2), a tree of
            them / None per leaf, or a function of the params returning one.

    Returns:
        State ``GaLoreState(count, base_optimizer_state, projector)``.

    Raises:
        TypeError / ValueError: if ``rank`` is not a positive int.
    """
    if base_optimizer is None:
        base_optimizer = scale_by_adam()
    if not isinstance(rank, int):
        raise TypeError(f'scale_by_galore: `rank` must be an int, got {type(rank).__name__}.')
    if rank <= 0:
        raise ValueError(f'scale_by_galore: `rank` must be positive, got {rank}.')

    def dims_for(params):
        if weight_dimension_numbers is None:
            return tree_util.tree_map(lambda p: GaLoreDimensionNumbers() if p.ndim == 2 else None,
                                      params)
        if callable(weight_dimension_numbers):
            return weight_dimension_numbers(params)
        if _is_dim_nums(weight_dimension_numbers):
            return tree_util.tree_map(lambda p: weight_dimension_numbers if p.ndim >= 2 else None,
                                      params)
        return weight_dimension_numbers

    def shapes(x, dim_nums):
        to_2d, _ = _matrix_view(x, dim_nums)
        m, n = to_2d(x).shape
        return m, n, min(rank, m, n), m >= n

    def unzip(tree, pairs):
        leaves = tree_util.tree_structure(tree).flatten_up_to(pairs)
        treedef = tree_util.tree_structure(tree)
        return (tree_util.tree_unflatten(treedef, [a for a, _ in leaves]),
                tree_util.tree_unflatten(treedef, [b for _, b in leaves]))

    def init_fn(params):
        if not tree_util.tree_leaves(params):
            return GaLoreState(count=jnp.zeros([], jnp.int32),
                               base_optimizer_state=base_optimizer.init(params), projector=params)

        def allocate(p, d):
            if d is None:
                return jnp.zeros((0, 0), dtype=p.dtype), jnp.zeros_like(p)
            m, n, r, left = shapes(p, d)
            proj_shape, small_shape = ((m, r), (r, n)) if left else ((n, r), (m, r))
            return jnp.zeros(proj_shape, dtype=p.dtype), jnp.zeros(small_shape, dtype=p.dtype)

        pairs = tree_util.tree_map(allocate, params, dims_for(params), is_leaf=_is_dim_leaf)
        projectors, proxies = unzip(params, pairs)
        return GaLoreState(count=jnp.zeros([], jnp.int32),
                           base_optimizer_state=base_optimizer.init(proxies),
                           projector=projectors)

    def update_fn(updates, state, params=None):
        del params
        refresh = state.count % update_proj_gap == 0
        dims = dims_for(updates)

        def project(g, projector, d):
            if d is None:
                return g, projector
            to_2d, _ = _matrix_view(g, d)
            g2 = to_2d(g)
            _, _, r, left = shapes(g, d)

            def fresh():
                # SVD in float32 even for low-precision gradients.
                u, _, vh = jnp.linalg.svd(g2.astype(jnp.float32), full_matrices=False)
                basis = u[:, :r] if left else vh[:r, :].T
                return basis.astype(g.dtype)

            new_projector = lax.cond(refresh, fresh, lambda: projector)
            small = new_projector.T @ g2 if left else g2 @ new_projector
            return small, new_projector

        def lift(small_update, projector, g, d):
            if d is None:
                return small_update
            _, from_2d = _matrix_view(g, d)
            _, _, _, left = shapes(g, d)
            full = projector @ small_update if left else small_update @ projector.T
            return (scale * from_2d(full)).astype(g.dtype)

        pairs = tree_util.tree_map(project, updates, state.projector, dims, is_leaf=_is_dim_leaf)
        small_grads, projectors = unzip(updates, pairs)
        small_updates, base_state = base_optimizer.update(small_grads, state.base_optimizer_state,
                                                          None)
        full = tree_util.tree_map(lift, small_updates, projectors, updates, dims,
                                  is_leaf=_is_dim_leaf)
        return full, GaLoreState(count=_numerics.safe_increment(state.count),
                                 base_optimizer_state=base_state, projector=projectors)

    return GradientTransformation(init_fn, update_fn)


def galore(learning_rate: ScalarOrSchedule, rank: int = 128, update_proj_gap: int = 200,
           scale: float = 1.0, base_optimizer: Optional[GradientTransformation] = None,
           weight_decay: Any = 0.0, mask: MaskOrFn = None,
           weight_dimension_numbers: Any = None) -> GradientTransformation:
    """GaLore: ``chain(scale_by_galore, add_decayed_weights, scale_by_learning_rate)``."""
    return chain(scale_by_galore(rank=rank, update_proj_gap=update_proj_gap, scale=scale,
                                 base_optimizer=base_optimizer,
                                 weight_dimension_numbers=weight_dimension_numbers),
                 add_decayed_weights(weight_decay, mask), scale_by_learning_rate(learning_rate))
