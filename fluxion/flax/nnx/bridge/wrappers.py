"""Wrapping Linen modules as NNX modules and back (mirrors ``flax.nnx.bridge.wrappers``).

:class:`ToNNX` holds a Linen module and, after :func:`lazy_init` with a sample
input, its variables as NNX Variables: the Linen tree ``{collection: {path}}``
becomes attributes by path (``m.Dense_0['kernel']`` is a ``Param``), with the
collection given by the Variable type.  Calls run ``module.apply`` on them and
write back the collections named ``mutable``.

:class:`ToLinen` (or :func:`to_linen`) wraps an NNX module *class*: at
``init`` it builds the NNX module with ``nnx.Rngs`` made from the Linen RNG
streams and stores its state (except RNG state) as Linen variables, one
collection per Variable type; at ``apply`` it builds the module again, loads
the variables into it, calls it and stores the mutable collections back.

Difference from Flax: a :class:`ToNNX` called inside a Linen module does not
inherit that module's ``mutable`` collections (pass ``mutable=`` explicitly);
fluxion's Linen offers no public way to read the module being run.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
import warnings
from typing import Any, Callable

from fluxion.flax import linen
from fluxion.flax.core import FrozenDict, meta
from fluxion.flax.traverse_util import flatten_dict, unflatten_dict

from ..filters import Not
from ..graph import iter_graph, split, state, update
from ..pytreelib import Pytree, data
from ..module import Module
from ..rngs import Rngs, RngState
from ..state import State, to_flat_state
from ..variables import Variable, variable_name_from_type
from . import variables as bv


@dataclasses.dataclass
class Functional:
    """A module class with its constructor arguments, used functionally: ``init()`` builds it and returns its
    State (recording the GraphDef); ``apply(*states)`` is ``graphdef.apply(*states)``."""
    module_type: type
    graphdef: Any
    args: tuple
    kwargs: dict

    def init(self, *, rngs: Rngs | None = None) -> State:
        kwargs = {} if rngs is None else {'rngs': rngs}
        module = self.module_type(*self.args, **self.kwargs, **kwargs)
        self.graphdef, st = split(module)
        return st

    def apply(self, *states: Any) -> Any:
        if self.graphdef is None:
            raise ValueError('Functional.apply: call init() first')
        return self.graphdef.apply(*states)


def functional(cls: type) -> Callable[..., Functional]:
    """``functional(Cls)(*args, **kwargs)`` is ``Functional(Cls, None, args, kwargs)``."""
    def make(*args: Any, **kwargs: Any) -> Functional:
        return Functional(cls, None, args, kwargs)
    return make


class _Initializing(threading.local):
    def __init__(self) -> None:
        self.ids: set = set()


_INITIALIZING = _Initializing()


def is_initializing(obj: Any) -> bool:
    """Whether ``obj`` is inside a :func:`lazy_init` call."""
    return id(obj) in _INITIALIZING.ids


def lazy_init(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Runs an NNX module (or a bound method of one) once so every :class:`ToNNX` inside creates its Variables.

    Returns ``fn``.

    Raises:
      ValueError: ``fn`` is neither a Module nor a method of one.
    """
    if isinstance(fn, Module):
        module = fn
    elif isinstance(getattr(fn, '__self__', None), Module):
        module = fn.__self__
    else:
        raise ValueError(f'fn = {fn!r} needs to be a method of an NNX Module.')
    ids = {id(node) for _, node in iter_graph(module) if isinstance(node, Pytree)}
    added = ids - _INITIALIZING.ids
    _INITIALIZING.ids |= added
    try:
        fn(*args, **kwargs)
    finally:
        _INITIALIZING.ids -= added
    return fn


def _rng_dict(rngs: Any) -> dict:
    if isinstance(rngs, Rngs):
        out = {name: stream() for name, stream in rngs.items()}
    elif rngs is not None:
        out = {'params': rngs}
    else:
        out = {}
    if 'params' not in out and 'default' in out:
        out['params'] = out.pop('default')
    return out


def _merge_nested(a: dict, b: dict) -> dict:
    flat = flatten_dict(a, is_leaf=lambda _, x: isinstance(x, Variable))
    flat.update(flatten_dict(b, is_leaf=lambda _, x: isinstance(x, Variable)))
    return unflatten_dict(flat)


class ToNNX(Module):
    """An NNX module running a Linen module; call :meth:`lazy_init` (or :func:`lazy_init`) with a sample input
    to create its Variables.

    Args:
      module: the Linen module instance.
      rngs: an ``nnx.Rngs`` (forked, so the wrapper has its own streams), a key
        (used as the ``'params'`` stream) or None.
    """

    def __init__(self, module: linen.Module, rngs: Rngs | Any | None = None):
        self.to_nnx__module = module
        if isinstance(rngs, Rngs):
            self.to_nnx__rngs = rngs.fork()
        elif rngs is not None:
            self.to_nnx__rngs = Rngs(params=rngs)
        else:
            self.to_nnx__rngs = None

    def lazy_init(self, *args: Any, **kwargs: Any) -> Any:
        """``nnx.bridge.lazy_init(self, *args, **kwargs)``."""
        return lazy_init(self, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        # Methods of the Linen module are offered as methods of the wrapper (run through __call__).
        if name.startswith('__') or 'to_nnx__module' not in vars(self):
            raise AttributeError(name)
        method = getattr(type(vars(self)['to_nnx__module']), name, None)
        if callable(method):
            bound = functools.partial(self.__call__, method=method)
            bound.__self__ = self  # type: ignore[attr-defined]
            return bound
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __call__(self, *args: Any, rngs: Any = None, method: Any = None, mutable: Any = None,
                 **kwargs: Any) -> Any:
        """Runs the Linen module (``init_with_output`` under :func:`lazy_init`, else ``apply``) on the
        wrapper's Variables; collections in ``mutable`` are written back."""
        rng_dict = _rng_dict(self.to_nnx__rngs if rngs is None else rngs)
        module = self.to_nnx__module
        if is_initializing(self):
            out, updates = module.init_with_output(rng_dict, *args, method=method, **kwargs)
        else:
            attrs = {k: v for k, v in vars(self).items() if not k.startswith('to_nnx__')}
            variables = bv.nnx_attrs_to_linen_vars(attrs)
            mutable = False if mutable is None else mutable
            out = module.apply(variables, *args, rngs=rng_dict, method=method, mutable=mutable, **kwargs)
            out, updates = out if mutable is not False else (out, None)
        if updates:
            for attr, value in bv.linen_vars_to_nnx_attrs(updates).items():
                current = vars(self).get(attr)
                if isinstance(current, dict) and isinstance(value, dict):
                    value = _merge_nested(current, value)
                # Collections of Variables are data of the (pytree) module, as Flax's ToNNX stores them.
                setattr(self, attr, data(value))
        return out


def linen_rngs_dict(linen_module: linen.Module, add_default: bool = False) -> dict:
    """One new key per RNG stream of the running Linen module (plus ``'default': 0`` if asked and absent)."""
    if linen_module.scope is None:
        raise ValueError('linen_rngs_dict() must be called inside a Linen module.')
    rngs = {name: linen_module.make_rng(name) for name in linen_module.scope.rngs}
    if add_default and 'default' not in rngs:
        rngs['default'] = 0
    return rngs


def _module_method(module: Any, method: Any) -> Callable:
    if method is None:
        method = '__call__'
    if isinstance(method, str):
        name = method
        method = getattr(type(module), name)
        if not callable(method):
            raise TypeError(f"'{type(module).__name__}.{name}' must be a callable, got {type(method)}.")
    if not callable(method):
        raise TypeError(f"'{method}' must be a callable, got {type(method)}.")
    return method


class ToLinen(linen.Module):
    """A Linen module running an NNX module class (see the module docstring).

    Attributes:
      nnx_class: the NNX module class (or any callable building the module).
      args, kwargs: its constructor arguments (``rngs`` is added unless ``skip_rng``).
      skip_rng: build the module without ``rngs``.
      metadata_fn: Variable -> Linen value (default :func:`~.variables.to_linen_var`; None stores bare values).
    """

    nnx_class: Callable[..., Module]
    args: Any = ()
    kwargs: Any = FrozenDict({})
    skip_rng: bool = False
    metadata_fn: Callable[[Variable], Any] | None = bv.to_linen_var

    def _build(self) -> Module:
        kwargs = dict(self.kwargs)
        if not self.skip_rng:
            kwargs['rngs'] = Rngs(**linen_rngs_dict(self, add_default=not self.is_initializing()))
        return self.nnx_class(*self.args, **kwargs)

    @linen.compact
    def __call__(self, *args: Any, nnx_method: Any = None, **kwargs: Any) -> Any:
        module = self._build()
        if self.is_initializing():
            self._update_variables(module)
            return _module_method(module, nnx_method)(module, *args, **kwargs)
        states = [_unbox_tree(v) for v in self.variables.values()]
        incoming = flatten_dict(_merge_collections(states))
        known = {path for path, _ in to_flat_state(state(module))}
        unknown = [p for p in incoming if p not in known]
        if unknown:
            warnings.warn('Found unknown module paths in incoming state:'
                          + ''.join(f"\n  - {'/'.join(map(str, p))}" for p in unknown), stacklevel=2)
        update(module, State(unflatten_dict({p: v for p, v in incoming.items() if p in known})))
        out = _module_method(module, nnx_method)(module, *args, **kwargs)
        self._update_variables(module)
        return out

    def __getattr__(self, name: str) -> Any:
        if not name.startswith('__') and '_state' in self.__dict__:
            kwargs = self.__dict__.get('kwargs', {})
            if name in kwargs:
                return kwargs[name]
            method = getattr(self.__dict__.get('nnx_class'), name, None)
            if callable(method) and name != '__call__':
                bound = functools.partial(self.__call__, nnx_method=method)
                bound.__self__ = self  # type: ignore[attr-defined]
                return bound
        return super().__getattr__(name)

    def _update_variables(self, module: Module) -> None:
        """Stores the module's state (without RNG state) as Linen variables, one collection per Variable type."""
        by_collection: dict = {}
        for path, leaf in to_flat_state(state(module, Not(RngState))):
            col = variable_name_from_type(type(leaf), allow_register=True)
            by_collection.setdefault(col, {})[path] = leaf
        for col, flat in by_collection.items():
            if not self.is_mutable_collection(col):
                continue
            tree = unflatten_dict({p: (self.metadata_fn(v) if self.metadata_fn is not None else v.get_value())
                                   for p, v in flat.items()})
            for k, v in tree.items():
                self.put_variable(col, k, v)


def _unbox_tree(tree: Any) -> dict:
    if isinstance(tree, meta.AxisMetadata):
        return tree.unbox()
    if hasattr(tree, 'items'):
        return {k: _unbox_tree(v) for k, v in tree.items()}
    return tree


def _merge_collections(states: list) -> dict:
    out: dict = {}
    for st in states:
        out = {**out, **st} if not out else unflatten_dict({**flatten_dict(out), **flatten_dict(st)})
    return out


def to_linen(nnx_class: Callable[..., Module], *args: Any, metadata_fn: Callable | None = bv.to_linen_var,
             name: str | None = None, skip_rng: bool = False, abstract_init: bool = True,
             **kwargs: Any) -> ToLinen:
    """``ToLinen(nnx_class, args=args, kwargs=FrozenDict(kwargs), ...)``."""
    return ToLinen(nnx_class, args=args, kwargs=FrozenDict(kwargs), metadata_fn=metadata_fn, skip_rng=skip_rng,
                   name=name)

