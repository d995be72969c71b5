"""Collectives over named axes: psum, pmean, pmax, pmin, all_gather, psum_scatter, ppermute, all_to_all,
axis_index (mirrors `jax.lax`'s parallel operators).

A named axis is bound either by `pmap(..., axis_name=...)` (replicas on threads, possibly in several processes) or
by `vmap(..., axis_name=...)` (one batch dimension); a collective means the same in both:

* under `vmap`, each primitive's batching rule computes the collective along the batch dimension (psum is a
  reduce_sum over it, all_gather moves it into the data, axis_index is an iota, ...);
* under `pmap`, the primitive is staged into the replica program and its NumPy implementation exchanges values
  between the replica threads (`fluxion._src.interpreters.spmd.ReplicaGroup`).

Every primitive works on one axis name; tuples of names are decomposed by the wrappers (the combined index is
row-major over the names, first name slowest). `_CollectivePrimitive.bind` routes a collective to the `vmap` level
that binds its axis even when its operands do not depend on that level (a value that does not vary along the axis,
or `axis_index`, which has no operands), which the generic trace search alone would miss.

Differentiation (the SPMD view used by JAX): psum's transpose is psum; all_gather and psum_scatter are each other's
transposes; ppermute transposes to the inverse permutation; all_to_all to the swapped split/concat axes. pmax and
pmin have no derivative (as in JAX).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from .. import core
from ..interpreters import spmd as pmap_runtime
from ..core import ShapedArray, Tracer
from ..interpreters import ad, batching
from ..interpreters.ad import Zero
from ..tree_util import tree_flatten, tree_map, tree_unflatten
from . import elementwise as ew
from . import reductions as red
from . import structural as st


# --------------------------------------------------------------------------------------------------------------
# Resolving axis names
# --------------------------------------------------------------------------------------------------------------

def _innermost_vmap_main(name):
    """The active vmap level binding `name`, unless a pmap trace binds it more deeply (then None)."""
    found = None
    for main in reversed(core.thread_state().stack):
        if (main.active and issubclass(main.trace_type, batching.BatchTrace)
                and pmap_runtime.same_axis_name(getattr(main.payload, "axis_name", None), name)):
            found = main
            break
    frame = pmap_runtime.innermost_pmap_frame(name)
    if found is not None and frame is not None and frame.level > found.level:
        return None
    return found


def _bound_size(name) -> int:
    """The size of the axis `name` as bound right now (vmap level, pmap trace, or running pmap replica)."""
    if name is None:
        raise NameError("unbound axis name: None (collectives need the axis_name given to pmap or vmap)")
    main = _innermost_vmap_main(name)
    if main is not None:
        return int(main.payload.axis_size)
    frame = pmap_runtime.innermost_pmap_frame(name)
    if frame is not None:
        return int(frame.size)
    try:
        return pmap_runtime.current_replica(name).size
    except NameError:
        pass
    raise NameError(f"unbound axis name: {name!r}. Collectives must run inside pmap or vmap with "
                    f"axis_name={name!r}.")


def _axis_names(axis_name) -> tuple:
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def axis_size(axis_name) -> int:
    """The number of replicas along `axis_name` (a name or a tuple of names: the product of their sizes).

    Raises:
      NameError: a name is not bound by an enclosing pmap/vmap.
    """
    return math.prod(_bound_size(n) for n in _axis_names(axis_name))


def _check_groups(axis_index_groups, fname: str) -> None:
    if axis_index_groups is not None:
        raise NotImplementedError(f"{fname}: axis_index_groups={axis_index_groups!r} is not supported by fluxion "
                                  "(collectives always span the whole named axis)")


# --------------------------------------------------------------------------------------------------------------
# Primitives
# --------------------------------------------------------------------------------------------------------------

class _CollectivePrimitive(core.Primitive):
    """A primitive over the named axis `params['axes'][0]` that is routed to the vmap level binding that name."""

    __slots__ = ()

    def bind(self, *args, **params):
        main = _innermost_vmap_main(params["axes"][0])
        if main is not None and core.find_top_trace(args).main.level <= main.level:
            return _batch_at(main, self, args, params)
        return super().bind(*args, **params)


def _batch_at(main, prim, args, params):
    """Applies `prim`'s batching rule at vmap level `main`, even if no operand varies along it."""
    trace = batching.BatchTrace(main)
    tracers = [core.full_raise(trace, a) for a in args]
    rule = batching.primitive_batchers[prim]
    out, out_dim = rule([t.val for t in tracers], [t.batch_dim for t in tracers],
                        axis_size=main.payload.axis_size, axis_name=main.payload.axis_name, **params)
    if prim.multiple_results:
        return [batching.BatchTracer(trace, o, d) for o, d in zip(out, out_dim)]
    return batching.BatchTracer(trace, out, out_dim)


def _collective(name, abstract_eval=None, *, multiple_results=False, weak_type="first"):
    prim = _CollectivePrimitive(name, multiple_results=multiple_results, weak_type=weak_type)
    # Registers the shape rule (if given) exactly as `standard_primitive` does, on our subclass instance.
    if abstract_eval is not None:
        core.abstract_eval_rules[prim] = abstract_eval
    return prim


def _register_batcher(prim, rule):
    rule.needs_axis = True
    batching.primitive_batchers[prim] = rule


def _same(trace_axis, params) -> bool:
    return pmap_runtime.same_axis_name(trace_axis, params["axes"][0])


def _leaf(x):
    return st._as_array(x)


def _bool_to_int(x):
    return ew.convert_element_type(x, np.int32) if core.get_aval(x).dtype == np.bool_ else x


# -- psum / pmean / pmax / pmin -----------------------------------------------------------------------------------

def _collective_reduce_abstract_eval(*avals, **params):
    return [ShapedArray(a.shape, a.dtype, a.weak_type) for a in avals]


def _collective_reduce_batch_rule(prim, reducer, unbatched):
    def rule(vals, dims, *, axis_size, axis_name, **params):
        if not _same(axis_name, params):
            return prim.bind(*vals, **params), list(dims)
        outs = [unbatched(x, axis_size) if d is None else reducer(x, (d,)) for x, d in zip(vals, dims)]
        return outs, [None] * len(outs)
    return rule


def _times(x, n):
    a = core.get_aval(x)
    return ew.mul(x, st.full(a.shape, n, a.dtype))


psum_p = _collective("psum", _collective_reduce_abstract_eval, multiple_results=True, weak_type="all")


def psum(x: Any, axis_name: Any, *, axis_index_groups=None) -> Any:
    """Sums `x` (a pytree) over the replicas of the named axis (or tuple of axes); every replica gets the sum.

    Booleans are summed as int32. On values that are not traced (Python numbers, concrete arrays) the result is
    `x * axis_size` computed directly, so `psum(1, 'i')` is the number of replicas as a Python int.

    Raises:
      NameError: `axis_name` is not bound by an enclosing pmap/vmap.
    """
    _check_groups(axis_index_groups, "psum")
    names = _axis_names(axis_name)
    if not names:
        return x
    leaves, tree = tree_flatten(x)
    if not leaves:
        return x
    if all(not isinstance(leaf, Tracer) for leaf in leaves):
        n = axis_size(names)
        return tree_unflatten(tree, [_const_times(leaf, n) for leaf in leaves])
    leaves = [_bool_to_int(_leaf(v)) for v in leaves]
    for name in reversed(names):
        leaves = psum_p.bind(*leaves, axes=(name,), axis_index_groups=None)
    return tree_unflatten(tree, list(leaves))


def _const_times(leaf, n):
    if isinstance(leaf, (bool, np.bool_)):
        return int(leaf) * n
    if isinstance(leaf, (int, float, complex)):
        return leaf * n
    a = _bool_to_int(_leaf(leaf))
    return _times(a, n)


def pmean(x: Any, axis_name: Any, *, axis_index_groups=None) -> Any:
    """The mean of `x` over the replicas of the named axis: psum(x) / axis_size (integers become floats)."""
    summed = psum(x, axis_name, axis_index_groups=axis_index_groups)
    n = axis_size(axis_name)
    return tree_map(lambda v: v / n, summed)


def _psum_jvp(primals, tangents, **params):
    out = psum_p.bind(*primals, **params)
    nonzero = [t for t in tangents if type(t) is not Zero]
    summed = iter(psum_p.bind(*nonzero, **params) if nonzero else [])
    return out, [Zero(core.get_aval(o)) if type(t) is Zero else next(summed) for o, t in zip(out, tangents)]


ad.primitive_jvps[psum_p] = _psum_jvp


def _psum_transpose(cts, *args, **params):
    nonzero = [ct for ct in cts if type(ct) is not Zero]
    summed = iter(psum_p.bind(*nonzero, **params) if nonzero else [])
    return [None if type(ct) is Zero else next(summed) for ct in cts]


ad.primitive_transposes[psum_p] = _psum_transpose
_register_batcher(psum_p, _collective_reduce_batch_rule(psum_p, red.reduce_sum, _times))

pmax_p = _collective("pmax", _collective_reduce_abstract_eval, multiple_results=True, weak_type="all")
pmin_p = _collective("pmin", _collective_reduce_abstract_eval, multiple_results=True, weak_type="all")


def _extremum(prim, fname):
    def op(x: Any, axis_name: Any, *, axis_index_groups=None) -> Any:
        _check_groups(axis_index_groups, fname)
        names = _axis_names(axis_name)
        leaves, tree = tree_flatten(x)
        leaves = [_leaf(v) for v in leaves]
        for name in reversed(names):
            _bound_size(name)
            leaves = prim.bind(*leaves, axes=(name,), axis_index_groups=None)
        return tree_unflatten(tree, list(leaves))
    op.__name__ = fname
    op.__doc__ = (f"The elementwise {fname[1:]}imum of `x` (a pytree) over the replicas of the named axis.\n\n"
                  "Raises:\n  NameError: `axis_name` is not bound by an enclosing pmap/vmap.\n")
    return op


pmax = _extremum(pmax_p, "pmax")
ad.defnondifferentiable(pmax_p)
_register_batcher(pmax_p, _collective_reduce_batch_rule(pmax_p, red.reduce_max, lambda x, n: x))

pmin = _extremum(pmin_p, "pmin")
ad.defnondifferentiable(pmin_p)
_register_batcher(pmin_p, _collective_reduce_batch_rule(pmin_p, red.reduce_min, lambda x, n: x))


# -- all_gather (tiled: concatenation along `dimension`) ----------------------------------------------------------

def _check_dim(fname, x, dimension):
    if not 0 <= dimension < x.ndim:
        raise ValueError(f"{fname}: axis {dimension} is out of bounds for an operand of shape {x.shape}")


all_gather_p = _collective("all_gather")


def all_gather(x: Any, axis_name: Any, *, axis_index_groups=None, axis: int = 0, tiled: bool = False) -> Any:
    """Every replica gets all replicas' `x`, stacked along a new axis `axis` (concatenated along it if `tiled`).

    Args:
      x: pytree of arrays, each of shape S.
      axis: position of the replica axis in the result.
      tiled: concatenate along the existing dimension `axis` instead of stacking.

    Returns:
      Arrays of shape S[:axis] + (n,) + S[axis:] (tiled: S with S[axis] multiplied by n).

    Raises:
      ValueError: `axis` is out of bounds.
    """
    _check_groups(axis_index_groups, "all_gather")
    names = _axis_names(axis_name)

    def one(v):
        v = _leaf(v)
        nd = core.get_aval(v).ndim
        limit = nd if tiled else nd + 1
        if not -limit <= axis < limit:
            raise ValueError(f"all_gather: axis={axis} is out of bounds for an operand of shape "
                             f"{core.get_aval(v).shape} (tiled={tiled})")
        dim = axis % limit
        if not tiled:
            v = st.expand_dims(v, (dim,))
        for name in reversed(names):
            v = all_gather_p.bind(v, axes=(name,), dimension=dim, size=_bound_size(name))
        return v

    return tree_map(one, x)


def _all_gather_abstract_eval(x, *, axes, dimension, size):
    _check_dim("all_gather", x, dimension)
    shape = list(x.shape)
    shape[dimension] *= size
    return ShapedArray(tuple(shape), x.dtype)


core.abstract_eval_rules[all_gather_p] = _all_gather_abstract_eval


def _all_gather_transpose(ct, x, **params):
    return [None if type(ct) is Zero else psum_scatter_p.bind(ct, **params)]


ad.deflinear(all_gather_p, _all_gather_transpose)


def _gather_stacked(xs, dimension):
    """Concatenates the rows of `xs` (replica axis first) along `dimension` of one row (replica-major)."""
    shape = core.get_aval(xs).shape
    n, row = shape[0], shape[1:]
    moved = batching.moveaxis(xs, 0, dimension, n)
    return st.reshape(moved, row[:dimension] + (n * row[dimension],) + row[dimension + 1:])


def _all_gather_batch_rule(vals, dims, *, axis_size, axis_name, axes, dimension, size):
    (x,), (d,) = vals, dims
    xs = batching.bdim_at_front(x, d, axis_size)
    if not pmap_runtime.same_axis_name(axis_name, axes[0]):
        return all_gather_p.bind(xs, axes=axes, dimension=dimension + 1, size=size), 0
    return _gather_stacked(xs, dimension), None


_register_batcher(all_gather_p, _all_gather_batch_rule)


# -- psum_scatter (tiled: each replica keeps its block of `dimension`) --------------------------------------------

psum_scatter_p = _collective("psum_scatter")


def psum_scatter(x: Any, axis_name: Any, *, scatter_dimension: int = 0, axis_index_groups=None,
                 tiled: bool = False) -> Any:
    """psum(x), of which replica i keeps only block i along `scatter_dimension`.

    Without `tiled`, x.shape[scatter_dimension] must equal the number of replicas and that dimension is removed;
    with `tiled`, it must be divisible by it and shrinks by that factor.

    Raises:
      ValueError: the scatter dimension's size does not fit the number of replicas (both are named).
    """
    _check_groups(axis_index_groups, "psum_scatter")
    names = _axis_names(axis_name)
    n = axis_size(names)

    def one(v):
        v = _bool_to_int(_leaf(v))
        shape = core.get_aval(v).shape
        if not -len(shape) <= scatter_dimension < len(shape):
            raise ValueError(f"psum_scatter: scatter_dimension={scatter_dimension} is out of bounds for an operand "
                             f"of shape {shape}")
        dim = scatter_dimension % len(shape)
        if not tiled and shape[dim] != n:
            raise ValueError(f"psum_scatter: dimension {dim} of the operand (shape {shape}) has size {shape[dim]} "
                             f"but must equal the axis size {n} (or pass tiled=True)")
        for name in names:
            v = psum_scatter_p.bind(v, axes=(name,), dimension=dim, size=_bound_size(name))
        return v if tiled else st.squeeze(v, (dim,))

    return tree_map(one, x)


def _psum_scatter_abstract_eval(x, *, axes, dimension, size):
    _check_dim("psum_scatter", x, dimension)
    if x.shape[dimension] % size:
        raise ValueError(f"psum_scatter: dimension {dimension} of the operand (shape {x.shape}) has size "
                         f"{x.shape[dimension]}, which is not divisible by the axis size {size}")
    shape = list(x.shape)
    shape[dimension] //= size
    return ShapedArray(tuple(shape), x.dtype)


core.abstract_eval_rules[psum_scatter_p] = _psum_scatter_abstract_eval


def _psum_scatter_transpose(ct, x, **params):
    return [None if type(ct) is Zero else all_gather_p.bind(ct, **params)]


ad.deflinear(psum_scatter_p, _psum_scatter_transpose)


def _psum_scatter_batch_rule(vals, dims, *, axis_size, axis_name, axes, dimension, size):
    (x,), (d,) = vals, dims
    xs = batching.bdim_at_front(x, d, axis_size)
    if not pmap_runtime.same_axis_name(axis_name, axes[0]):
        return psum_scatter_p.bind(xs, axes=axes, dimension=dimension + 1, size=size), 0
    total = red.reduce_sum(xs, (0,))
    shape = core.get_aval(total).shape
    if shape[dimension] % axis_size:
        raise ValueError(f"psum_scatter: dimension {dimension} of the operand (shape {shape}) has size "
                         f"{shape[dimension]}, which is not divisible by the axis size {axis_size}")
    split = shape[:dimension] + (axis_size, shape[dimension] // axis_size) + shape[dimension + 1:]
    return st.reshape(total, split), dimension


_register_batcher(psum_scatter_p, _psum_scatter_batch_rule)


# -- all_to_all (tiled) -------------------------------------------------------------------------------------------

all_to_all_p = _collective("all_to_all")


def all_to_all(x: Any, axis_name: Any, split_axis: int, concat_axis: int, *, axis_index_groups=None,
               tiled: bool = False) -> Any:
    """Splits `x` along `split_axis` into n blocks, sends block j to replica j, and concatenates the received
    blocks (ordered by sender) along `concat_axis`.

    Without `tiled`, x.shape[split_axis] must equal n; the split axis is removed and a new axis of size n is
    inserted at `concat_axis`. With `tiled`, the split axis shrinks and the concat axis grows by the factor n.

    Raises:
      ValueError: the split axis size does not fit the number of replicas (both are named).
    """
    _check_groups(axis_index_groups, "all_to_all")
    names = _axis_names(axis_name)
    n = axis_size(names)

    def one(v):
        v = _leaf(v)
        shape = core.get_aval(v).shape
        nd = len(shape)
        for what, ax in (("split_axis", split_axis), ("concat_axis", concat_axis)):
            if not -nd <= ax < nd:
                raise ValueError(f"all_to_all: {what}={ax} is out of bounds for an operand of shape {shape}")
        sa, ca = split_axis % nd, concat_axis % nd
        if not tiled and shape[sa] != n:
            raise ValueError(f"all_to_all requires the size of the mapped axis {axis_name!r} to equal "
                             f"x.shape[split_axis], but they are {n} and {shape[sa]} respectively")
        if tiled and shape[sa] % n:
            raise ValueError(f"all_to_all: split_axis {sa} of the operand (shape {shape}) has size {shape[sa]}, "
                             f"which is not divisible by the axis size {n}")
        if not tiled:
            # Insert a size-1 axis to concatenate along, run the tiled exchange, then drop the split axis.
            ca_in = ca + 1 if sa < ca else ca
            v = st.expand_dims(v, (ca_in,))
            sa_in = sa + 1 if ca_in <= sa else sa
            out = _all_to_all_tiled(v, names, sa_in, ca_in, n)
            return st.squeeze(out, (sa_in,))
        return _all_to_all_tiled(v, names, sa, ca, n)

    return tree_map(one, x)


def _all_to_all_tiled(v, names, sa, ca, n):
    if len(names) == 1:
        return all_to_all_p.bind(v, axes=names, split_axis=sa, concat_axis=ca, size=n)
    stacked = all_gather(v, names)
    return _dynamic_row(_all_to_all_stacked(stacked, sa, ca), axis_index(names))


def _all_to_all_abstract_eval(x, *, axes, split_axis, concat_axis, size):
    _check_dim("all_to_all", x, split_axis)
    _check_dim("all_to_all", x, concat_axis)
    if x.shape[split_axis] % size:
        raise ValueError(f"all_to_all: split_axis {split_axis} of the operand (shape {x.shape}) has size "
                         f"{x.shape[split_axis]}, which is not divisible by the axis size {size}")
    shape = list(x.shape)
    shape[split_axis] //= size
    shape[concat_axis] *= size
    return ShapedArray(tuple(shape), x.dtype)


core.abstract_eval_rules[all_to_all_p] = _all_to_all_abstract_eval


def _all_to_all_transpose(ct, x, *, axes, split_axis, concat_axis, size):
    if type(ct) is Zero:
        return [None]
    return [all_to_all_p.bind(ct, axes=axes, split_axis=concat_axis, concat_axis=split_axis, size=size)]


ad.deflinear(all_to_all_p, _all_to_all_transpose)


def _all_to_all_stacked(xs, split_axis, concat_axis):
    """all_to_all on stacked replicas: row r of the result is replica r's output. xs: (n,) + per-replica shape."""
    shape = core.get_aval(xs).shape
    n, row = shape[0], shape[1:]
    block = row[split_axis] // n
    split = (n,) + row[:split_axis] + (n, block) + row[split_axis + 1:]
    y = st.reshape(xs, split)
    # Axis labels of y: 'src' (sending replica), then the row's dims with split_axis as ('dst', its block).
    labels = ["src"] + [lbl for j in range(len(row)) for lbl in (["dst", j] if j == split_axis else [j])]
    target = ["dst"] + [lbl for j in range(len(row)) for lbl in (["src", j] if j == concat_axis else [j])]
    z = st.transpose(y, tuple(labels.index(t) for t in target))
    out_row = list(row)
    out_row[split_axis] = block
    out_row[concat_axis] *= n
    return st.reshape(z, (n,) + tuple(out_row))


def _all_to_all_batch_rule(vals, dims, *, axis_size, axis_name, axes, split_axis, concat_axis, size):
    (x,), (d,) = vals, dims
    xs = batching.bdim_at_front(x, d, axis_size)
    if not pmap_runtime.same_axis_name(axis_name, axes[0]):
        return all_to_all_p.bind(xs, axes=axes, split_axis=split_axis + 1, concat_axis=concat_axis + 1,
                                 size=size), 0
    return _all_to_all_stacked(xs, split_axis, concat_axis), 0


_register_batcher(all_to_all_p, _all_to_all_batch_rule)


# -- ppermute -----------------------------------------------------------------------------------------------------

ppermute_p = _collective("ppermute")


def _check_perm(perm, n: int) -> tuple:
    pairs = tuple((int(s), int(d)) for s, d in perm)
    srcs, dsts = [s for s, _ in pairs], [d for _, d in pairs]
    for s, d in pairs:
        if not (0 <= s < n and 0 <= d < n):
            raise ValueError(f"ppermute: pair ({s}, {d}) of perm is out of range for an axis of size {n}")
    if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts):
        raise ValueError(f"ppermute: perm {list(pairs)} repeats a source or a destination index")
    return pairs


def _dynamic_row(xs, index):
    shape = core.get_aval(xs).shape
    row = st.dynamic_slice_clamped(xs, [index] + [0] * (len(shape) - 1), (1,) + shape[1:])
    return st.reshape(row, shape[1:])


def ppermute(x: Any, axis_name: Any, perm: Sequence[tuple[int, int]]) -> Any:
    """Sends each replica's `x` along the (source, destination) pairs of `perm`; replicas that are no
    destination get zeros.

    Raises:
      ValueError: an index is out of range or a source/destination repeats.
    """
    names = _axis_names(axis_name)
    n = axis_size(names)
    pairs = _check_perm(perm, n)

    def one(v):
        v = _leaf(v)
        if len(names) == 1:
            return ppermute_p.bind(v, axes=names, perm=pairs)
        # Several axes: permute the flattened index through a gather (rare; costs n copies).
        stacked = all_gather(v, names)
        return _dynamic_row(_ppermute_stacked(stacked, pairs), axis_index(names))

    return tree_map(one, x)


def pshuffle(x: Any, axis_name: Any, perm: Sequence[int]) -> Any:
    """Replica i receives the value of replica perm[i] (`perm` must be a permutation of range(n))."""
    if sorted(perm) != list(range(len(perm))):
        raise ValueError(f"pshuffle: `perm` does not represent a permutation: {perm}")
    return ppermute(x, axis_name, list(zip(perm, range(len(perm)))))


def _ppermute_abstract_eval(x, *, axes, perm):
    return ShapedArray(x.shape, x.dtype)


core.abstract_eval_rules[ppermute_p] = _ppermute_abstract_eval


def _ppermute_transpose(ct, x, *, axes, perm):
    if type(ct) is Zero:
        return [None]
    return [ppermute_p.bind(ct, axes=axes, perm=tuple((d, s) for s, d in perm))]


ad.deflinear(ppermute_p, _ppermute_transpose)


def _ppermute_stacked(xs, perm):
    """ppermute on stacked replicas (replica axis first): row dst = row src, rows without a source are zeros."""
    shape = core.get_aval(xs).shape
    n = shape[0]
    source = {dst: src for src, dst in perm}
    rows = []
    for dst in range(n):
        if dst in source:
            rows.append(st.index_in_dim(xs, source[dst], 0, keepdims=True))
        else:
            rows.append(st.full((1,) + shape[1:], 0, core.get_aval(xs).dtype))
    return st.concatenate(rows, 0) if n > 1 else rows[0]


def _ppermute_batch_rule(vals, dims, *, axis_size, axis_name, axes, perm):
    (x,), (d,) = vals, dims
    if not pmap_runtime.same_axis_name(axis_name, axes[0]):
        return ppermute_p.bind(x, axes=axes, perm=perm), d
    return _ppermute_stacked(batching.bdim_at_front(x, d, axis_size), perm), 0


_register_batcher(ppermute_p, _ppermute_batch_rule)


# -- axis_index ---------------------------------------------------------------------------------------------------

axis_index_p = _collective("axis_index", weak_type="never")


def axis_index(axis_name: Any):
    """This replica's index along the named axis (int32 scalar); for a tuple of names, the row-major index."""
    names = _axis_names(axis_name)
    index = None
    stride = 1
    for name in reversed(names):
        size = _bound_size(name)
        i = axis_index_p.bind(axes=(name,))
        term = i if stride == 1 else ew.mul(i, st.full((), stride, np.int32))
        index = term if index is None else ew.add(index, term)
        stride *= size
    if index is None:
        return core.Array(np.int32(0))
    return index


def _axis_index_abstract_eval(*, axes):
    return ShapedArray((), np.dtype(np.int32))


core.abstract_eval_rules[axis_index_p] = _axis_index_abstract_eval


def _axis_index_batch_rule(vals, dims, *, axis_size, axis_name, axes):
    return st.iota(np.int32, axis_size), 0


_register_batcher(axis_index_p, _axis_index_batch_rule)


__all__ = ["all_gather", "all_to_all", "axis_index", "axis_size", "pmax", "pmean", "pmin", "ppermute", "pshuffle",
           "psum", "psum_scatter"]
