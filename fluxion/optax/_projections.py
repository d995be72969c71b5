r"""Euclidean projections of pytrees onto convex sets (for projected gradient methods).

Each function returns :math:`\arg\min_{y \in C} \|y - x\|_2` for a set
:math:`C`, treating the pytree as one flat vector. The simplex projection
follows Duchi et al., "Efficient Projections onto the l1-Ball for Learning in
High Dimensions", ICML 2008 (sort-based, O(n log n)), with the almost
everywhere derivative of Martins & Astudillo, "From Softmax to Sparsemax",
ICML 2016.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import fluxion
import fluxion.numpy as jnp
from fluxion import lax, tree_util

from ._tree_math import tree_add_scale, tree_full_like, tree_mul, tree_norm, tree_scale, tree_vdot


def _ravel(tree: Any) -> tuple[Any, Any]:
    """Flat vector of all leaves and a function restoring the tree from one."""
    leaves, treedef = tree_util.tree_flatten(tree)
    shapes = [jnp.shape(x) for x in leaves]
    dtypes = [jnp.asarray(x).dtype for x in leaves]
    flat = jnp.concatenate([jnp.reshape(x, (-1,)) for x in leaves]) if leaves else jnp.zeros(0)
    cuts = [int(c) for c in np.cumsum([int(np.prod(s)) for s in shapes])[:-1]]

    def unravel(vec):
        pieces = jnp.split(vec, cuts) if cuts else [vec]
        return tree_util.tree_unflatten(
            treedef, [jnp.reshape(p, s).astype(d) for p, s, d in zip(pieces, shapes, dtypes)])

    return flat, unravel


def projection_non_negative(tree: Any) -> Any:
    """Projection onto the non-negative orthant: ``max(x, 0)`` leafwise."""
    return tree_util.tree_map(fluxion.nn.relu, tree)


def _broadcast_bound(bound: Any, tree: Any) -> Any:
    """A bound given as a scalar applies to every leaf; a pytree must match ``tree``."""
    if tree_util.tree_structure(bound).num_leaves == 1 and \
            tree_util.tree_structure(tree).num_leaves != 1:
        return tree_util.tree_map(lambda _: bound, tree)
    return bound


def projection_box(tree: Any, lower: Any, upper: Any) -> Any:
    """Projection onto the box ``lower <= x <= upper`` (``clip`` leafwise).

    ``lower`` / ``upper`` are scalars or pytrees matching ``tree`` (optax
    requires trees unless ``tree`` is a single array).
    """
    return tree_util.tree_map(jnp.clip, tree, _broadcast_bound(lower, tree),
                              _broadcast_bound(upper, tree))


def projection_hypercube(tree: Any, scale: Any = 1) -> Any:
    """Projection onto ``[0, scale]^n``."""
    return projection_box(tree, lower=0, upper=scale)


@fluxion.custom_jvp
def _projection_unit_simplex(values: Any) -> Any:
    n = values.shape[0]
    u = jnp.sort(values)[::-1]
    cumsum_u = jnp.cumsum(u)
    ind = jnp.arange(n) + 1
    # Size of the support: the largest k with u_k + (1 - sum_{i<=k} u_i)/k > 0.
    k = jnp.count_nonzero(1 / ind + (u - cumsum_u / ind) > 0)
    return fluxion.nn.relu(1 / k + (values - cumsum_u[k - 1] / k))


@_projection_unit_simplex.defjvp
def _projection_unit_simplex_jvp(primals, tangents):
    (values,), (values_dot,) = primals, tangents
    out = _projection_unit_simplex(values)
    supp = out > 0
    card = jnp.count_nonzero(supp)
    return out, supp * values_dot - jnp.dot(supp, values_dot) / card * supp


def projection_simplex(tree: Any, scale: Any = 1) -> Any:
    r"""Projection onto the simplex :math:`\{x \ge 0, \sum x = s\}` (all leaves jointly)."""
    values, unravel = _ravel(tree)
    return unravel(scale * _projection_unit_simplex(values / scale))


def projection_l1_sphere(tree: Any, scale: Any = 1) -> Any:
    r"""Projection onto the l1 sphere :math:`\{\|x\|_1 = s\}`."""
    abs_proj = projection_simplex(tree_util.tree_map(jnp.abs, tree), scale)
    return tree_mul(tree_util.tree_map(jnp.sign, tree), abs_proj)


def projection_l1_ball(tree: Any, scale: Any = 1) -> Any:
    r"""Projection onto the l1 ball :math:`\{\|x\|_1 \le s\}`."""
    return lax.cond(tree_norm(tree, ord=1) <= scale, lambda t: t,
                    lambda t: projection_l1_sphere(t, scale), tree)


def projection_l2_sphere(tree: Any, scale: Any = 1) -> Any:
    r"""Projection onto the l2 sphere :math:`\{\|x\|_2 = s\}` (NaN at x = 0)."""
    return tree_scale(scale / tree_norm(tree), tree)


def projection_l2_ball(tree: Any, scale: Any = 1) -> Any:
    r"""Projection onto the l2 ball :math:`\{\|x\|_2 \le s\}`."""
    sq = tree_norm(tree, squared=True)
    return tree_scale(scale / jnp.sqrt(jnp.maximum(sq, scale ** 2)), tree)


def projection_linf_ball(tree: Any, scale: Any = 1) -> Any:
    r"""Projection onto the l-infinity ball :math:`\{\|x\|_\infty \le s\}`."""
    return projection_box(tree, tree_full_like(tree, -scale), tree_full_like(tree, scale))


def projection_vector(x: Any, a: Any) -> Any:
    r"""Projection onto the line spanned by :math:`a`: :math:`\frac{\langle x,a\rangle}{\langle a,a\rangle} a`."""
    return tree_scale(tree_vdot(x, a) / tree_vdot(a, a), a)


def projection_hyperplane(x: Any, a: Any, b: Any) -> Any:
    r"""Projection onto :math:`\{y: \langle a, y\rangle = b\}`."""
    return tree_add_scale(x, (b - tree_vdot(x, a)) / tree_vdot(a, a), a)


def projection_halfspace(x: Any, a: Any, b: Any) -> Any:
    r"""Projection onto :math:`\{y: \langle a, y\rangle \le b\}`."""
    return tree_add_scale(x, jnp.minimum((b - tree_vdot(x, a)) / tree_vdot(a, a), 0), a)
