"""Applying a transformation to a subset of the parameters (``masked``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, Union

from fluxion import tree_util

from ._base import (GradientTransformation, GradientTransformationExtraArgs,
                    Params, with_extra_args_support)


class MaskedState(NamedTuple):
    """State of :func:`masked`: the inner transformation's state."""
    inner_state: Any


class MaskedNode(NamedTuple):
    """Placeholder for a masked-out leaf.

    A NamedTuple without fields is a pytree with no leaves, so the inner
    transformation's ``tree_map`` calls skip it and its state keeps
    ``MaskedNode()`` at those positions (exactly as optax does).
    """


def _mask_is_callable(mask: Any) -> bool:
    flags = tree_util.tree_leaves(tree_util.tree_map(callable, mask))
    return len(flags) > 0 and all(flags)


def masked(inner: GradientTransformation,
           mask: Union[Any, Callable[[Params], Any]],
           *,
           mask_compatible_extra_args: bool = False
           ) -> GradientTransformationExtraArgs:
    """Applies ``inner`` only where ``mask`` is True; other updates pass through.

    Args:
        inner: the transformation to mask.
        mask: a pytree of booleans with the structure of the params (or a prefix
            of it), or a function ``params -> such a pytree``.
        mask_compatible_extra_args: also mask extra keyword arguments whose tree
            structure equals that of the updates.

    Returns:
        A transformation with state ``MaskedState(inner_state)``; the inner
        state holds ``MaskedNode()`` where the mask is False.

    Raises:
        ValueError: (from tree_map) if the mask is not a prefix of the params.
    """
    inner = with_extra_args_support(inner)

    def mask_pytree(pytree, mask_tree):
        return tree_util.tree_map(lambda m, p: p if m else MaskedNode(),
                                  mask_tree, pytree)

    def mask_extra_args(extra_args, updates, mask_tree):
        if not mask_compatible_extra_args:
            return extra_args
        structure = tree_util.tree_structure(updates)
        return {k: mask_pytree(v, mask_tree)
                if tree_util.tree_structure(v) == structure else v
                for k, v in extra_args.items()}

    def resolve(tree):
        return mask(tree) if _mask_is_callable(mask) else mask

    def init_fn(params):
        return MaskedState(inner_state=inner.init(mask_pytree(params, resolve(params))))

    def update_fn(updates, state, params=None, **extra_args):
        mask_tree = resolve(updates)
        masked_updates = mask_pytree(updates, mask_tree)
        masked_params = None if params is None else mask_pytree(params, mask_tree)
        new_masked, new_inner_state = inner.update(
            masked_updates, state.inner_state, masked_params,
            **mask_extra_args(extra_args, updates, mask_tree))
        new_updates = tree_util.tree_map(
            lambda m, new_u, old_u: new_u if m else old_u,
            mask_tree, new_masked, updates)
        return new_updates, MaskedState(inner_state=new_inner_state)

    return GradientTransformationExtraArgs(init_fn, update_fn)
