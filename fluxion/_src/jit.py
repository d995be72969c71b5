"""`jit`: dispatch of jitted calls -- trace once per signature (`jit_trace`), compile the program with the backend
(`stages.CompiledFunction`), and serve cache hits quickly.

Dispatch (the hot path): when every argument is a positional `Array` (the common case), the cache key is just the
tuple of (shape, dtype, weak_type) of the arguments and a hit calls the generated executable on the raw NumPy
buffers directly. Otherwise the arguments are flattened and the key is built from the treedef, each leaf's
(shape, dtype, weak_type), the static arguments and the trace context (the options that change a trace or its
compilation, and user contexts: `config.trace_context_key`); structures seen before are checked and flattened by code
generated for them (`jit_flatten`). Caches belong to the wrapped function itself, so `jit(f)(x)`
in a loop (a new wrapper each time) does not retrace.

Under another transformation (grad, vmap, an enclosing jit, a control-flow body) a jitted function is not inlined:
it is traced once per signature (the same trace a top-level call compiles) and bound as the `jit` call primitive
(`lax.call.jit_p`), whose rules differentiate, transpose and batch the traced program. `make_jaxpr` shows it as a
`jit[name=... jaxpr=...]` equation; the compiler inlines it.

Donation (`donate_argnums`/`donate_argnames`): the buffers of donated arguments may be overwritten by the
executable (for outputs of the same shape and dtype, or in-place updates). As in JAX, a donated array -- and any
array sharing its buffer, such as an eager reshape of it -- must not be used after the call. Donation applies to
top-level calls only (under a transformation there are no buffers to give away).
"""

from __future__ import annotations

import functools
import inspect
import logging
import sys
import threading
import warnings
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from . import core, dtypes
from .api import ShapeDtypeStruct
from .api_util import PerFunction, as_value, fun_name, fun_src
from .backends import compiler as _compiler
from .config import add_user_context_hook, config, trace_context_key
from .config import user_context_generation as _user_context_generation
from .core import Array
from .core import all_eager as _all_eager
from .core import float_checks as _float_checks
from .core import thread_state as _thread_state
from .jit_flatten import make_flattener
from .jit_trace import (Traced, aval_signature, donated_leaves, leaf_signature, signature_str, split_static_args)
from .jit_trace import trace as trace_function
from .lax.call import call_jaxpr
from . import stages
from .refs import Ref, freeze, new_ref
from .sharding import EXPLICIT_IN_USE as _EXPLICIT_IN_USE
from .sharding import MESH_IN_USE as _MESH_IN_USE
from .stages import CompiledFunction
from .traceback_util import filtered as filtered_traceback
from .tree_util import node_kind, registered_kind, tree_flatten, tree_structure, tree_unflatten

logger = logging.getLogger("fluxion.jit")

_RECOMPILE_WARN_THRESHOLD = 20
# Pytree structures per jitted function with a generated flattener (each miss costs a failed check, ~1 us).
_MAX_FLATTENERS = 4

# `config.jax_disable_jit` is read through Config.__getattr__ (~0.4 us, a fifth of a cached call), so the dispatch
# path reads this mirror, which a config hook keeps current.
_jit_disabled = bool(config.jax_disable_jit)


class _Propagating(threading.local):
    on = False  # inside `_call_propagating` on this thread


_propagating = _Propagating()


def _set_jit_disabled(value: Any) -> None:
    global _jit_disabled
    _jit_disabled = bool(value)


config.add_hook("jax_disable_jit", _set_jit_disabled)


class _FunctionCaches:
    """What `jit` remembers about one Python function, shared by every `jit` wrapper of it.

    Attributes:
      traces: (options, in_tree, signature, statics, trace context) -> `Traced`.
      compiled: the same keys -> `CompiledFunction` (top-level calls).
    """

    __slots__ = ("traces", "compiled")

    def __init__(self):
        self.traces: dict = {}
        self.compiled: dict = {}


_function_caches = PerFunction(_FunctionCaches)
# Every live `jit` wrapper, so that `clear_all_caches` can empty their dispatch tables too.
_wrappers: "weakref.WeakSet[JitWrapped]" = weakref.WeakSet()


def clear_all_caches() -> None:
    """Forgets every trace and compiled program of every jitted function (what `fluxion.clear_caches` does for
    `jit`); the next call of each traces and compiles again."""
    for caches in _function_caches.values():
        caches.traces.clear()
        caches.compiled.clear()
    _drop_dispatch_tables()


def _drop_dispatch_tables() -> None:
    for w in list(_wrappers):
        w._clear_dispatch_tables()


add_user_context_hook(_drop_dispatch_tables)


def _caches_for(fun: Callable) -> _FunctionCaches:
    """The caches of `fun` (see `api_util.PerFunction` for how functions are keyed)."""
    return _function_caches.get(fun)


def _structure_key(x: Any, leaves: list) -> Any:
    """Appends `x`'s leaves to `leaves` (in `tree_flatten` order) and returns a hashable nested-tuple key of its
    structure -- cheaper to build, hash and compare than a `PyTreeDef`, for the dispatch cache."""
    t = type(x)
    if t is Array:
        leaves.append(x)
        return None
    # The common containers inline, exactly as tree_util flattens them (dict keys sorted; unsortable keys raise
    # TypeError here, and the caller's full path then raises tree_util's ValueError).
    if t is tuple or t is list:
        return (t, None, tuple([_structure_key(c, leaves) for c in x]))
    if t is dict:
        keys = sorted(x)
        return (t, tuple(keys), tuple([_structure_key(x[k], leaves) for k in keys]))
    kind = registered_kind(t)
    if kind is None:
        kind = node_kind(x)
        if kind is None:
            leaves.append(x)
            return None
    children, aux = kind.to_iter(x)
    return (t, aux, tuple([_structure_key(c, leaves) for c in children]))



def _buffer_refs(raws: list, i: int) -> int:
    return sys.getrefcount(raws[i])


# References to a donated Array's buffer that the dispatch itself holds: the Array, the list of raw arguments and
# `getrefcount`'s argument (measured once, the same way `_donate` measures, so interpreter details cancel out).
_probe = Array(np.zeros(2, np.float32))
_OWN_REFS = _buffer_refs([_probe._value], 0)
del _probe


def _donate(donated: Sequence[int], leaves: list, raws: list) -> None:
    """Hands the buffers of donated Arrays to the executable, or copies where that would be unsafe.

    A buffer is given away only when nothing but its Array refers to it: a NumPy array passed in stays the
    caller's, and a buffer shared with another Array or NumPy view (an eager reshape of the donated array, an array
    passed twice, an output of an earlier call that returned its input) is copied, so no other live value is ever
    overwritten. The donated Arrays are deleted after the call either way, as JAX deletes them.
    """
    for i in donated:
        if type(leaves[i]) is not Array or _buffer_refs(raws, i) > _OWN_REFS:
            raws[i] = np.array(raws[i], copy=True)


class JitWrapped(stages.Wrapped):
    """The object `jit(f)` returns: callable, with `lower`, `trace`, `eval_shape` and cache introspection."""

    def __init__(self, fun: Callable, static_argnums: Sequence[int], static_argnames: Sequence[str],
                 donate_argnums: Sequence[int], name: str | None = None):
        # update_wrapper copies the wrapped object's __dict__, so it must run before our own fields are set.
        functools.update_wrapper(self, fun)
        self._fun = fun
        self._static_argnums = tuple(static_argnums)
        self._static_argnames = tuple(static_argnames)
        self._donate_argnums = tuple(donate_argnums)
        self._name = name or fun_name(fun)
        caches = _caches_for(fun)
        self._traces = caches.traces
        self._cache = caches.compiled
        self._options = (self._static_argnums, self._static_argnames, self._donate_argnums)
        self._last_signature = None
        self._compiles = 0
        self._warn_recompiles = True  # library-internal programs (`staged_call`) turn this off
        # Signature -> compiled function, for calls whose arguments are all positional Arrays (no statics). The
        # signature is flat (shape, dtype, weak_type, shape, ...): cheaper to build and hash than nested tuples.
        self._fast: dict = {}
        # (structure key, signature) -> compiled function, for positional pytree arguments (no statics).
        self._tree_fast: dict = {}
        self._fast_ok = not self._static_argnums and not self._static_argnames
        # (generated flattener, compiled function) per pytree structure seen (no statics, no donation, all leaves
        # Arrays): tried in order before the generic lookup (see `jit_flatten`).
        self._flatteners: list = []
        self._flatten_tries: dict = {}  # structure key (as in `_tree_fast`) -> attempts at a flattener (3: done)
        # (tree, Ref positions) -> the jitted function taking and returning those Refs' values (see refs.py).
        self._ref_wrappers: dict = {}
        _wrappers.add(self)

    def _split_args(self, args: tuple, kwargs: dict):
        return split_static_args(self._static_argnums, self._static_argnames, self._name, args, kwargs)

    # -- dispatch -------------------------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        try:
            if _jit_disabled or _float_checks.on:
                # With jax_debug_nans/infs the function runs op by op, so a NaN is reported at the primitive that
                # made it (JAX reruns the de-optimized function for the same message). With no_execution it fails
                # at once, naming the function.
                _float_checks.check_execution(f"jit({self._name})")
                return self._fun(*args, **kwargs)
            if not (_all_eager.value or _thread_state().eager):
                return self._call_staged(args, kwargs)
            if _MESH_IN_USE[0] and not _propagating.on:
                return self._call_propagating(args, kwargs)
            if self._fast_ok and not kwargs:
                key = []
                raws = []
                for a in args:
                    if type(a) is not Array:
                        break
                    v = a._value
                    raws.append(v)
                    key.append(v.shape)
                    key.append(v.dtype)
                    key.append(a.weak_type)
                else:
                    compiled = self._fast.get(tuple(key))
                    if compiled is not None:
                        if compiled.donated:
                            v = None  # no stray reference to a donated buffer (see `_donate`)
                            return self._run_compiled(compiled, args, raws)
                        return compiled(raws)
                v = None  # no stray reference to a donated buffer (see `_donate`)
            tkey = None
            if self._fast_ok and not kwargs:
                for flatten, compiled in self._flatteners:
                    raws = flatten(args)
                    if raws is not None:
                        return compiled(raws)
                hit = self._tree_lookup(args)
                if hit is not None:
                    compiled, leaves, raws, tkey = hit
                    hit = None  # no stray reference to a donated buffer (see `_donate`)
                    if compiled is not None:
                        self._add_flattener(tkey, compiled, args)
                        return self._run_compiled(compiled, leaves, raws)
            generation = _user_context_generation.value
            statics, dyn_args, dyn_kwargs = self._split_args(args, kwargs)
            leaves, in_tree = tree_flatten((dyn_args, dyn_kwargs))
            if any(type(x) is Ref for x in leaves):
                return self._call_with_refs(args, kwargs)
            sig = []
            raws = []
            for x in leaves:
                a, r = leaf_signature(x)
                sig.append(a)
                raws.append(r)
            r = None  # no stray reference to a donated buffer (see `_donate`)
            key = (self._options, in_tree, tuple(sig), statics, trace_context_key())
            compiled = self._cache.get(key)
            if compiled is None:
                compiled = self._compile(args, statics, dyn_args, dyn_kwargs, in_tree, tuple(sig), key)
            # The dispatch tables are keyed without the trace context (options and user contexts: they are emptied
            # when one changes): fill them only if none changed since this call read it.
            if self._fast_ok and not kwargs and generation == _user_context_generation.value:
                if len(leaves) == len(args) and all(type(a) is Array for a in args):
                    self._fast[tuple([x for a in sig for x in a])] = compiled
                elif tkey is not None and len(self._tree_fast) < 256:
                    self._tree_fast[tkey] = compiled
                    self._add_flattener(tkey, compiled, args)
            return self._run_compiled(compiled, leaves, raws)
        except Exception as err:  # noqa: BLE001 -- re-raised with fluxion's internal frames removed
            raise err.with_traceback(filtered_traceback(err))  # noqa: B904

    def _call_propagating(self, args: tuple, kwargs: dict):
        """An eager call once NamedShardings exist: the outputs get shardings from the arguments' (the rule is in
        `placement.propagate_shardings`). Not taken before any NamedSharding is made, so unsharded programs pay
        one flag test."""
        from .placement import propagate_shardings, propagate_traced
        if _EXPLICIT_IN_USE[0]:
            statics, dyn_args, dyn_kwargs = self._split_args(args, kwargs)
            leaves, in_tree = tree_flatten((dyn_args, dyn_kwargs))
            # (Refs are passed by value through `_call_with_refs`; they carry no sharded type.)
            leaves = [x if type(x) is Ref else as_value(x) for x in leaves]
            if any(type(x) is not Ref and core.get_aval(x).sharding is not None for x in leaves):
                return self._call_explicit(args, statics, dyn_args, dyn_kwargs, leaves, in_tree)
        prev, _propagating.on = _propagating.on, True
        try:
            out = self(*args, **kwargs)
        finally:
            _propagating.on = prev
        try:  # the program, to follow the inputs' specs through it (cached: the call above traced it)
            statics, dyn_args, dyn_kwargs = self._split_args(args, kwargs)
            leaves, in_tree = tree_flatten((dyn_args, dyn_kwargs))
            leaves = [as_value(x) for x in leaves]
            traced = self._get_trace(args, statics, dyn_args, dyn_kwargs, in_tree,
                                     tuple(aval_signature(x) for x in leaves))
        except Exception:  # noqa: BLE001 -- e.g. leaves jit does not trace; fall back to the shape rule
            return propagate_shardings((args, kwargs), out)
        return propagate_traced(traced.closed, [*traced.const_args, *leaves], out)

    def _call_explicit(self, args, statics, dyn_args, dyn_kwargs, leaves, in_tree):
        """An eager call on arguments whose types carry shardings (explicit sharding mode): the program is traced
        on the sharded types (so `typeof` inside shows them) and called through the `jit` primitive, whose
        sharding rule places the outputs on the program's output types (lax/sharding_rules.py). Donation is not
        applied on this path."""
        sig = tuple(aval_signature(x) for x in leaves)
        traced = self._get_trace(args, statics, dyn_args, dyn_kwargs, in_tree, sig)
        outs = call_jaxpr(traced.closed, [*traced.const_args, *leaves], self._name)
        return tree_unflatten(traced.out_tree, outs)

    def _call_staged(self, args: tuple, kwargs: dict):
        """A call under another transformation: bind the `jit` call primitive on the traced program."""
        statics, dyn_args, dyn_kwargs = self._split_args(args, kwargs)
        leaves, in_tree = tree_flatten((dyn_args, dyn_kwargs))
        if any(type(x) is Ref for x in leaves):
            return self._call_with_refs(args, kwargs)
        leaves = [as_value(x) for x in leaves]
        sig = tuple(aval_signature(x) for x in leaves)
        traced = self._get_trace(args, statics, dyn_args, dyn_kwargs, in_tree, sig)
        outs = call_jaxpr(traced.closed, [*traced.const_args, *leaves], self._name)
        return tree_unflatten(traced.out_tree, outs)

    def _call_with_refs(self, args: tuple, kwargs: dict):
        """A call with `Ref`s among the arguments: the jitted function takes their values and returns their final
        values after its own results; those are written back into the caller's Refs (see refs.py)."""
        leaves, tree = tree_flatten((args, kwargs), is_leaf=lambda x: type(x) is Ref)
        positions = tuple(i for i, x in enumerate(leaves) if type(x) is Ref)
        wrapped = self._ref_wrappers.get((tree, positions))
        if wrapped is None:
            fun = self._fun

            def with_refs(*a, **k):
                inner_leaves, inner_tree = tree_flatten((a, k))
                inner = [new_ref(inner_leaves[i]) for i in positions]
                for r, i in zip(inner, positions):
                    inner_leaves[i] = r
                a2, k2 = tree_unflatten(inner_tree, inner_leaves)
                return fun(*a2, **k2), [freeze(r) for r in inner]

            functools.update_wrapper(with_refs, fun)
            wrapped = self._ref_wrappers[(tree, positions)] = JitWrapped(
                with_refs, self._static_argnums, self._static_argnames, (), name=self._name)
        refs = [leaves[i] for i in positions]
        for i, r in zip(positions, refs):
            leaves[i] = freeze(r)
        a, k = tree_unflatten(tree, leaves)
        out, finals = wrapped(*a, **k)
        for r, v in zip(refs, finals):
            r._value = v
        return out

    def _add_flattener(self, tkey, compiled: CompiledFunction, args: tuple) -> None:
        """Generates the flattener of `args`' structure, once per structure key. Calls whose leaves are not all
        Arrays get none; a few such calls are allowed per key, since a structure is often first seen with a Python
        scalar leaf (a `TrainState`'s step 0) and afterwards with Arrays only."""
        tries = self._flatten_tries.get(tkey, 0)
        if tries >= 3 or compiled.donated or len(self._flatteners) >= _MAX_FLATTENERS:
            return
        flatten = make_flattener(args)
        self._flatten_tries[tkey] = 3 if flatten is not None else tries + 1
        if flatten is not None:
            self._flatteners.append((flatten, compiled))

    def _tree_lookup(self, args: tuple):
        """(compiled or None, leaves, raws, cache key) for positional pytree arguments, or None if their structure
        cannot serve as a key (unhashable or array-valued node data)."""
        leaves: list = []
        try:
            skey = _structure_key(args, leaves)
            raws, sig = [], []
            for x in leaves:
                if type(x) is Array:
                    v = x._value
                    raws.append(v)
                    sig.append((v.shape, v.dtype, x.weak_type))
                else:
                    a, r = leaf_signature(x)
                    sig.append(a)
                    raws.append(r)
            key = (skey, tuple(sig))
            return self._tree_fast.get(key), leaves, raws, key
        except (TypeError, ValueError):
            return None

    @staticmethod
    def _run_compiled(compiled: CompiledFunction, leaves: list, raws: list):
        if not compiled.donated:
            return compiled(raws)
        _donate(compiled.donated, leaves, raws)
        out = compiled(raws)
        for i in compiled.donated:
            if isinstance(leaves[i], Array):
                leaves[i].delete()
        return out

    # -- tracing and compilation ----------------------------------------------------------------------------------
    def _get_trace(self, args, statics, dyn_args, dyn_kwargs, in_tree, sig) -> Traced:
        key = (self._options, in_tree, tuple(sig), statics, trace_context_key())
        traced = self._traces.get(key)
        if traced is None:
            traced = trace_function(self._fun, self._name, args, statics, dyn_args, dyn_kwargs, in_tree, sig)
            if config.fluxion_debug_typecheck:
                core.check_jaxpr(traced.closed.jaxpr)
            if traced.cacheable:
                self._traces[key] = traced
        return traced

    def _compile(self, args, statics, dyn_args, dyn_kwargs, in_tree, sig, key):
        traced = self._get_trace(args, statics, dyn_args, dyn_kwargs, in_tree, sig)
        donated = donated_leaves(self._donate_argnums, args, statics)
        compiled = CompiledFunction(traced.closed, traced.out_tree, sig, name=self._name, donated=donated)
        self._cache[key] = compiled
        self._compiles += 1
        names = traced.arg_names
        if config.jax_log_compiles:
            logger.warning("Compiling %s (%s) for %s%s", self._name, fun_src(self._fun),
                           ", ".join(signature_str(sig, names)) or "no array arguments",
                           self._explain_change(sig, statics, names))
        if self._compiles == _RECOMPILE_WARN_THRESHOLD and self._warn_recompiles:
            warnings.warn(f"fluxion.jit: {self._name} has been compiled {self._compiles} times for different "
                          "argument shapes/dtypes/static values; each new signature retraces. Pad inputs to a few "
                          "fixed shapes or set FLUXION_LOG_COMPILES=1 to see what changes.", stacklevel=3)
        self._last_signature = (sig, statics, names)
        return compiled

    def _explain_change(self, sig, statics, names) -> str:
        if self._last_signature is None:
            return ""
        old_sig, old_statics, old_names = self._last_signature
        changes = []
        for n, a, b in zip(names, old_sig, sig):
            if a != b:
                changes.append(f"{n}: {signature_str([a], [''])[0][2:]} -> {signature_str([b], [''])[0][2:]}")
        if len(old_sig) != len(sig):
            changes.append(f"number of array arguments {len(old_sig)} -> {len(sig)}")
        old_s, new_s = dict(old_statics), dict(statics)
        for k in set(old_s) | set(new_s):
            if old_s.get(k) != new_s.get(k):
                changes.append(f"static argument {k!r}: {old_s.get(k)!r} -> {new_s.get(k)!r}")
        return " (changed: " + "; ".join(changes) + ")" if changes else ""

    # -- ahead-of-time API ----------------------------------------------------------------------------------------
    def trace(self, *args, **kwargs) -> stages.Traced:
        """Traces for the signature of `args` (arrays or `ShapeDtypeStruct`s) without compiling."""
        statics, dyn_args, dyn_kwargs = self._split_args(args, kwargs)
        leaves, in_tree = tree_flatten((dyn_args, dyn_kwargs))
        sig = tuple(leaf_signature(x)[0] if not isinstance(x, ShapeDtypeStruct) else
                    (x.shape, dtypes.canonicalize_dtype(x.dtype), x.weak_type) for x in leaves)
        traced = self._get_trace(args, statics, dyn_args, dyn_kwargs, in_tree, sig)
        donated = donated_leaves(self._donate_argnums, args, statics)
        # The stages describe the arguments as JAX does, `((args...), {kwargs})` (jit keys them as a list).
        stage_tree = tree_structure((tuple(dyn_args), dyn_kwargs))
        return stages.Traced(traced.closed, traced.out_tree, stage_tree, self._name, donated)

    def lower(self, *args, **kwargs) -> stages.Lowered:
        """`trace(*args).lower()`: the program for the signature of `args`, ready to `.compile()`."""
        return self.trace(*args, **kwargs).lower()

    def eval_shape(self, *args, **kwargs):
        low = self.lower(*args, **kwargs)
        return tree_unflatten(low.out_tree, [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type)
                                             for a in low.jaxpr.out_avals])

    def _cache_size(self) -> int:
        return len(self._cache)

    def clear_cache(self) -> None:
        """Forgets the traces and compiled programs of this function (shared by every `jit` wrapper of it)."""
        self._cache.clear()
        self._traces.clear()
        self._clear_dispatch_tables()

    def _clear_dispatch_tables(self) -> None:
        self._fast.clear()
        self._tree_fast.clear()
        self._flatteners.clear()
        self._flatten_tries.clear()

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __repr__(self) -> str:
        return f"<jitted function {self._name}>"


def jit(fun: Callable | None = None, *, static_argnums: int | Sequence[int] | None = None,
        static_argnames: str | Sequence[str] | None = None, donate_argnums: int | Sequence[int] | None = None,
        donate_argnames=None, keep_unused: bool = False, device=None, backend=None, inline: bool = False,
        abstracted_axes=None, in_shardings=None, out_shardings=None):
    """Compiles `fun`: traced once per (treedef, shapes, dtypes, weak types, static values) and cached.

    The caches are also keyed on the options that change a trace or its compilation (`jax_enable_x64`,
    `jax_threefry_partitionable`, `fluxion_jit_fusion`, ...: `config.JIT_KEY_OPTIONS`) and on user contexts, so
    `config.update` after a first call retraces, as in JAX.

    Args:
      fun: the function to compile (also usable as `@partial(jit, static_argnames=...)`).
      static_argnums / static_argnames: arguments whose Python values are part of the cache key (they must be
        hashable); use them for flags, sizes and other values Python control flow depends on.
      donate_argnums / donate_argnames: positional arguments (pytrees of arrays) whose buffers the compiled code
        may overwrite, e.g. parameters replaced by the step's result; they must not be used after the call.

    Returns:
      A `JitWrapped` callable with `.lower(*args)` (-> `.as_text()`, `.compile()`).

    Examples:
      >>> import fluxion
      >>> import fluxion.numpy as jnp
      >>> @fluxion.jit
      ... def selu(x, alpha=1.67, lam=1.05):
      ...     return lam * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)
      >>> selu(jnp.array([-1.0, 0.0, 2.0]))
      Array([-1.108..., 0. , 2.1 ], dtype=float32)
      >>> from functools import partial
      >>> @partial(fluxion.jit, static_argnames="n")
      ... def power(x, n):
      ...     return x ** n
      >>> power(3.0, n=2)
      Array(9., dtype=float32, weak_type=True)
    """
    if fun is None:
        return functools.partial(jit, static_argnums=static_argnums, static_argnames=static_argnames,
                                 donate_argnums=donate_argnums, donate_argnames=donate_argnames,
                                 in_shardings=in_shardings, out_shardings=out_shardings)
    if not callable(fun):
        raise TypeError(f"Expected a callable value, got {fun!r}")
    if not sys._getframe(1).f_globals.get("__name__", "").startswith("fluxion._src."):
        # A user's function is wrapped well before its first call as a rule: Numba's one-time set-up starts now, on
        # the background compiler thread, instead of delaying the first fused kernels. (fluxion's own modules wrap
        # functions when they are imported: those wrappers do not say a program will run jitted code.)
        _compiler.prewarm()
    sn = () if static_argnums is None else ((static_argnums,) if isinstance(static_argnums, int) else
                                           tuple(static_argnums))
    names = () if static_argnames is None else ((static_argnames,) if isinstance(static_argnames, str) else
                                               tuple(static_argnames))
    # As in JAX, static_argnames also mark the corresponding positions static and vice versa.
    try:
        sig_params = inspect.signature(fun).parameters
    except (TypeError, ValueError):
        sig_params = None
    params = list(sig_params) if sig_params is not None else []
    sn = tuple(sorted(set(sn) | {params.index(n) for n in names if n in params}))
    names = tuple(sorted(set(names) | {params[i] for i in sn if 0 <= i < len(params)}))
    dn = () if donate_argnums is None else ((donate_argnums,) if isinstance(donate_argnums, int) else
                                           tuple(donate_argnums))
    dnames = () if donate_argnames is None else ((donate_argnames,) if isinstance(donate_argnames, str) else
                                                tuple(donate_argnames))
    dn = tuple(sorted(set(dn) | {params.index(n) for n in dnames if n in params}))
    if sig_params is not None:
        _check_argnums(sig_params, "static", sn, names)
        _check_argnums(sig_params, "donate", dn, dnames)
    if in_shardings is None and out_shardings is None:
        return JitWrapped(fun, sn, names, dn)
    wrapped = _ShardedJitWrapped(fun, sn, names, dn)
    wrapped._in_shardings, wrapped._out_shardings = in_shardings, out_shardings
    return wrapped


class _ShardedJitWrapped(JitWrapped):
    """`jit(f, in_shardings=..., out_shardings=...)`: the positional (non-static) arguments' shapes are checked
    against `in_shardings`, and the outputs are placed on `out_shardings` (values unchanged; see placement.py)."""

    def __call__(self, *args, **kwargs):
        from .placement import check_in_shardings, place_tree
        if self._in_shardings is not None:
            dyn = tuple(a for i, a in enumerate(args) if i not in self._static_argnums)
            check_in_shardings(dyn, self._in_shardings)
        out = JitWrapped.__call__(self, *args, **kwargs)
        if self._out_shardings is not None:
            out = place_tree(out, self._out_shardings, "pjit outputs")
        return out


def _check_argnums(params, kind: str, nums: Sequence[int], names: Sequence[str]) -> None:
    """Raises ValueError, as JAX does, for `{kind}_argnums` beyond the function's positional parameters or
    `{kind}_argnames` it does not have (functions taking *args or **kwargs accept any)."""
    kinds = [p.kind for p in params.values()]
    if inspect.Parameter.VAR_POSITIONAL not in kinds:
        npos = sum(k in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD) for k in kinds)
        if any(not -npos <= n < npos for n in nums):
            raise ValueError(f"Jitted function has {kind}_argnums={tuple(nums)}, but only accepts {npos} positional "
                             "arguments.")
    if inspect.Parameter.VAR_KEYWORD not in kinds:
        unknown = {n for n in names if n not in params or params[n].kind == inspect.Parameter.POSITIONAL_ONLY}
        if unknown:
            raise ValueError(f"Jitted function has invalid argnames {unknown} in {kind}_argnames. Function does not "
                             f"take these args (its parameters: {', '.join(params)}).")
