"""Pytree-mode graph objects: the ``Pytree``/``Object`` base classes and the ``data``/``static`` attribute markers
(mirrors ``flax.nnx.pytreelib``, also reachable as ``nnx.object``).

Every attribute of a pytree-mode object (``Pytree`` subclasses, the default;
``Object`` subclasses opt out) has a status: *data* (a pytree child, a state
leaf or subgraph) or *static* (kept in the treedef/GraphDef).  The status is
fixed when the attribute is first assigned: explicitly with
``nnx.data(value)``/``nnx.static(value)`` (or class-level ``nnx.data()``
dataclass fields, or the deprecated ``Data[...]``/``Static[...]``
annotations), otherwise by :func:`is_data` of the value.  Putting data
(arrays, Variables, graph nodes) inside a static attribute raises
``ValueError``, at assignment and again when the constructor returns
(:func:`check_pytree`), as Flax 0.12 does.

Pytree-mode classes are registered with ``fluxion.tree_util``: their data
attributes (sorted, keyed by ``GetAttrKey``/``SequenceKey``) are the children,
so a module can be passed straight to ``fluxion.jit``/``grad``/``tree_map``.

Differences from Flax 0.12: no trace-level bookkeeping (mutating a module from
inside a transform is not detected), no treescope rendering; the per-instance
status mapping lives in a slot, not in the instance ``__dict__``.
"""

from __future__ import annotations

import dataclasses
import typing as tp
from abc import ABCMeta

import numpy as np

from fluxion import tree_util

from .variables import Variable

A = tp.TypeVar('A')

_MISSING = dataclasses.MISSING
_DATA_TAG = '__data__'
_STATIC_TAG = '__static__'

Data = tp.Annotated[A, _DATA_TAG]
"""``x: nnx.Data[T]`` marks class attribute ``x`` as pytree data (deprecated in Flax 0.12: prefer ``nnx.data()``)."""
Static = tp.Annotated[A, _STATIC_TAG]
"""``x: nnx.Static[T]`` marks class attribute ``x`` as static (deprecated in Flax 0.12: prefer ``nnx.static()``)."""

DATA_REGISTRY: set[type] = set()


def _marker(kind: str, value: tp.Any, kwargs: dict) -> tp.Any:
    if value is not _MISSING and kwargs:
        raise TypeError(f'nnx.{kind}() accepts either a single positional argument or keyword arguments, '
                        'but not both.')
    metadata = {'nnx_value': value}
    extra = kwargs.pop('metadata', None)
    if extra is not None:
        if 'static' in extra:
            raise ValueError(f"Cannot use 'static' key in metadata argument for nnx.{kind}.")
        metadata.update(extra)
    metadata['static'] = kind == 'static'
    return dataclasses.field(**kwargs, metadata=metadata)


def data(value: tp.Any = _MISSING, /, **kwargs: tp.Any) -> tp.Any:
    """Marks a value as pytree data when assigned to a Pytree attribute: ``self.x = nnx.data(v)``.

    Without a positional value it is a dataclass field specifier (``x: int =
    nnx.data(default=0)``) usable in :func:`dataclass` classes; the keyword
    arguments are those of ``dataclasses.field``.  The returned marker must be
    assigned directly to an attribute (nesting it in a container raises
    ``ValueError`` on assignment).

    Raises:
      TypeError: both a value and keyword arguments.
      ValueError: ``metadata`` holds the reserved key ``'static'``.
    """
    return _marker('data', value, kwargs)


def static(value: tp.Any = _MISSING, /, **kwargs: tp.Any) -> tp.Any:
    """Marks a value as static (treedef/GraphDef metadata) when assigned to a Pytree attribute.

    Same calling conventions and errors as :func:`data`; assigning a value that
    holds data (arrays, Variables, graph nodes) raises ``ValueError``.
    """
    return _marker('static', value, kwargs)


@tp.dataclass_transform(field_specifiers=(dataclasses.field, data, static))
def dataclass(cls: tp.Any = None, /, *, init: bool = True, eq: bool = True, order: bool = False,
              unsafe_hash: bool = False, match_args: bool = True, kw_only: bool = False, slots: bool = False,
              weakref_slot: bool = False) -> tp.Any:
    """``dataclasses.dataclass`` for Pytree subclasses (generated ``__repr__`` off, as in Flax).

    Fields declared with :func:`data`/:func:`static` get that status; the
    generated ``__init__`` assigns through the Pytree's attribute checks.
    """
    return dataclasses.dataclass(cls, init=init, eq=eq, order=order, unsafe_hash=unsafe_hash,
                                 match_args=match_args, kw_only=kw_only, slots=slots,
                                 weakref_slot=weakref_slot, repr=False)


def register_data_type(type_: type, /) -> type:
    """Registers ``type_`` so its instances count as data (:func:`is_data`); usable as a class decorator."""
    DATA_REGISTRY.add(type_)
    return type_


def _is_array(x: tp.Any) -> bool:
    # fluxion arrays/tracers and NumPy arrays (not NumPy scalars, as in Flax).
    if isinstance(x, np.ndarray):
        return True
    return (hasattr(x, 'shape') and hasattr(x, 'dtype') and not isinstance(x, (np.generic, type))
            and not isinstance(x, Variable))


def is_data(value: tp.Any, /) -> bool:
    """True for values that are data on their own: arrays, Variables, graph nodes (Pytree/Object instances)
    and instances of types registered with :func:`register_data_type`.  Containers of such values are not
    (see :func:`has_data`), nor are Python scalars or strings."""
    return isinstance(value, (Variable, Pytree)) or _is_array(value) or type(value) in DATA_REGISTRY


def _data_leaves(value: tp.Any) -> list:
    seen: set[int] = set()

    def stop(x: tp.Any) -> bool:
        if id(x) in seen:
            return True
        seen.add(id(x))
        return is_data(x)
    return tree_util.tree_leaves(value, is_leaf=stop)


def has_data(value: tp.Any, /) -> list:
    """The data values (see :func:`is_data`) found in the pytree ``value``, in leaf order (an empty list when it
    holds none); each shared object is listed once."""
    return [leaf for leaf in _data_leaves(value) if is_data(leaf)]


def check_pytree(pytree: tp.Any) -> None:
    """Checks that no static attribute of ``pytree`` holds data and no ``nnx.data``/``nnx.static`` marker sits
    inside a container.

    Raises:
      TypeError: ``pytree`` is not a :class:`Pytree`.
      ValueError: a violation, naming the attribute.
    """
    if not isinstance(pytree, Pytree):
        raise TypeError(f'Expected a Pytree, got {type(pytree)}.')
    for name, value in vars(pytree).items():
        pytree._check_value(name, value, None)


class AttributeStatus(tp.NamedTuple):
    """How an assignment wants to mark an attribute: data or static, and whether it said so explicitly."""
    is_data: bool
    explicit: bool


def _is_marker(x: tp.Any) -> bool:
    return isinstance(x, dataclasses.Field) and 'nnx_value' in x.metadata


def _annotation_kind(annotation: tp.Any) -> bool | None:
    if isinstance(annotation, str):
        if annotation.startswith(('nnx.Data', 'Data[')):
            return True
        if annotation.startswith(('nnx.Static', 'Static[')):
            return False
        return None
    tags = getattr(annotation, '__metadata__', ())
    if _DATA_TAG in tags:
        return True
    if _STATIC_TAG in tags:
        return False
    return None


class PytreeMeta(ABCMeta):
    """Runs the constructor, then fixes the status of attributes set behind ``__setattr__``'s back and checks
    the object (:func:`check_pytree`)."""

    def __call__(cls, *args: tp.Any, **kwargs: tp.Any) -> tp.Any:
        node = cls.__new__(cls, *args, **kwargs)
        object.__setattr__(node, '_pytree__nodes', dict(cls._pytree__class_nodes))
        node.__init__(*args, **kwargs)
        if cls._pytree__is_pytree:
            nodes = node._pytree__nodes
            for name, value in vars(node).items():
                if str(name) not in nodes:
                    nodes[str(name)] = is_data(value)
            check_pytree(node)
        return node


def _key_entry(key: tp.Any) -> tp.Any:
    return tree_util.SequenceKey(key) if isinstance(key, int) else tree_util.GetAttrKey(key)


def _sort_key(k: tp.Any) -> tuple:
    return (0, k, '') if isinstance(k, int) else (1, 0, str(k))


class Pytree(metaclass=PytreeMeta):
    """Base class of every graph node (Modules, Rngs, Optimizers, Metrics); pytree mode by default.

    ``class M(nnx.Pytree, pytree=False)`` (or subclassing :class:`Object`)
    turns pytree mode off: no status tracking, no checks, not a registered
    pytree; attributes are then classified by value only (arrays and
    Variables are state, everything else static).

    Raises:
      TypeError: a subclass declares ``__slots__``.
      ValueError: conflicting ``nnx.data``/``nnx.static`` declarations for one class attribute.
    """

    __slots__ = ('__dict__', '__weakref__', '_pytree__nodes')
    _pytree__is_pytree: bool = True
    _pytree__class_nodes: dict = {}

    def __init_subclass__(cls, *, pytree: bool = True, **kwargs: tp.Any) -> None:
        super().__init_subclass__(**kwargs)
        if vars(cls).get('__slots__'):
            raise TypeError(f"Pytree currently does not support __slots__, found __slots__={cls.__slots__} "
                            f"in '{cls.__name__}'.")
        cls._pytree__is_pytree = pytree
        nodes = dict(getattr(cls, '_pytree__class_nodes', {}))
        try:
            hints = tp.get_type_hints(cls, include_extras=True)
        except Exception:  # unresolvable string annotations: read them raw
            hints = dict(vars(cls).get('__annotations__', {}))
        for name, annotation in hints.items():
            kind = _annotation_kind(annotation)
            if kind is not None:
                nodes[name] = kind
        for name, value in vars(cls).items():
            if isinstance(value, dataclasses.Field) and 'static' in value.metadata:
                if not isinstance(value.metadata['static'], bool):
                    raise ValueError(f"Invalid 'static' metadata for attribute '{cls.__name__}.{name}': expected "
                                     f"bool, got {type(value.metadata['static']).__name__}.")
                is_node = not value.metadata['static']
                if name in nodes and nodes[name] != is_node:
                    raise ValueError(f"Conflicting pytree annotation for attribute '{cls.__name__}.{name}': "
                                     f"previously registered as {'data' if nodes[name] else 'static'}, but found "
                                     f"nnx.{'data' if is_node else 'static'}(...) annotation.")
                nodes[name] = is_node
        cls._pytree__class_nodes = nodes
        if pytree:
            tree_util.register_pytree_with_keys(cls, cls._pytree__flatten_with_keys, cls._pytree__unflatten,
                                                cls._pytree__flatten)

    # -- attribute status ------------------------------------------------------------------------------------

    def _pytree__status(self, name: tp.Any) -> bool:
        """Whether attribute ``name`` is data (see the module docstring for how it is decided)."""
        nodes = self._nodes()
        key = str(name)
        if key not in nodes:
            nodes[key] = is_data(vars(self).get(name))
        return nodes[key]

    def __setattr__(self, name: str, value: tp.Any) -> None:
        is_pytree = type(self)._pytree__is_pytree
        explicit, is_data_ = False, False
        if _is_marker(value):
            is_data_ = not value.metadata['static']
            value = value.metadata['nnx_value']
            explicit = is_pytree
        elif is_pytree:
            is_data_ = is_data(value)
        if is_pytree:
            self._check_value(name, value, AttributeStatus(is_data_, explicit))
            nodes = self._nodes()
            if name not in nodes or (explicit and nodes[name] != is_data_):
                nodes[name] = is_data_
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        self._nodes().pop(name, None)
        object.__delattr__(self, name)

    def _nodes(self) -> dict:
        """The per-instance status mapping (``{name: is_data}``), created from the class's on first use
        (objects rebuilt by ``merge`` or unpickled start without one)."""
        nodes = getattr(self, '_pytree__nodes', None)
        if nodes is None:
            nodes = dict(type(self)._pytree__class_nodes)
            object.__setattr__(self, '_pytree__nodes', nodes)
        return nodes

    def _check_value(self, key: str, value: tp.Any, new_status: AttributeStatus | None) -> None:
        nodes = self._nodes()
        current_is_data = nodes.get(str(key), False)
        if (new_status is not None and not new_status.explicit and new_status.is_data and key in vars(self)
                and not current_is_data):
            raise ValueError(f"Cannot assign data value of type '{type(value)}' to static attribute '{key}' of "
                             f"Pytree type '{type(self)}'. To override the status explicitly wrap the value with "
                             f'nnx.data on assignment:\n\n  _.{key} = nnx.data(...)\n')
        leaves = _data_leaves(value)
        data_types = sorted({type(x).__name__ for x in leaves if is_data(x)})
        if data_types:
            if new_status is not None and not new_status.is_data and new_status.explicit:
                raise ValueError(f"Found data in value of type '{type(value)}' annotated with nnx.static(...) "
                                 f"when setting attribute '{key}' of Pytree type '{type(self)}'.")
            if (new_status is None or not new_status.is_data) and not current_is_data:
                raise ValueError(
                    f"Found data of type(s) {', '.join(data_types)} in value of type '{type(value)}' held by the "
                    f"static attribute '{key}' of Pytree type '{type(self)}'. Static attributes may not hold "
                    f'arrays, Variables or graph nodes: wrap the value on assignment (_.{key} = nnx.data(...)), '
                    f'declare the class attribute with nnx.data(), use nnx.List/nnx.Dict for containers, or '
                    f'define the class with pytree=False.')
        tags = {'static' if x.metadata['static'] else 'data' for x in leaves if _is_marker(x)}
        if tags:
            raise ValueError(f"Found unexpected tags {tags} on attribute '{type(self).__name__}.{key}'. Values from "
                             'nnx.data(...) and nnx.static(...) must be assigned to Pytree attributes directly, not '
                             f"inside other structures. Got value of type '{type(value)}'.")

    # -- pytree protocol -------------------------------------------------------------------------------------

    def _pytree__split(self) -> tuple[list, tuple]:
        data_items, static_keys, static_values = [], [], []
        for key, value in sorted(vars(self).items(), key=lambda kv: _sort_key(kv[0])):
            if self._pytree__status(key):
                data_items.append((key, value))
            else:
                static_keys.append(key)
                static_values.append(value)
        aux = (tuple(k for k, _ in data_items), tuple(static_keys), tuple(static_values))
        return data_items, aux

    def _pytree__flatten_with_keys(self) -> tuple:
        items, aux = self._pytree__split()
        return [(_key_entry(k), v) for k, v in items], aux

    def _pytree__flatten(self) -> tuple:
        items, aux = self._pytree__split()
        return [v for _, v in items], aux

    @classmethod
    def _pytree__unflatten(cls, aux: tuple, children: tp.Iterable) -> tp.Any:
        data_keys, static_keys, static_values = aux
        obj = object.__new__(cls)
        nodes = dict(cls._pytree__class_nodes)
        for key, value in zip(data_keys, children, strict=True):
            vars(obj)[key] = value
            nodes[str(key)] = True
        for key, value in zip(static_keys, static_values, strict=True):
            vars(obj)[key] = value
            nodes[str(key)] = False
        object.__setattr__(obj, '_pytree__nodes', nodes)
        return obj

    def __deepcopy__(self, memo: dict | None = None) -> tp.Any:
        # Through the graph, as Flax does: shared submodules and Variables stay shared in the copy.
        import copy

        from .graph import merge, split
        graphdef, state = split(self)
        return merge(graphdef, copy.deepcopy(state, memo))

    # pickling and copying: the status slot travels with the instance dict.
    def __getstate__(self) -> tuple:
        return dict(vars(self)), dict(self._nodes())

    def __setstate__(self, state: tuple) -> None:
        attrs, nodes = state
        vars(self).update(attrs)
        object.__setattr__(self, '_pytree__nodes', dict(nodes))


class Object(Pytree, pytree=False):
    """Base class for graph nodes that are not pytrees (no attribute status tracking).

    Raises:
      ValueError: a subclass passes ``pytree=`` anything but ``False``.
    """

    def __init_subclass__(cls, **kwargs: tp.Any) -> None:
        pytree = kwargs.pop('pytree', False)
        if pytree is not False:
            raise ValueError(f"Object is not a pytree, but 'pytree' was explicitly set to {pytree!r} for type {cls}.")
        super().__init_subclass__(pytree=False, **kwargs)
