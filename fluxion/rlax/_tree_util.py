"""Tree helpers: select, zip-map, key splitting and splitting/transposing leaves."""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

import fluxion.numpy as jnp
from fluxion import lax, random, tree_util

from ._base import replace_masked

__all__ = ["tree_select", "tree_map_zipped", "tree_split_key", "tree_split_leaves", "tree_replace_masked", "tree_fn",
           "transpose_last_axis_to_first", "transpose_first_axis_to_last"]


def tree_select(pred: Any, on_true: Any, on_false: Any) -> Any:
    """Leafwise `lax.select(pred, on_true, on_false)`.

    Raises:
        ValueError: the two trees differ in structure.
    """
    if tree_util.tree_structure(on_true) != tree_util.tree_structure(on_false):
        raise ValueError("tree_select: the two branches must have the same structure.")
    return tree_util.tree_map(lambda x, y: lax.select(pred, x, y), on_true, on_false)


def tree_map_zipped(fn: Callable[..., Any], nests: Sequence[Any]) -> Any:
    """`fn(*leaves)` over the leaves of the trees in `nests` taken together, in the first tree's structure.

    Raises:
        ValueError: the trees differ in structure.
    """
    if not nests:
        return nests
    treedef = tree_util.tree_structure(nests[0])
    if any(tree_util.tree_structure(x) != treedef for x in nests[1:]):
        raise ValueError("tree_map_zipped: all elements must share the same tree structure.")
    return tree_util.tree_unflatten(treedef, [fn(*leaves) for leaves in zip(*map(tree_util.tree_leaves, nests))])


def tree_split_key(rng_key: Any, tree_like: Any):
    """Splits `rng_key` into a new key plus one key per leaf of `tree_like`: `(new_key, tree_of_keys)`."""
    leaves, treedef = tree_util.tree_flatten(tree_like)
    new_key, *keys = random.split(rng_key, num=len(leaves) + 1)
    return new_key, tree_util.tree_unflatten(treedef, keys)


def tree_split_leaves(tree_like: Any, axis: int = 0, keepdim: bool = False):
    """Splits every leaf along `axis` into a tuple of `axis_size` trees (NumPy arrays; axis dropped unless
    `keepdim`)."""
    if len(tree_like) == 0:
        return tree_like
    leaves, treedef = tree_util.tree_flatten(tree_like)
    size = leaves[0].shape[axis]
    pieces = [np.split(np.asarray(leaf), size, axis=axis) for leaf in leaves]
    pick = (lambda p, i: p[i]) if keepdim else (lambda p, i: np.squeeze(p[i], axis))
    return tuple(tree_util.tree_unflatten(treedef, [pick(p, i) for p in pieces]) for i in range(size))


def tree_replace_masked(tree_data: Any, tree_replacement: Any, mask: Any) -> Any:
    """`replace_masked` on every leaf (replacement zeros when `tree_replacement` is None)."""
    if tree_replacement is None:
        tree_replacement = tree_util.tree_map(jnp.zeros_like, tree_data)
    return tree_util.tree_map(lambda d, r: replace_masked(d, r, mask), tree_data, tree_replacement)


def tree_fn(fn: Callable, **unmapped_kwargs: Any) -> Callable:
    """Lifts `fn(*leaves, **unmapped_kwargs)` to act leafwise on trees of the same structure."""
    bound = functools.partial(fn, **unmapped_kwargs)
    return lambda *args: tree_util.tree_map(bound, *args)


def transpose_last_axis_to_first(tree: Any) -> Any:
    """Moves the last axis of every leaf to the front."""
    return tree_fn(lambda x: jnp.transpose(x, [x.ndim - 1] + list(range(x.ndim - 1))))(tree)


def transpose_first_axis_to_last(tree: Any) -> Any:
    """Moves the first axis of every leaf to the end."""
    return tree_fn(lambda x: jnp.transpose(x, list(range(1, x.ndim)) + [0]))(tree)
