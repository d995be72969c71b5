"""Arithmetic on pytrees of arrays (the implementation of ``tree_utils``).

Every function maps leafwise with ``fluxion.tree_util.tree_map``; binary
functions require trees of identical structure. ``None`` leaves (as produced by
some masking utilities) are passed through where noted.
"""

from __future__ import annotations

import functools
import operator
from typing import Any, Optional

import numpy as np

import fluxion.numpy as jnp
from fluxion import tree_util

from . import _numerics


def _is_none(x: Any) -> bool:
    return x is None


def tree_add(tree_x: Any, tree_y: Any, *other_trees: Any) -> Any:
    """Leafwise sum of two or more pytrees of the same structure."""
    return tree_util.tree_map(lambda *leaves: sum(leaves[1:], leaves[0]),
                              tree_x, tree_y, *other_trees)


def tree_sub(tree_x: Any, tree_y: Any) -> Any:
    """Leafwise difference ``tree_x - tree_y``."""
    return tree_util.tree_map(operator.sub, tree_x, tree_y)


def tree_mul(tree_x: Any, tree_y: Any) -> Any:
    """Leafwise product ``tree_x * tree_y``."""
    return tree_util.tree_map(operator.mul, tree_x, tree_y)


def tree_div(tree_x: Any, tree_y: Any) -> Any:
    """Leafwise quotient ``tree_x / tree_y``."""
    return tree_util.tree_map(operator.truediv, tree_x, tree_y)


def tree_scale(scalar: Any, tree: Any) -> Any:
    """Returns ``scalar * tree`` (each leaf multiplied by the same scalar)."""
    return tree_util.tree_map(lambda x: scalar * x, tree)


def tree_add_scale(tree_x: Any, scalar: Any, tree_y: Any) -> Any:
    """Returns ``tree_x + scalar * tree_y``; ``None`` leaves of tree_x stay None."""
    scalar = jnp.asarray(scalar)
    return tree_util.tree_map(
        lambda x, y: None if x is None else x + scalar * y,
        tree_x, tree_y, is_leaf=_is_none)


def tree_vdot(tree_x: Any, tree_y: Any) -> Any:
    """Inner product ``sum_i vdot(x_i, y_i)`` of two pytrees (a scalar).

    The first argument is conjugated, as in ``jnp.vdot``. An empty tree gives 0.
    """
    vdots = tree_util.tree_map(
        lambda a, b: jnp.vdot(jnp.asarray(a), jnp.asarray(b)), tree_x, tree_y)
    return tree_util.tree_reduce(operator.add, vdots, 0)


def tree_sum(tree: Any) -> Any:
    """Sum of all elements of all leaves (0 for an empty tree)."""
    sums = tree_util.tree_map(jnp.sum, tree)
    return tree_util.tree_reduce(operator.add, sums, 0)


def tree_max(tree: Any) -> Any:
    """Maximum element over all leaves; empty leaves are skipped (-inf if none)."""
    maxes = [jnp.max(x) for x in tree_util.tree_leaves(tree) if jnp.size(x)]
    return functools.reduce(jnp.maximum, maxes, -float('inf'))


def tree_min(tree: Any) -> Any:
    """Minimum element over all leaves; empty leaves are skipped (+inf if none)."""
    mins = [jnp.min(x) for x in tree_util.tree_leaves(tree) if jnp.size(x)]
    return functools.reduce(jnp.minimum, mins, float('inf'))


def tree_size(tree: Any) -> int:
    """Total number of elements over all leaves (a Python int)."""
    return sum(int(jnp.size(x)) for x in tree_util.tree_leaves(tree))


def tree_conj(tree: Any) -> Any:
    """Leafwise complex conjugate."""
    return tree_util.tree_map(jnp.conj, tree)


def tree_real(tree: Any) -> Any:
    """Leafwise real part."""
    return tree_util.tree_map(jnp.real, tree)


def _square_abs(leaf: Any) -> Any:
    leaf = jnp.asarray(leaf)
    if _numerics.is_complex(leaf):
        return jnp.square(leaf.real) + jnp.square(leaf.imag)
    return jnp.square(leaf)


def tree_norm(tree: Any, ord: Any = None, squared: bool = False) -> Any:  # noqa: A002
    """Vector norm of the concatenation of all leaves.

    Args:
        tree: pytree of arrays.
        ord: None or 2 (Euclidean), 1, or ``inf`` / ``'inf'`` / ``'infinity'``.
        squared: return the squared norm.

    Returns:
        A scalar array.

    Raises:
        ValueError: for an unsupported ``ord``.
    """
    if ord is None or ord == 2:
        sqnorm = tree_sum(tree_util.tree_map(_square_abs, tree))
        return jnp.asarray(sqnorm if squared else jnp.sqrt(sqnorm))
    if ord == 1:
        value = tree_sum(tree_util.tree_map(jnp.abs, tree))
    elif ord in ('inf', 'infinity') or ord == float('inf'):
        value = tree_max(tree_util.tree_map(jnp.abs, tree))
    else:
        raise ValueError(f'tree_norm: unsupported ord={ord!r}; expected None, '
                         "1, 2 or inf.")
    return jnp.asarray(_square_abs(value) if squared else value)


def tree_l1_norm(tree: Any, squared: bool = False) -> Any:
    """Older optax name for ``tree_norm(tree, ord=1)``."""
    return tree_norm(tree, ord=1, squared=squared)


def tree_l2_norm(tree: Any, squared: bool = False) -> Any:
    """Older optax name for ``tree_norm(tree)`` (Euclidean norm)."""
    return tree_norm(tree, ord=2, squared=squared)


def tree_linf_norm(tree: Any) -> Any:
    """Older optax name for ``tree_norm(tree, ord='inf')``."""
    return tree_norm(tree, ord='inf')


def tree_zeros_like(tree: Any, dtype: Optional[Any] = None) -> Any:
    """Tree of zeros with the structure (and shapes) of ``tree``."""
    return tree_util.tree_map(lambda x: jnp.zeros_like(x, dtype=dtype), tree)


def tree_ones_like(tree: Any, dtype: Optional[Any] = None) -> Any:
    """Tree of ones with the structure (and shapes) of ``tree``."""
    return tree_util.tree_map(lambda x: jnp.ones_like(x, dtype=dtype), tree)


def tree_full_like(tree: Any, fill_value: Any, dtype: Optional[Any] = None) -> Any:
    """Tree of arrays filled with ``fill_value``, shaped like ``tree``."""
    return tree_util.tree_map(
        lambda x: jnp.full_like(x, fill_value, dtype=dtype), tree)


def tree_clip(tree: Any, min_value: Optional[Any] = None,
              max_value: Optional[Any] = None) -> Any:
    """Leafwise ``jnp.clip(x, min_value, max_value)``."""
    return tree_util.tree_map(lambda x: jnp.clip(x, min_value, max_value), tree)


def tree_where(condition: Any, tree_x: Any, tree_y: Any) -> Any:
    """Leafwise ``jnp.where(condition, x, y)`` with one shared condition."""
    return tree_util.tree_map(lambda x, y: jnp.where(condition, x, y),
                              tree_x, tree_y)


def tree_allclose(a: Any, b: Any, rtol: float = 1e-5, atol: float = 1e-8,
                  equal_nan: bool = False) -> bool:
    """True if both trees have the same structure and all leaves are close.

    Compares concrete values on the host (not traceable), like ``np.allclose``.
    """
    if tree_util.tree_structure(a) != tree_util.tree_structure(b):
        return False
    return all(
        bool(np.allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=atol, equal_nan=equal_nan))
        for x, y in zip(tree_util.tree_leaves(a), tree_util.tree_leaves(b)))


def tree_batch_shape(tree: Any, shape: tuple[int, ...] = ()) -> Any:
    """Broadcasts every leaf to ``shape + leaf.shape``."""
    return tree_util.tree_map(
        lambda x: jnp.broadcast_to(x, (*shape, *jnp.shape(x))), tree)


# ----------------------------------------------------------------------------
# Casting.


def tree_cast(tree: Any, dtype: Optional[Any]) -> Any:
    """Casts every leaf to ``dtype``; a no-op when ``dtype`` is None."""
    if dtype is None:
        return tree
    return tree_util.tree_map(lambda t: t.astype(dtype), tree)


def tree_cast_like(tree: Any, other_tree: Any) -> Any:
    """Casts each leaf of ``tree`` to the dtype of the matching leaf of ``other_tree``."""
    return tree_util.tree_map(
        lambda t, o: t.astype(o.dtype) if hasattr(o, 'dtype') else t,
        tree, other_tree)


def _lower_dtype(dtype1: Any, dtype2: Any) -> Any:
    promoted = jnp.promote_types(dtype1, dtype2)
    if promoted == dtype1:
        return dtype2
    if promoted == dtype2:
        return dtype1
    raise ValueError(f'Cannot order dtypes {dtype1} and {dtype2}: neither '
                     'promotes to the other.')


def _higher_dtype(dtype1: Any, dtype2: Any) -> Any:
    return dtype2 if _lower_dtype(dtype1, dtype2) == dtype1 else dtype1


def tree_dtype(tree: Any, mixed_dtype_handler: Optional[str] = None) -> Any:
    """The dtype shared by the leaves of ``tree``.

    Args:
        tree: pytree of arrays.
        mixed_dtype_handler: what to do when leaves differ: None raises,
            ``'promote'`` returns the promoted dtype, ``'highest'`` /
            ``'lowest'`` the highest / lowest dtype in the promotion lattice.

    Returns:
        A dtype (the default float dtype's counterpart for an empty tree).

    Raises:
        ValueError: on mixed dtypes with ``mixed_dtype_handler=None``, or an
            unknown handler.
    """
    leaves = tree_util.tree_leaves(tree)
    if not leaves:
        return jnp.asarray(leaves).dtype
    dtypes = [jnp.asarray(x).dtype for x in leaves]
    if mixed_dtype_handler is None:
        mismatched = [d for d in dtypes if d != dtypes[0]]
        if mismatched:
            raise ValueError(f'tree_dtype: leaves have mixed dtypes {sorted(set(map(str, dtypes)))}; '
                             'pass mixed_dtype_handler to choose one.')
        return dtypes[0]
    if mixed_dtype_handler == 'promote':
        return functools.reduce(jnp.promote_types, dtypes)
    if mixed_dtype_handler == 'highest':
        return functools.reduce(_higher_dtype, dtypes)
    if mixed_dtype_handler == 'lowest':
        return functools.reduce(_lower_dtype, dtypes)
    raise ValueError(f'tree_dtype: invalid mixed_dtype_handler={mixed_dtype_handler!r}; '
                     "expected None, 'promote', 'highest' or 'lowest'.")


# ----------------------------------------------------------------------------
# Moment estimates used by adaptive optimizers.


def tree_update_moment(updates: Any, moments: Any, decay: Any, order: int) -> Any:
    """EMA of the ``order``-th power: ``(1 - decay) * g**order + decay * m``."""
    return tree_util.tree_map(
        lambda g, t: None if g is None else (1 - decay) * (g ** order) + decay * t,
        updates, moments, is_leaf=_is_none)


def tree_update_infinity_moment(updates: Any, moments: Any, decay: Any, eps: Any) -> Any:
    """EMA of the infinity norm: ``max(|g| + eps, decay * m)`` (Adamax)."""
    return tree_util.tree_map(
        lambda g, t: None if g is None else jnp.maximum(jnp.abs(g) + eps, decay * t),
        updates, moments, is_leaf=_is_none)


def tree_update_moment_per_elem_norm(updates: Any, moments: Any, decay: Any,
                                     order: int) -> Any:
    """EMA of ``|g|**order`` (equal to ``g**order`` for real ``g``)."""

    def orderth_norm(g):
        if not _numerics.is_complex(g):
            return g ** order
        half_order = order / 2
        if float(half_order).is_integer():
            half_order = int(half_order)
        return _numerics.abs_sq(g) ** half_order

    return tree_util.tree_map(
        lambda g, t: None if g is None else (1 - decay) * orderth_norm(g) + decay * t,
        updates, moments, is_leaf=_is_none)


def tree_bias_correction(moment: Any, decay: Any, count: Any) -> Any:
    """Divides a moment by ``1 - decay**count`` (Kingma & Ba 2014, Alg. 1).

    ``decay**count`` is computed before casting to the moment's dtype because in
    low precision (bfloat16) it rounds to 1 and the division would blow up.
    """
    correction = jnp.asarray(1 - decay ** count)
    return tree_util.tree_map(lambda t: t / correction.astype(t.dtype), moment)
