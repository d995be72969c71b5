"""Random pytrees and PRNG-key helpers, mirroring ``optax.tree_utils``'s random part."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional

import fluxion
import fluxion.random as jrandom
from fluxion import tree_util


def _is_typed_key(x: Any) -> bool:
    dtype = getattr(x, 'dtype', None)
    return dtype is not None and fluxion.dtypes.issubdtype(dtype, fluxion.dtypes.prng_key)


def canonicalize_key(key_or_seed: Any) -> Any:
    """Returns a typed PRNG key: ``key_or_seed`` itself if it is one, else ``random.key(seed)``.

    A raw ``uint32[2]`` key (from ``random.PRNGKey``) is treated as a seed-like
    value by optax too (``jax.random.key`` of it fails), so pass typed keys or ints.
    """
    if _is_typed_key(key_or_seed):
        return key_or_seed
    return jrandom.key(key_or_seed)


def tree_split_key_like(rng_key: Any, target_tree: Any) -> Any:
    """Splits ``rng_key`` into one key per leaf of ``target_tree`` (same structure).

    Leaf ``i`` (in flattening order) gets ``random.split(rng_key, n)[i]``.
    """
    treedef = tree_util.tree_structure(target_tree)
    keys = jrandom.split(rng_key, treedef.num_leaves)
    return tree_util.tree_unflatten(treedef, list(keys))


def tree_random_like(rng_key: Any, target_tree: Any,
                     sampler: Callable[..., Any] = jrandom.normal,
                     dtype: Optional[Any] = None) -> Any:
    """A tree shaped like ``target_tree`` whose leaves are drawn by ``sampler``.

    Args:
        rng_key: PRNG key, split per leaf with :func:`tree_split_key_like`.
        target_tree: tree of arrays giving structure, shapes and (by default) dtypes.
        sampler: ``sampler(key, shape, dtype)``, e.g. ``fluxion.random.normal``.
        dtype: dtype of every leaf (None: each target leaf's dtype).

    Returns:
        The random tree (the same values as optax for the same key).
    """
    keys = tree_split_key_like(rng_key, target_tree)
    return tree_util.tree_map(lambda leaf, key: sampler(key, leaf.shape, dtype or leaf.dtype),
                              target_tree, keys)


def tree_unwrap_random_key_data(input_tree: Any) -> Any:
    """Replaces every typed PRNG key leaf by its raw ``key_data``; other leaves unchanged."""
    # fluxion key arrays are pytree nodes over their raw data, so stop at them.
    return tree_util.tree_map(lambda x: jrandom.key_data(x) if _is_typed_key(x) else x,
                              input_tree, is_leaf=_is_typed_key)
