"""Host callbacks: primitives that call back into Python (`pure_callback`, `io_callback`, `debug.callback`,
`debug.print`).

* `pure_callback`: a pure function of its operands. It may run any number of times, or not at all when its results
  are unused (dead-code elimination drops it, constant folding may run it at compile time), and has no derivative.
  Under `vmap` it follows `vmap_method`: "sequential" (and "sequential_unrolled") calls it once per batch element in
  a `lax.map`; "expand_dims" calls it once with batched operands and size-1 axes in front of unbatched ones;
  "broadcast_all" broadcasts unbatched operands to the batch size; None raises `NotImplementedError`, as in JAX.
* `io_callback`: the same with side effects (never dropped, merged or folded; run in program order). Not
  differentiable; under `vmap` an unordered one runs per batch element, an ordered one raises.
* `debug_callback` and `debug_print`: effects with no results. Their JVP runs them on the primal values only (so
  `grad` prints the forward values once); under `vmap` they run once per batch element.

The callback's operands arrive as eager fluxion Arrays, whatever transformation or compiled program is running
(the callback runs with tracing suspended), as JAX 0.10 passes `jax.Array`s.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .. import core
from ..core import ShapedArray, abstract_eval_rules
from ..interpreters import ad, array_ops, batching
from ..interpreters.batching import not_mapped
from ..tree_util import tree_flatten, tree_unflatten
from . import control_flow
from .utils import standard_primitive

VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all")


class FlatCallback:
    """A user callback over a flat operand list: unflattens the operands (`in_tree`) into its arguments.

    Compared by identity (one object per call site trace), so jit caches and CSE never confuse two callbacks.
    """

    __slots__ = ("fun", "in_tree")

    def __init__(self, fun: Callable, in_tree):
        self.fun = fun
        self.in_tree = in_tree

    def __call__(self, *raw_operands) -> Any:
        with core.new_base_main():  # the callback computes eagerly, even inside a trace or compiled program
            args = [core.Array(np.asarray(a)) for a in raw_operands]
            fargs, fkwargs = tree_unflatten(self.in_tree, args)
            return self.fun(*fargs, **fkwargs)

    def __repr__(self) -> str:
        return f"FlatCallback(callback_func={self.fun!r}, in_tree={self.in_tree})"


def _check_results(name: str, out: Any, result_avals: Sequence[ShapedArray]) -> list:
    """The callback's results as NumPy arrays of the declared dtypes; the shapes must match."""
    leaves, _ = tree_flatten(out)
    if len(leaves) != len(result_avals):
        raise RuntimeError(f"{name}: the callback returned {len(leaves)} arrays where result_shape_dtypes declares "
                           f"{len(result_avals)}")
    res = []
    for i, (leaf, aval) in enumerate(zip(leaves, result_avals)):
        v = np.asarray(leaf._value if isinstance(leaf, core.Array) else leaf)
        if v.shape != aval.shape:
            raise RuntimeError(f"{name}: result {i} of the callback has shape {v.shape}, but result_shape_dtypes "
                               f"declares {aval.shape}")
        res.append(v.astype(aval.dtype, copy=False))  # JAX converts to the declared dtype
    return res


def _move_batched_to_front(args, dims, size, unbatched: str) -> list:
    """Operands with the batch axis first; unbatched ones get a size-1 axis ("expand") or the full batch ("all")."""
    out = []
    for a, d in zip(args, dims):
        if d is not not_mapped:
            out.append(batching.moveaxis(a, d, 0, size))
        else:
            shape = core.get_aval(a).shape
            n = 1 if unbatched == "expand" else size
            out.append(array_ops.broadcast_in_dim(a, (n,) + shape, tuple(range(1, len(shape) + 1))))
    return out


def _batch_size(args, dims) -> int:
    return next(core.get_aval(a).shape[d] for a, d in zip(args, dims) if d is not not_mapped)


def _sequential_batch(prim, args, dims, params):
    """Runs the primitive once per batch element (a `lax.map` over the batched operands)."""
    size = _batch_size(args, dims)
    batched = [batching.moveaxis(a, d, 0, size) for a, d in zip(args, dims) if d is not not_mapped]

    def one(xs):
        it = iter(xs)
        full = [next(it) if d is not not_mapped else a for a, d in zip(args, dims)]
        return list(prim.bind(*full, **params))

    outs = control_flow.map(one, batched)
    return list(outs), [0] * len(outs)


# --------------------------------------------------------------------------------------------------------------
# pure_callback
# --------------------------------------------------------------------------------------------------------------

pure_callback_p = standard_primitive("pure_callback", multiple_results=True, weak_type="never")


def _callback_abstract_eval(*avals, callback, result_avals, **_):
    return list(result_avals)


abstract_eval_rules[pure_callback_p] = _callback_abstract_eval


def _pure_callback_jvp(primals, tangents, **params):
    raise ValueError("Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use callbacks while taking "
                     "gradients.")


ad.primitive_jvps[pure_callback_p] = _pure_callback_jvp


def _pure_callback_batch_rule(args, dims, *, callback, result_avals, vmap_method, sharding=None):
    params = dict(callback=callback, result_avals=result_avals, vmap_method=vmap_method, sharding=sharding)
    if vmap_method in ("sequential", "sequential_unrolled"):
        return _sequential_batch(pure_callback_p, args, dims, params)
    if vmap_method in ("expand_dims", "broadcast_all"):
        size = _batch_size(args, dims)
        args = _move_batched_to_front(args, dims, size, "expand" if vmap_method == "expand_dims" else "all")
        avals = tuple(ShapedArray((size,) + a.shape, a.dtype) for a in result_avals)
        outs = pure_callback_p.bind(*args, **dict(params, result_avals=avals))
        return list(outs), [0] * len(outs)
    raise NotImplementedError(
        "vmap is only supported for the pure_callback primitive when vmap_method is one of 'sequential', "
        f"'sequential_unrolled', 'expand_dims' or 'broadcast_all'. Got vmap_method={vmap_method!r}.")


batching.primitive_batchers[pure_callback_p] = _pure_callback_batch_rule


# --------------------------------------------------------------------------------------------------------------
# io_callback
# --------------------------------------------------------------------------------------------------------------

io_callback_p = standard_primitive("io_callback", multiple_results=True, weak_type="never")
core.effectful_primitives.add(io_callback_p)
abstract_eval_rules[io_callback_p] = _callback_abstract_eval


def _io_callback_jvp(primals, tangents, **params):
    raise ValueError("IO callbacks do not support JVP.")


ad.primitive_jvps[io_callback_p] = _io_callback_jvp


def _io_callback_batch_rule(args, dims, *, callback, result_avals, ordered, sharding=None):
    if ordered:
        raise ValueError("Cannot `vmap` ordered IO callback.")
    params = dict(callback=callback, result_avals=result_avals, ordered=ordered, sharding=sharding)
    return _sequential_batch(io_callback_p, args, dims, params)


batching.primitive_batchers[io_callback_p] = _io_callback_batch_rule


# --------------------------------------------------------------------------------------------------------------
# debug_callback and debug_print: effects without results
# --------------------------------------------------------------------------------------------------------------

debug_callback_p = standard_primitive("debug_callback", multiple_results=True, weak_type="never")
debug_print_p = standard_primitive("debug_print", multiple_results=True, weak_type="never")
core.effectful_primitives.update({debug_callback_p, debug_print_p})


def _no_results(*avals, **params):
    return []


def _debug_jvp(prim):
    def jvp(primals, tangents, **params):
        prim.bind(*primals, **params)  # the effect sees the primal values only
        return [], []
    return jvp


def _debug_batch_rule(prim):
    def rule(args, dims, **params):
        _sequential_batch(prim, args, dims, params)
        return [], []
    return rule


for _prim in (debug_callback_p, debug_print_p):
    abstract_eval_rules[_prim] = _no_results
    ad.primitive_jvps[_prim] = _debug_jvp(_prim)
    batching.primitive_batchers[_prim] = _debug_batch_rule(_prim)
