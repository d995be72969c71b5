"""Converting between Linen variable collections and NNX Variables (mirrors ``flax.nnx.bridge.variables``).

A Linen variable lives in a collection (``'params'``, ``'batch_stats'`` ...)
under a nested-dict path; an NNX Variable's *type* names its collection
(``nnx.variable_name_from_type``).  Plain values become plain Variables and
back; a Variable with metadata travels through Linen boxed in :class:`NNXMeta`
(or, when it came from a Linen box such as ``nn.Partitioned``, in that box
type again, recorded as ``linen_meta_type`` metadata).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from fluxion.flax import struct
from fluxion.flax.core import meta
from fluxion.flax.traverse_util import flatten_dict, unflatten_dict

from .. import spmd
from ..variables import Variable, variable_name_from_type, variable_type_from_name


class NNXMeta(struct.PyTreeNode, meta.AxisMetadata):
    """The Linen box of an NNX Variable that has metadata: its type, value (the pytree child) and metadata."""

    var_type: type = struct.field(pytree_node=False)
    value: Any = struct.field(pytree_node=True)
    metadata: dict = struct.field(pytree_node=False)

    def unbox(self) -> Any:
        return self.value

    def replace_boxed(self, val: Any) -> NNXMeta:
        return self.replace(value=val)

    def add_axis(self, index: int, params: dict) -> NNXMeta:
        return self

    def remove_axis(self, index: int, params: dict) -> NNXMeta:
        return self

    def get_partition_spec(self) -> Any:
        """The PartitionSpec the Variable's ``out_sharding`` metadata gives (``P()`` without it)."""
        return spmd.get_var_pspec(self.to_nnx_variable())

    def to_nnx_variable(self) -> Variable:
        return self.var_type(self.value, **self.metadata)


def is_vanilla_variable(vs: Variable) -> bool:
    """Whether the Variable carries no metadata (then Linen stores its bare value)."""
    return not any(not (k.endswith('_hooks') and v == ()) for k, v in vs.get_metadata().items())


def to_linen_var(vs: Variable) -> Any:
    """The Linen form of a Variable: its value, its original Linen box, or an :class:`NNXMeta`."""
    metadata = vs.get_metadata()
    if 'linen_meta_type' in metadata:
        linen_type = metadata.pop('linen_meta_type')
        return _box_from_metadata(linen_type, {'value': vs.get_value(), **metadata})
    if is_vanilla_variable(vs):
        return vs.get_value()
    return NNXMeta(type(vs), vs.get_value(), metadata)


def to_nnx_var(col: str, x: Any) -> Variable:
    """The NNX Variable of a Linen value ``x`` of collection ``col`` (an unknown collection gets a new type)."""
    vtype = variable_type_from_name(col, allow_register=True)
    if isinstance(x, NNXMeta):
        if vtype is not x.var_type:
            raise ValueError(f'Type stored in NNXMeta {x.var_type} != type inferred from collection name {vtype}')
        return x.to_nnx_variable()
    if isinstance(x, meta.AxisMetadata):
        fields = _box_to_metadata(x)
        value = fields.pop('value')
        return vtype(value, **fields, linen_meta_type=type(x))
    return vtype(x)


def _box_to_metadata(box: Any) -> dict:
    """A Linen box's fields as Variable metadata (a Partitioned's ``names`` are NNX's ``out_sharding``)."""
    if hasattr(box, 'to_nnx_metadata'):
        return dict(box.to_nnx_metadata())
    fields = dict(vars(box))
    if isinstance(box, meta.Partitioned):
        fields['out_sharding'] = fields.pop('names')
    return fields


def _box_from_metadata(linen_type: type, fields: dict) -> Any:
    """The inverse of :func:`_box_to_metadata`: a box of ``linen_type`` from ``{'value': ..., **metadata}``."""
    if hasattr(linen_type, 'from_nnx_metadata'):
        return linen_type.from_nnx_metadata(fields)
    if issubclass(linen_type, meta.Partitioned):
        fields['names'] = fields.pop('out_sharding')
        known = {f.name for f in dataclasses.fields(linen_type)}
        return linen_type(**{k: v for k, v in fields.items() if k in known})
    return linen_type(**fields)


def _is_collection_leaf(x: Any) -> bool:
    return not isinstance(x, dict) and not hasattr(x, 'items')


def linen_vars_to_nnx_attrs(variables: Any) -> dict:
    """Linen ``{collection: nested dict}`` to one nested dict of NNX Variables (collections merged by path).

    Raises:
      ValueError: two collections hold the same path (NNX has one Variable per path).
    """
    flat_paths: dict = {}
    for col, tree in dict(variables).items():
        for path, value in flatten_dict(_plain(tree), is_leaf=lambda _, x: _is_collection_leaf(x)).items():
            var = to_nnx_var(col, value)
            if path in flat_paths:
                raise ValueError(f'Found duplicate variable path {path} with variables {flat_paths[path]} and '
                                 f'{var}. This is not allowed in NNX.')
            flat_paths[path] = var
    return unflatten_dict(flat_paths)


def _plain(tree: Any) -> Any:
    """Nested (Frozen)dicts as plain dicts."""
    if hasattr(tree, 'items') and not isinstance(tree, meta.AxisMetadata):
        return {k: _plain(v) for k, v in tree.items()}
    return tree


def nnx_attrs_to_linen_vars(nnx_attrs: dict) -> dict:
    """The inverse of :func:`linen_vars_to_nnx_attrs`: each Variable goes to its type's collection.

    Raises:
      ValueError: a leaf is not a Variable (its collection is unknown).
    """
    out: dict = {}
    for path, v in flatten_dict(_plain(nnx_attrs), is_leaf=lambda _, x: isinstance(x, Variable)).items():
        if not isinstance(v, Variable):
            raise ValueError(f'Cannot infer collection name from value: {v}')
        out[(variable_name_from_type(type(v)), *path)] = to_linen_var(v)
    return unflatten_dict(out)


def with_partitioning(fn: Callable, names: Any, mesh: Any = None) -> Callable:
    """``nnx.with_partitioning`` whose Variables turn into ``nn.Partitioned`` boxes in Linen."""
    return spmd.with_partitioning(fn, names, mesh, linen_meta_type=meta.Partitioned)
