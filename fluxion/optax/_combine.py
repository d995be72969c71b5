"""Combining transformations: sequentially (``chain``) or by label (``multi_transform``)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from typing import Any, NamedTuple, Union

from fluxion import tree_util

from ._base import (GradientTransformation, GradientTransformationExtraArgs, OptState,
                    with_extra_args_support)
from ._masking import masked


def chain(*args: GradientTransformation) -> GradientTransformationExtraArgs:
    """Applies transformations one after the other.

    Args:
        *args: transformations, applied left to right.

    Returns:
        A transformation whose state is the tuple of the inner states (in the
        same order) and whose ``update`` forwards ``**extra_args`` to all.

    Raises:
        ValueError: at update time, if the state has the wrong number of entries.
    """
    transforms = [with_extra_args_support(t) for t in args]

    def init_fn(params):
        return tuple(t.init(params) for t in transforms)

    def update_fn(updates, state, params=None, **extra_args):
        if len(state) != len(transforms):
            raise ValueError(
                f'chain: got a state with {len(state)} entries for {len(transforms)} '
                'transformations; was the state created by this chain\'s init?')
        new_state = []
        for s, t in zip(state, transforms):
            updates, new_s = t.update(updates, s, params, **extra_args)
            new_state.append(new_s)
        return updates, tuple(new_state)

    return GradientTransformationExtraArgs(init_fn, update_fn)


def named_chain(*args: tuple[str, GradientTransformation]) -> GradientTransformationExtraArgs:
    """Like :func:`chain`, but the state is an OrderedDict keyed by the given names.

    Args:
        *args: ``(name, transformation)`` pairs.

    Returns:
        The chained transformation.

    Raises:
        ValueError: if names repeat.
    """
    names = [name for name, _ in args]
    if len(names) != len(set(names)):
        raise ValueError(f'named_chain: names must be unique, got {names}.')
    transforms = [(name, with_extra_args_support(t)) for name, t in args]

    def init_fn(params):
        return OrderedDict((name, t.init(params)) for name, t in transforms)

    def update_fn(updates, state, params=None, **extra_args):
        new_state = OrderedDict()
        for name, t in transforms:
            updates, new_state[name] = t.update(updates, state[name], params, **extra_args)
        return updates, new_state

    return GradientTransformationExtraArgs(init_fn, update_fn)


class PartitionState(NamedTuple):
    """State of :func:`multi_transform`: one (masked) inner state per label."""
    inner_states: Mapping[Hashable, OptState]


MultiTransformState = PartitionState


def multi_transform(transforms: Mapping[Hashable, GradientTransformation],
                    param_labels: Union[Any, Callable[[Any], Any]], *,
                    mask_compatible_extra_args: bool = False
                    ) -> GradientTransformationExtraArgs:
    """Applies a different transformation to each group of parameters.

    Example: ``multi_transform({'adam': adam(1e-3), 'freeze': set_to_zero()},
    {'encoder': 'freeze', 'head': 'adam'})``.

    Args:
        transforms: label -> transformation.
        param_labels: pytree of labels with the params' structure (or a prefix),
            or a function ``params -> labels``.
        mask_compatible_extra_args: forwarded to :func:`masked`.

    Returns:
        A transformation with state ``PartitionState({label: MaskedState})``.

    Raises:
        ValueError: at init, if some label has no transformation.
    """
    transforms = {k: with_extra_args_support(v) for k, v in transforms.items()}

    def labels_for(tree):
        return param_labels(tree) if callable(param_labels) else param_labels

    def masked_for(labels, group):
        mask = tree_util.tree_map(lambda label: label == group, labels)
        return masked(transforms[group], mask,
                      mask_compatible_extra_args=mask_compatible_extra_args)

    def init_fn(params):
        labels = labels_for(params)
        label_set = set(tree_util.tree_leaves(labels))
        missing = label_set - set(transforms)
        if missing:
            raise ValueError(
                'multi_transform: some parameters have labels without a transformation. '
                f'Parameter labels: {sorted(map(str, label_set))}; transform keys: '
                f'{sorted(map(str, transforms))}.')
        return PartitionState({g: masked_for(labels, g).init(params) for g in transforms})

    def update_fn(updates, state, params=None, **extra_args):
        labels = labels_for(updates)
        new_inner = {}
        for group in transforms:
            updates, new_inner[group] = masked_for(labels, group).update(
                updates, state.inner_states[group], params, **extra_args)
        return updates, PartitionState(new_inner)

    return GradientTransformationExtraArgs(init_fn, update_fn)


partition = multi_transform
