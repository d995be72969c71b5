"""Tracing for `jit`: splitting static from traced arguments, argument signatures, and tracing the function into a
closed jaxpr once per signature.

A signature is the input pytree structure, each leaf's (shape, dtype, weak type) and the static arguments' values;
`jit` caches one `Traced` per signature and per function. The same traced program serves the top-level call
(compiled by the backend) and calls under other transformations (bound as a `jit` call primitive), so
`grad(jit(f))` or `vmap(jit(f))` in a loop traces `f` once.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from . import core, dtypes
from .api_util import arg_names, as_output, as_value, fun_src
from .core import Array, ClosedJaxpr, ShapedArray, Tracer
from .interpreters import partial_eval as pe
from .tree_util import tree_flatten, tree_unflatten


def leaf_signature(x: Any) -> tuple[tuple, Any]:
    """((shape, dtype, weak_type), raw NumPy value) of an argument leaf, as `jit` keys and passes it.

    Raises:
      UnexpectedTracerError: `x` is a tracer (only top-level calls take this path).
      TypeError: `x` is not an array, NumPy value or Python scalar.
    """
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
    return leaf_signature(as_value(x))


def aval_signature(x: Any) -> tuple:
    """(shape, dtype, weak_type) of a leaf that may be a tracer (calls under transformations), with the type's
    sharding as a fourth entry when it has one (explicit sharding mode)."""
    a = core.get_aval(x)
    if a.sharding is not None:
        return (a.shape, a.dtype, a.weak_type, a.sharding)
    return (a.shape, a.dtype, a.weak_type)


def signature_str(sig: Sequence[tuple], names: Sequence[str]) -> list[str]:
    """`name: f32[3,4]` descriptions of a signature, for compile logs."""
    return [f"{n}: {dtypes.short_name(dt)}[{','.join(map(str, shp))}]{'(weak)' if w else ''}"
            for n, (shp, dt, w, *_) in zip(names, sig)]


def split_static_args(static_argnums: Sequence[int], static_argnames: Sequence[str], name: str, args: tuple,
                      kwargs: dict) -> tuple[tuple, list, dict]:
    """Separates static arguments (part of the cache key) from traced ones.

    Returns:
      (statics: tuple of (position or name, value), dynamic positional args, dynamic keyword args).

    Raises:
      ValueError: a static argument is not hashable.
    """
    nargs = len(args)
    static_pos = tuple(i % nargs if nargs else i for i in static_argnums if -nargs <= i < nargs)
    statics = []
    dyn_args = []
    for i, a in enumerate(args):
        if i in static_pos:
            statics.append((i, a))
        else:
            dyn_args.append(a)
    dyn_kwargs = {}
    for k, v in kwargs.items():
        if k in static_argnames:
            statics.append((k, v))
        else:
            dyn_kwargs[k] = v
    for key, v in statics:
        try:
            hash(v)
        except TypeError:
            raise ValueError(f"Non-hashable static arguments are not supported. An error occurred while trying "
                             f"to hash an object of type {type(v)}, {v!r:.100}. The argument was passed at "
                             f"position/name {key!r} of {name}; mark only hashable values (ints, strings, "
                             "tuples) static.") from None
    return tuple(statics), dyn_args, dyn_kwargs


class Traced:
    """A function traced for one signature.

    Attributes:
      closed: the program, taking `const_args` and then the flat dynamic arguments.
      out_tree: the output pytree structure.
      arg_names: names of the flat dynamic arguments (for messages).
      const_args: tracers of enclosing transformations the function closed over, passed as the program's leading
        operands (then the trace is specific to this call and not cached); usually empty.
    """

    __slots__ = ("closed", "out_tree", "arg_names", "const_args")

    def __init__(self, closed: ClosedJaxpr, out_tree, arg_names: list[str], const_args: list):
        self.closed = closed
        self.out_tree = out_tree
        self.arg_names = arg_names
        self.const_args = const_args

    @property
    def cacheable(self) -> bool:
        return not self.const_args


def trace(fun: Callable, name: str, args: tuple, statics: tuple, dyn_args: list, dyn_kwargs: dict, in_tree,
          sig: Sequence[tuple]) -> Traced:
    """Traces `fun` on abstract values of signature `sig` (flat dynamic leaves of `in_tree`) and `statics`."""
    avals = [ShapedArray(*s) for s in sig]
    box = []
    static_map = dict(statics)
    nargs = len(args)

    def flat_fun(*xs):
        dargs, dkw = tree_unflatten(in_tree, xs)
        it = iter(dargs)
        full = [static_map[i] if i in static_map else next(it) for i in range(nargs)]
        kw = dict(dkw)
        kw.update({k: v for k, v in static_map.items() if isinstance(k, str)})
        out = fun(*full, **kw)
        flat_out, out_tree = tree_flatten(out)
        box.append(out_tree)
        return [as_output(o, fun, "jit") for o in flat_out]

    names = arg_names(fun, dyn_args, dyn_kwargs)
    info = pe.DebugInfo("jit", name, fun_src(fun), names)
    jaxpr, consts, _ = pe.trace_to_jaxpr(flat_fun, avals, info)
    if any(isinstance(c, Tracer) for c in consts):
        # Closed over values of an enclosing transformation: they become explicit operands of the call.
        closed = ClosedJaxpr(pe.convert_constvars_jaxpr(jaxpr), [])
        return Traced(closed, box[0], names, list(consts))
    return Traced(ClosedJaxpr(jaxpr, consts), box[0], names, [])


def donated_leaves(donate_argnums: Sequence[int], args: tuple, statics: tuple) -> list[int]:
    """Flat leaf indices of the donated arguments (positions in `donate_argnums` of the original call)."""
    if not donate_argnums:
        return []
    nargs = len(args)
    donated_pos = {i % nargs for i in donate_argnums if -nargs <= i < nargs}
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
