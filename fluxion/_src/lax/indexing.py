"""`gather` and the `scatter` family: XLA's general indexing primitives, as in `jax.lax`.

The index vector dimension of `start_indices`/`scatter_indices` is always the last one (as in JAX). Semantics of
the dimension numbers follow XLA's operation semantics (https://openxla.org/xla/operation_semantics#gather):

* gather: the output has the batch dims of `start_indices` (all but the last) and the window ("offset") dims of the
  operand (those not collapsed and not batching dims), the latter at positions `offset_dims`.
* scatter: `updates` has scatter dims (matching `scatter_indices` batch dims, in order) and window dims at
  `update_window_dims` (matching the operand dims not inserted and not batching dims, in order).

Differentiation: gather and scatter_add are linear in operand/updates and transpose into each other. scatter (set)
is linear when indices are unique; for possibly repeated indices its JVP finds which update "wins" each position by
scattering update ids (the NumPy backend is deterministic: the last update wins), as JAX does. scatter_mul
differentiates with respect to `updates` also for repeated indices (JAX only supports `unique_indices=True`) via the
product of the other updates at each position. scatter_min/max split the tangent evenly between tied contributors.

Batching uses the `operand_batching_dims`/`*_indices_batching_dims` fields, so vmap of a gather/scatter is a single
gather/scatter.
"""

from __future__ import annotations

import enum
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from .. import core, dtypes
from ..core import ShapedArray, abstract_eval_rules
from ..interpreters import ad, batching
from ..interpreters.ad import Zero
from . import elementwise as ew
from . import structural as st
from .utils import standard_primitive


# --------------------------------------------------------------------------------------------------------------
# Parameters
# --------------------------------------------------------------------------------------------------------------

class GatherScatterMode(enum.Enum):
    """How out-of-bounds indices are handled.

    - `CLIP`: clamp each start index so the whole window is in bounds.
    - `FILL_OR_DROP`: gather returns `fill_value` for any window not entirely in bounds; scatter drops such updates.
    - `PROMISE_IN_BOUNDS`: the caller promises indices are in bounds; gather clamps and scatter drops otherwise
      (what XLA's CPU backend does).
    """

    CLIP = enum.auto()
    FILL_OR_DROP = enum.auto()
    PROMISE_IN_BOUNDS = enum.auto()

    @staticmethod
    def from_any(s: "str | GatherScatterMode | None") -> "GatherScatterMode":
        """Parses a mode: None -> FILL_OR_DROP; 'clip'; 'fill' or 'drop'; 'promise_in_bounds'.

        Raises:
          ValueError: for any other value.
        """
        if isinstance(s, GatherScatterMode):
            return s
        if s is None or s == "fill" or s == "drop":
            return GatherScatterMode.FILL_OR_DROP
        if s == "clip":
            return GatherScatterMode.CLIP
        if s == "promise_in_bounds":
            return GatherScatterMode.PROMISE_IN_BOUNDS
        raise ValueError(f"Unknown gather/scatter mode {s!r}: expected one of 'clip', 'fill', 'drop', "
                         "'promise_in_bounds' or a GatherScatterMode")

    def __str__(self) -> str:
        return f"GatherScatterMode.{self.name}"


class GatherDimensionNumbers(NamedTuple):
    """Describes a gather (see the module docstring). All fields are tuples of ints."""

    offset_dims: tuple
    collapsed_slice_dims: tuple
    start_index_map: tuple
    operand_batching_dims: tuple = ()
    start_indices_batching_dims: tuple = ()


class ScatterDimensionNumbers(NamedTuple):
    """Describes a scatter (see the module docstring). All fields are tuples of ints."""

    update_window_dims: tuple
    inserted_window_dims: tuple
    scatter_dims_to_operand_dims: tuple
    operand_batching_dims: tuple = ()
    scatter_indices_batching_dims: tuple = ()


def _ints(xs) -> tuple:
    return tuple(int(x) for x in xs)


def _canon_gather_dnums(dn) -> GatherDimensionNumbers:
    if not isinstance(dn, GatherDimensionNumbers):
        raise TypeError(f"gather: dimension_numbers must be a GatherDimensionNumbers, got {type(dn).__name__}")
    return GatherDimensionNumbers(*(_ints(f) for f in dn))


def _canon_scatter_dnums(dn) -> ScatterDimensionNumbers:
    if not isinstance(dn, ScatterDimensionNumbers):
        raise TypeError(f"scatter: dimension_numbers must be a ScatterDimensionNumbers, got {type(dn).__name__}")
    return ScatterDimensionNumbers(*(_ints(f) for f in dn))


def _static_fill(fill_value):
    if fill_value is None:
        return None
    v = core.concrete_value(fill_value)
    if v is None:
        raise TypeError("gather: fill_value must be a static scalar (a Python or NumPy number), not a traced value")
    arr = np.asarray(v)
    if arr.shape != ():
        raise TypeError(f"gather: fill_value must be a scalar, got shape {arr.shape}")
    return arr.item()


# --------------------------------------------------------------------------------------------------------------
# Shared helpers: shape checks, gather/scatter conversions, batching
# --------------------------------------------------------------------------------------------------------------

def _check_dims(name: str, what: str, dims: tuple, bound: int, sorted_required: bool = False) -> None:
    if len(set(dims)) != len(dims):
        raise TypeError(f"{name}: {what} {dims} contains repeated dimensions")
    if any(not 0 <= d < bound for d in dims):
        raise TypeError(f"{name}: {what} {dims} must be in the range [0, {bound})")
    if sorted_required and list(dims) != sorted(dims):
        raise TypeError(f"{name}: {what} {dims} must be sorted")


def _check_indices(name: str, indices: ShapedArray, index_len: int) -> None:
    if not dtypes.is_integer(indices.dtype):
        raise TypeError(f"{name}: indices must have an integer dtype, got {indices.dtype.name}")
    if indices.ndim < 1:
        raise TypeError(f"{name}: indices must have rank >= 1 (the last dimension is the index vector), got a scalar")
    if indices.shape[-1] != index_len:
        raise TypeError(f"{name}: the index vector (last dimension of indices, shape {indices.shape}) must have "
                        f"length {index_len}, one entry per mapped operand dimension")


def _check_batching(name: str, operand: ShapedArray, indices: ShapedArray, op_bdims: tuple, idx_bdims: tuple,
                    other_op_dims: tuple, idx_map: tuple) -> None:
    _check_dims(name, "operand_batching_dims", op_bdims, operand.ndim, sorted_required=True)
    _check_dims(name, "indices batching dims", idx_bdims, indices.ndim - 1)
    if len(op_bdims) != len(idx_bdims):
        raise TypeError(f"{name}: operand_batching_dims {op_bdims} and the indices batching dims {idx_bdims} must "
                        "have the same length")
    for a, b in zip(op_bdims, idx_bdims):
        if operand.shape[a] != indices.shape[b]:
            raise TypeError(f"{name}: operand batching dim {a} (size {operand.shape[a]}) and indices batching dim "
                            f"{b} (size {indices.shape[b]}) must have equal sizes (operand {operand.shape}, "
                            f"indices {indices.shape})")
    if set(op_bdims) & set(other_op_dims):
        raise TypeError(f"{name}: operand_batching_dims {op_bdims} overlap the collapsed/inserted dims "
                        f"{other_op_dims}")
    if set(op_bdims) & set(idx_map):
        raise TypeError(f"{name}: operand_batching_dims {op_bdims} overlap the indexed dims {idx_map}")


def _gather_dnums_of_scatter(dn: ScatterDimensionNumbers) -> GatherDimensionNumbers:
    """The gather that reads back, with the shape of `updates`, the windows a scatter writes."""
    return GatherDimensionNumbers(offset_dims=dn.update_window_dims, collapsed_slice_dims=dn.inserted_window_dims,
                                  start_index_map=dn.scatter_dims_to_operand_dims,
                                  operand_batching_dims=dn.operand_batching_dims,
                                  start_indices_batching_dims=dn.scatter_indices_batching_dims)


def scatter_dnums_of_gather(dn: GatherDimensionNumbers) -> ScatterDimensionNumbers:
    return ScatterDimensionNumbers(update_window_dims=dn.offset_dims, inserted_window_dims=dn.collapsed_slice_dims,
                                   scatter_dims_to_operand_dims=dn.start_index_map,
                                   operand_batching_dims=dn.operand_batching_dims,
                                   scatter_indices_batching_dims=dn.start_indices_batching_dims)


def _scatter_slice_sizes(operand_shape, updates_shape, dn: ScatterDimensionNumbers) -> tuple:
    sizes, w = [], 0
    for d in range(len(operand_shape)):
        if d in dn.inserted_window_dims or d in dn.operand_batching_dims:
            sizes.append(1)
        else:
            sizes.append(updates_shape[dn.update_window_dims[w]])
            w += 1
    return tuple(sizes)


def _gather_windows(x, indices, updates_shape, dn: ScatterDimensionNumbers, mode, indices_are_sorted=False,
                    unique_indices=False):
    """Reads the windows of `x` a scatter with `dn` would write, shaped like its updates (0 when out of bounds)."""
    shape = core.get_aval(x).shape
    return gather_p.bind(x, indices, dimension_numbers=_gather_dnums_of_scatter(dn),
                         slice_sizes=_scatter_slice_sizes(shape, updates_shape, dn),
                         indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode,
                         fill_value=0 if mode is GatherScatterMode.FILL_OR_DROP else None)


def _zeros(aval_or_x, dtype=None):
    a = aval_or_x if isinstance(aval_or_x, ShapedArray) else core.get_aval(aval_or_x)
    return st.full(a.shape, 0, dtype or a.dtype)


def _shift(dims: tuple, by: int = 1) -> tuple:
    return tuple(d + by for d in dims)


def _batch_size(vals, dims) -> int:
    return next(core.get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not None)


# --------------------------------------------------------------------------------------------------------------
# gather
# --------------------------------------------------------------------------------------------------------------

gather_p = standard_primitive("gather", weak_type="first")


def gather(operand, start_indices, dimension_numbers: GatherDimensionNumbers, slice_sizes: Sequence[int], *,
           unique_indices: bool = False, indices_are_sorted: bool = False,
           mode: "str | GatherScatterMode | None" = None, fill_value=None):
    """Gathers slices of `operand` at `start_indices` (XLA's Gather).

    Args:
      operand: array to slice.
      start_indices: integer array whose last dimension is the index vector (one start per
        `dimension_numbers.start_index_map` entry).
      dimension_numbers: a `GatherDimensionNumbers`.
      slice_sizes: the slice size of every operand dimension (1 for collapsed and batching dims).
      unique_indices, indices_are_sorted: hints (no effect on the NumPy backend).
      mode: out-of-bounds handling, a `GatherScatterMode` or 'clip'/'fill'/'promise_in_bounds'
        (None means FILL_OR_DROP, as in JAX).
      fill_value: the value of out-of-bounds windows in FILL_OR_DROP mode (default: NaN for inexact dtypes, the
        minimum for signed, the maximum for unsigned integers, True for bool).

    Returns:
      An array of operand's dtype (see the module docstring for its shape).

    Raises:
      TypeError: inconsistent dimension numbers, slice sizes or index shapes.
    """
    operand, start_indices = st._as_array(operand), st._as_array(start_indices)
    mode = GatherScatterMode.from_any(mode)
    fill = _static_fill(fill_value) if mode is GatherScatterMode.FILL_OR_DROP else None
    params = dict(dimension_numbers=_canon_gather_dnums(dimension_numbers), slice_sizes=_ints(slice_sizes),
                  indices_are_sorted=bool(indices_are_sorted), unique_indices=bool(unique_indices), mode=mode,
                  fill_value=fill)
    # Validate here too: the eager path runs the NumPy implementation without abstract evaluation.
    _gather_abstract_eval(core.get_aval(operand), core.get_aval(start_indices), **params)
    return gather_p.bind(operand, start_indices, **params)


def _gather_abstract_eval(operand, indices, *, dimension_numbers, slice_sizes, indices_are_sorted=False,
                       unique_indices=False, mode=None, fill_value=None):
    dn = dimension_numbers
    name = "gather"
    _check_indices(name, indices, len(dn.start_index_map))
    if len(slice_sizes) != operand.ndim:
        raise TypeError(f"gather: slice_sizes {tuple(slice_sizes)} must have one entry per operand dimension "
                        f"(operand shape {operand.shape})")
    for d, (s, n) in enumerate(zip(slice_sizes, operand.shape)):
        if not 0 <= s <= n:
            raise TypeError(f"gather: slice size {s} of dimension {d} is out of range for operand shape "
                            f"{operand.shape}")
    _check_dims(name, "collapsed_slice_dims", dn.collapsed_slice_dims, operand.ndim, sorted_required=True)
    _check_dims(name, "start_index_map", dn.start_index_map, operand.ndim)
    _check_batching(name, operand, indices, dn.operand_batching_dims, dn.start_indices_batching_dims,
                    dn.collapsed_slice_dims, dn.start_index_map)
    for d in dn.collapsed_slice_dims + dn.operand_batching_dims:
        if slice_sizes[d] > 1:
            raise TypeError(f"gather: collapsed and batching dims must have slice size <= 1, but dimension {d} has "
                            f"slice size {slice_sizes[d]}")
    window = [d for d in range(operand.ndim)
              if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims]
    if len(window) != len(dn.offset_dims):
        raise TypeError(f"gather: offset_dims {dn.offset_dims} must have one entry per operand dimension that is "
                        f"neither collapsed {dn.collapsed_slice_dims} nor batching {dn.operand_batching_dims} "
                        f"(operand rank {operand.ndim})")
    batch_shape = indices.shape[:-1]
    rank = len(batch_shape) + len(window)
    _check_dims(name, "offset_dims", dn.offset_dims, rank, sorted_required=True)
    shape, b, w = [], 0, 0
    for i in range(rank):
        if i in dn.offset_dims:
            shape.append(slice_sizes[window[w]])
            w += 1
        else:
            shape.append(batch_shape[b])
            b += 1
    return ShapedArray(tuple(shape), operand.dtype)


abstract_eval_rules[gather_p] = _gather_abstract_eval


def _gather_jvp(primals, tangents, **params):
    operand, indices = primals
    t = tangents[0]
    out = gather_p.bind(operand, indices, **params)
    if type(t) is Zero:
        return out, Zero(core.get_aval(out))
    # The fill value is a constant: its tangent is zero.
    tparams = dict(params, fill_value=0 if params["mode"] is GatherScatterMode.FILL_OR_DROP else None)
    return out, gather_p.bind(t, indices, **tparams)


ad.primitive_jvps[gather_p] = _gather_jvp


def _gather_transpose(ct, operand, indices, *, dimension_numbers, slice_sizes, indices_are_sorted, unique_indices,
                      mode, fill_value):
    if ad.is_undefined_primal(indices):
        raise NotImplementedError("gather is not linear in its indices")
    if type(ct) is Zero or not ad.is_undefined_primal(operand):
        return [None, None]
    zeros = _zeros(operand.aval)
    out = scatter_add_p.bind(zeros, indices, ct, dimension_numbers=scatter_dnums_of_gather(dimension_numbers),
                             indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode)
    return [out, None]


ad.primitive_transposes[gather_p] = _gather_transpose


def _gather_batch_rule(vals, dims, *, dimension_numbers, slice_sizes, **params):
    operand, indices = vals
    d_op, d_idx = dims
    size = _batch_size(vals, dims)
    dn = dimension_numbers
    if d_idx is None:
        # The batch dim becomes a full-size window dim; it is the first operand window dim, hence output dim 0.
        operand = batching.moveaxis(operand, d_op, 0, size)
        new = GatherDimensionNumbers((0,) + _shift(dn.offset_dims), _shift(dn.collapsed_slice_dims),
                                     _shift(dn.start_index_map), _shift(dn.operand_batching_dims),
                                     dn.start_indices_batching_dims)
        return gather_p.bind(operand, indices, dimension_numbers=new, slice_sizes=(size,) + tuple(slice_sizes),
                             **params), 0
    indices = batching.moveaxis(indices, d_idx, 0, size)
    if d_op is None:
        # A new leading batch dim of the indices becomes the first (non-offset) output dim.
        new = GatherDimensionNumbers(_shift(dn.offset_dims), dn.collapsed_slice_dims, dn.start_index_map,
                                     dn.operand_batching_dims, _shift(dn.start_indices_batching_dims))
        return gather_p.bind(operand, indices, dimension_numbers=new, slice_sizes=tuple(slice_sizes), **params), 0
    operand = batching.moveaxis(operand, d_op, 0, size)
    new = GatherDimensionNumbers(_shift(dn.offset_dims), _shift(dn.collapsed_slice_dims), _shift(dn.start_index_map),
                                 (0,) + _shift(dn.operand_batching_dims),
                                 (0,) + _shift(dn.start_indices_batching_dims))
    # (A batching dim's slice size is 1, or 0 for an empty batch.)
    return gather_p.bind(operand, indices, dimension_numbers=new, slice_sizes=(min(size, 1),) + tuple(slice_sizes),
                         **params), 0


batching.primitive_batchers[gather_p] = _gather_batch_rule


# --------------------------------------------------------------------------------------------------------------
# The scatter family (scatter_add, scatter, scatter_mul, scatter_min, scatter_max) and scatter_apply
# --------------------------------------------------------------------------------------------------------------

def _scatter_abstract_eval(operand, indices, updates, *, dimension_numbers, indices_are_sorted=False,
                        unique_indices=False, mode=None, **_):
    dn = dimension_numbers
    name = "scatter"
    _check_indices(name, indices, len(dn.scatter_dims_to_operand_dims))
    if updates.dtype != operand.dtype:
        raise TypeError(f"scatter: updates dtype {updates.dtype.name} must equal the operand dtype "
                        f"{operand.dtype.name}")
    _check_dims(name, "update_window_dims", dn.update_window_dims, updates.ndim, sorted_required=True)
    _check_dims(name, "inserted_window_dims", dn.inserted_window_dims, operand.ndim, sorted_required=True)
    _check_dims(name, "scatter_dims_to_operand_dims", dn.scatter_dims_to_operand_dims, operand.ndim)
    _check_batching(name, operand, indices, dn.operand_batching_dims, dn.scatter_indices_batching_dims,
                    dn.inserted_window_dims, dn.scatter_dims_to_operand_dims)
    window = [d for d in range(operand.ndim)
              if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims]
    if len(window) != len(dn.update_window_dims):
        raise TypeError(f"scatter: update_window_dims {dn.update_window_dims} must have one entry per operand "
                        f"dimension that is neither inserted {dn.inserted_window_dims} nor batching "
                        f"{dn.operand_batching_dims} (operand shape {operand.shape})")
    scatter_axes = [i for i in range(updates.ndim) if i not in dn.update_window_dims]
    if tuple(updates.shape[i] for i in scatter_axes) != indices.shape[:-1]:
        raise TypeError(f"scatter: the scatter dims of updates (shape {updates.shape}, window dims "
                        f"{dn.update_window_dims}) must match the batch dims of indices {indices.shape[:-1]}")
    for d, u in zip(window, dn.update_window_dims):
        if updates.shape[u] > operand.shape[d]:
            raise TypeError(f"scatter: update window dim {u} (size {updates.shape[u]}) is larger than operand "
                            f"dimension {d} (size {operand.shape[d]})")
    return ShapedArray(operand.shape, operand.dtype)


def _scatter_batch_rule(prim):
    def rule(vals, dims, *, dimension_numbers, **params):
        operand, indices, updates = vals
        d_op, d_idx, d_upd = dims
        size = _batch_size(vals, dims)
        dn = dimension_numbers
        operand = batching.moveaxis(operand, d_op, 0, size)
        updates = batching.moveaxis(updates, d_upd, 0, size)
        if d_idx is None:
            # Shared indices: the batch dim is an extra full-size window (operand dim 0 <-> updates dim 0).
            new = ScatterDimensionNumbers((0,) + _shift(dn.update_window_dims), _shift(dn.inserted_window_dims),
                                          _shift(dn.scatter_dims_to_operand_dims), _shift(dn.operand_batching_dims),
                                          dn.scatter_indices_batching_dims)
        else:
            # Per-example indices: a batching dim pairing operand dim 0, indices dim 0 and updates dim 0.
            indices = batching.moveaxis(indices, d_idx, 0, size)
            new = ScatterDimensionNumbers(_shift(dn.update_window_dims), _shift(dn.inserted_window_dims),
                                          _shift(dn.scatter_dims_to_operand_dims),
                                          (0,) + _shift(dn.operand_batching_dims),
                                          (0,) + _shift(dn.scatter_indices_batching_dims))
        return prim.bind(operand, indices, updates, dimension_numbers=new, **params), 0
    return rule


def _scatter_primitive(name):
    """Creates a scatter-family primitive with the shared shape/dtype rule and batching rule."""
    prim = standard_primitive(name, _scatter_abstract_eval, weak_type="first")
    batching.primitive_batchers[prim] = _scatter_batch_rule(prim)
    return prim


def _scatter_bind(prim, operand, scatter_indices, updates, dimension_numbers, indices_are_sorted, unique_indices,
                  mode):
    operand = st._as_array(operand)
    (updates,) = ew._lift_scalars(updates) if not isinstance(updates, (core.Array, core.Tracer)) else (updates,)
    u_aval, o_aval = core.get_aval(updates), core.get_aval(operand)
    if u_aval.dtype != o_aval.dtype and u_aval.weak_type:
        updates = ew.convert_element_type(updates, o_aval.dtype)
    scatter_indices = st._as_array(scatter_indices)
    params = dict(dimension_numbers=_canon_scatter_dnums(dimension_numbers),
                  indices_are_sorted=bool(indices_are_sorted), unique_indices=bool(unique_indices),
                  mode=GatherScatterMode.from_any(mode))
    # Validate here too: the eager path runs the NumPy implementation without abstract evaluation.
    _scatter_abstract_eval(o_aval, core.get_aval(scatter_indices), core.get_aval(updates), **params)
    return prim.bind(operand, scatter_indices, updates, **params)


def _scatter_doc(verb: str) -> str:
    return f"""Scatters `updates` into a copy of `operand` at `scatter_indices`, {verb}.

    Args:
      operand: the array to update.
      scatter_indices: integer array whose last dimension is the index vector.
      updates: array of operand's dtype with the scatter dims of `scatter_indices` and the window dims.
      dimension_numbers: a `ScatterDimensionNumbers`.
      indices_are_sorted, unique_indices: hints; `unique_indices=True` promises no position is written twice.
      mode: out-of-bounds handling (None means FILL_OR_DROP: out-of-bounds windows are dropped).

    Returns:
      An array of operand's shape and dtype.

    Raises:
      TypeError: inconsistent dimension numbers, dtypes or shapes.
    """


scatter_add_p = _scatter_primitive("scatter-add")


def scatter_add(operand, scatter_indices, updates, dimension_numbers: ScatterDimensionNumbers, *,
                indices_are_sorted: bool = False, unique_indices: bool = False, mode=None):
    return _scatter_bind(scatter_add_p, operand, scatter_indices, updates, dimension_numbers, indices_are_sorted,
                         unique_indices, mode)


scatter_add.__doc__ = _scatter_doc("adding (repeated indices accumulate)")


def scatter_sub(operand, scatter_indices, updates, dimension_numbers: ScatterDimensionNumbers, *,
                indices_are_sorted: bool = False, unique_indices: bool = False, mode=None):
    (updates,) = ew._lift_scalars(updates) if not isinstance(updates, (core.Array, core.Tracer)) else (updates,)
    return scatter_add(operand, scatter_indices, ew.neg(updates), dimension_numbers,
                       indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode)


scatter_sub.__doc__ = _scatter_doc("subtracting (repeated indices accumulate)")


def _scatter_add_jvp(primals, tangents, **params):
    operand, indices, updates = primals
    t_op, _, t_upd = tangents
    out = scatter_add_p.bind(operand, indices, updates, **params)
    if type(t_op) is Zero and type(t_upd) is Zero:
        return out, Zero(core.get_aval(out))
    if type(t_upd) is Zero:
        return out, t_op
    return out, scatter_add_p.bind(ad.instantiate_zeros(t_op), indices, t_upd, **params)


ad.primitive_jvps[scatter_add_p] = _scatter_add_jvp


def _scatter_add_transpose(ct, operand, indices, updates, *, dimension_numbers, indices_are_sorted,
                           unique_indices, mode):
    if ad.is_undefined_primal(indices):
        raise NotImplementedError("scatter_add is not linear in its indices")
    if type(ct) is Zero:
        return [None, None, None]
    ct_op = ct if ad.is_undefined_primal(operand) else None
    ct_upd = None
    if ad.is_undefined_primal(updates):
        ct_upd = _gather_windows(ct, indices, updates.aval.shape, dimension_numbers, mode, indices_are_sorted,
                                 unique_indices)
    return [ct_op, None, ct_upd]


ad.primitive_transposes[scatter_add_p] = _scatter_add_transpose

scatter_p = _scatter_primitive("scatter")


def scatter(operand, scatter_indices, updates, dimension_numbers: ScatterDimensionNumbers, *,
            indices_are_sorted: bool = False, unique_indices: bool = False, mode=None):
    return _scatter_bind(scatter_p, operand, scatter_indices, updates, dimension_numbers, indices_are_sorted,
                         unique_indices, mode)


scatter.__doc__ = _scatter_doc("overwriting (with repeated indices the last update wins on this backend)")


def _scatter_jvp(primals, tangents, *, dimension_numbers, indices_are_sorted, unique_indices, mode):
    operand, indices, updates = primals
    t_op, _, t_upd = tangents
    params = dict(dimension_numbers=dimension_numbers, indices_are_sorted=indices_are_sorted,
                  unique_indices=unique_indices, mode=mode)
    out = scatter_p.bind(operand, indices, updates, **params)
    if type(t_op) is Zero and type(t_upd) is Zero:
        return out, Zero(core.get_aval(out))
    if unique_indices:
        # With unique indices scatter is linear in (operand, updates) jointly.
        return out, scatter_p.bind(ad.instantiate_zeros(t_op), indices, ad.instantiate_zeros(t_upd), **params)
    # Repeated indices: number the updates' scatter positions 1..n and scatter those ids; an update element wins
    # its target position iff reading the ids back gives its own id. Operand positions keep their tangent iff no
    # update wrote them (id 0).
    u_shape = core.get_aval(updates).shape
    scatter_axes = [i for i in range(len(u_shape)) if i not in dimension_numbers.update_window_dims]
    n = int(np.prod([u_shape[i] for i in scatter_axes], dtype=np.int64))
    ids = st.reshape(ew.add(st.iota(np.int32, n), np.int32(1)), [u_shape[i] for i in scatter_axes])
    ids = st.broadcast_in_dim(ids, u_shape, tuple(scatter_axes))
    written = scatter_p.bind(_zeros(core.get_aval(operand), np.int32), indices, ids, **params)
    winners = ew.eq(_gather_windows(written, indices, u_shape, dimension_numbers, mode), ids)
    kept = ew.eq(written, np.int32(0))
    t_out = Zero(core.get_aval(out))
    if type(t_op) is not Zero:
        t_out = ew.select_n(kept, _zeros(t_op), t_op)
    if type(t_upd) is not Zero:
        contrib = ew.select_n(winners, _zeros(t_upd), t_upd)
        t_out = ad.add_tangents(t_out, scatter_add_p.bind(_zeros(core.get_aval(out)), indices, contrib, **params))
    return out, t_out


ad.primitive_jvps[scatter_p] = _scatter_jvp


def _scatter_transpose(ct, operand, indices, updates, *, dimension_numbers, indices_are_sorted, unique_indices,
                       mode):
    if not unique_indices:
        raise NotImplementedError("scatter transpose is only implemented for unique_indices=True (the JVP of a "
                                  "scatter with repeated indices is expressed with scatter_add instead)")
    if type(ct) is Zero:
        return [None, None, None]
    res = [None, None, None]
    u_aval = updates.aval if ad.is_undefined_primal(updates) else core.get_aval(updates)
    if ad.is_undefined_primal(operand):
        res[0] = scatter_p.bind(ct, indices, _zeros(u_aval), dimension_numbers=dimension_numbers,
                                indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode)
    if ad.is_undefined_primal(updates):
        res[2] = _gather_windows(ct, indices, u_aval.shape, dimension_numbers, mode, indices_are_sorted,
                                 unique_indices)
    return res


ad.primitive_transposes[scatter_p] = _scatter_transpose

scatter_mul_p = _scatter_primitive("scatter-mul")


def scatter_mul(operand, scatter_indices, updates, dimension_numbers: ScatterDimensionNumbers, *,
                indices_are_sorted: bool = False, unique_indices: bool = False, mode=None):
    return _scatter_bind(scatter_mul_p, operand, scatter_indices, updates, dimension_numbers, indices_are_sorted,
                         unique_indices, mode)


scatter_mul.__doc__ = _scatter_doc("multiplying (repeated indices accumulate)")


def _scatter_mul_jvp(primals, tangents, *, dimension_numbers, indices_are_sorted, unique_indices, mode):
    operand, indices, updates = primals
    t_op, _, t_upd = tangents
    params = dict(dimension_numbers=dimension_numbers, indices_are_sorted=indices_are_sorted,
                  unique_indices=unique_indices, mode=mode)
    out = scatter_mul_p.bind(operand, indices, updates, **params)
    t_out = Zero(core.get_aval(out))
    if type(t_op) is not Zero:
        t_out = scatter_mul_p.bind(t_op, indices, updates, **params)
    if type(t_upd) is not Zero:
        u_shape = core.get_aval(updates).shape
        if unique_indices:
            at_targets = _gather_windows(operand, indices, u_shape, dimension_numbers, mode)
            t_out = ad.add_tangents(t_out, scatter_add_p.bind(_zeros(core.get_aval(out)), indices,
                                                              ew.mul(t_upd, at_targets), **params))
        else:
            others = _product_of_others(updates, indices, core.get_aval(operand), dimension_numbers, params)
            summed = scatter_add_p.bind(_zeros(core.get_aval(out)), indices, ew.mul(t_upd, others), **params)
            t_out = ad.add_tangents(t_out, ew.mul(operand, summed))
    return out, t_out


ad.primitive_jvps[scatter_mul_p] = _scatter_mul_jvp


def _product_of_others(updates, indices, operand_aval, dn, params):
    """For each update element, the product of the *other* updates scattered to the same position.

    Computed without dividing by zero: with Z zeros among a position's updates and P the product of its nonzero
    ones, the others' product of a nonzero update u is P / u if Z == 0 (else 0), and of a zero update is P if
    Z == 1 (else 0). (JAX only differentiates scatter_mul's updates for unique indices.) The value is exact
    everywhere; its own derivative (a second derivative of scatter_mul) is exact only away from exact zeros.
    """
    dt = operand_aval.dtype
    u_shape = core.get_aval(updates).shape
    zero, one = st.full(u_shape, 0, dt), st.full(u_shape, 1, dt)
    is_zero = ew.eq(updates, zero)
    nonzero = ew.select_n(is_zero, updates, one)
    prod_nz = scatter_mul_p.bind(st.full(operand_aval.shape, 1, dt), indices, nonzero, **params)
    n_zero = scatter_add_p.bind(_zeros(operand_aval), indices, ew.convert_element_type(is_zero, dt), **params)
    prod_nz = _gather_windows(prod_nz, indices, u_shape, dn, params["mode"])
    n_zero = _gather_windows(n_zero, indices, u_shape, dn, params["mode"])
    if_nonzero = ew.select_n(ew.eq(n_zero, zero), zero, ew.div(prod_nz, nonzero))
    if_zero = ew.select_n(ew.eq(n_zero, one), zero, prod_nz)
    return ew.select_n(is_zero, if_nonzero, if_zero)


def _scatter_mul_transpose(ct, operand, indices, updates, *, dimension_numbers, indices_are_sorted,
                           unique_indices, mode):
    if ad.is_undefined_primal(updates) or ad.is_undefined_primal(indices):
        raise NotImplementedError("scatter_mul is linear only in its operand")
    if type(ct) is Zero:
        return [None, None, None]
    # Multiplying each position by the product of its updates is a diagonal map, hence self-adjoint.
    return [scatter_mul_p.bind(ct, indices, updates, dimension_numbers=dimension_numbers,
                               indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode),
            None, None]


ad.primitive_transposes[scatter_mul_p] = _scatter_mul_transpose


def _scatter_extremal_jvp(prim):
    def jvp(primals, tangents, *, dimension_numbers, indices_are_sorted, unique_indices, mode):
        operand, indices, updates = primals
        t_op, _, t_upd = tangents
        params = dict(dimension_numbers=dimension_numbers, indices_are_sorted=indices_are_sorted,
                      unique_indices=unique_indices, mode=mode)
        out = prim.bind(operand, indices, updates, **params)
        out_aval = core.get_aval(out)
        if type(t_op) is Zero and type(t_upd) is Zero:
            return out, Zero(out_aval)
        dt = out_aval.dtype
        u_shape = core.get_aval(updates).shape
        # Every contributor equal to the result shares the tangent evenly (operand and tied updates alike).
        op_won = ew.convert_element_type(ew.eq(operand, out), dt)
        upd_won = ew.convert_element_type(
            ew.eq(updates, _gather_windows(out, indices, u_shape, dimension_numbers, mode)), dt)
        count = ew.add(op_won, scatter_add_p.bind(_zeros(out_aval), indices, upd_won, **params))
        count = ew.max(count, st.full(out_aval.shape, 1, dt))
        total = Zero(out_aval)
        if type(t_op) is not Zero:
            total = ew.mul(t_op, op_won)
        if type(t_upd) is not Zero:
            total = ad.add_tangents(total, scatter_add_p.bind(_zeros(out_aval), indices, ew.mul(t_upd, upd_won),
                                                              **params))
        return out, ew.div(total, count)
    return jvp


scatter_min_p = _scatter_primitive("scatter-min")


def scatter_min(operand, scatter_indices, updates, dimension_numbers: ScatterDimensionNumbers, *,
                indices_are_sorted: bool = False, unique_indices: bool = False, mode=None):
    return _scatter_bind(scatter_min_p, operand, scatter_indices, updates, dimension_numbers, indices_are_sorted,
                         unique_indices, mode)


scatter_min.__doc__ = _scatter_doc("taking the minimum")


ad.primitive_jvps[scatter_min_p] = _scatter_extremal_jvp(scatter_min_p)

scatter_max_p = _scatter_primitive("scatter-max")


def scatter_max(operand, scatter_indices, updates, dimension_numbers: ScatterDimensionNumbers, *,
                indices_are_sorted: bool = False, unique_indices: bool = False, mode=None):
    return _scatter_bind(scatter_max_p, operand, scatter_indices, updates, dimension_numbers, indices_are_sorted,
                         unique_indices, mode)


scatter_max.__doc__ = _scatter_doc("taking the maximum")


ad.primitive_jvps[scatter_max_p] = _scatter_extremal_jvp(scatter_max_p)


def scatter_apply(operand, scatter_indices, func: Callable, dimension_numbers: ScatterDimensionNumbers, *,
                  update_shape: Sequence[int] = (), indices_are_sorted: bool = False, unique_indices: bool = False,
                  mode=None):
    """Applies the elementwise `func` to `operand` at the positions `scatter_indices` selects.

    A position selected k times gets `func` applied k times (as XLA does). With concrete indices (or
    `unique_indices=True`) this unrolls into differentiable selects; with traced, possibly repeated indices it runs a
    `while_loop` up to the largest multiplicity (forward-mode differentiable only).

    Args:
      operand: the array to update.
      scatter_indices: integer array whose last dimension is the index vector.
      func: elementwise unary function of arrays.
      dimension_numbers: a `ScatterDimensionNumbers`.
      update_shape: the shape of the (implicit) updates.
      indices_are_sorted, unique_indices, mode: as for `scatter`.

    Returns:
      An array of operand's shape and dtype.
    """
    operand = st._as_array(operand)
    counts = scatter_add(st.full(core.get_aval(operand).shape, 0, np.int32), scatter_indices,
                         st.full(tuple(update_shape), 1, np.int32), dimension_numbers,
                         indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode)
    concrete = core.concrete_value(counts)
    if concrete is None and not unique_indices:
        from .control_flow import while_loop
        from .reductions import reduce_max
        most = reduce_max(counts, tuple(range(core.get_aval(counts).ndim))) if core.get_aval(counts).ndim \
            else counts

        def body(carry):
            r, x = carry
            return ew.add(r, np.int32(1)), ew.select_n(ew.gt(counts, r), x, func(x))

        return while_loop(lambda carry: ew.lt(carry[0], most), body, (np.int32(0), operand))[1]
    repeats = 1 if concrete is None or np.size(concrete) == 0 else max(int(np.max(concrete)), 1)
    out = operand
    for r in range(repeats):
        out = ew.select_n(ew.gt(counts, np.int32(r)), out, func(out))
    return out


# --------------------------------------------------------------------------------------------------------------
# Helpers for other modules: per-example dynamic slices and take-along-axis
# --------------------------------------------------------------------------------------------------------------

def _start_index_matrix(starts: Sequence[Any], dstarts: Sequence[int | None], size: int):
    """Stacks scalar start indices (each batched along `dstarts` or not) into a (size, len(starts)) int array."""
    dts = [core.get_aval(s).dtype for s in starts]
    dt = dtypes.int64 if any(d.itemsize == 8 for d in dts) and dtypes.x64_enabled() else dtypes.int32
    cols = []
    for s, d in zip(starts, dstarts):
        s = ew.convert_element_type(s, dt)
        cols.append(st.reshape(batching.moveaxis(s, d, 0, size), (size, 1)))
    if not cols:
        return st.full((size, 0), 0, dt)
    return st.concatenate(cols, 1)


def batched_dynamic_slice(x, dx, starts, dstarts, slice_sizes, size):
    """`dynamic_slice` with per-example start indices: the result has the batch dim first.

    Args:
      x: the operand, batched along `dx` (or None: shared by all examples).
      starts: one scalar start index per (unbatched) operand dimension, each batched along `dstarts[i]` or not.
      slice_sizes: the (unbatched) slice sizes.
      size: the batch size.
    """
    x = batching.moveaxis(x, dx, 0, size)
    nd = len(starts)
    idx = _start_index_matrix(starts, dstarts, size)
    dn = GatherDimensionNumbers(offset_dims=tuple(range(1, nd + 1)), collapsed_slice_dims=(),
                                start_index_map=tuple(range(1, nd + 1)), operand_batching_dims=(0,),
                                start_indices_batching_dims=(0,))
    return gather(x, idx, dn, (min(size, 1),) + tuple(slice_sizes), mode=GatherScatterMode.CLIP,
                  indices_are_sorted=True,
                  unique_indices=True)


def batched_dynamic_update_slice(x, dx, upd, du, starts, dstarts, size):
    """`dynamic_update_slice` with per-example start indices (clamped like dynamic_update_slice); batch dim first."""
    x = batching.moveaxis(x, dx, 0, size)
    upd = batching.moveaxis(upd, du, 0, size)
    nd = len(starts)
    idx = _start_index_matrix(starts, dstarts, size)
    dn = ScatterDimensionNumbers(update_window_dims=tuple(range(1, nd + 1)), inserted_window_dims=(),
                                 scatter_dims_to_operand_dims=tuple(range(1, nd + 1)), operand_batching_dims=(0,),
                                 scatter_indices_batching_dims=(0,))
    return scatter(x, idx, upd, dn, mode=GatherScatterMode.CLIP, indices_are_sorted=True, unique_indices=True)


def take_along_axis(x, indices, axis: int, mode=GatherScatterMode.PROMISE_IN_BOUNDS, fill_value=None):
    """`x[..., indices, ...]` along `axis` with `indices` of x's shape except along `axis` (no broadcasting).

    Indices are used as given (no negative wrapping). Used by the sort/top_k JVPs and `jnp.take_along_axis`.
    """
    x_aval, i_aval = core.get_aval(x), core.get_aval(indices)
    nd = x_aval.ndim
    others = tuple(d for d in range(nd) if d != axis)
    dn = GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(axis,), start_index_map=(axis,),
                                operand_batching_dims=others, start_indices_batching_dims=others)
    idx = st.reshape(indices, i_aval.shape + (1,))
    return gather(x, idx, dn, (1,) * nd, mode=mode, fill_value=fill_value)
