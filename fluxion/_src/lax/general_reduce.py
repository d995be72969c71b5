"""`lax.reduce`: reduction of one or several arrays along dimensions with a user-supplied binary computation.

When the computation is recognized (by tracing it once on scalars) as add, mul, max, min, and, or or xor of a
single operand, the matching reduction primitive (`reduce_sum`, ...) is used, so the result and its derivatives are
exactly those of `reduce_sum` etc. Any other computation, or several operands (e.g. a value and its index for an
arg-max), is evaluated as a balanced pairwise tree over the reduced elements: the computation is applied to whole
halves at once, mapped elementwise with `vmap`, so it may be written for scalars as JAX requires. Everything is
built from other primitives, so jit, grad and vmap apply.

As with XLA, the computation should be associative and commutative and the init values its identity: the
combination order (a pairwise tree here, unspecified in XLA) is then irrelevant. The init values are combined once
with each result.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .. import core, tree_util
from ..core import ShapedArray
from ..interpreters import batching
from ..interpreters import partial_eval as pe
from . import elementwise as ew
from . import reductions as rd
from . import structural as st
from .utils import canonicalize_axis

# primitive -> (reduction, identity for a dtype)
_MONOIDS: dict = {
    ew.add_p: (rd.reduce_sum, lambda dt: np.zeros((), dt)),
    ew.mul_p: (rd.reduce_prod, lambda dt: np.ones((), dt)),
    ew.max_p: (rd.reduce_max, lambda dt: _extreme(dt, low=True)),
    ew.min_p: (rd.reduce_min, lambda dt: _extreme(dt, low=False)),
    ew.and_p: (rd.reduce_and, lambda dt: np.asarray(~np.zeros((), dt) if dt != np.bool_ else True, dt)),
    ew.or_p: (rd.reduce_or, lambda dt: np.zeros((), dt)),
    ew.xor_p: (rd.reduce_xor, lambda dt: np.zeros((), dt)),
}


def _extreme(dt: np.dtype, low: bool) -> np.ndarray:
    if dt == np.bool_:
        return np.asarray(not low)
    if np.issubdtype(dt, np.integer):
        info = np.iinfo(dt)
        return np.asarray(info.min if low else info.max, dt)
    return np.asarray(-np.inf if low else np.inf, dt)


def _recognize(computation: Callable, dtype: np.dtype):
    """The primitive `computation` is on two scalars of `dtype`, if it is exactly one monoid operation."""
    aval = ShapedArray((), dtype)
    try:
        jaxpr, _, _ = pe.trace_to_jaxpr(lambda a, b: [computation(a, b)], [aval, aval])
    except Exception:  # noqa: BLE001 -- any failure means "not a recognizable monoid"
        return None
    if len(jaxpr.eqns) != 1 or len(jaxpr.outvars) != 1:
        return None
    eqn = jaxpr.eqns[0]
    if list(eqn.invars) not in (jaxpr.invars, jaxpr.invars[::-1]) or eqn.outvars[0] is not jaxpr.outvars[0]:
        return None
    return eqn.primitive if eqn.primitive in _MONOIDS else None


def _as_init(v, dtype):
    if isinstance(v, (core.Array, core.Tracer)):
        if core.get_aval(v).shape != ():
            raise TypeError(f"reduce: init values must be scalars, got shape {core.get_aval(v).shape}")
        return v if core.get_aval(v).dtype == dtype else ew.convert_element_type(v, dtype)
    arr = np.asarray(v)
    if arr.shape != ():
        raise TypeError(f"reduce: init values must be scalars, got shape {arr.shape}")
    return core.Array(arr.astype(dtype))


def reduce(operands: Any, init_values: Any, computation: Callable, dimensions: Sequence[int],
           out_sharding=None) -> Any:
    """Reduces `operands` over `dimensions` with `computation`, starting from `init_values` (as `jax.lax.reduce`).

    Args:
      operands: an array or a pytree of same-shape arrays.
      init_values: scalars of the same pytree structure (one per operand, of its dtype): the computation's
        identity.
      computation: (accumulated tree, element tree) -> tree of the same structure, written for scalars.
      dimensions: the dimensions to reduce.
      out_sharding: accepted and ignored (one device).

    Returns:
      The reduced array or pytree: each operand's shape without `dimensions`.

    Raises:
      ValueError: operands and init values differ in structure, or a dimension is repeated.
      TypeError: operands of different shapes, or non-scalar init values.
    """
    flat_ops, tree = tree_util.tree_flatten(operands)
    flat_init, init_tree = tree_util.tree_flatten(init_values)
    if tree != init_tree:
        raise ValueError(f"reduce: operands and init_values must have the same structure, got {tree} and "
                         f"{init_tree}")
    flat_ops = [st._as_array(o) for o in flat_ops]
    shape = core.get_aval(flat_ops[0]).shape
    for o in flat_ops:
        if core.get_aval(o).shape != shape:
            raise TypeError("reduce: operands must have the same shape, got "
                            + ", ".join(str(core.get_aval(x).shape) for x in flat_ops))
    dims = tuple(canonicalize_axis(int(d), len(shape), "dimensions") for d in dimensions)
    if len(set(dims)) != len(dims):
        raise ValueError(f"reduce: dimensions {tuple(dimensions)} contain a repeated dimension")
    flat_init = [_as_init(v, core.get_aval(o).dtype) for v, o in zip(flat_init, flat_ops)]

    if len(flat_ops) == 1:
        prim = _recognize(computation, core.get_aval(flat_ops[0]).dtype)
        if prim is not None:
            out = _MONOIDS[prim][0](flat_ops[0], dims)
            concrete = core.concrete_value(flat_init[0])
            identity = _MONOIDS[prim][1](core.get_aval(flat_ops[0]).dtype)
            if concrete is None or not np.array_equal(np.asarray(concrete), identity):
                out = prim.bind(out, flat_init[0])  # a scalar operand broadcasts in the elementwise primitives
            return tree_util.tree_unflatten(tree, [out])

    outs = _tree_reduce(flat_ops, flat_init, computation, tree, dims, shape)
    return tree_util.tree_unflatten(tree, outs)


def _apply(computation: Callable, tree, xs: list, ys: list) -> list:
    """`computation` applied elementwise to equal-length 1-d arrays `xs` and `ys` (vmapped over the elements)."""
    n = len(xs)

    def scalar_fn(*args):
        a = tree_util.tree_unflatten(tree, args[:n])
        b = tree_util.tree_unflatten(tree, args[n:])
        out, out_tree = tree_util.tree_flatten(computation(a, b))
        if out_tree != tree:
            raise ValueError(f"reduce: the computation must return the operands' structure {tree}, got {out_tree}")
        return out

    size = core.get_aval(xs[0]).shape[0]
    return batching.vmap_flat(scalar_fn, xs + ys, [0] * (2 * n), size)


def _tree_reduce(ops: list, inits: list, computation: Callable, tree, dims: tuple, shape: tuple) -> list:
    keep = [d for d in range(len(shape)) if d not in dims]
    out_shape = tuple(shape[d] for d in keep)
    count = int(np.prod([shape[d] for d in dims], dtype=np.int64))
    rest = int(np.prod(out_shape, dtype=np.int64))
    # (reduced elements, kept elements) per operand, flattened to 1-d rows of `rest` elements.
    rows = [st.reshape(st.transpose(o, tuple(dims) + tuple(keep)), (count, rest)) for o in ops]
    while count > 1:
        half = count // 2
        lo = [st.reshape(st.slice_in_dim(r, 0, half), (half * rest,)) for r in rows]
        hi = [st.reshape(st.slice_in_dim(r, half, 2 * half), (half * rest,)) for r in rows]
        merged = [st.reshape(m, (half, rest)) for m in _apply(computation, tree, lo, hi)] if half * rest else \
            [st.slice_in_dim(r, 0, half) for r in rows]
        if count % 2:
            merged = [st.concatenate([m, st.slice_in_dim(r, count - 1, count)], 0) for m, r in zip(merged, rows)]
        rows, count = merged, half + count % 2
    init_rows = [st.broadcast_in_dim(v, (rest,), ()) for v in inits]
    if count == 0 or rest == 0:
        flat = init_rows
    else:
        flat = _apply(computation, tree, init_rows, [st.reshape(r, (rest,)) for r in rows])
    return [st.reshape(f, out_shape) for f in flat]
