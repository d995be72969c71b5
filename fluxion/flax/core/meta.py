"""Boxed variables carrying axis metadata (mirrors ``flax.core.meta``).

An initializer wrapped with :func:`with_partitioning` returns its array in a
:class:`Partitioned` box that also records one mesh-axis name (or None) per
array dimension. ``Module.param`` stores the box in the variable tree and
returns the bare array (``unbox=True``); :func:`unbox` strips boxes from a
whole tree and :func:`get_partition_spec` turns them into
:class:`PartitionSpec` trees.

Specs are ``fluxion.sharding.PartitionSpec`` values and :func:`get_sharding`
pairs them with a ``fluxion.sharding.Mesh`` into ``NamedSharding`` trees
(which ``fluxion.device_put`` or ``jit``'s ``out_shardings`` can use); the
boxes themselves never move data (``Partitioned.unbox`` applies a sharding constraint when a mesh is known). As in
Flax, ``nn.scan``/``nn.vmap`` call :func:`add_axis`/:func:`remove_axis` with
their ``metadata_params`` on the boxes of stacked collections.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from fluxion import lax, sharding, tree_util
from fluxion.sharding import NamedSharding, PartitionSpec

from .. import errors, struct

__all__ = ['AxisMetadata', 'PARTITION_NAME', 'PartitionSpec', 'Partitioned', 'add_axis',
           'get_partition_spec', 'get_sharding', 'remove_axis', 'replace_boxed', 'unbox', 'with_partitioning']

# The metadata key under which lifted transforms would name a stacked axis (as in Flax).
PARTITION_NAME = 'partition_name'


class AxisMetadata:
    """Base class of boxes: a value plus metadata, a pytree whose only child is the value.

    Subclasses implement ``unbox()`` (the bare value) and
    ``replace_boxed(value)`` (the same metadata around a new value).
    """

    def unbox(self) -> Any:
        raise NotImplementedError

    def replace_boxed(self, value: Any) -> 'AxisMetadata':
        raise NotImplementedError

    def add_axis(self, index: int, params: dict) -> 'AxisMetadata':
        """The box with metadata for a new axis at ``index`` (``nn.scan``/``nn.vmap`` stacking)."""
        raise NotImplementedError

    def remove_axis(self, index: int, params: dict) -> 'AxisMetadata':
        """The box without the metadata of axis ``index`` (inverse of :meth:`add_axis`)."""
        raise NotImplementedError


def is_box(x: Any) -> bool:
    """Whether ``x`` is a box (an :class:`AxisMetadata`)."""
    return isinstance(x, AxisMetadata)


_is_box = is_box


@struct.dataclass
class Partitioned(AxisMetadata):
    """A value and the mesh axis name of each of its dimensions.

    Attributes:
        value: the array (or pytree of arrays).
        names: one mesh axis name (str, a tuple of names, or None) per dimension.
        mesh: the ``fluxion.sharding.Mesh`` the names refer to, or None for the mesh set with
            ``fluxion.sharding.set_mesh`` / ``use_mesh`` (if any).
    """

    value: Any
    names: tuple = struct.field(pytree_node=False)
    mesh: Any = struct.field(default=None, pytree_node=False)

    def unbox(self, apply_constraint: bool = True) -> Any:
        """The bare value; with ``apply_constraint`` and a mesh (the box's, or one set globally), constrained to
        this box's sharding with ``fluxion.lax.with_sharding_constraint``, as Flax does (values never change)."""
        if apply_constraint and (self.mesh is not None or sharding.get_mesh() is not None):
            spec = self.get_partition_spec()
            target = NamedSharding(self.mesh, spec) if self.mesh is not None else spec
            return lax.with_sharding_constraint(self.value, target)
        return self.value

    def replace_boxed(self, value: Any) -> 'Partitioned':
        """A box with the same names around ``value``."""
        return self.replace(value=value)

    def get_partition_spec(self) -> PartitionSpec:
        """``PartitionSpec(*names)``."""
        return PartitionSpec(*self.names)

    def get_sharding(self, mesh: Any) -> NamedSharding:
        """``NamedSharding(mesh, self.get_partition_spec())``."""
        return NamedSharding(mesh, self.get_partition_spec())

    def _axis_name(self, params: dict) -> Any:
        if PARTITION_NAME not in params:
            raise errors.PartitioningUnspecifiedError(self)
        return params[PARTITION_NAME]

    def add_axis(self, index: int, params: dict) -> 'Partitioned':
        """Inserts ``params[PARTITION_NAME]`` into ``names`` at ``index`` (padding with None).

        Raises:
            PartitioningUnspecifiedError: ``params`` lacks ``PARTITION_NAME``.
        """
        names = list(self.names)
        names.extend([None] * (index - len(names)))
        names.insert(index, self._axis_name(params))
        return self.replace(names=tuple(names))

    def remove_axis(self, index: int, params: dict) -> 'Partitioned':
        """Removes the name at ``index``, which must be ``params[PARTITION_NAME]``.

        Raises:
            PartitioningUnspecifiedError: ``params`` lacks ``PARTITION_NAME``.
            ValueError: the name at ``index`` is not the expected one.
        """
        names = list(self.names)
        removed = names.pop(index)
        if removed != self._axis_name(params):
            raise ValueError(f'Partitioned.remove_axis: axis {index} is named {removed!r}, '
                             f'expected {params[PARTITION_NAME]!r}.')
        return self.replace(names=tuple(names))


def with_partitioning(fn: Callable[..., Any], names: Sequence[Any],
                      mesh: Any = None) -> Callable[..., Partitioned]:
    """Wraps an initializer so its result comes boxed in :class:`Partitioned` with ``names``.

    Raises (when called):
        ValueError: the number of names differs from the result's rank.
    """
    names = tuple(names)

    @functools.wraps(fn)
    def init(*args: Any, **kwargs: Any) -> Partitioned:
        value = fn(*args, **kwargs)
        ndim = getattr(value, 'ndim', None)
        if ndim is not None and ndim != len(names):
            raise ValueError(f'with_partitioning: {len(names)} axis names {names} for a value of '
                             f'rank {ndim} (shape {tuple(value.shape)}).')
        return Partitioned(value, names, mesh=mesh)
    return init


def add_axis(tree: Any, index: int, params: dict) -> Any:
    """Calls ``add_axis(index, params)`` on every box of ``tree``."""
    return tree_util.tree_map(lambda x: x.add_axis(index, params) if _is_box(x) else x, tree,
                              is_leaf=_is_box)


def remove_axis(tree: Any, index: int, params: dict) -> Any:
    """Calls ``remove_axis(index, params)`` on every box of ``tree``."""
    return tree_util.tree_map(lambda x: x.remove_axis(index, params) if _is_box(x) else x, tree,
                              is_leaf=_is_box)


def replace_boxed(tree: Any, updates: Any) -> Any:
    """``tree`` with each box's value replaced by the matching part of ``updates`` (same structure up to the boxes)."""
    return tree_util.tree_map(lambda box, new: box.replace_boxed(new) if _is_box(box) else new,
                              tree, updates, is_leaf=_is_box)


def unbox(tree: Any) -> Any:
    """Replaces every box in ``tree`` with its bare value."""
    return tree_util.tree_map(lambda x: x.unbox() if _is_box(x) else x, tree, is_leaf=_is_box)


def _leaf_spec(x: Any) -> Any:
    """A box's own spec; ``PartitionSpec()`` (replicated) for another array; None for a non-array leaf."""
    if _is_box(x) and hasattr(x, 'get_partition_spec'):
        return x.get_partition_spec()
    return PartitionSpec() if hasattr(x, 'shape') else None


def get_partition_spec(tree: Any) -> Any:
    """The tree with each box replaced by its ``PartitionSpec``, each other array by ``PartitionSpec()``
    (replicated) and any other leaf by None."""
    return tree_util.tree_map(_leaf_spec, tree, is_leaf=_is_box)


def get_sharding(tree: Any, mesh: Any) -> Any:
    """The tree of ``fluxion.sharding.NamedSharding`` that lays its leaves out on ``mesh``.

    Each box gives ``NamedSharding(mesh, its spec)`` (a box's own
    ``get_sharding`` method, if it has one, decides), each other array a
    replicated sharding, and any other leaf None.

    Args:
        tree: a variable tree, possibly holding :class:`Partitioned` boxes.
        mesh: a ``fluxion.sharding.Mesh`` whose axis names the specs use.

    Raises:
        ValueError: a spec names an axis ``mesh`` does not have (from ``NamedSharding``).
    """
    def sharding(x: Any) -> Any:
        if hasattr(x, 'get_sharding'):
            return x.get_sharding(mesh)
        spec = _leaf_spec(x)
        return None if spec is None else NamedSharding(mesh, spec)
    return tree_util.tree_map(sharding, tree, is_leaf=_is_box)
