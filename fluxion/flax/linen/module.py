"""``Module``: dataclass sugar over :mod:`fluxion.flax.core.scope` (mirrors ``flax.linen.Module``).

How a Module works, in the order things happen:

1. **Class creation.** Every subclass becomes a dataclass: its annotated class
   attributes are the configuration, followed by the keyword-only fields
   ``parent`` and ``name``. Defining ``__init__`` is an error. Public methods
   and ``__call__`` are wrapped so that a *bound* module sets itself up and
   records itself as the current module while they run.
2. **Construction.** ``Dense(3)`` only stores configuration. Inside a running
   ``setup()`` or ``@compact`` method of a bound module, the new module is
   attached to that module: it gets a name (explicit ``name=``, the attribute
   name in ``setup``, or ``ClassName_<counter>`` in a compact method) and a
   child scope. Elsewhere it stays unbound (``parent=None``).
3. **Binding.** ``init``/``apply``/``bind`` build a root
   :class:`~fluxion.flax.core.scope.Scope` and clone the module with
   ``parent=scope``. Variables, PRNG streams and mutability live in the
   scope; the module object itself never holds arrays except as attributes
   assigned in ``setup``.
4. **Calls.** A wrapped method of a bound module first runs ``setup()`` once
   (adopting modules passed in as dataclass fields, named ``<field>_<index>``),
   then the method. After the outermost ``@compact`` call returns, the
   autoname counters and name reservations are reset, so the next call
   re-creates the same names and finds the same variables.

The only implicit state is :data:`_context`, the stack of module methods
currently running (needed to give ``Dense(3)`` its parent without passing it).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import threading
import typing
from collections.abc import Callable, Mapping
from typing import Any, Optional, Union

import fluxion
import fluxion.numpy as jnp

from .. import errors
from ..core import meta
from ..core import scope as core_scope
from ..core.scope import DenyList, Scope, Variable

Array = Any
PRNGKey = Any
RNGSequences = Mapping[str, PRNGKey]


class _Sentinel:
    """Marks a ``parent`` that was not given: it is taken from the running module."""

    def __repr__(self) -> str:
        return '<unspecified parent>'

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


_unspecified_parent = _Sentinel()


class _ModuleContext(threading.local):
    """The stack of modules whose methods are running, plus call observers.

    Observers (used by ``tabulate``) are callables ``obs(module, method_name,
    args, kwargs)`` that return None or a callback receiving the output.
    """

    def __init__(self):
        self.module_stack: list = []
        self.call_observers: list = []
        self.interceptors: list = []

    @property
    def current_module(self) -> Optional['Module']:
        return self.module_stack[-1] if self.module_stack else None


_context = _ModuleContext()


@contextlib.contextmanager
def observe_calls(observer: Callable[..., Any]):
    """Calls ``observer(module, method_name, args, kwargs)`` before every bound method call.

    The observer may return a callback, which then receives the method's
    output. Used by ``tabulate``; observers apply to the current thread only.
    """
    _context.call_observers.append(observer)
    try:
        yield
    finally:
        _context.call_observers.remove(observer)


# ----------------------------------------------------------------------------
# Name scopes for module methods.
# ----------------------------------------------------------------------------

# As in Flax (whose `flax_profile` flag defaults to True), every method of a
# bound module runs under a `fluxion.named_scope`, so staged equations record
# which module produced them (`eqn.source_info.name_stack == 'Model/Dense_0'`).
_use_named_call = True


def _profiling_name(module: 'Module', fun: Callable) -> str:
    """The scope name of a method call: the module's name (its class name if unnamed), plus ``.method``
    unless the method is ``__call__``."""
    while isinstance(fun, functools.partial):
        fun = fun.func
    fn_name = getattr(fun, '__name__', 'unnamed_function')
    suffix = '' if fn_name == '__call__' else f'.{fn_name}'
    return f'{module.name or type(module).__name__}{suffix}'


def enable_named_call() -> None:
    """Runs every module method under a ``fluxion.named_scope`` named after the module (the default).

    Equations traced by ``fluxion.jit``/``fluxion.make_jaxpr`` then carry the
    module path in ``eqn.source_info.name_stack`` (shown by
    ``jaxpr.pretty_print(name_stack=True)``). Process-wide, as in Flax.
    """
    global _use_named_call
    _use_named_call = True


def disable_named_call() -> None:
    """Stops wrapping module methods in name scopes (see :func:`enable_named_call`)."""
    global _use_named_call
    _use_named_call = False


@contextlib.contextmanager
def override_named_call(enable: bool = True):
    """Turns method name scopes on (or off with ``enable=False``) for the block, then restores the setting."""
    global _use_named_call
    saved = _use_named_call
    _use_named_call = enable
    try:
        yield
    finally:
        _use_named_call = saved


def _named(module: 'Module', fun: Callable) -> contextlib.AbstractContextManager:
    """The name scope a method call runs in: the module's profiling name, or none when disabled."""
    if _use_named_call:
        return fluxion.named_scope(_profiling_name(module, fun))
    return contextlib.nullcontext()


@dataclasses.dataclass(frozen=True)
class InterceptorContext:
    """What an interceptor is told about the call it intercepts (read only).

    Attributes:
        module: the module whose method is called.
        method_name: the method's name (``'__call__'``, ``'setup'``, ...).
        orig_method: the method bound to ``module``; calling it skips the
            remaining (inner) interceptors.
    """

    module: Any
    method_name: str
    orig_method: Callable[..., Any]


@contextlib.contextmanager
def intercept_methods(interceptor: Callable[..., Any]):
    """Routes every method call of bound modules through ``interceptor`` while active.

    ``interceptor(next_fun, args, kwargs, context)`` is called instead of the
    method; it calls ``next_fun(*args, **kwargs)`` to proceed (possibly with
    changed arguments) and returns the (possibly changed) result.
    ``context`` is an :class:`InterceptorContext`. A user-defined ``setup``
    is intercepted too, before the first method call that triggers it.
    Nested contexts nest: the outermost context's interceptor runs first.
    Interceptors apply to the current thread only.
    """
    _context.interceptors.append(interceptor)
    try:
        yield
    finally:
        _context.interceptors.remove(interceptor)


def _run_intercepted(fun: Callable[..., Any], module: Any, name: str, args: tuple,
                     kwargs: dict) -> Any:
    call = functools.partial(fun, module)
    if not _context.interceptors:
        return call(*args, **kwargs)
    context = InterceptorContext(module, name, call)

    def wrap(interceptor, inner):
        return lambda *a, **k: interceptor(inner, a, k, context)
    # Wrap from the innermost (most recently entered) outwards.
    for interceptor in reversed(_context.interceptors):
        call = wrap(interceptor, call)
    return call(*args, **kwargs)


@dataclasses.dataclass
class _ModuleState:
    """Per-instance bookkeeping of a module (not part of its configuration)."""

    in_setup: bool = False
    setup_done: bool = False
    in_compact_method: bool = False
    autoname_cursor: dict = dataclasses.field(default_factory=dict)
    children: dict = dataclasses.field(default_factory=dict)


# ----------------------------------------------------------------------------
# Method decorators.
# ----------------------------------------------------------------------------


def compact(fun: Callable) -> Callable:
    """Marks a method whose body may create submodules and variables inline.

    Calling it on an unbound module raises ``CallCompactUnboundModuleError``.
    """
    fun.compact = True
    return fun


def nowrap(fun: Callable) -> Callable:
    """Marks a method that must run as a plain function (no setup, no context).

    Use it for helpers that build or return modules without being part of the
    module's computation.
    """
    fun.nowrap = True
    return fun


def _wrap_method(fun: Callable) -> Callable:
    @functools.wraps(fun)
    def wrapped(self, *args, **kwargs):
        return self._call_wrapped_method(fun, args, kwargs)
    wrapped.fluxion_wrapped = True
    return wrapped


def _wrap_setup(fun: Callable) -> Callable:
    @functools.wraps(fun)
    def wrapped(self):
        if self.scope is None:
            raise errors.CallSetupUnboundModuleError(type(self).__name__)
        if self._state.in_setup:
            # super().setup() from a subclass's setup: part of the running setup.
            return fun(self)
        self._try_setup()
    wrapped.fluxion_wrapped = True
    wrapped.fluxion_raw = fun
    return wrapped


def _sow_append(xs: tuple, x: Any) -> tuple:
    return xs + (x,)


def _sow_init() -> tuple:
    return ()


def _contains_module(value: Any) -> bool:
    if isinstance(value, Module):
        return True
    if isinstance(value, dict):
        return any(_contains_module(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_contains_module(v) for v in value)
    return False


def _map_modules(value: Any, fn: Callable[[Any, str], Any], suffix: str = '') -> Any:
    """Applies ``fn(module, suffix)`` to modules nested in lists, tuples and dicts.

    The suffix names the position: ``'_0'`` for list item 0, ``'_key'`` for a
    dict entry, concatenated for nested containers (``'_1_a'``).
    """
    if isinstance(value, Module):
        return fn(value, suffix)
    if isinstance(value, dict):
        return type(value)((k, _map_modules(v, fn, f'{suffix}_{k}')) for k, v in value.items())
    if isinstance(value, list):
        return [_map_modules(v, fn, f'{suffix}_{i}') for i, v in enumerate(value)]
    if isinstance(value, tuple) and not hasattr(value, '_fields'):
        return tuple(_map_modules(v, fn, f'{suffix}_{i}') for i, v in enumerate(value))
    return value


def _indent(text: str, num_spaces: int) -> str:
    """Indents every line of ``text`` (which ends with a newline) by ``num_spaces``."""
    pad = ' ' * num_spaces
    return ''.join(pad + line for line in text.splitlines(keepends=True))


def _attr_repr(value: Any) -> str:
    """An attribute's text in a module repr: a function or class by its name, anything else by ``repr``.

    A module counts as named only if it carries its own ``__name__`` (as in Flax).
    """
    if isinstance(value, Module):
        name = value.__dict__.get('__name__')
    else:
        name = getattr(value, '__name__', None)
    return name if callable(value) and name else repr(value)


def _module_repr(module: 'Module', num_spaces: int = 4) -> str:
    """Flax's module text: ``# attributes`` (the repr'd fields) then ``# children`` (attached submodules)."""
    rep = ''
    attributes = [f.name for f in dataclasses.fields(module)
                  if f.name not in ('parent', 'name') and f.repr]
    if attributes:
        rep += '# attributes\n'
        for attr in attributes:
            rep += f'{attr} = {_attr_repr(module.__dict__.get(attr))}\n'
    children = {k: v for k, v in module._state.children.items() if isinstance(v, Module)}
    if children:
        rep += '# children\n'
        for name, child in children.items():
            rep += f'{name} = {_module_repr(child, num_spaces)}\n'
    if not rep:
        return f'{type(module).__name__}()'
    return f'{type(module).__name__}(\n{_indent(rep, num_spaces)})'


def _check_instance(module: Any) -> None:
    if not isinstance(module, Module):
        raise errors.InvalidInstanceModuleError()


# ----------------------------------------------------------------------------
# Module.
# ----------------------------------------------------------------------------


@typing.dataclass_transform(field_specifiers=(dataclasses.field,))
class Module:
    """Base class of all neural-network layers and models.

    Subclasses declare their configuration as annotated class attributes and
    their computation in ``__call__`` (or other methods). Submodules and
    variables are created either inline in a method decorated with
    :func:`compact`, or in :meth:`setup`::

        class MLP(nn.Module):
            hidden: int

            @nn.compact
            def __call__(self, x):            # x: [batch, in]
                x = nn.relu(nn.Dense(self.hidden)(x))
                return nn.Dense(1)(x)         # [batch, 1]

        variables = MLP(16).init(key, x)      # {'params': {'Dense_0': ..., 'Dense_1': ...}}
        y = MLP(16).apply(variables, x)

    Attributes:
        parent: the module (or root scope) this module is attached to; None
            for a free-standing module. Keyword-only; normally left unset.
        name: the module's name in its parent. Keyword-only; generated when
            not given.
        scope: the :class:`Scope` of a bound module, None when unbound.
    """

    parent: Any = dataclasses.field(default=_unspecified_parent, kw_only=True,
                                    repr=False, compare=False, hash=False)
    name: Optional[str] = dataclasses.field(default=None, kw_only=True)

    # -- class creation -------------------------------------------------------

    def __init_subclass__(cls, **kwargs: Any):
        super().__init_subclass__(**kwargs)
        if '__init__' in cls.__dict__:
            raise errors.OverrideModuleInitError(cls.__name__)
        for value in cls.__dict__.values():
            # A non-init field is only set in setup(): it exists neither when the
            # module is compared or hashed nor (as in Flax) in its repr.
            if isinstance(value, dataclasses.Field) and not value.init:
                value.compare = value.hash = value.repr = False
        dataclasses.dataclass(cls, repr=False, eq=True,
                              unsafe_hash='__hash__' not in cls.__dict__)
        fields = cls.__dataclass_fields__
        # Flax lists the keyword-only `parent` and `name` after the class's own
        # fields (dataclasses.fields, astuple, ...); dataclass puts base fields first.
        for reserved in ('parent', 'name'):
            fields[reserved] = fields.pop(reserved)
        for attr, value in list(cls.__dict__.items()):
            # Function-valued fields (kernel_init = ...) are configuration, not methods.
            if attr in fields or not inspect.isfunction(value):
                continue
            if getattr(value, 'nowrap', False) or getattr(value, 'fluxion_wrapped', False):
                continue
            if attr == 'setup':
                setattr(cls, attr, _wrap_setup(value))
            elif attr == '__call__' or not (attr.startswith('_') or attr in _MODULE_API):
                setattr(cls, attr, _wrap_method(value))

    def __post_init__(self) -> None:
        object.__setattr__(self, '_state', _ModuleState())
        object.__setattr__(self, 'scope', None)
        if self.name is not None and not isinstance(self.name, str):
            raise TypeError(f'Module name must be a string, got {self.name!r} '
                            f'(type {type(self.name).__name__}).')
        parent = self.parent
        if parent is _unspecified_parent:
            parent = _context.current_module
            object.__setattr__(self, 'parent', parent)
        if parent is None:
            return
        if isinstance(parent, Scope):
            object.__setattr__(self, 'scope', parent)
            return
        if not isinstance(parent, Module):
            raise TypeError(f'parent of {type(self).__name__} must be a Module, a Scope or '
                            f'None, got {type(parent).__name__}.')
        pstate = parent._state
        if pstate.in_setup and self.name is None:
            return  # named by the attribute it is assigned to, in __setattr__.
        if not (pstate.in_setup or pstate.in_compact_method):
            if parent.scope is None:
                return
            raise errors.AssignSubModuleError(type(self).__name__)
        if self.name is None:
            prefix = type(self).__name__
            cursor = pstate.autoname_cursor.get(prefix, 0)
            object.__setattr__(self, 'name', f'{prefix}_{cursor}')
            pstate.autoname_cursor[prefix] = cursor + 1
        parent._register_child(self)

    # -- attribute handling ---------------------------------------------------

    def __setattr__(self, attr: str, value: Any) -> None:
        state = self.__dict__.get('_state')
        if state is None or self.scope is None:
            # Under construction, or unbound: a plain object.
            object.__setattr__(self, attr, value)
            return
        if not state.in_setup:
            raise errors.SetAttributeFrozenModuleError(type(self).__name__, attr, value)
        object.__setattr__(self, attr, self._register_submodules(attr, value))

    def __getattr__(self, attr: str) -> Any:
        # Only reached when normal lookup fails.
        if attr in ('_state', 'scope'):
            raise AttributeError(
                f'{type(self).__name__} has no "{attr}": it overrides __post_init__ '
                'without calling super().__post_init__().')
        if attr.startswith('__') or '_state' not in self.__dict__:
            raise AttributeError(attr)
        state = self._state
        if self.scope is not None:
            if not state.setup_done and not state.in_setup:
                self._try_setup()
                if attr in self.__dict__:
                    return self.__dict__[attr]
            raise AttributeError(f'"{type(self).__name__}" object has no attribute "{attr}".')
        raise AttributeError(
            f'"{type(self).__name__}" object has no attribute "{attr}". If "{attr}" is '
            'assigned in setup(), note that setup() only runs inside init()/apply() '
            '(or on a module returned by bind()), so it does not exist on an unbound module.')

    def __repr__(self) -> str:
        return _module_repr(self)

    # -- binding machinery ----------------------------------------------------

    def _register_child(self, child: 'Module') -> None:
        """Gives ``child`` (already named) a child scope of this module's scope."""
        if self.scope is None:
            return
        if self.scope.name_reserved(child.name):
            raise errors.NameInUseError('submodule', child.name, type(self).__name__)
        object.__setattr__(child, 'scope', self.scope.push(child.name))
        self._state.children[child.name] = child

    def _register_submodules(self, attr: str, value: Any) -> Any:
        """Attaches the modules found in ``value`` under names derived from ``attr``."""
        adopted: dict[int, Module] = {}

        def attach(module: Module, suffix: str) -> Module:
            name = attr + suffix
            if module.parent is None:
                # Created outside any module (e.g. a dataclass field): adopt a
                # copy; the same instance twice shares one copy.
                if id(module) not in adopted:
                    adopted[id(module)] = module.clone(parent=self, name=name)
                return adopted[id(module)]
            if module.scope is None and module.name is None:
                # Created in a setup() and not yet named (here, or in the setup
                # of the module that passed it to us as a field): it belongs
                # where it is first attached.
                object.__setattr__(module, 'parent', self)
                object.__setattr__(module, 'name', name)
                self._register_child(module)
            return module

        return _map_modules(value, attach)

    def _try_setup(self) -> None:
        """Runs ``setup()`` once on a bound module (adopting field submodules first)."""
        state = self._state
        if self.scope is None or state.setup_done or state.in_setup:
            return
        state.in_setup = True
        _context.module_stack.append(self)
        try:
            for f in dataclasses.fields(self):
                if f.name in ('parent', 'name') or not f.init:
                    continue
                value = getattr(self, f.name)
                if _contains_module(value):
                    object.__setattr__(self, f.name, self._register_submodules(f.name, value))
            self._create_name_scopes()
            setup = type(self).setup
            raw = getattr(setup, 'fluxion_raw', setup)
            if setup is Module.setup:
                raw(self)
            else:
                with _named(self, raw):
                    _run_intercepted(raw, self, 'setup', (), {})
            state.setup_done = True
        finally:
            state.in_setup = False
            _context.module_stack.pop()

    def _create_name_scopes(self) -> None:
        """Creates one ``_CompactNameScope`` child per ``@compact_name_scope`` method (in setup)."""
        scopes = {}
        for klass in reversed(type(self).__mro__):
            for attr, value in vars(klass).items():
                if getattr(value, 'compact_name_scope', False):
                    scopes[attr] = value.inner_fun
        if scopes:
            modules = {attr: _CompactNameScope(fn, lambda: self, parent=self, name=attr)
                       for attr, fn in scopes.items()}
            object.__setattr__(self, '_compact_name_scope_modules', modules)

    def _call_wrapped_method(self, fun: Callable, args: tuple, kwargs: dict) -> Any:
        """Runs a user method: lazily set up, track the context, reset compact names."""
        method_name = fun.__name__
        is_compact = getattr(fun, 'compact', False)
        if self.scope is None:
            if is_compact:
                raise errors.CallCompactUnboundModuleError(type(self).__name__, method_name)
            return fun(self, *args, **kwargs)
        _context.module_stack.append(self)
        try:
            self._try_setup()
            callbacks = [cb for cb in (obs(self, method_name, args, kwargs)
                                       for obs in list(_context.call_observers)) if cb]
            outermost = is_compact and not self._state.in_compact_method
            if outermost:
                self._state.in_compact_method = True
            try:
                with _named(self, fun):
                    out = _run_intercepted(fun, self, method_name, args, kwargs)
            finally:
                if outermost:
                    self._state.in_compact_method = False
                    self._state.autoname_cursor = {}
                    self.scope.rewind()
            capture = self.scope.flags.get('capture_intermediates', False)
            if capture and capture(self, method_name):
                self.sow('intermediates', method_name, out)
            for cb in callbacks:
                cb(out)
            return out
        finally:
            _context.module_stack.pop()

    # -- lifecycle ------------------------------------------------------------

    def setup(self) -> None:
        """Override to create submodules and variables, assigned to attributes.

        Runs lazily, once per bound instance, before its first method call
        (or attribute access). Lists, tuples and dicts of modules are named
        ``<attr>_<index>`` / ``<attr>_<key>``.
        """

    def clone(self, *, parent: Any = None, **updates: Any) -> 'Module':
        """Returns a copy with the same configuration, ``parent`` and updated fields.

        With the default ``parent=None`` the copy is unbound.
        """
        attrs = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.init}
        attrs['parent'] = parent
        attrs.update(updates)
        return type(self)(**attrs)

    def copy(self, *, parent: Any = _unspecified_parent, name: Optional[str] = None,
             **updates: Any) -> 'Module':
        """Like :meth:`clone`, but a new auto name and the running module as parent."""
        return self.clone(parent=parent, name=name, **updates)

    # -- variables and PRNG ---------------------------------------------------

    def _require_scope(self, what: str) -> Scope:
        if self.scope is None:
            raise errors.CallUnboundModuleMethodError(type(self).__name__, what)
        return self.scope

    def _check_declaration(self, kind: str, name: str, col: Optional[str]) -> Scope:
        scope = self._require_scope(f'self.{kind}')
        state = self._state
        if not (state.in_setup or state.in_compact_method):
            raise ValueError(
                f'{type(self).__name__}: {kind} "{name}" must be declared in setup() or in '
                'a method decorated with @nn.compact.')
        if not isinstance(name, str):
            raise TypeError(f'{kind} name must be a string, got {name!r}.')
        if scope.name_reserved(name, col):
            raise errors.NameInUseError(kind, name, type(self).__name__)
        return scope

    def param(self, name: str, init_fn: Callable[..., Any], *init_args: Any,
              unbox: bool = True, **init_kwargs: Any) -> Any:
        """Declares and returns parameter ``name`` of the ``'params'`` collection.

        Args:
            name: the parameter name (unique within the module).
            init_fn: called as ``init_fn(key, *init_args, **init_kwargs)`` when
                the parameter does not exist yet (during ``init``); ``key`` is
                drawn from the ``'params'`` PRNG stream of this module.
            *init_args, **init_kwargs: forwarded to ``init_fn`` (typically
                ``shape, dtype``).
            unbox: if True (default) and ``init_fn`` returns a box such as
                ``Partitioned`` (see ``with_partitioning``), the variable tree
                keeps the box and the bare value is returned.

        Returns:
            The parameter value.

        Raises:
            NameInUseError: ``name`` is used by a submodule or another parameter.
            ScopeParamNotFoundError / ScopeCollectionNotFound: missing in ``apply``.
            ScopeParamShapeError: the stored value has another shape than
                ``init_fn`` would produce.
        """
        scope = self._check_declaration('param', name, 'params')
        value = scope.param(name, init_fn, *init_args, **init_kwargs)
        return meta.unbox(value) if unbox else value

    def variable(self, col: str, name: str, init_fn: Optional[Callable[..., Any]] = None,
                 *init_args: Any, unbox: bool = True, **init_kwargs: Any) -> Variable:
        """Declares variable ``name`` in collection ``col`` and returns a handle on it.

        ``init_fn(*init_args, **init_kwargs)`` (no PRNG key) gives the initial
        value when the variable is absent and ``col`` is mutable. Read and
        write it through ``.value``.
        """
        scope = self._check_declaration('variable', name, col)
        return scope.variable(col, name, init_fn, *init_args, unbox=unbox, **init_kwargs)

    def make_rng(self, name: str = 'params') -> PRNGKey:
        """Returns a new PRNG key from stream ``name`` (``'params'`` if ``name`` is absent).

        Raises:
            InvalidRngError: no such stream (and no ``'params'`` stream) was given.
        """
        return self._require_scope('self.make_rng').make_rng(name)

    def has_rng(self, name: str) -> bool:
        """Whether PRNG stream ``name`` was provided to this call."""
        return self._require_scope('self.has_rng').has_rng(name)

    def is_initializing(self) -> bool:
        """True inside ``init``/``init_with_output``, False inside ``apply``."""
        return bool(self._require_scope('self.is_initializing').flags.get('initializing', False))

    def is_mutable_collection(self, col: str) -> bool:
        """Whether collection ``col`` may be written in this call."""
        return self._require_scope('self.is_mutable_collection').is_mutable_collection(col)

    def has_variable(self, col: str, name: str) -> bool:
        """Whether variable ``name`` exists in collection ``col`` of this module."""
        return self._require_scope('self.has_variable').has_variable(col, name)

    def get_variable(self, col: str, name: str, default: Any = None) -> Any:
        """Returns a variable's value, or ``default`` if it does not exist."""
        return self._require_scope('self.get_variable').get_variable(col, name, default)

    def put_variable(self, col: str, name: str, value: Any) -> None:
        """Sets a variable (the collection must be mutable)."""
        self._require_scope('self.put_variable').put_variable(col, name, value)

    def sow(self, col: str, name: str, value: Any,
            reduce_fn: Callable[[Any, Any], Any] = _sow_append,
            init_fn: Callable[[], Any] = _sow_init) -> bool:
        """Stores an intermediate value in collection ``col`` if it is mutable.

        By default values accumulate in a tuple: the n-th ``sow`` of ``name``
        in a call gives ``(v1, ..., vn)``.

        Returns:
            True if the value was stored, False if ``col`` is immutable.
        """
        scope = self._require_scope('self.sow')
        if not scope.is_mutable_collection(col):
            return False
        if scope.has_variable(col, name):
            current = scope.get_variable(col, name)
        else:
            scope.reserve(name, col)
            current = init_fn()
        scope.put_variable(col, name, reduce_fn(current, value))
        return True

    def perturb(self, name: str, value: Any, collection: str = 'perturbations') -> Any:
        """Adds a zero-initialized variable to ``value`` so its gradient can be taken.

        Taking the gradient of the loss with respect to the ``'perturbations'``
        collection gives the gradient with respect to this intermediate value.
        """
        scope = self._require_scope('self.perturb')
        if scope.is_mutable_collection(collection) and not scope.has_variable(collection, name):
            scope.put_variable(collection, name, jnp.zeros_like(value))
        if scope.has_variable(collection, name):
            value = value + scope.get_variable(collection, name)
        return value

    @property
    def variables(self) -> dict:
        """``{collection: variables of this module}`` (a copy); bound modules only."""
        return self._require_scope('self.variables').variables()

    @property
    def path(self) -> tuple:
        """Names from the root module to this one; bound modules only."""
        return self._require_scope('self.path').path

    # -- init / apply ---------------------------------------------------------

    def _bound_runner(self, method: Union[Callable[..., Any], str, None]) -> Callable[..., Any]:
        """Returns ``fn(scope, *args, **kwargs)`` running ``method`` on a bound clone."""
        def run(scope: Scope, *args: Any, **kwargs: Any) -> Any:
            module = self.clone(parent=scope)
            name = '__call__' if method is None else method
            if isinstance(name, str):
                if not any(name in klass.__dict__ for klass in type(module).__mro__):
                    raise AttributeError(
                        f'{type(self).__name__} has no method "{name}" to run; define it '
                        'or pass method= to init()/apply().')
                return getattr(module, name)(*args, **kwargs)
            if not callable(method):
                raise TypeError(f'method must be None, a string or a callable, got {method!r}.')
            return method(module, *args, **kwargs)
        return run

    def init_with_output(self, rngs: Union[PRNGKey, RNGSequences], *args: Any,
                         method: Union[Callable[..., Any], str, None] = None,
                         mutable: Any = DenyList('intermediates'),
                         capture_intermediates: Union[bool, Callable[..., bool]] = False,
                         **kwargs: Any) -> tuple[Any, dict]:
        """Initializes the variables and also returns the output.

        Args:
            rngs: a PRNG key (used for the ``'params'`` stream) or a dict
                ``{stream: key}``.
            *args, **kwargs: passed to the method.
            method: the method to run: None for ``__call__``, a name, or a
                function called as ``method(bound_module, *args)``.
            mutable: collections to return (default: all but ``'intermediates'``).
            capture_intermediates: True to sow every ``__call__`` output into
                ``'intermediates'``, or a filter ``fn(module, method_name)``.

        Returns:
            ``(output, variables)`` with ``variables`` a plain dict of collections.
        """
        _check_instance(self)
        flags = {'capture_intermediates': _capture_filter(capture_intermediates)}
        init_fn = core_scope.init(self._bound_runner(method), mutable=mutable, flags=flags)
        return init_fn(rngs, *args, **kwargs)

    def init(self, rngs: Union[PRNGKey, RNGSequences], *args: Any,
             method: Union[Callable[..., Any], str, None] = None,
             mutable: Any = DenyList('intermediates'),
             capture_intermediates: Union[bool, Callable[..., bool]] = False,
             **kwargs: Any) -> dict:
        """Initializes the module's variables: ``{'params': {...}, ...}``.

        Runs the method once on the example inputs ``*args`` so that shapes
        can be inferred. See :meth:`init_with_output` for the arguments.

        Raises:
            InvalidRngError: ``rngs`` is not a key or a dict of keys.
            InvalidInstanceModuleError: called on the class, not an instance.
        """
        _check_instance(self)
        _, variables = self.init_with_output(
            rngs, *args, method=method, mutable=mutable,
            capture_intermediates=capture_intermediates, **kwargs)
        return variables

    def apply(self, variables: Mapping, *args: Any,
              rngs: Union[PRNGKey, RNGSequences, None] = None,
              method: Union[Callable[..., Any], str, None] = None,
              mutable: Any = False,
              capture_intermediates: Union[bool, Callable[..., bool]] = False,
              **kwargs: Any) -> Any:
        """Runs a method with the given variables: a pure function of its arguments.

        Args:
            variables: ``{'params': ..., ...}`` as returned by :meth:`init`.
            *args, **kwargs: passed to the method.
            rngs: PRNG keys for stochastic layers, e.g. ``{'dropout': key}``.
            method: None (``__call__``), a method name, or a function called
                as ``method(bound_module, *args)``.
            mutable: collections that may change (``['batch_stats']``, True for
                all). When not False, returns ``(output, updated collections)``.
            capture_intermediates: see :meth:`init_with_output`.

        Returns:
            The output, or ``(output, mutated collections)`` if ``mutable``.

        Raises:
            ApplyScopeInvalidVariablesTypeError: ``variables`` is not a dict of dicts.
            ScopeParamNotFoundError, ScopeParamShapeError: variables do not fit.
            ModifyScopeVariableError: a non-mutable collection was written.
        """
        _check_instance(self)
        if rngs is not None and not isinstance(rngs, Mapping):
            rngs = {'params': rngs}
        flags = {'capture_intermediates': _capture_filter(capture_intermediates)}
        apply_fn = core_scope.apply(self._bound_runner(method), mutable=mutable, flags=flags)
        return apply_fn(variables, *args, rngs=rngs, **kwargs)

    def bind(self, variables: Mapping, *args: Any,
             rngs: Union[RNGSequences, None] = None, mutable: Any = False) -> 'Module':
        """Returns a bound copy for interactive use: ``model.bind(variables)(x)``.

        The bound module keeps its variables between calls (writes to mutable
        collections persist); :meth:`unbind` gives them back.
        """
        _check_instance(self)
        if rngs is not None and not isinstance(rngs, Mapping):
            rngs = {'params': rngs}
        scope = core_scope.bind(variables, rngs=rngs, mutable=mutable,
                                flags={'capture_intermediates': False})
        return self.clone(parent=scope)

    def unbind(self) -> tuple['Module', dict]:
        """Returns ``(unbound copy, variables)`` of a bound module."""
        scope = self._require_scope('unbind')
        return self._detached(), scope.variables()

    def _detached(self) -> 'Module':
        """An unbound copy whose module-valued fields are fresh unbound copies too.

        The copy can be ``init``-ed or ``apply``-ed on its own (``tabulate``
        uses it to count the FLOPs of one submodule call).
        """
        def fresh(module: Module, _suffix: str) -> Module:
            return module.clone(parent=None, name=None)

        updates = {}
        for f in dataclasses.fields(self):
            if f.init and f.name not in ('parent', 'name'):
                value = getattr(self, f.name)
                if _contains_module(value):
                    updates[f.name] = _map_modules(value, fresh)
        return self.clone(parent=None, **updates)

    def tabulate(self, rngs: Union[PRNGKey, RNGSequences], *args: Any,
                 depth: Optional[int] = None, show_repeated: bool = False,
                 mutable: Any = DenyList('intermediates'),
                 console_kwargs: Optional[Mapping[str, Any]] = None,
                 compute_flops: bool = False, compute_vjp_flops: bool = False,
                 **kwargs: Any) -> str:
        """Returns a table of the submodule calls, their shapes and parameter counts.

        See :func:`fluxion.flax.linen.summary.tabulate`.
        """
        _check_instance(self)
        from .summary import tabulate as _tabulate  # summary imports this module
        return _tabulate(self, rngs, depth=depth, show_repeated=show_repeated,
                         mutable=mutable, console_kwargs=console_kwargs,
                         compute_flops=compute_flops,
                         compute_vjp_flops=compute_vjp_flops)(*args, **kwargs)


# Names of the base API; subclass methods with these names are not wrapped.
_MODULE_API = frozenset(
    name for name in vars(Module) if not name.startswith('_'))

# Make the base a dataclass too, so subclasses inherit `parent` and `name`.
dataclasses.dataclass(Module, repr=False, eq=False)


def _capture_filter(capture: Union[bool, Callable[..., bool]]) -> Any:
    if capture is True:
        return lambda module, method_name: method_name == '__call__'
    if capture is False or capture is None:
        return False
    if callable(capture):
        return capture
    raise TypeError(f'capture_intermediates must be a bool or a callable, got {capture!r}.')


def merge_param(name: str, a: Any, b: Any) -> Any:
    """Returns whichever of a module field ``a`` and a call argument ``b`` is set.

    Used for options such as ``deterministic`` that may be given either when
    the module is built or when it is called.

    Raises:
        ValueError: if both or neither are None.
    """
    if a is None and b is None:
        raise ValueError(f'Parameter "{name}" must be passed to the constructor or at '
                         'call time.')
    if a is not None and b is not None:
        raise ValueError(f'Parameter "{name}" was passed to the constructor and at call '
                         'time. Pass it in only one place.')
    return a if b is None else b


def apply(fn: Callable[..., Any], module: Module, mutable: Any = False,
          capture_intermediates: Union[bool, Callable[..., bool]] = False) -> Callable[..., Any]:
    """Turns ``fn(bound_module, *args)`` into ``f(variables, *args, rngs=None)``."""
    return lambda variables, *args, rngs=None, **kwargs: module.apply(
        variables, *args, rngs=rngs, method=fn, mutable=mutable,
        capture_intermediates=capture_intermediates, **kwargs)


def init_with_output(fn: Callable[..., Any], module: Module,
                     mutable: Any = DenyList('intermediates'),
                     capture_intermediates: Union[bool, Callable[..., bool]] = False
                     ) -> Callable[..., Any]:
    """Turns ``fn(bound_module, *args)`` into ``f(rngs, *args) -> (out, variables)``."""
    return lambda rngs, *args, **kwargs: module.init_with_output(
        rngs, *args, method=fn, mutable=mutable,
        capture_intermediates=capture_intermediates, **kwargs)


def init(fn: Callable[..., Any], module: Module, mutable: Any = DenyList('intermediates'),
         capture_intermediates: Union[bool, Callable[..., bool]] = False) -> Callable[..., Any]:
    """Turns ``fn(bound_module, *args)`` into ``f(rngs, *args) -> variables``."""
    return lambda rngs, *args, **kwargs: module.init(
        rngs, *args, method=fn, mutable=mutable,
        capture_intermediates=capture_intermediates, **kwargs)


def share_scope(module: Module, other: Module, /) -> None:
    """Makes two bound modules use one scope, so one's variables appear in the other's.

    If ``other`` lives below ``module`` (a submodule), ``other`` is moved
    into ``module``'s scope: its variables appear directly among
    ``module``'s (wrapping a layer without changing the parameter tree).
    Otherwise ``module`` moves into ``other``'s scope. Submodules of the
    moved module follow it.

    Raises:
        CallShareScopeOnUnboundModuleError: either module is unbound.
        ValueError: a moved submodule's name is already used in the new scope.
    """
    if module.scope is None or other.scope is None:
        raise errors.CallShareScopeOnUnboundModuleError()

    def below(ancestor: Scope, scope: Optional[Scope]) -> bool:
        while scope is not None:
            if scope is ancestor:
                return True
            scope = scope.parent
        return False

    if below(module.scope, other.scope):
        moved, new_scope = other, module.scope
    else:
        moved, new_scope = module, other.scope
    old_scope = moved.scope
    object.__setattr__(moved, 'scope', new_scope)
    for child in moved._state.children.values():
        if isinstance(child, Module) and child.scope is not None \
                and child.scope.parent is old_scope:
            object.__setattr__(child, 'scope', new_scope.push(child.scope.name))


class _CompactNameScope(Module):
    """The submodule that runs one ``@compact_name_scope`` method under the method's name."""

    fn: Callable[..., Any]
    owner: Callable[[], Any]

    @compact
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(self.owner(), *args, **kwargs)


def compact_name_scope(fun: Callable) -> Callable:
    """Runs a method in its own name scope: submodules it creates inline live under the method's name.

    Lets a module have several compact-style methods, each with its own
    variables (``params/<method name>/Dense_0``). Inside, ``self`` is the
    module itself; submodules created inline attach to the method's scope.

    Raises (when called):
        ValueError: the module is not bound (outside init/apply/bind).
    """
    name = fun.__name__

    @functools.wraps(fun)
    def wrapper(self, *args, **kwargs):
        if self.scope is None:
            raise ValueError(f'Cannot call compact_name_scope method "{name}" on an unbound '
                             'module: call it inside init()/apply() or on a bound module.')
        self._try_setup()
        return self.__dict__['_compact_name_scope_modules'][name](*args, **kwargs)
    wrapper.compact_name_scope = True
    wrapper.inner_fun = fun
    wrapper.nowrap = True
    return wrapper
