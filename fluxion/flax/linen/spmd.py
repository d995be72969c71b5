"""Logical axis names and their rules (mirrors ``flax.linen.spmd``); metadata only.

Layers name array dimensions *logically* (``'batch'``, ``'embed'``, ...)
and a list of rules ``[(logical name, mesh axis), ...]`` maps them to mesh
axes. :func:`logical_to_mesh_axes` applies the rules with Flax's precedence:
rules are tried in order, and a rule assigns its mesh axis to the dimension
with its logical name if that dimension is still unassigned and the mesh
axis is not used by another dimension yet.

:func:`logical_to_mesh_sharding` turns logical specs into
``fluxion.sharding.NamedSharding`` trees for a mesh.
:func:`with_logical_constraint` returns its input unchanged (what Flax does
when no mesh is defined), and :class:`LogicallyPartitioned` only records
names and rules.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Sequence
from typing import Any, Optional

from fluxion import tree_util
from fluxion.sharding import NamedSharding

from .. import struct
from ..core.meta import Partitioned, PartitionSpec

__all__ = ['LogicallyPartitioned', 'get_logical_axis_rules', 'logical_axis_rules',
           'logical_to_mesh', 'logical_to_mesh_axes', 'logical_to_mesh_sharding', 'set_logical_axis_rules', 'with_logical_constraint',
           'with_logical_partitioning']

Rules = Sequence[tuple]


class _Rules(threading.local):
    def __init__(self):
        self.rules: tuple = ()


_rules = _Rules()


def set_logical_axis_rules(rules: Rules) -> None:
    """Sets the global (per-thread) logical-to-mesh axis rules."""
    _rules.rules = tuple(tuple(r) for r in rules)


def get_logical_axis_rules() -> tuple:
    """The current logical-to-mesh axis rules (``()`` if none were set)."""
    return _rules.rules


@contextlib.contextmanager
def logical_axis_rules(rules: Rules):
    """Context manager setting the axis rules for its body (restored afterwards)."""
    saved = _rules.rules
    set_logical_axis_rules(rules)
    try:
        yield
    finally:
        _rules.rules = saved


class _Unassigned:
    pass


_UNASSIGNED = _Unassigned()


def logical_to_mesh_axes(array_dim_names: Optional[Sequence[Any]],
                         rules: Optional[Rules] = None) -> Optional[PartitionSpec]:
    """Maps per-dimension logical names to a :class:`PartitionSpec` of mesh axes.

    Args:
        array_dim_names: one logical name (or None) per dimension, or None.
        rules: ``[(logical name, mesh axis or tuple of axes), ...]`` in
            precedence order; defaults to :func:`get_logical_axis_rules`.

    Returns:
        The spec (unmatched names give None), or None for ``array_dim_names=None``.

    Raises:
        ValueError: a logical name appears twice.
    """
    if array_dim_names is None:
        return None
    rules = get_logical_axis_rules() if rules is None else rules
    names = list(array_dim_names)
    named = [n for n in names if isinstance(n, str)]
    if len(set(named)) != len(named):
        raise ValueError(f'Duplicate logical axis names in {tuple(names)}.')
    result: list = [_UNASSIGNED if isinstance(n, str) else n for n in names]
    for logical, mesh_axes in rules:
        if logical not in names:
            continue
        pos = names.index(logical)
        wanted = set(tree_util.tree_leaves(mesh_axes)) - {None}
        used = {a for r in result if r is not _UNASSIGNED
                for a in tree_util.tree_leaves(r)}
        if result[pos] is _UNASSIGNED and not (wanted & used):
            result[pos] = mesh_axes
    return PartitionSpec(*(None if r is _UNASSIGNED else r for r in result))


def logical_to_mesh(tree: Any, rules: Optional[Rules] = None) -> Any:
    """Applies :func:`logical_to_mesh_axes` to every ``PartitionSpec`` of a tree of logical specs."""
    return tree_util.tree_map(lambda spec: logical_to_mesh_axes(spec, rules), tree,
                              is_leaf=lambda x: isinstance(x, PartitionSpec))


def logical_to_mesh_sharding(tree: Any, mesh: Any, rules: Optional[Rules] = None) -> Any:
    """Maps a tree of logical ``PartitionSpec`` values to ``NamedSharding(mesh, mesh spec)`` values.

    Each spec goes through :func:`logical_to_mesh_axes` with ``rules``
    (default: the current rules), then is paired with ``mesh``.

    Raises:
        ValueError: a logical name repeats within a spec, or a resulting spec
            names an axis ``mesh`` lacks.
    """
    return tree_util.tree_map(lambda spec: NamedSharding(mesh, spec), logical_to_mesh(tree, rules),
                              is_leaf=lambda x: isinstance(x, PartitionSpec))


def with_logical_constraint(x: Any, logical_axis_resources: Any, rules: Optional[Rules] = None,
                            mesh: Any = None, fallback: Any = None) -> Any:
    """Returns ``x`` unchanged: without a sharding runtime there is nothing to constrain.

    Flax applies ``with_sharding_constraint`` when a mesh is defined; fluxion
    never has one, so this is Flax's no-mesh behaviour.
    """
    return x


@struct.dataclass
class LogicallyPartitioned(Partitioned):
    """A :class:`Partitioned` box whose names are logical axis names.

    As in Flax, ``get_partition_spec()`` gives the *logical* spec
    (``PartitionSpec(*names)``); :func:`logical_to_mesh` maps such specs to
    mesh axes with rules. ``rules`` is recorded for Flax compatibility.
    """

    rules: Any = struct.field(default=None, pytree_node=False)


def with_logical_partitioning(fn: Callable[..., Any], names: Sequence[Any], mesh: Any = None,
                              rules: Optional[Rules] = None) -> Callable[..., LogicallyPartitioned]:
    """Wraps an initializer so its result comes boxed in :class:`LogicallyPartitioned`."""
    names = tuple(names)

    @functools.wraps(fn)
    def init(*args: Any, **kwargs: Any) -> LogicallyPartitioned:
        return LogicallyPartitioned(fn(*args, **kwargs), names, mesh=mesh, rules=rules)
    return init
