"""Variables: the mutable boxes that hold a module's arrays (mirrors ``flax.nnx.variablelib``).

A :class:`Variable` wraps one value (usually an array) plus free-form metadata
keyword arguments.  Its subclass is its *collection*: :class:`Param` for
trainable weights, :class:`BatchStat` for running statistics, :class:`Cache`
for decoding caches, :class:`Intermediate` for ``sow``-ed values,
:class:`Perturbation` for ``perturb``.  Filters select state by these types.

Variables are registered as fluxion pytrees (one child, the value; the type and
metadata are static), so a :class:`~fluxion.flax.nnx.State` of variables can be
passed straight through ``fluxion.jit``/``grad``/``vmap``.

Differences from Flax: sharding metadata places values on a mesh but never changes them (see ``spmd``);
``hijax``/``ref`` modes do not exist; ``.value`` reads do not warn.
"""

from __future__ import annotations

import operator
from typing import Any, TypeVar

from fluxion import tree_util

_NAME_TO_TYPE: dict[str, type] = {}
_TYPE_TO_NAME: dict[type, str] = {}


A = TypeVar('A')
"""The type variable Flax's typing uses for a Variable's value (``nnx.A``)."""


class VariableMetadata:
    """A value plus metadata that a :class:`Variable` constructor unpacks (see :func:`with_metadata`)."""

    def __init__(self, raw_value: Any, metadata: dict[str, Any]):
        self.raw_value = raw_value
        self.metadata = dict(metadata)


class Variable:
    """A mutable box around one value, with metadata attributes.

    Read the value with ``v[...]``, ``v.value`` or ``v.get_value()``; write it
    with ``v[...] = x``, ``v.value = x`` or ``v.set_value(x)``.  Indexing other
    than ``...`` reads/writes a slice (``v[0] = 1`` replaces the value with
    ``v[...].at[0].set(1)`` as arrays are immutable).  Arithmetic operators act
    on the value and return plain arrays.  Extra keyword arguments become
    metadata, readable as attributes (``Param(x, sharding=...).sharding``).
    """

    __slots__ = ('raw_value', '_var_metadata')

    def __init__(self, value: Any, **metadata: Any):
        if isinstance(value, VariableMetadata):
            metadata = {**value.metadata, **metadata}
            value = value.raw_value
        elif isinstance(value, Variable):
            # Re-wrapping a variable keeps its metadata (Flax does the same).
            metadata = {**value._var_metadata, **metadata}
            value = value.raw_value
        if metadata.get('out_sharding'):
            # Eager sharding (nnx.use_eager_sharding): place the value on its mesh now, as Flax does.
            from .spmd import maybe_shard_new_variable
            value = maybe_shard_new_variable(value, metadata)
        object.__setattr__(self, 'raw_value', value)
        object.__setattr__(self, '_var_metadata', dict(metadata))

    def __init_subclass__(cls, **kwargs: Any):
        super().__init_subclass__(**kwargs)
        _register(cls)

    # -- metadata ---------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        if name.startswith('__'):
            raise AttributeError(name)
        metadata = object.__getattribute__(self, '_var_metadata')
        if name in metadata:
            return metadata[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ('value', 'raw_value'):
            object.__setattr__(self, 'raw_value', value)
        else:
            self._var_metadata[name] = value

    def get_metadata(self) -> dict[str, Any]:
        """The metadata keyword arguments as a new dict."""
        return dict(self._var_metadata)

    def set_metadata(self, *args: Any, **kwargs: Any) -> None:
        """Replaces the metadata by a dict (``set_metadata(d)``) or updates keys (``set_metadata(k=v)``)."""
        if args:
            if len(args) != 1 or not isinstance(args[0], dict):
                raise TypeError('set_metadata takes one dict or keyword arguments')
            object.__setattr__(self, '_var_metadata', dict(args[0]))
        self._var_metadata.update(kwargs)

    # -- value access -----------------------------------------------------
    @property
    def value(self) -> Any:
        return self.raw_value

    def get_value(self) -> Any:
        """The wrapped value."""
        return self.raw_value

    def set_value(self, value: Any) -> None:
        """Replaces the wrapped value."""
        object.__setattr__(self, 'raw_value', value)

    def __getitem__(self, index: Any) -> Any:
        if index is Ellipsis:
            return self.raw_value
        return self.raw_value[index]

    def __setitem__(self, index: Any, value: Any) -> None:
        if index is Ellipsis:
            object.__setattr__(self, 'raw_value', value)
        else:
            object.__setattr__(self, 'raw_value', self.raw_value.at[index].set(value))

    def replace(self, value: Any = None, **metadata: Any) -> Variable:
        """A new variable of the same type with ``value`` (if given) and updated metadata."""
        new = type(self).__new__(type(self))
        object.__setattr__(new, 'raw_value', self.raw_value if value is None else value)
        object.__setattr__(new, '_var_metadata', {**self._var_metadata, **metadata})
        return new

    def copy(self) -> Variable:
        """A new variable of the same type, value and metadata (the value itself is shared)."""
        return self.replace()

    # Pickling and copy.deepcopy: the slots are restored directly (``__setattr__`` would route
    # ``_var_metadata`` into the metadata dict it names).
    def __getstate__(self) -> tuple:
        return self.raw_value, dict(self._var_metadata)

    def __setstate__(self, state: tuple) -> None:
        object.__setattr__(self, 'raw_value', state[0])
        object.__setattr__(self, '_var_metadata', dict(state[1]))

    def copy_from(self, other: Variable) -> None:
        """Takes ``other``'s value and metadata in place."""
        object.__setattr__(self, 'raw_value', other.raw_value)
        object.__setattr__(self, '_var_metadata', dict(other._var_metadata))

    def update_from_state(self, other: Variable) -> None:
        """Takes ``other``'s value and metadata in place (alias of :meth:`copy_from`)."""
        self.copy_from(other)

    @classmethod
    def type(cls) -> type:
        return cls

    # -- array-like protocol ---------------------------------------------
    @property
    def shape(self) -> tuple:
        return self.raw_value.shape

    @property
    def dtype(self) -> Any:
        return self.raw_value.dtype

    @property
    def ndim(self) -> int:
        return self.raw_value.ndim

    @property
    def size(self) -> int:
        return self.raw_value.size

    @property
    def T(self) -> Any:
        return self.raw_value.T

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        import numpy as np
        return np.asarray(self.raw_value, dtype=dtype)

    def __jax_array__(self) -> Any:
        return self.raw_value

    def __len__(self) -> int:
        return len(self.raw_value)

    def __iter__(self):
        return iter(self.raw_value)

    def __bool__(self) -> bool:
        return bool(self.raw_value)

    def __float__(self) -> float:
        return float(self.raw_value)

    def __int__(self) -> int:
        return int(self.raw_value)

    def __neg__(self) -> Any:
        return -self.raw_value

    def __pos__(self) -> Any:
        return +self.raw_value

    def __abs__(self) -> Any:
        return abs(self.raw_value)

    def __invert__(self) -> Any:
        return ~self.raw_value

    def __repr__(self) -> str:
        meta = ''.join(f', {k}={v!r}' for k, v in self._var_metadata.items())
        value = self.raw_value
        shown = (f'Array(shape={value.shape}, dtype={value.dtype})'
                 if hasattr(value, 'shape') and getattr(value, 'size', 0) > 8 else repr(value))
        return f'{type(self).__name__}(value={shown}{meta})'

    # Variables compare by identity (they are mutable graph nodes), as in Flax.
    __hash__ = object.__hash__

    def __eq__(self, other: Any) -> Any:
        return self.raw_value == (other.raw_value if isinstance(other, Variable) else other)


def _binary(op: Any, reflected: bool = False) -> Any:
    def method(self: Variable, other: Any) -> Any:
        other = other.raw_value if isinstance(other, Variable) else other
        return op(other, self.raw_value) if reflected else op(self.raw_value, other)
    return method


for _name, _op in [('add', operator.add), ('sub', operator.sub), ('mul', operator.mul),
                   ('truediv', operator.truediv), ('floordiv', operator.floordiv), ('mod', operator.mod),
                   ('pow', operator.pow), ('matmul', operator.matmul), ('and', operator.and_),
                   ('or', operator.or_), ('xor', operator.xor), ('lshift', operator.lshift),
                   ('rshift', operator.rshift)]:
    setattr(Variable, f'__{_name}__', _binary(_op))
    setattr(Variable, f'__r{_name}__', _binary(_op, reflected=True))
for _name, _op in [('lt', operator.lt), ('le', operator.le), ('gt', operator.gt), ('ge', operator.ge),
                   ('ne', operator.ne)]:
    setattr(Variable, f'__{_name}__', _binary(_op))


def _flatten_variable(v: Variable) -> tuple:
    return (v.raw_value,), (type(v), tuple(v._var_metadata.items()))


def _unflatten_variable(aux: tuple, children: Any) -> Variable:
    cls, metadata = aux
    new = cls.__new__(cls)
    object.__setattr__(new, 'raw_value', children[0])
    object.__setattr__(new, '_var_metadata', dict(metadata))
    return new


def _flatten_variable_with_keys(v: Variable) -> tuple:
    # The value's key is ``.value``, as in Flax (paths read ``.../kernel/value``).
    return ((tree_util.GetAttrKey('value'), v.raw_value),), (type(v), tuple(v._var_metadata.items()))


def _register(cls: type) -> None:
    tree_util.register_pytree_with_keys(cls, _flatten_variable_with_keys, _unflatten_variable, _flatten_variable)


_register(Variable)

#: Flax 0.12 removed ``VariableState``; it survives as an alias of :class:`Variable`.
VariableState = Variable


class Param(Variable):
    """A trainable parameter (the collection ``'params'``)."""


class BatchStat(Variable):
    """A running statistic such as BatchNorm's mean and variance (collection ``'batch_stats'``)."""


class Cache(Variable):
    """Autoregressive-decoding state (collection ``'cache'``)."""


class Intermediate(Variable):
    """A value stored by :meth:`Module.sow` (collection ``'intermediates'``)."""


class Perturbation(Intermediate):
    """A zero-valued probe added by :meth:`Module.perturb` to read gradients of intermediates."""


def with_metadata(initializer: Any, **metadata: Any) -> Any:
    """Wraps an initializer so its output carries ``metadata`` into the Variable built from it.

    The wrapped ``initializer(key, shape, dtype)`` returns the array; the
    metadata is attached when the result (a :class:`VariableMetadata`) is
    passed to ``Param(...)``.
    """
    def wrapped(*args: Any, **kwargs: Any) -> VariableMetadata:
        return VariableMetadata(initializer(*args, **kwargs), metadata)
    return wrapped


def register_variable_name(name: str, typ: type | None = None, *, overwrite: bool = False) -> Any:
    """Associates a collection name (e.g. ``'params'``) with a Variable type; usable as a decorator."""
    if typ is None:
        return lambda t: register_variable_name(name, t, overwrite=overwrite)
    if not overwrite and name in _NAME_TO_TYPE and _NAME_TO_TYPE[name] is not typ:
        raise ValueError(f"Variable name '{name}' is already registered to {_NAME_TO_TYPE[name].__name__}")
    _NAME_TO_TYPE[name] = typ
    _TYPE_TO_NAME[typ] = name
    return typ


def variable_type_from_name(name: str, *, allow_register: bool = False) -> type:
    """The Variable type of a collection name; unknown names give a new subclass when ``allow_register``."""
    if name not in _NAME_TO_TYPE:
        if not allow_register:
            raise ValueError(f"Name '{name}' is not registered as a Variable type")
        register_variable_name(name, type(name, (Variable,), {}))
    return _NAME_TO_TYPE[name]


def variable_name_from_type(typ: type, *, allow_register: bool = False) -> str:
    """The collection name of a Variable type (``Param`` -> ``'params'``)."""
    if typ not in _TYPE_TO_NAME:
        if not allow_register:
            raise ValueError(f"Type '{typ.__name__}' is not registered in the registry")
        register_variable_name(typ.__name__, typ)
    return _TYPE_TO_NAME[typ]


register_variable_name('params', Param)
register_variable_name('batch_stats', BatchStat)
register_variable_name('cache', Cache)
register_variable_name('intermediates', Intermediate)
register_variable_name('perturbations', Perturbation)
