"""Lifted transformations for Modules (mirrors ``flax.linen.transforms``).

Each transformation here applies a :mod:`fluxion.flax.core.lift`
transformation to Linen code, in either of Flax's two forms:

* **On a Module class**: ``nn.scan(nn.LSTMCell, ...)`` returns a subclass
  (named ``'Scan' + class name``, as in Flax) whose ``__call__`` (or the
  ``methods=`` given) runs under the transformation. An instance is used
  like the original module; its variables live under its own name.
* **On a function** ``fn(module, *args)``: returns ``lifted(module, *args)``
  that runs ``fn`` under the transformation with ``module`` rebound to the
  transformation's inner scope. ``module`` must be bound (a submodule
  created in ``setup`` or a ``@compact`` method, or a dataclass field of a
  running module); its variables live at its own path.

Only the first argument's scope is lifted: modules passed among the other
arguments are not supported (Flax lifts them too).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Optional, Union

from .. import errors
from ..core import lift, meta
from ..core.lift import broadcast
from ..core.scope import Filter, Scope
import fluxion

from . import module as _module
from .module import Module, _contains_module, _map_modules

__all__ = ['add_metadata_axis', 'broadcast', 'cond', 'custom_vjp', 'fold_rngs', 'grad', 'jit', 'jvp', 'map_variables', 'named_call', 'scan', 'switch',
           'value_and_grad', 'vjp', 'vmap', 'while_loop']

Target = Union[type, Callable[..., Any]]


def _rebind(module: Module, scope: Scope, cls: Optional[type] = None) -> Module:
    """A copy of ``module`` (as class ``cls``) bound to ``scope``, with unbound submodule fields.

    Submodules held in fields are re-created unbound so that they attach to
    the new scope (under the field's name) instead of staying in the outer one.

    Raises:
        NotImplementedError: a field holds a module already bound to another
            scope (e.g. created in the caller's ``@compact`` method); Flax
            lifts that module's scope too, which fluxion does not support.
    """
    def unbound_copy(sub: Module, _suffix: str) -> Module:
        if sub.scope is not None and not _is_below(sub.scope, module.scope):
            raise NotImplementedError(
                f'Lifting {type(module).__name__} whose field holds {type(sub).__name__} '
                f'"{sub.name}", already bound at {sub.scope.path_text}: fluxion lifts only the '
                'transformed module\'s own scope. Create the submodule unbound (outside '
                '@compact methods, or in setup()) or inside the transformed module.')
        return sub.clone(parent=None, name=None)

    attrs = {}
    for f in dataclasses.fields(module):
        if not f.init or f.name == 'parent':
            continue
        value = getattr(module, f.name)
        if _contains_module(value):
            value = _map_modules(value, unbound_copy)
        attrs[f.name] = value
    return (cls or type(module))(parent=scope, **attrs)


def _is_below(scope: Scope, ancestor: Optional[Scope]) -> bool:
    while scope is not None:
        if scope is ancestor:
            return True
        scope = scope.parent
    return False


def _call_rebound(module: Module, scope: Scope, fn: Callable[..., Any], args: tuple,
                  kwargs: dict) -> Any:
    """Runs ``fn(copy of module bound to scope, *args)`` as a method of that copy.

    As a method, ``fn`` may create submodules inline; they continue the
    module's automatic names (``Dense_1`` after an outer ``Dense_0``), and the
    names taken inside are reflected back, as Flax does by sharing the
    module's naming state with the transformed copy.
    """
    inner = _rebind(module, scope)
    state = inner._state
    state.autoname_cursor = dict(module._state.autoname_cursor)
    state.in_compact_method = True

    def method(self, *a, **k):
        return fn(self, *a, **k)
    method.__name__ = getattr(fn, '__name__', 'lifted')
    try:
        return inner._call_wrapped_method(method, args, kwargs)
    finally:
        module._state.autoname_cursor.update(state.autoname_cursor)


def _require_bound(module: Any, what: str) -> Scope:
    if not isinstance(module, Module):
        raise TypeError(f'{what}: the first argument of a lifted function must be a Module, '
                        f'got {type(module).__name__}.')
    if module.scope is None:
        raise errors.CallUnboundModuleMethodError(type(module).__name__, what)
    return module.scope


def _lift_class(core: Callable[..., Any], name: str, target: type, methods: Any,
                trafo_args: tuple, trafo_kwargs: dict) -> type:
    if methods is None:
        per_method = {'__call__': (trafo_args, trafo_kwargs)}
    elif isinstance(methods, (list, tuple)):
        per_method = {m: (trafo_args, trafo_kwargs) for m in methods}
    elif isinstance(methods, Mapping):
        per_method = {m: ((), dict(kw)) for m, kw in methods.items()}
    else:
        raise ValueError(f'methods must be None, a list/tuple of names or a dict; got {methods!r}.')

    def make(method_name: str, args: tuple, kwargs: dict) -> Callable[..., Any]:
        method = getattr(target, method_name)

        @functools.wraps(method)
        def lifted(self, *call_args, **call_kwargs):
            scope = _require_bound(self, f'{name}({target.__name__}).{method_name}')

            def body(inner_scope, *inner_args):
                inner = _rebind(self, inner_scope, cls=target)
                return getattr(inner, method_name)(*inner_args, **call_kwargs)
            return core(body, *args, **kwargs)(scope, *call_args)
        # The outer instance only forwards to the transformed copy: it must not
        # run setup() or track names itself.
        lifted.nowrap = True
        return lifted

    attrs = {m: make(m, a, k) for m, (a, k) in per_method.items()}
    attrs['__module__'] = target.__module__
    return type(name.capitalize() + target.__name__, (target,), attrs)


def _lift_function(core: Callable[..., Any], name: str, fn: Callable[..., Any],
                   trafo_args: tuple, trafo_kwargs: dict) -> Callable[..., Any]:
    @functools.wraps(fn)
    def lifted(module, *args, **kwargs):
        scope = _require_bound(module, f'nn.{name}')

        def body(inner_scope, *inner_args):
            return _call_rebound(module, inner_scope, fn, inner_args, kwargs)
        return core(body, *trafo_args, **trafo_kwargs)(scope, *args)
    return lifted


def lift_transform(core: Callable[..., Any], name: str, target: Target, *trafo_args: Any,
                   methods: Any = None, **trafo_kwargs: Any) -> Any:
    """Applies a core lifted transformation to a Module class or to a function of a module."""
    if isinstance(target, type) and issubclass(target, Module):
        return _lift_class(core, name, target, methods, trafo_args, trafo_kwargs)
    if callable(target) and not isinstance(target, Module):
        return _lift_function(core, name, target, trafo_args, trafo_kwargs)
    raise TypeError(f'nn.{name} can transform a Module class or a function of a module, '
                    f'got {target!r}.')


def scan(target: Target, variable_axes: Mapping[Filter, int] = {},
         variable_broadcast: Filter = False, variable_carry: Filter = False,
         split_rngs: Mapping[Filter, bool] = {}, in_axes: Any = 0, out_axes: Any = 0,
         length: Optional[int] = None, reverse: bool = False, unroll: int = 1,
         metadata_params: Mapping[Any, Any] = {}, methods: Any = None) -> Any:
    """A Module (class or function) looped over with ``lax.scan``, variables included.

    The scanned method has the signature ``(carry, *xs) -> (carry, ys)``.
    Typical uses: an RNN cell applied along time with shared parameters
    (``variable_broadcast='params', split_rngs={'params': False}``), or a
    stack of identical layers with per-layer parameters
    (``variable_axes={'params': 0}, split_rngs={'params': True}``).

    See :func:`fluxion.flax.core.lift.scan` for the arguments. Parameters and
    outputs equal Flax's for the same key.

    Raises:
        ValueError: inconsistent/missing lengths, or a written collection
            that no filter covers.
    """
    return lift_transform(lift.scan, 'scan', target, variable_axes=variable_axes,
                          variable_broadcast=variable_broadcast,
                          variable_carry=variable_carry, split_rngs=split_rngs,
                          in_axes=in_axes, out_axes=out_axes, length=length,
                          reverse=reverse, unroll=unroll, metadata_params=metadata_params,
                          methods=methods)


def vmap(target: Target, variable_axes: Mapping[Filter, Any] = {'params': None},
         split_rngs: Mapping[Filter, bool] = {'params': False}, in_axes: Any = 0,
         out_axes: Any = 0, axis_size: Optional[int] = None, axis_name: Any = None,
         metadata_params: Mapping[Any, Any] = {}, methods: Any = None) -> Any:
    """A Module (class or function) vectorized with ``fluxion.vmap``, variables included.

    ``variable_axes={'params': 0}, split_rngs={'params': True}`` builds an
    ensemble (independent parameters per batch element);
    ``{'params': None}`` with ``{'params': False}`` shares them. See
    :func:`fluxion.flax.core.lift.vmap`.
    """
    return lift_transform(lift.vmap, 'vmap', target, variable_axes=variable_axes,
                          split_rngs=split_rngs, in_axes=in_axes, out_axes=out_axes,
                          axis_size=axis_size, axis_name=axis_name,
                          metadata_params=metadata_params, methods=methods)


def jit(target: Target, variables: Filter = True, rngs: Filter = True,
        static_argnums: Union[int, Sequence[int]] = (),
        donate_argnums: Union[int, Sequence[int]] = (), methods: Any = None) -> Any:
    """A Module (class or function) whose method runs compiled with ``fluxion.jit``.

    ``static_argnums`` counts the method's positional arguments after
    ``self``. Values equal the uncompiled module's. Difference from Flax: the
    compiled function is rebuilt (traced) on every call.
    """
    return lift_transform(lift.jit, 'jit', target, variables=variables, rngs=rngs,
                          static_argnums=static_argnums, donate_argnums=donate_argnums,
                          methods=methods)


def checkpoint(target: Target, variables: Filter = True, rngs: Filter = True, concrete: bool = False,
               prevent_cse: bool = True, static_argnums: Union[int, Sequence[int]] = (),
               policy: Callable[..., bool] | None = None, methods: Any = None) -> Any:
    """A Module (class or function) whose method is rematerialized (``fluxion.checkpoint``): values and
    gradients are the module's, and reverse mode keeps only its inputs (and what ``policy`` saves), recomputing the
    rest. ``static_argnums`` counts the method's positional arguments after ``self``."""
    return lift_transform(lift.checkpoint, 'checkpoint', target, variables=variables, rngs=rngs,
                          concrete=concrete, prevent_cse=prevent_cse, static_argnums=static_argnums,
                          policy=policy, methods=methods)


remat = checkpoint


def remat_scan(target: Target, lengths: Sequence[int] = (), policy: Callable[..., bool] | None = None,
               variable_broadcast: Filter = False, variable_carry: Filter = False,
               variable_axes: Mapping[Filter, int] = {True: 0},  # noqa: B006 -- read-only default, as Flax's
               split_rngs: Mapping[Filter, bool] = {True: True}) -> Any:  # noqa: B006
    """A Module whose ``__call__(carry) -> carry`` is applied ``prod(lengths)`` times as nested, rematerialized
    scans (see :func:`fluxion.flax.core.lift.remat_scan`); its parameters get one leading axis per entry of
    ``lengths``."""
    return lift_transform(lift.remat_scan, 'remat_scan', target, lengths=lengths, policy=policy,
                          variable_broadcast=variable_broadcast, variable_carry=variable_carry,
                          variable_axes=variable_axes, split_rngs=split_rngs)


def map_variables(target: Target, mapped_collections: Filter = True,
                  trans_in_fn: Callable[..., Any] = lambda x: x,
                  trans_out_fn: Callable[..., Any] = lambda x: x, init: bool = False,
                  mutable: bool = False, rngs: Filter = True, variables: Filter = True,
                  methods: Any = None) -> Any:
    """A Module (class or function) that sees ``mapped_collections`` through ``trans_in_fn``.

    ``trans_in_fn`` receives ``{collection: tree}`` of the mapped collections
    at the module's path and returns what the module reads (e.g. a masked or
    reshaped kernel); ``trans_out_fn`` maps written values back. See
    :func:`fluxion.flax.core.lift.map_variables` for ``init`` and ``mutable``.
    """
    return lift_transform(lift.map_variables, 'map_variables', target,
                          mapped_collections=mapped_collections, map_in_fn=trans_in_fn,
                          map_out_fn=trans_out_fn, init=init, mutable=mutable, rngs=rngs,
                          variables=variables, methods=methods)


def _unbound(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``self.method`` (bound to a module) -> the plain function taking the module first."""
    owner = getattr(fn, '__self__', None)
    return fn.__func__ if isinstance(owner, Module) else fn


def _direct(fns: Sequence[Callable[..., Any]], module: Module, what: str) -> tuple:
    """The module's scope and the functions rewritten as ``f(inner scope, *args)``."""
    scope = _require_bound(module, what)

    def on_scope(fn):
        fn = _unbound(fn)
        return lambda inner_scope, *args: _call_rebound(module, inner_scope, fn, args, {})
    return scope, [on_scope(fn) for fn in fns]


def cond(pred: Any, true_fun: Callable[..., Any], false_fun: Callable[..., Any], mdl: Module,
         *operands: Any, variables: Filter = True, rngs: Filter = True) -> Any:
    """``lax.cond`` for module code: ``true_fun(mdl, *operands)`` if ``pred`` else ``false_fun``.

    Both branches are traced; variables they create or update must have the
    same structure in both (create submodules in ``setup``, not in one
    branch). See :func:`fluxion.flax.core.lift.cond`.
    """
    scope, (t_fn, f_fn) = _direct((true_fun, false_fun), mdl, 'nn.cond')
    return lift.cond(pred, t_fn, f_fn, scope, *operands, variables=variables, rngs=rngs)


def switch(index: Any, branches: Sequence[Callable[..., Any]], mdl: Module, *operands: Any,
           variables: Filter = True, rngs: Filter = True) -> Any:
    """``lax.switch`` for module code: runs ``branches[index](mdl, *operands)`` (index clamped)."""
    scope, fns = _direct(tuple(branches), mdl, 'nn.switch')
    return lift.switch(index, fns, scope, *operands, variables=variables, rngs=rngs)


def while_loop(cond_fn: Callable[..., Any], body_fn: Callable[..., Any], mdl: Module,
               init: Any, carry_variables: Filter = False, broadcast_variables: Filter = True,
               split_rngs: Mapping[Filter, bool] = {}) -> Any:
    """``lax.while_loop`` for module code: ``body_fn(mdl, c)`` while ``cond_fn(mdl, c)``.

    ``carry_variables`` may be updated by the body; ``broadcast_variables``
    are read-only. See :func:`fluxion.flax.core.lift.while_loop`.
    """
    scope, (c_fn, b_fn) = _direct((cond_fn, body_fn), mdl, 'nn.while_loop')
    return lift.while_loop(c_fn, b_fn, scope, init, carry_variables=carry_variables,
                           broadcast_variables=broadcast_variables, split_rngs=split_rngs)


def vjp(fn: Callable[..., Any], mdl: Module, *primals: Any, has_aux: bool = False,
        reduce_axes: tuple = (), vjp_variables: Filter = 'params', variables: Filter = True,
        rngs: Filter = True, multi_scope: bool = False) -> tuple:
    """``vjp`` of ``fn(mdl, *primals)`` with respect to ``vjp_variables`` and the primals.

    Returns ``(y, bwd)`` (``(y, bwd, aux)`` with ``has_aux``); ``bwd(ct)``
    gives ``({collection: grads}, *primal grads)``.

    Raises:
        NotImplementedError: ``reduce_axes`` (deprecated in Flax too) or
            ``multi_scope`` (modules among the primals are not lifted).
    """
    if reduce_axes:
        raise NotImplementedError('nn.vjp: reduce_axes is not supported (deprecated in Flax).')
    if multi_scope:
        raise NotImplementedError('nn.vjp: multi_scope=True is not supported.')
    scope, (f,) = _direct((fn,), mdl, 'nn.vjp')
    return lift.vjp(f, scope, *primals, has_aux=has_aux, vjp_variables=vjp_variables,
                    variables=variables, rngs=rngs)


def value_and_grad(fn: Callable[..., Any], mdl: Module, *primals: Any, has_aux: bool = False,
                   reduce_axes: tuple = (), variables: Filter = True, rngs: Filter = True
                   ) -> tuple:
    """Value of the scalar ``fn(mdl, *primals)`` and its gradient with respect to the primals.

    Returns ``(value, grads)`` or ``((value, aux), grads)``; ``grads`` has one
    entry per primal. Variables are not differentiated (use :func:`vjp`).

    Raises:
        ValueError: the output is not a scalar.
    """
    if reduce_axes:
        raise NotImplementedError('nn.value_and_grad: reduce_axes is not supported.')
    scope, (f,) = _direct((fn,), mdl, 'nn.value_and_grad')
    result = lift.value_and_grad(f, scope, *primals, has_aux=has_aux, variables=variables,
                                 rngs=rngs)
    out = result[0]
    if getattr(out, 'shape', None) != ():
        raise ValueError(f'nn.grad needs a scalar output; got shape {getattr(out, "shape", None)}.')
    if has_aux:
        return (out, result[1]), result[2]
    return out, result[1]


def grad(fn: Callable[..., Any], mdl: Module, *primals: Any, has_aux: bool = False,
         reduce_axes: tuple = (), variables: Filter = True, rngs: Filter = True) -> Any:
    """Gradient of the scalar ``fn(mdl, *primals)`` with respect to the primals (``(grads, aux)`` with ``has_aux``)."""
    value, grads = value_and_grad(fn, mdl, *primals, has_aux=has_aux, reduce_axes=reduce_axes,
                                  variables=variables, rngs=rngs)
    return (grads, value[1]) if has_aux else grads


def jvp(fn: Callable[..., Any], mdl: Module, primals: Sequence[Any], tangents: Sequence[Any],
        variable_tangents: Mapping[str, Any], variables: Filter = True,
        rngs: Filter = True) -> tuple:
    """``jvp`` of ``fn(mdl, *primals)``: returns ``(y, y_tangent)``.

    ``variable_tangents`` is ``{collection: tangent tree}`` (e.g.
    ``{'params': ...}``) for the collections to differentiate.
    """
    scope, (f,) = _direct((fn,), mdl, 'nn.jvp')
    return lift.jvp(f, scope, primals, tangents, variable_tangents, variables=variables,
                    rngs=rngs)


def fold_rngs(target: Target, variables: Filter = True, rngs: Filter = True,
              methods: Any = None) -> Any:
    """A Module (class or function) whose PRNG streams are forked as under :func:`jit`, uncompiled.

    See :func:`fluxion.flax.core.lift.fold_rngs`.
    """
    return lift_transform(lift.fold_rngs, 'fold_rngs', target, variables=variables, rngs=rngs,
                          methods=methods)


def custom_vjp(fn: Callable[..., Any], forward_fn: Callable[..., Any],
               backward_fn: Callable[..., Any], grad_vars: Filter = 'params',
               nondiff_argnums: Sequence[int] = ()) -> Callable[..., Any]:
    """Module code with a custom backward pass: returns ``lifted(mdl, *args) -> y``.

    ``fn(mdl, *args) -> y``; ``forward_fn(mdl, *args) -> (y, residuals)``
    (often ``nn.vjp(fn, mdl, *args)``); ``backward_fn(residuals, y_ct) ->
    ({collection: grads}, *arg grads)`` for the ``grad_vars`` collections.
    See :func:`fluxion.flax.core.lift.custom_vjp`.
    """
    def lifted(mdl: Module, *args: Any) -> Any:
        scope, (f, fwd) = _direct((fn, forward_fn), mdl, 'nn.custom_vjp')
        return lift.custom_vjp(f, fwd, backward_fn, grad_vars=grad_vars,
                               nondiff_argnums=nondiff_argnums)(scope, *args)
    return lifted


def add_metadata_axis(target: Target, variable_axes: Mapping[Filter, int] = {'params': 0},
                      metadata_params: Mapping[Any, Any] = {}) -> Any:
    """A Module (class or function) whose boxed variables gain axis metadata outside and lose it inside.

    For each ``collection: axis`` of ``variable_axes``, boxes read by the
    target have ``remove_axis(axis, metadata_params)`` applied and boxes it
    writes get ``add_axis(axis, metadata_params)`` (use it around code that
    stacks variables by hand, e.g. with ``fluxion.vmap``).
    """
    params = dict(metadata_params)
    for col, axis in variable_axes.items():
        target = map_variables(target, col,
                               trans_in_fn=lambda t, a=axis: meta.remove_axis(t, a, params),
                               trans_out_fn=lambda t, a=axis: meta.add_axis(t, a, params),
                               mutable=True)
    return target


def named_call(class_fn: Callable[..., Any], force: bool = True) -> Callable[..., Any]:
    """Wraps a module method so its calls run under a name scope of their own.

    The scope is named like the automatic method scopes (the module's name,
    plus ``.method`` unless the method is ``__call__``) and nests inside the
    automatic one, so a method ``f`` of module ``M`` records
    ``'M/M.f/M.f'`` when automatic scopes are on (as in Flax). Calls made
    while the module's ``setup`` runs are not wrapped.

    Args:
        class_fn: a function taking the module as first argument.
        force: if False, wrap only while :func:`enable_named_call` is in effect.

    Returns:
        The wrapped function.
    """
    @functools.wraps(class_fn)
    def wrapped(self, *args, **kwargs):
        if (not force and not _module._use_named_call) or self._state.in_setup:
            return class_fn(self, *args, **kwargs)
        name = _module._profiling_name(self, class_fn)
        return fluxion.named_call(class_fn, name=name)(self, *args, **kwargs)
    return wrapped
