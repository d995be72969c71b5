"""`jit`: trace once per signature, compile the jaxpr with the backend, and dispatch cache hits quickly.

Dispatch (the hot path): when every argument is a positional `Array` (the common case), the cache key is just the
tuple of (shape, dtype, weak_type) of the arguments and a hit calls the generated executable on the raw NumPy
buffers directly. Otherwise the arguments are flattened and the key is built from the treedef, each leaf's
(shape, dtype, weak_type) and the static arguments. Caches are keyed by the wrapped function itself, so
`jit(f)(x)` in a loop (a new wrapper each time) does not retrace.

Inside another transformation (grad, vmap, an enclosing jit) the function is inlined into the enclosing trace,
which gives the same values; compiled caching applies to top-level calls.

Donation (`donate_argnums`/`donate_argnames`): the buffers of donated arguments may be overwritten by the
executable (for outputs of the same shape and dtype, or in-place updates). As in JAX, a donated array -- and any
array sharing its buffer, such as an eager reshape of it -- must not be used after the call.
"""

from __future__ import annotations

import functools
import inspect
import logging
import warnings
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from . import core, dtypes
from .api import ShapeDtypeStruct, _arg_names, _as_value, _fun_name, _fun_src
from .backends import numpy as backend
from .config import config
from .core import Array, ShapedArray, Tracer
from .interpreters import partial_eval as pe
from .tree_util import _kind_of as _tu_kind_of
from .tree_util import _registry as _tu_registry
from .tree_util import tree_flatten, tree_structure, tree_unflatten

logger = logging.getLogger("fluxion.jit")

_RECOMPILE_WARN_THRESHOLD = 20

# `config.jax_disable_jit` is read through Config.__getattr__ (~0.4 us, a fifth of a cached call), so the dispatch
# path reads this mirror, which a config hook keeps current.
_jit_disabled = bool(config.jax_disable_jit)


def _set_jit_disabled(value: Any) -> None:
    global _jit_disabled
    _jit_disabled = bool(value)


config.add_hook("jax_disable_jit", _set_jit_disabled)
_trace_state = core._state
_caches: "weakref.WeakKeyDictionary[Callable, dict]" = weakref.WeakKeyDictionary()
_strong_caches: dict = {}


class CompiledFunction:
    """A traced and compiled signature: the closed jaxpr, the executable, and how to rebuild outputs."""

    __slots__ = ("closed", "executable", "out_tree", "out_weak", "signature", "_single", "donated", "_run",
                 "_weak0", "_build", "__weakref__")

    def __init__(self, closed: core.ClosedJaxpr, out_tree, signature, name: str = "jitted",
                 donated: Sequence[int] = ()):
        self.closed = closed
        self.out_tree = out_tree
        self.out_weak = [a.weak_type for a in closed.out_avals]
        self.donated = tuple(donated)
        self.executable = backend.compile_jaxpr(closed.jaxpr, closed.consts, name=name, donated=self.donated)
        self.signature = signature
        self._single = out_tree == _LEAF_TREE and len(self.out_weak) == 1
        self._weak0 = self.out_weak[0] if self.out_weak else False
        # Generated executables expose the bare function: one Python call less on the hot path. When the
        # executable later switches to fused kernels it tells us, through a weak reference (caches own us).
        self._run = getattr(self.executable, "fn", self.executable)
        add_listener = getattr(self.executable, "add_listener", None)
        if add_listener is not None:
            ref = weakref.ref(self)

            def on_upgrade(fn, ref=ref):
                me = ref()
                if me is not None:
                    me._run = fn
            add_listener(on_upgrade)

        self._build = _output_builder(out_tree, self.out_weak)

    def __call__(self, raw_args: list) -> Any:
        outs = self._run(*raw_args)
        if self._single:
            return Array(outs[0], self._weak0)
        return self._build(outs)


_LEAF_TREE = tree_structure(0)


def _output_builder(out_tree, out_weak: list) -> Callable:
    """A function rebuilding the output pytree (of Arrays) from raw outputs, generated for this structure.

    It is a single expression (`TrainState(step=..., params={...})`-like calls with the node types and aux data
    bound), so the per-call cost has no recursion over the treedef; falls back to `tree_unflatten` for structures
    it does not know how to spell.
    """
    from . import tree_util as tu
    ns: dict = {"_A": Array}
    counter = iter(range(1 << 30))

    def name(obj) -> str:
        k = f"_g{next(counter)}"
        ns[k] = obj
        return k

    leaf = iter(range(len(out_weak)))

    def expr(td) -> str:
        if td.node_type is None:
            i = next(leaf)
            return f"_A(L[{i}], {bool(out_weak[i])})"
        kids = ", ".join(expr(c) for c in td.children)
        t = td.node_type
        if t is tuple:
            return f"({kids}{',' if len(td.children) == 1 else ''})"
        if t is list:
            return f"[{kids}]"
        kind = tu._registry.get(t)
        if kind is None:  # namedtuple
            return f"{name(t)}({kids})"
        return f"{name(kind.from_iter)}({name(td.aux)}, [{kids}])"

    try:
        src = "lambda L: " + expr(out_tree)
        return eval(src, ns)  # noqa: S307 -- generated from the treedef only
    except Exception:  # noqa: BLE001
        return lambda outs: tree_unflatten(out_tree, [Array(o, w) for o, w in zip(outs, out_weak)])


def _structure_key(x: Any, leaves: list) -> Any:
    """Appends `x`'s leaves to `leaves` (in `tree_flatten` order) and returns a hashable nested-tuple key of its
    structure -- cheaper to build, hash and compare than a `PyTreeDef`, for the dispatch cache."""
    t = type(x)
    if t is Array:
        leaves.append(x)
        return None
    # The common containers inline, exactly as tree_util flattens them (dict keys sorted when sortable).
    if t is tuple or t is list:
        return (t, None, tuple([_structure_key(c, leaves) for c in x]))
    if t is dict:
        try:
            keys = sorted(x)
        except TypeError:
            keys = list(x)
        return (t, tuple(keys), tuple([_structure_key(x[k], leaves) for k in keys]))
    kind = _tu_registry.get(t)
    if kind is None:
        kind = _tu_kind_of(x)
        if kind is None:
            leaves.append(x)
            return None
    children, aux = kind.to_iter(x)
    return (t, aux, tuple([_structure_key(c, leaves) for c in children]))


def _leaf_aval_and_raw(x: Any) -> tuple[tuple, Any]:
    t = type(x)
    if t is Array:
        v = x._value
        return (v.shape, v.dtype, x.weak_type), v
    if t is float or t is int or t is bool or t is complex:
        dt, weak = dtypes.dtype_and_weak(x)
        return ((), dt, weak), np.asarray(x, dt)
    if isinstance(x, (np.ndarray, np.generic)):
        dt = dtypes.canonicalize_dtype(x.dtype)
        v = np.asarray(x, dt)
        return (v.shape, dt, False), v
    if isinstance(x, Tracer):
        raise core.escaped_tracer_error(x, None)
    if isinstance(x, Array):  # an Array subclass
        v = x._value
        return (v.shape, v.dtype, x.weak_type), v
    a = _as_value(x)
    return _leaf_aval_and_raw(a)


def _signature_str(sig: tuple, names: list[str]) -> list[str]:
    return [f"{n}: {dtypes.short_name(dt)}[{','.join(map(str, shp))}]{'(weak)' if w else ''}"
            for n, (shp, dt, w) in zip(names, sig)]


class JitWrapped:
    """The object `jit(f)` returns: callable, with `lower`, `trace`, `eval_shape` and cache introspection."""

    def __init__(self, fun: Callable, static_argnums: Sequence[int], static_argnames: Sequence[str],
                 donate_argnums: Sequence[int], name: str | None = None):
        # update_wrapper copies the wrapped object's __dict__, so it must run before our own fields are set.
        functools.update_wrapper(self, fun)
        self._fun = fun
        self._static_argnums = tuple(static_argnums)
        self._static_argnames = tuple(static_argnames)
        self._donate_argnums = tuple(donate_argnums)
        self._name = name or _fun_name(fun)
        try:
            self._cache = _caches.setdefault(fun, {})
        except TypeError:  # not weak-referenceable (e.g. a builtin): keep a strong cache
            self._cache = _strong_caches.setdefault(id(fun), {})
        self._options = (self._static_argnums, self._static_argnames, self._donate_argnums)
        self._last_signature = None
        self._compiles = 0
        # Signature -> compiled function, for calls whose arguments are all positional Arrays (no statics). The
        # signature is flat (shape, dtype, weak_type, shape, ...): cheaper to build and hash than nested tuples.
        self._fast: dict = {}
        # (structure key, signature) -> compiled function, for positional pytree arguments (no statics).
        self._tree_fast: dict = {}
        self._fast_ok = not self._static_argnums and not self._static_argnames

    # -- argument processing --------------------------------------------------------------------------------------
    def _split_args(self, args: tuple, kwargs: dict):
        nargs = len(args)
        static_pos = tuple(i % nargs if nargs else i for i in self._static_argnums if -nargs <= i < nargs)
        statics = []
        dyn_args = []
        for i, a in enumerate(args):
            if i in static_pos:
                statics.append((i, a))
            else:
                dyn_args.append(a)
        dyn_kwargs = {}
        for k, v in kwargs.items():
            if k in self._static_argnames:
                statics.append((k, v))
            else:
                dyn_kwargs[k] = v
        for key, v in statics:
            try:
                hash(v)
            except TypeError:
                raise ValueError(f"Non-hashable static arguments are not supported. An error occurred while trying "
                                 f"to hash an object of type {type(v)}, {v!r:.100}. The argument was passed at "
                                 f"position/name {key!r} of {self._name}; mark only hashable values (ints, strings, "
                                 "tuples) static.") from None
        return tuple(statics), dyn_args, dyn_kwargs

    def __call__(self, *args, **kwargs):
        if not _trace_state.eager or _jit_disabled:
            return self._fun(*args, **kwargs)
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
                    return compiled(raws)
        tkey = None
        if self._fast_ok and not kwargs:
            hit = self._tree_lookup(args)
            if hit is not None:
                compiled, leaves, raws, tkey = hit
                if compiled is not None:
                    return self._run_compiled(compiled, leaves, raws)
        statics, dyn_args, dyn_kwargs = self._split_args(args, kwargs)
        leaves, in_tree = tree_flatten((dyn_args, dyn_kwargs))
        sig = []
        raws = []
        for x in leaves:
            a, r = _leaf_aval_and_raw(x)
            sig.append(a)
            raws.append(r)
        key = (self._options, in_tree, tuple(sig), statics)
        compiled = self._cache.get(key)
        if compiled is None:
            compiled = self._compile(args, kwargs, statics, dyn_args, dyn_kwargs, in_tree, tuple(sig), key)
        if self._fast_ok and not kwargs:
            if len(leaves) == len(args) and all(type(a) is Array for a in args):
                self._fast[tuple([x for a in sig for x in a])] = compiled
            elif tkey is not None and len(self._tree_fast) < 256:
                self._tree_fast[tkey] = compiled
        return self._run_compiled(compiled, leaves, raws)

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
                    a, r = _leaf_aval_and_raw(x)
                    sig.append(a)
                    raws.append(r)
            key = (skey, tuple(sig))
            return self._tree_fast.get(key), leaves, raws, key
        except (TypeError, ValueError):
            return None

    @staticmethod
    def _run_compiled(compiled: "CompiledFunction", leaves: list, raws: list):
        if compiled.donated:
            # Only buffers of fluxion Arrays are given away; a NumPy array passed in stays the caller's.
            for i in compiled.donated:
                if type(leaves[i]) is not Array:
                    raws[i] = np.array(raws[i], copy=True)
        return compiled(raws)

    def _donated_leaves(self, args: tuple, kwargs: dict, statics, dyn_args, dyn_kwargs) -> list[int]:
        """Flat leaf indices of the donated arguments (positions in `donate_argnums` of the original call)."""
        if not self._donate_argnums:
            return []
        nargs = len(args)
        donated_pos = {i % nargs for i in self._donate_argnums if -nargs <= i < nargs}
        static_pos = {k for k, _ in statics if isinstance(k, int)}
        out, offset = [], 0
        for i in range(nargs):
            if i in static_pos:
                continue
            n = len(tree_flatten(args[i])[0])
            if i in donated_pos:
                out.extend(range(offset, offset + n))
            offset += n
        return out

    # -- tracing and compilation ----------------------------------------------------------------------------------
    def _trace(self, args, kwargs, statics, dyn_args, dyn_kwargs, in_tree, sig):
        avals = [ShapedArray(shp, dt, w) for shp, dt, w in sig]
        box = []
        static_map = dict(statics)
        nargs = len(args)

        def flat_fun(*xs):
            dargs, dkw = tree_unflatten(in_tree, xs)
            it = iter(dargs)
            full = [static_map[i] if i in static_map else next(it) for i in range(nargs)]
            kw = dict(dkw)
            kw.update({k: v for k, v in static_map.items() if isinstance(k, str)})
            out = self._fun(*full, **kw)
            flat_out, out_tree = tree_flatten(out)
            box.append(out_tree)
            return [_as_value(o) for o in flat_out]

        names = _arg_names(self._fun, dyn_args, dyn_kwargs)
        info = pe.DebugInfo("jit", self._name, _fun_src(self._fun), names)
        with core.new_base_main():
            closed, _ = pe.trace_to_closed_jaxpr(flat_fun, avals, info)
        if config.fluxion_debug_typecheck:
            core.check_jaxpr(closed.jaxpr)
        return closed, box[0], names

    def _compile(self, args, kwargs, statics, dyn_args, dyn_kwargs, in_tree, sig, key):
        closed, out_tree, names = self._trace(args, kwargs, statics, dyn_args, dyn_kwargs, in_tree, sig)
        donated = self._donated_leaves(args, kwargs, statics, dyn_args, dyn_kwargs)
        compiled = CompiledFunction(closed, out_tree, sig, name=self._name, donated=donated)
        self._cache[key] = compiled
        self._compiles += 1
        if config.jax_log_compiles:
            logger.warning("Compiling %s (%s) for %s%s", self._name, _fun_src(self._fun),
                           ", ".join(_signature_str(sig, names)) or "no array arguments",
                           self._explain_change(sig, statics, names))
        if self._compiles == _RECOMPILE_WARN_THRESHOLD:
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
                changes.append(f"{n}: {_signature_str([a], [''])[0][2:]} -> {_signature_str([b], [''])[0][2:]}")
        if len(old_sig) != len(sig):
            changes.append(f"number of array arguments {len(old_sig)} -> {len(sig)}")
        old_s, new_s = dict(old_statics), dict(statics)
        for k in set(old_s) | set(new_s):
            if old_s.get(k) != new_s.get(k):
                changes.append(f"static argument {k!r}: {old_s.get(k)!r} -> {new_s.get(k)!r}")
        return " (changed: " + "; ".join(changes) + ")" if changes else ""

    # -- ahead-of-time API ----------------------------------------------------------------------------------------
    def lower(self, *args, **kwargs) -> "Lowered":
        statics, dyn_args, dyn_kwargs = self._split_args(args, kwargs)
        leaves, in_tree = tree_flatten((dyn_args, dyn_kwargs))
        sig = tuple(_leaf_aval_and_raw(x)[0] if not isinstance(x, ShapeDtypeStruct) else
                    (x.shape, dtypes.canonicalize_dtype(x.dtype), x.weak_type) for x in leaves)
        closed, out_tree, _ = self._trace(args, kwargs, statics, dyn_args, dyn_kwargs, in_tree, sig)
        return Lowered(closed, out_tree, in_tree, self._name)

    trace = lower

    def eval_shape(self, *args, **kwargs):
        low = self.lower(*args, **kwargs)
        return tree_unflatten(low.out_tree, [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type)
                                             for a in low.jaxpr.out_avals])

    def _cache_size(self) -> int:
        return len(self._cache)

    def clear_cache(self) -> None:
        self._cache.clear()
        self._fast.clear()
        self._tree_fast.clear()

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __repr__(self) -> str:
        return f"<jitted function {self._name}>"


class Lowered:
    """A traced (and optimizable) function: `.as_text()` prints the jaxpr, `.compile()` builds the executable."""

    def __init__(self, closed: core.ClosedJaxpr, out_tree, in_tree, name: str = "jitted"):
        self.jaxpr = closed
        self.out_tree = out_tree
        self.in_tree = in_tree
        self.name = name

    def as_text(self) -> str:
        return str(self.jaxpr)

    def compile(self) -> "Compiled":
        return Compiled(self)


class Compiled:
    """An executable for one signature: `.as_text()` shows the generated code, calling it runs it."""

    def __init__(self, lowered: Lowered):
        self.lowered = lowered
        self._fn = CompiledFunction(lowered.jaxpr, lowered.out_tree, None, name=lowered.name)

    def as_text(self) -> str:
        return backend.executable_text(self._fn.executable, self.lowered.jaxpr.jaxpr)

    def __call__(self, *args, **kwargs):
        leaves, _ = tree_flatten((list(args), kwargs))
        return self._fn([_leaf_aval_and_raw(x)[1] for x in leaves])


def jit(fun: Callable | None = None, *, static_argnums: int | Sequence[int] | None = None,
        static_argnames: str | Sequence[str] | None = None, donate_argnums: int | Sequence[int] | None = None,
        donate_argnames=None, keep_unused: bool = False, device=None, backend=None, inline: bool = False,
        abstracted_axes=None, in_shardings=None, out_shardings=None):
    """Compiles `fun`: traced once per (treedef, shapes, dtypes, weak types, static values) and cached.

    Args:
      fun: the function to compile (also usable as `@partial(jit, static_argnames=...)`).
      static_argnums / static_argnames: arguments whose Python values are part of the cache key (they must be
        hashable); use them for flags, sizes and other values Python control flow depends on.
      donate_argnums / donate_argnames: positional arguments (pytrees of arrays) whose buffers the compiled code
        may overwrite, e.g. parameters replaced by the step's result; they must not be used after the call.

    Returns:
      A `JitWrapped` callable with `.lower(*args)` (-> `.as_text()`, `.compile()`).
    """
    if fun is None:
        return functools.partial(jit, static_argnums=static_argnums, static_argnames=static_argnames,
                                 donate_argnums=donate_argnums, donate_argnames=donate_argnames)
    if not callable(fun):
        raise TypeError(f"Expected a callable value, got {fun!r}")
    sn = () if static_argnums is None else ((static_argnums,) if isinstance(static_argnums, int) else
                                           tuple(static_argnums))
    names = () if static_argnames is None else ((static_argnames,) if isinstance(static_argnames, str) else
                                               tuple(static_argnames))
    # As in JAX, static_argnames also mark the corresponding positions static and vice versa.
    try:
        params = list(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        params = []
    sn = tuple(sorted(set(sn) | {params.index(n) for n in names if n in params}))
    names = tuple(sorted(set(names) | {params[i] for i in sn if 0 <= i < len(params)}))
    dn = () if donate_argnums is None else ((donate_argnums,) if isinstance(donate_argnums, int) else
                                           tuple(donate_argnums))
    dnames = () if donate_argnames is None else ((donate_argnames,) if isinstance(donate_argnames, str) else
                                                tuple(donate_argnames))
    dn = tuple(sorted(set(dn) | {params.index(n) for n in dnames if n in params}))
    return JitWrapped(fun, sn, names, dn)
