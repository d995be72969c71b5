"""``nnx.Module``: a plain mutable Python object whose Variables form the model state (mirrors ``flax.nnx.module``).

Write ``__init__`` to create submodules and Variables (taking an ``Rngs`` for
initialisation) and ``__call__`` (or any method) to compute with them.  The
graph functions (``nnx.split``/``state``/``update``) and transforms see every
Variable reachable from the module.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypeVar

import fluxion.numpy as jnp
from fluxion import tree_util

from . import filters as filterlib
from .graph import _children, iter_graph, merge, split
from .pytreelib import Pytree
from .variables import Perturbation, Variable, variable_type_from_name


def _tuple_reduce(xs: tuple, x: Any) -> tuple:
    return (*xs, x)


def _tuple_init() -> tuple:
    return ()


def _as_variable_type(t: Any) -> type:
    return variable_type_from_name(t, allow_register=True) if isinstance(t, str) else t


class Module(Pytree):
    """Base class of layers and models.

    Besides plain attribute storage it offers :meth:`sow` and :meth:`perturb`
    for intermediates, :meth:`iter_modules`/:meth:`iter_children`, and
    :meth:`set_attributes`/:meth:`train`/:meth:`eval` to switch modes such as
    Dropout's ``deterministic`` and BatchNorm's ``use_running_average``.

    Difference from Flax: ``sow`` always stores on the module (Flax 0.12 prefers
    ``nnx.capture`` contexts, which fluxion does not implement).
    """

    def sow(self, variable_type: Any, name: str, value: Any, reduce_fn: Any = _tuple_reduce,
            init_fn: Any = _tuple_init) -> bool:
        """Stores ``value`` in attribute ``name`` as a ``variable_type`` Variable, reducing with earlier values.

        By default the Variable holds a tuple that grows by one element per call.

        Inside :func:`nnx.capture` the value goes to the capture collection of
        that type instead (and ``False`` is returned when the collection is not
        being captured).

        Raises:
          ValueError: ``name`` holds something other than a ``variable_type`` Variable.
        """
        variable_type = _as_variable_type(variable_type)
        captures = vars(self).get('__captures__')
        if captures is not None:
            for variable in captures:
                if type(variable) is variable_type:
                    collected = dict(variable.get_value())
                    collected[name] = reduce_fn(collected[name] if name in collected else init_fn(), value)
                    variable.set_value(collected)
                    return True
            return False
        if name in vars(self):
            variable = vars(self)[name]
            if not isinstance(variable, Variable):
                raise ValueError(f"Expected '{name}' to be a Variable, got {type(variable).__name__}")
            if type(variable) is not variable_type:
                raise ValueError(f"Expected '{name}' to be of type '{variable_type.__name__}', "
                                 f"got '{type(variable).__name__}'")
            variable.set_value(reduce_fn(variable.get_value(), value))
        else:
            setattr(self, name, variable_type(reduce_fn(init_fn(), value)))
        return True

    def perturb(self, name: str, value: Any, variable_type: Any = Perturbation) -> Any:
        """Returns ``value + p`` where ``p`` is a zero Variable ``name`` created on first use.

        Differentiating with respect to the ``Perturbation`` state then gives
        the gradient of the loss with respect to the intermediate ``value``.
        Inside :func:`nnx.capture` the perturbation lives in the capture
        collection of ``variable_type`` (``value`` is returned unchanged when
        that type is not being captured).
        """
        variable_type = _as_variable_type(variable_type)
        captures = vars(self).get('__captures__')
        if captures is not None:
            for variable in captures:
                if type(variable) is variable_type:
                    collected = dict(variable.get_value())
                    if name not in collected:
                        collected[name] = tree_util.tree_map(jnp.zeros_like, value)
                        variable.set_value(collected)
                    return collected[name] + value
            return value
        if name not in vars(self):
            setattr(self, name, variable_type(jnp.zeros_like(value)))
        return value + vars(self)[name][...]

    def iter_modules(self) -> Iterator[tuple[tuple, Module]]:
        """Yields ``(path, module)`` for this module and every submodule, children before parents."""
        return iter_modules(self)

    def iter_children(self) -> Iterator[tuple[Any, Module]]:
        """Yields ``(attribute_name, module)`` for the direct submodules."""
        return iter_children(self)

    def set_attributes(self, *filters: Any, raise_if_not_found: bool = True, **attributes: Any) -> None:
        """Sets ``attributes`` on every submodule (matching ``filters``) that already has them.

        Raises:
          ValueError: with ``raise_if_not_found``, some attribute exists on no selected module.
        """
        remaining = set(attributes)
        predicates = tuple(filterlib.to_predicate(f) for f in (filters or (True,)))
        for path, module in iter_modules(self):
            if any(p(path, module) for p in predicates):
                for name, value in attributes.items():
                    if hasattr(module, name):
                        remaining.discard(name)
                        setattr(module, name, value)
        if remaining and raise_if_not_found:
            raise ValueError(f'Could not find at least one instance of the following attributes: {sorted(remaining)}')

    def train(self, **attributes: Any) -> None:
        """Training mode: ``deterministic=False`` and ``use_running_average=False`` where present."""
        self.set_attributes(deterministic=False, use_running_average=False, **attributes, raise_if_not_found=False)

    def eval(self, **attributes: Any) -> None:
        """Evaluation mode: ``deterministic=True`` and ``use_running_average=True`` where present."""
        self.set_attributes(deterministic=True, use_running_average=True, **attributes, raise_if_not_found=False)

    def __repr__(self) -> str:
        parts = []
        for key, value in _children(self):
            text = repr(value).replace('\n', '\n  ')
            parts.append(f'  {key}={text}')
        inner = ',\n'.join(parts)
        return f'{type(self).__name__}(\n{inner}\n)' if parts else f'{type(self).__name__}()'


def iter_modules(module: Any, /) -> Iterator[tuple[tuple, Module]]:
    """Yields ``(path, module)`` for every Module in the graph, children before parents."""
    for path, value in iter_graph(module):
        if isinstance(value, Module):
            yield path, value


def iter_children(module: Any, /) -> Iterator[tuple[Any, Module]]:
    """Yields ``(key, module)`` for the Modules directly held by ``module``'s attributes."""
    for key, value in _children(module):
        if isinstance(value, Module):
            yield key, value


def view(node: Any, /, *, raise_if_not_found: bool = True, **attributes: Any) -> Any:
    """A new graph sharing ``node``'s Variables, with ``attributes`` set on the modules that have them.

    ``nnx.view(model, deterministic=True)`` gives an evaluation view without
    changing ``model``.

    Raises:
      ValueError: with ``raise_if_not_found``, an attribute exists on no module.
    """
    new = merge(*split(node))
    new.set_attributes(raise_if_not_found=raise_if_not_found, **attributes)
    return new


def with_attributes(node: Any, /, *, only: Any = ..., raise_if_not_found: bool = True, **attributes: Any) -> Any:
    """A new graph sharing ``node``'s Variables, with ``attributes`` set on the modules matching ``only``.

    The original graph is not modified.

    Raises:
      ValueError: with ``raise_if_not_found``, an attribute exists on no selected module.
    """
    new = merge(*split(node))
    remaining = set(attributes)
    predicate = filterlib.to_predicate(only)
    for path, module in iter_modules(new):
        if predicate(path, module):
            for name, value in attributes.items():
                if hasattr(module, name):
                    setattr(module, name, value)
                    remaining.discard(name)
    if remaining and raise_if_not_found:
        raise ValueError(f'Could not find at least one instance of the following attributes: {sorted(remaining)}')
    return new


#: Flax's name for :func:`iter_children` on any graph node.
iter_module_children = iter_children


M = TypeVar('M', bound=Module)
"""A type variable bound to :class:`Module` (``nnx.M``), for typing functions that return their module."""
