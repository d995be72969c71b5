"""The pytree functions as users see them (`fluxion.tree_util`, `fluxion.tree`).

They are `tree_util`'s functions with one difference: the opaque array types registered with
`tree_util.register_opaque_leaf` (typed PRNG key arrays) are leaves, as JAX's extended-dtype arrays are, so
`tree_leaves(random.key(0))` is `[key]` and a `tree_map` over a state holding keys hands the keys to the function.
fluxion's transformations keep using `tree_util` directly, where such an array is a node over its raw data.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

from . import tree_util as _tu


def _is_opaque(x: Any) -> bool:
    return isinstance(x, _tu.opaque_leaf_types())


def _leaf_test(is_leaf: Callable | None) -> Callable:
    if is_leaf is None:
        return _is_opaque
    return lambda x: bool(is_leaf(x)) or _is_opaque(x)


def _public(fn: Callable) -> Callable:
    """`fn` (a tree_util function with an `is_leaf` argument) with opaque types added to its leaves."""
    params = list(inspect.signature(fn).parameters.values())
    # Where `is_leaf` may arrive positionally (found once here: the wrappers sit on every user tree_map).
    pos = next((i for i, p in enumerate(params)
                if p.name == "is_leaf" and p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD), None)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if pos is not None and len(args) > pos:
            args = (*args[:pos], _leaf_test(args[pos]), *args[pos + 1:])
        else:
            kwargs["is_leaf"] = _leaf_test(kwargs.get("is_leaf"))
        return fn(*args, **kwargs)

    return wrapper


tree_flatten = _public(_tu.tree_flatten)
tree_leaves = _public(_tu.tree_leaves)
tree_structure = _public(_tu.tree_structure)
tree_map = _public(_tu.tree_map)
tree_flatten_with_path = _public(_tu.tree_flatten_with_path)
tree_leaves_with_path = _public(_tu.tree_leaves_with_path)
tree_map_with_path = _public(_tu.tree_map_with_path)
tree_reduce = _public(_tu.tree_reduce)
tree_all = _public(_tu.tree_all)
all_leaves = _public(_tu.all_leaves)
tree_broadcast = _public(_tu.tree_broadcast)
tree_reduce_associative = _public(_tu.tree_reduce_associative)


class _PublicRegistry(_tu._Registry):
    """`default_registry` as users see it: opaque array types are not nodes."""

    def is_node(self, typ: type) -> bool:
        return not (isinstance(typ, type) and issubclass(typ, _tu.opaque_leaf_types())) and super().is_node(typ)

    def flatten(self, tree: Any, is_leaf: Callable | None = None):
        return tree_flatten(tree, is_leaf)

    def flatten_one_level(self, tree: Any):
        return None if _is_opaque(tree) else super().flatten_one_level(tree)

    def flatten_one_level_with_keys(self, tree: Any):
        return None if _is_opaque(tree) else super().flatten_one_level_with_keys(tree)


default_registry = _PublicRegistry()


def is_tree_node(typ: type) -> bool:
    """Whether instances of `typ` are pytree nodes (built in, registered, or a namedtuple class), not leaves."""
    return default_registry.is_node(typ)


def _not_opaque(fn: Callable) -> Callable:
    """`fn` (a one-level flattening function) raising, as for any leaf, when given an opaque array."""

    @functools.wraps(fn)
    def wrapper(tree: Any):
        if _is_opaque(tree):
            raise ValueError(f"can't tree-flatten type: {type(tree)}")
        return fn(tree)

    return wrapper


flatten_one_level = _not_opaque(_tu.flatten_one_level)
flatten_one_level_with_keys = _not_opaque(_tu.flatten_one_level_with_keys)
