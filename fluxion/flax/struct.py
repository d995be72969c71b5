"""Frozen dataclasses that are pytrees, mirroring ``flax.struct``.

A struct dataclass is an immutable ``dataclasses.dataclass`` registered with
``fluxion.tree_util``: its *pytree fields* (the default) are children that transformations
such as ``grad``/``jit``/``vmap`` map over, while fields declared with
``field(pytree_node=False)`` are static metadata kept in the tree definition (so they must
be hashable, e.g. functions or strings). Instances are updated with ``.replace(...)``.

Each struct class is also registered with :mod:`fluxion.flax.serialization`: its state dict
maps each pytree field name to that field's state dict; static fields are not saved.

Example::

    from fluxion.flax import struct

    @struct.dataclass
    class Model:
        params: dict
        apply_fn: Callable = struct.field(pytree_node=False)

    model = Model(params={'w': w}, apply_fn=f)
    model = model.replace(params=new_params)
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, TypeVar

from fluxion import tree_util

from . import serialization

try:  # Python >= 3.11; typing_extensions is only needed for static checkers on older ones.
    from typing import dataclass_transform
except ImportError:  # pragma: no cover
    def dataclass_transform(**_kwargs):  # type: ignore[no-redef]
        return lambda f: f

__all__ = ["PyTreeNode", "dataclass", "field"]

_T = TypeVar("_T")
_MARKER = "_flax_dataclass"  # same attribute name as Flax, for code that checks it


def field(pytree_node: bool = True, *, metadata: dict | None = None, **kwargs: Any) -> Any:
    """Declares a dataclass field, choosing whether it is a pytree child.

    Args:
        pytree_node: True (default) for a child that transformations map over (arrays,
            nested pytrees); False for static metadata stored in the tree definition
            (must be hashable and comparable).
        metadata: extra field metadata, merged with ``{'pytree_node': pytree_node}``.
        **kwargs: passed to ``dataclasses.field`` (``default``, ``default_factory``, ...).

    Returns:
        A ``dataclasses.Field``.
    """
    return dataclasses.field(metadata={**(metadata or {}), "pytree_node": pytree_node}, **kwargs)


@dataclass_transform(field_specifiers=(field,))
def dataclass(clz: type[_T] | None = None, **kwargs: Any) -> Any:
    """Turns a class into a frozen dataclass that is a pytree (see the module docstring).

    Usable bare (``@dataclass``) or with arguments (``@dataclass(kw_only=True)``).

    Args:
        clz: the class to convert.
        **kwargs: passed to ``dataclasses.dataclass``; ``frozen`` defaults to True.

    Returns:
        The class, now a dataclass with a ``replace(**updates)`` method, registered as a
        pytree node and for serialization. Applying it twice is harmless.
    """
    if clz is None:
        return functools.partial(dataclass, **kwargs)
    if _MARKER in clz.__dict__:
        return clz
    kwargs.setdefault("frozen", True)
    data_clz = dataclasses.dataclass(**kwargs)(clz)

    fields = dataclasses.fields(data_clz)
    data_names = tuple(f.name for f in fields if f.metadata.get("pytree_node", True))
    meta_names = tuple(f.name for f in fields if not f.metadata.get("pytree_node", True))
    init_names = frozenset(f.name for f in fields if f.init)

    def replace(self, **updates):
        """Returns a copy with the given fields replaced."""
        return dataclasses.replace(self, **updates)

    data_clz.replace = replace
    _register_pytree(data_clz, data_names, meta_names, init_names)
    _register_serialization(data_clz, data_names)
    setattr(data_clz, _MARKER, True)
    return data_clz


def _register_pytree(
    cls: type, data_names: tuple[str, ...], meta_names: tuple[str, ...], init_names: frozenset
) -> None:
    def unflatten(meta: tuple, children: Any) -> Any:
        values = dict(zip(meta_names, meta))
        values.update(zip(data_names, children))
        # Build through __init__ like an ordinary construction; fields with init=False
        # are then set directly, as __init__ cannot take them.
        obj = cls(**{k: v for k, v in values.items() if k in init_names})
        for k, v in values.items():
            if k not in init_names:
                object.__setattr__(obj, k, v)
        return obj

    def flatten(x: Any) -> tuple[tuple, tuple]:
        return (
            tuple(getattr(x, n) for n in data_names),
            tuple(getattr(x, n) for n in meta_names),
        )

    # Prefer the keyed registration so key paths read `.params` rather than a flat index.
    register_with_keys = getattr(tree_util, "register_pytree_with_keys", None)
    attr_key = getattr(tree_util, "GetAttrKey", None)
    if register_with_keys is not None and attr_key is not None:
        keys = tuple(attr_key(n) for n in data_names)

        def flatten_with_keys(x: Any) -> tuple[tuple, tuple]:
            children, meta = flatten(x)
            return tuple(zip(keys, children)), meta

        register_with_keys(cls, flatten_with_keys, unflatten, flatten)
    else:
        tree_util.register_pytree_node(cls, flatten, unflatten)


def _register_serialization(cls: type, data_names: tuple[str, ...]) -> None:
    def to_state(x: Any) -> dict[str, Any]:
        return {n: serialization.to_state_dict(getattr(x, n)) for n in data_names}

    def from_state(x: Any, state: Any) -> Any:
        path = serialization.current_path()
        if not isinstance(state, dict):
            raise ValueError(
                f"expected a dict (the state of a {cls.__name__}) at path {path}, got {type(state).__name__}"
            )
        missing = [n for n in data_names if n not in state]
        if missing:
            raise ValueError(f"missing field(s) {missing} in the state dict of a {cls.__name__} at path {path}")
        unknown = sorted(set(state) - set(data_names))
        if unknown:
            raise ValueError(f"unknown field(s) {unknown} in the state dict of a {cls.__name__} at path {path}")
        updates = {n: serialization.from_state_dict(getattr(x, n), state[n], name=n) for n in data_names}
        return x.replace(**updates)

    serialization.register_serialization_state(cls, to_state, from_state, override=True)


@dataclass_transform(field_specifiers=(field,))
class PyTreeNode:
    """Base class whose subclasses are struct dataclasses automatically.

    ``class Foo(PyTreeNode): ...`` is the same as decorating ``Foo`` with
    :func:`dataclass`; keyword arguments in the class statement
    (``class Foo(PyTreeNode, kw_only=True)``) go to ``dataclasses.dataclass``.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__()
        dataclass(cls, **kwargs)

    # Placeholders so type checkers know these exist; every subclass gets real ones.
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError

    def replace(self: _T, **overrides: Any) -> _T:
        raise NotImplementedError
