"""NumPy-style indexing for `fluxion.numpy`: `x[idx]`, `x.at[idx].set/add/...`, and the index-producing functions.

(Sorting and searching -- `sort`, `argsort`, `lexsort`, `searchsorted`, `digitize`, `nonzero`, `flatnonzero`,
`argwhere`, `compress`, `extract` -- live in `numpy/sorting.py`.)

`getitem` implements NumPy's basic, advanced and boolean indexing (https://numpy.org/doc/stable/user/basics.indexing.html)
with JAX's choices where they differ:

* Static integers and slices lower to `lax.slice` / `lax.rev` / `reshape` (cheap); a traced scalar integer lowers to
  `dynamic_slice`; integer arrays lower to one `gather`.
* Out-of-bounds indices are clamped when reading (so `x[10]` of a length-3 `x` is `x[2]`), unless `mode='fill'`
  (then the fill value is returned); negative indices wrap once, as in NumPy.
* Boolean masks need a concrete value (their result shape depends on it): under `jit` they raise
  `NonConcreteBooleanIndexError`; use `jnp.where(mask, x, other)` or `jnp.nonzero(mask, size=...)` instead.

`x.at[idx].op(y)` lowers to one scatter (out-of-bounds updates are dropped by default, `mode='drop'`, as in JAX):
* a static box (step-1 slices and in-bounds integers) uses `dynamic_update_slice`;
* integer-array indices with otherwise full slices scatter windows into `x` directly (the gather's dimension
  numbers turned around);
* anything else (strided or partial slices mixed with arrays) reads the flat positions `idx` selects by indexing an
  iota with the same machinery, then scatters elementwise into the flattened `x`.
"""

from __future__ import annotations

import operator
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from ..staged_call import staged_as_call
from .. import core, dtypes, errors
from ..core import Array, Tracer
from ..lax import elementwise as ew
from ..lax import indexing as lind
from ..lax import structural as st
from ..lax.indexing import GatherScatterMode
from . import dslice
from .util import asarray_arg, broadcast_shapes, broadcast_to_shape, canonicalize_axis, promote_dtypes

# --------------------------------------------------------------------------------------------------------------
# Parsing an index into per-dimension entries
# --------------------------------------------------------------------------------------------------------------

class _Entry(NamedTuple):
    """One element of an expanded index.

    kind: 'slice' (start, count, step; static), 'int' (static Python int as written), 'dyn' (traced scalar),
      'arr' (integer array), 'new' (None), 'empty' (the new axis of a False scalar index), 'sep' (an Ellipsis:
      consumes nothing but separates advanced indices, as in NumPy).
    dim: the operand dimension consumed (None for 'new', 'empty', 'sep').
    """

    kind: str
    dim: int | None = None
    value: Any = None


def _is_array_like(i) -> bool:
    return isinstance(i, (Array, Tracer, np.ndarray, list))


def _static_int(v, what: str):
    try:
        return None if v is None else operator.index(v)
    except TypeError as e:
        if isinstance(v, Tracer):
            raise IndexError(f"Array slice indices must have static start/stop/step to be used with NumPy indexing "
                             f"syntax; found {what}={v!r}. Use lax.dynamic_slice or lax.dynamic_slice_in_dim for "
                             "slices starting at a traced index.") from None
        raise TypeError(f"slice {what} must be an integer or None, got {v!r}") from e


def _bool_mask_positions(mask, position: int) -> tuple:
    """The integer arrays selecting the True entries of a concrete boolean mask."""
    value = core.concrete_value(mask)
    if value is None:
        raise errors.NonConcreteBooleanIndexError(
            f"Array boolean indices must be concrete; got a traced mask of shape {core.get_aval(mask).str_short()} "
            f"at index position {position}. The shape of x[mask] depends on the mask's values, which are unknown "
            "under jit/vmap. Use jnp.where(mask, x, fill) to keep the shape, or jnp.nonzero(mask, size=n) / "
            "x.at[mask]... with a static size.")
    return tuple(np.nonzero(np.asarray(value)))


def _index_array(i, position: int):
    """Converts an array-like index to (kind, value): a boolean mask, a 0-d integer, or an integer array."""
    if isinstance(i, list):
        try:
            arr = np.asarray(i)
        except ValueError:
            arr = np.asarray(i, dtype=object)
        if arr.dtype == object:
            raise TypeError(f"Using a non-tuple sequence for multidimensional indexing is not allowed; use "
                            f"arr[tuple(seq)] instead of arr[seq] (index {i!r}).")
        if arr.size == 0:
            arr = arr.astype(np.int32)
        i = arr
    dt = core.get_aval(i).dtype if isinstance(i, (Array, Tracer)) else dtypes.canonicalize_dtype(i.dtype)
    if dt == dtypes.bool_:
        return "mask", i
    if not dtypes.is_integer(dt):
        raise TypeError(f"Indexer must have integer or boolean type, got indexer with type {dt.name} at position "
                        f"{position}, indexer value {i!r}")
    return "int_array", i


def _expand(shape: tuple, idx) -> list[_Entry]:
    """Expands `idx` into entries covering every dimension of `shape` (Ellipsis and missing dims -> full slices)."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    raw: list = []
    for pos, i in enumerate(idx):
        if i is None:
            raw.append(("new", None))
        elif i is Ellipsis:
            raw.append(("ellipsis", None))
        elif isinstance(i, slice):
            raw.append(("slice", i))
        elif isinstance(i, (bool, np.bool_)):
            raw.append(("bool", bool(i)))
        elif isinstance(i, (int, np.integer)):
            raw.append(("int", int(i)))
        elif _is_array_like(i) or isinstance(i, np.generic):
            kind, v = _index_array(np.asarray(i) if isinstance(i, np.generic) else i, pos)
            if kind == "mask":
                if core.get_aval(v).ndim == 0:
                    value = core.concrete_value(v)
                    if value is None:
                        _bool_mask_positions(v, pos)  # raises the NonConcreteBooleanIndexError
                    raw.append(("bool", bool(value)))
                else:
                    raw.append(("mask", (v, pos)))
            elif core.get_aval(v).ndim == 0:
                raw.append(("scalar", v))
            else:
                raw.append(("array", v))
        else:
            raise TypeError(f"Indexer must be an integer, slice, None, Ellipsis, or an integer/boolean array; got "
                            f"{i!r} of type {type(i).__name__} at position {pos}")

    consumed = sum(core.get_aval(v[0]).ndim if k == "mask" else 1
                   for k, v in raw if k in ("slice", "int", "scalar", "array", "mask"))
    if consumed > len(shape):
        raise IndexError(f"Too many indices for array: {consumed} non-None/Ellipsis indices for an array of rank "
                         f"{len(shape)} (shape {shape})")
    if sum(k == "ellipsis" for k, _ in raw) > 1:
        raise IndexError("An index can only have a single ellipsis ('...')")
    if not any(k == "ellipsis" for k, _ in raw):
        raw.append(("ellipsis", None))

    entries: list[_Entry] = []
    dim = 0
    for k, v in raw:
        if k == "new":
            entries.append(_Entry("new"))
        elif k == "bool":
            entries.append(_Entry("new" if v else "empty"))
        elif k == "ellipsis":
            n = len(shape) - consumed
            entries.append(_Entry("sep"))
            for _ in range(n):
                entries.append(_Entry("slice", dim, (0, shape[dim], 1)))
                dim += 1
        elif k == "slice":
            start = _static_int(v.start, "start")
            stop = _static_int(v.stop, "stop")
            step = _static_int(v.step, "step")
            if step == 0:
                raise ValueError("slice step cannot be zero")
            s, e, stp = slice(start, stop, step).indices(shape[dim])
            entries.append(_Entry("slice", dim, (s, len(range(s, e, stp)), stp)))
            dim += 1
        elif k == "int":
            if shape[dim] == 0:
                raise IndexError(f"index {v} is out of bounds for axis {dim} with size 0")
            entries.append(_Entry("int", dim, v))
            dim += 1
        elif k == "scalar":
            entries.append(_Entry("dyn", dim, v))
            dim += 1
        elif k == "array":
            entries.append(_Entry("arr", dim, v))
            dim += 1
        else:  # boolean mask over several dims
            mask, pos = v
            mshape = core.get_aval(mask).shape
            if tuple(shape[dim:dim + len(mshape)]) != tuple(mshape):
                raise IndexError(f"boolean index of shape {mshape} at position {pos} does not match the indexed "
                                 f"dimensions {tuple(shape[dim:dim + len(mshape)])} of an array of shape {shape}")
            for p in _bool_mask_positions(mask, pos):
                entries.append(_Entry("arr", dim, p.astype(np.int64)))
                dim += 1
    return entries


# --------------------------------------------------------------------------------------------------------------
# Reading: the core of getitem
# --------------------------------------------------------------------------------------------------------------

def _index_dtype(arrays) -> np.dtype:
    wide = any(core.get_aval(a).dtype.itemsize == 8 for a in arrays if isinstance(a, (Array, Tracer)))
    return dtypes.int64 if wide and dtypes.x64_enabled() else dtypes.int32


def _wrap(v: int, n: int) -> int:
    return v + n if v < 0 else v


def _normalized_index(i, n: int, dt: np.dtype):
    """`i` as an array of dtype `dt` with negative entries wrapped once (i + n), as NumPy does."""
    if isinstance(i, (np.ndarray, np.generic, int)):
        arr = np.asarray(i).astype(np.int64)
        return Array(np.where(arr < 0, arr + n, arr).astype(dt))
    i = ew.convert_element_type(i, dt)
    return ew.select_n(ew.lt(i, np.array(0, dt)), i, ew.add(i, np.array(n, dt)))


def _apply_static(x, entries: list[_Entry], int_mode: str):
    """Applies slices (and, if int_mode == 'slice', static integers) with one slice + rev; dims are kept."""
    shape = core.get_aval(x).shape
    starts, limits, strides, flips = [0] * len(shape), list(shape), [1] * len(shape), []
    for e in entries:
        if e.kind == "slice":
            start, count, step = e.value
            if count == 0:
                starts[e.dim], limits[e.dim] = 0, 0
            elif step > 0:
                starts[e.dim], limits[e.dim], strides[e.dim] = start, start + (count - 1) * step + 1, step
            else:
                last = start + (count - 1) * step
                starts[e.dim], limits[e.dim], strides[e.dim] = last, start + 1, -step
                flips.append(e.dim)
        elif e.kind == "int" and int_mode == "slice":
            # Out-of-bounds reads clamp, as JAX's gathers do.
            v = min(max(_wrap(e.value, shape[e.dim]), 0), shape[e.dim] - 1)
            starts[e.dim], limits[e.dim] = v, v + 1
    if starts != [0] * len(shape) or limits != list(shape) or strides != [1] * len(shape):
        x = st.slice(x, starts, limits, strides)
    if flips:
        x = st.rev(x, flips)
    return x


def _output_shape(entries: list[_Entry], sizes: dict, adv_shape: tuple | None, adv_first: bool
                  ) -> tuple[tuple, list[int]]:
    """The shape after indexing (slices keep their sliced size, None adds 1, advanced indices add `adv_shape`),
    and the positions of the axes a False scalar index empties."""
    out: list[int] = []
    empties: list[int] = []
    if adv_shape is not None and adv_first:
        out.extend(adv_shape)
    placed = adv_first
    for e in entries:
        if e.kind == "slice":
            out.append(sizes[e.dim])
        elif e.kind in ("new", "empty"):
            if e.kind == "empty":
                empties.append(len(out))
            out.append(1)
        elif e.kind in ("int", "dyn", "arr") and adv_shape is not None and not placed:
            out.extend(adv_shape)
            placed = True
    return tuple(out), empties


def _finish_new_axes(y, shape_and_empties: tuple[tuple, list[int]]):
    shape, empties = shape_and_empties
    y = st.reshape(y, shape)
    if empties:
        # A False scalar index adds an axis of length 0.
        limits = list(shape)
        for i in empties:
            limits[i] = 0
        y = st.slice(y, [0] * len(shape), limits)
    return y


def _is_advanced(e: _Entry, any_arrays: bool) -> bool:
    return e.kind == "arr" or (any_arrays and e.kind in ("int", "dyn"))


def _rewriting_take(x, idx, *, mode=None, fill_value=None, indices_are_sorted=False, unique_indices=False):
    """Indexes `x` by the NumPy index `idx` (the implementation of `x[idx]` and `x.at[idx].get()`)."""
    x = asarray_arg(x, "indexing")
    if dslice.has_slice(idx):
        return dslice.take(x, idx, lambda w, rest: _rewriting_take(
            w, rest, mode=mode, fill_value=fill_value, indices_are_sorted=indices_are_sorted,
            unique_indices=unique_indices))
    shape = core.get_aval(x).shape
    entries = _expand(shape, idx)
    mode = GatherScatterMode.PROMISE_IN_BOUNDS if mode is None else GatherScatterMode.from_any(mode)
    fill_mode = mode is GatherScatterMode.FILL_OR_DROP
    if fill_mode:
        # Out-of-bounds integers must reach the gather to be filled: make them (0-d) array indices.
        entries = [_Entry("arr", e.dim, e.value) if (
            e.kind == "dyn" or (e.kind == "int" and not 0 <= _wrap(e.value, shape[e.dim]) < shape[e.dim]))
            else e for e in entries]
    any_arrays = any(e.kind == "arr" for e in entries)

    if not any_arrays:
        y = _apply_static(x, entries, int_mode="slice")
        dyn = [e for e in entries if e.kind == "dyn"]
        if dyn:
            y_shape = core.get_aval(y).shape
            dt = _index_dtype([e.value for e in dyn])
            starts = [np.array(0, dt)] * len(y_shape)
            sizes = list(y_shape)
            for e in dyn:
                starts[e.dim] = _normalized_index(e.value, shape[e.dim], dt)
                sizes[e.dim] = 1
            y = st.dynamic_slice_clamped(y, starts, sizes)
        sizes = dict(enumerate(core.get_aval(y).shape))
        return _finish_new_axes(y, _output_shape(entries, sizes, None, False))

    y = _apply_static(x, entries, int_mode="array")
    plan = _advanced_plan(core.get_aval(y).shape, shape, entries)
    if 0 in plan.final_shape[0]:
        # An empty result needs no gather (as JAX); the gather could not even be formed when an indexed axis
        # of the operand has size 0 (e.g. zeros((2, 0))[:, [0]] or zeros((0, 0, 2))[None, None, [0, 0]]).
        return st.full(plan.final_shape[0], 0, core.get_aval(x).dtype)
    out = lind.gather(y, plan.indices, plan.dnums, plan.slice_sizes, mode=mode, fill_value=fill_value,
                      indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)
    return _finish_new_axes(out, plan.final_shape)


class _AdvancedPlan(NamedTuple):
    """A gather reading x[idx] for advanced `idx` from the statically sliced operand (see `_advanced_plan`)."""

    indices: Any          # int array (*adv_shape, k): one start per advanced entry
    dnums: lind.GatherDimensionNumbers
    slice_sizes: tuple
    final_shape: tuple    # (shape of x[idx], positions of axes a False index empties)


def _advanced_plan(y_shape: tuple, x_shape: tuple, entries: list[_Entry]) -> _AdvancedPlan:
    """Builds the gather for the advanced entries (integer arrays, and integers among them) of `entries`.

    `y_shape` is the operand's shape after static slicing (advanced dims untouched), `x_shape` the original shape
    (negative indices wrap by its sizes).
    """
    adv = [e for e in entries if _is_advanced(e, True)]
    dt = _index_dtype([e.value for e in adv])
    norm = [_normalized_index(e.value, x_shape[e.dim], dt) for e in adv]
    adv_shape = broadcast_shapes(*[core.get_aval(i).shape for i in norm])
    cols = [st.reshape(broadcast_to_shape(i, adv_shape), adv_shape + (1,)) for i in norm]
    indices = st.concatenate(cols, len(adv_shape)) if len(cols) > 1 else cols[0]

    # NumPy rule: advanced indices that are all adjacent keep their place; otherwise their dims go first.
    positions = [k for k, e in enumerate(entries) if _is_advanced(e, True)]
    adjacent = positions == list(range(positions[0], positions[-1] + 1))
    adv_dims = [e.dim for e in adv]
    rest = [d for d in range(len(y_shape)) if d not in adv_dims]
    lead = sum(1 for e in entries[:positions[0]] if e.kind == "slice") if adjacent else 0
    nb = len(adv_shape)
    offset_dims = tuple(range(lead)) + tuple(range(lead + nb, nb + len(rest)))
    dn = lind.GatherDimensionNumbers(offset_dims=offset_dims, collapsed_slice_dims=tuple(sorted(adv_dims)),
                                     start_index_map=tuple(adv_dims))
    slice_sizes = tuple(1 if d in adv_dims else y_shape[d] for d in range(len(y_shape)))
    final = _output_shape(entries, dict(enumerate(y_shape)), adv_shape, not adjacent)
    return _AdvancedPlan(indices, dn, slice_sizes, final)


def getitem(x, idx):
    """`x[idx]` with NumPy semantics (see the module docstring): clamps out-of-bounds reads, as JAX does.

    Raises:
      IndexError: too many indices, a mismatched boolean mask, or traced slice bounds.
      TypeError: a float or otherwise invalid index.
      NonConcreteBooleanIndexError: a boolean mask whose value is not known (under jit/vmap).
    """
    return _rewriting_take(x, idx)


# --------------------------------------------------------------------------------------------------------------
# Updating: x.at[idx]
# --------------------------------------------------------------------------------------------------------------

_FLAT_DNUMS = lind.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                           scatter_dims_to_operand_dims=(0,))


def _box(entries: list[_Entry], shape: tuple, clamp_dyn: bool):
    """(starts, sizes) if the index selects a box with step-1 slices and in-bounds ints (else None)."""
    starts, sizes = [0] * len(shape), list(shape)
    for e in entries:
        if e.kind == "slice":
            start, count, step = e.value
            if step != 1 and count > 1:
                return None
            starts[e.dim], sizes[e.dim] = start if count else 0, count
        elif e.kind == "int":
            v = _wrap(e.value, shape[e.dim])
            if not 0 <= v < shape[e.dim]:
                return None
            starts[e.dim], sizes[e.dim] = v, 1
        elif e.kind == "dyn":
            if not clamp_dyn:
                return None
            dt = _index_dtype([e.value])
            starts[e.dim], sizes[e.dim] = _normalized_index(e.value, shape[e.dim], dt), 1
        elif e.kind in ("arr", "empty"):
            return None
    return starts, sizes


def _cast_updates(x, y, name: str):
    x_aval = core.get_aval(x)
    y = asarray_arg(y, name)
    if core.get_aval(y).dtype != x_aval.dtype or core.get_aval(y).weak_type != x_aval.weak_type:
        y = ew._convert_weak(y, x_aval.dtype, x_aval.weak_type)
    return y


def _broadcast_updates(y, shape: tuple, name: str):
    try:
        return broadcast_to_shape(y, shape)
    except ValueError:
        raise ValueError(f"{name}: cannot broadcast updates of shape {core.get_aval(y).shape} to the indexed shape "
                         f"{shape}") from None


def _scatter_update(x, idx, y, combine: str, *, indices_are_sorted=False, unique_indices=False, mode=None):
    """x.at[idx].<combine>(y) for combine in set/add/mul/min/max."""
    x = asarray_arg(x, f"at[].{combine}")
    if dslice.has_slice(idx):
        return dslice.update(x, idx, lambda w, rest: _scatter_update(
            w, rest, y, combine, indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode))
    shape = core.get_aval(x).shape
    y = _cast_updates(x, y, f"at[].{combine}")
    mode = GatherScatterMode.from_any(mode)
    entries = _expand(shape, idx)
    box = _box(entries, shape, clamp_dyn=mode is GatherScatterMode.CLIP)
    if box is not None:
        starts, sizes = box
        target, _ = _output_shape(entries, {d: sizes[d] for d in range(len(shape))}, None, False)
        upd = st.reshape(_broadcast_updates(y, target, f"at[].{combine}"), sizes)
        if combine != "set":
            current = st.dynamic_slice_clamped(x, starts, sizes)
            upd = {"add": ew.add, "mul": ew.mul, "min": ew.min, "max": ew.max}[combine](current, upd)
        return st.dynamic_update_slice_clamped(x, upd, starts)

    operand, indices, dnums, target, scatter_shape, unique, restore = _scatter_target(
        x, entries, idx, mode, unique_indices, indices_are_sorted)
    upd = st.reshape(_broadcast_updates(y, target, f"at[].{combine}"), scatter_shape)
    prim_fn = {"set": lind.scatter, "add": lind.scatter_add, "mul": lind.scatter_mul, "min": lind.scatter_min,
               "max": lind.scatter_max}[combine]
    out = prim_fn(operand, indices, upd, dnums, indices_are_sorted=indices_are_sorted, unique_indices=unique,
                  mode=_update_mode(mode))
    return restore(out)


def _update_mode(mode: GatherScatterMode) -> GatherScatterMode:
    return GatherScatterMode.CLIP if mode is GatherScatterMode.CLIP else GatherScatterMode.FILL_OR_DROP


def _scatter_target(x, entries: list[_Entry], idx, mode, unique_indices, indices_are_sorted):
    """Where the updates of x.at[idx] go, as (operand, indices, dnums, indexed shape, updates shape, unique,
    restore): scatter `updates` (of the updates shape) into `operand`, then `restore` gives x's shape back.

    If every slice of the index is a full slice, the advanced indices address x directly (one scatter with window
    dims, as for a gather). Otherwise (strided or partial slices mixed with arrays) the flat positions of the
    selected elements are read by indexing an iota with the same machinery, and the scatter is elementwise on the
    flattened x.
    """
    shape = core.get_aval(x).shape
    unique = bool(unique_indices) or not any(e.kind == "arr" for e in entries)
    full = all(e.kind != "slice" or e.value == (0, shape[e.dim], 1) for e in entries)
    indexed = any(e.kind in ("arr", "int", "dyn") for e in entries)
    if full and indexed and not any(e.kind == "empty" for e in entries):
        # Integers become 0-d array indices so that out-of-bounds ones are dropped (or clipped) by the scatter.
        adv = [_Entry("arr", e.dim, e.value) if e.kind in ("int", "dyn") else e for e in entries]
        plan = _advanced_plan(shape, shape, adv)
        scatter_shape = core.abstract_eval_rules[lind.gather_p](
            core.get_aval(x), core.get_aval(plan.indices), dimension_numbers=plan.dnums,
            slice_sizes=plan.slice_sizes).shape
        return (x, plan.indices, lind.scatter_dnums_of_gather(plan.dnums), plan.final_shape[0], scatter_shape,
                unique, lambda out: out)
    positions = _flat_positions(x, idx, mode, unique_indices, indices_are_sorted)
    target = core.get_aval(positions).shape
    flat = st.reshape(x, (int(np.prod(shape, dtype=np.int64)),))
    return (flat, st.reshape(positions, target + (1,)), _FLAT_DNUMS, target, target, unique,
            lambda out: st.reshape(out, shape))


def _flat_positions(x, idx, mode, unique_indices, indices_are_sorted):
    """The flat position of every element `x[idx]` selects (-1 where out of bounds and not clipped)."""
    shape = core.get_aval(x).shape
    size = int(np.prod(shape, dtype=np.int64))
    id_dtype = dtypes.int64 if size >= 2 ** 31 and dtypes.x64_enabled() else dtypes.int32
    ids = st.reshape(st.iota(id_dtype, size), shape)
    return _rewriting_take(ids, idx, mode=_update_mode(mode), fill_value=-1, indices_are_sorted=indices_are_sorted,
                           unique_indices=unique_indices)


def _apply_update(x, idx, func: Callable, *, indices_are_sorted=False, unique_indices=False, mode=None):
    x = asarray_arg(x, "at[].apply")
    if dslice.has_slice(idx):
        return dslice.update(x, idx, lambda w, rest: _apply_update(
            w, rest, func, indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode))
    mode = GatherScatterMode.from_any(mode)
    entries = _expand(core.get_aval(x).shape, idx)
    operand, indices, dnums, _, scatter_shape, unique, restore = _scatter_target(
        x, entries, idx, mode, unique_indices, indices_are_sorted)
    out = lind.scatter_apply(operand, indices, func, dnums, update_shape=scatter_shape,
                             indices_are_sorted=indices_are_sorted, unique_indices=unique, mode=_update_mode(mode))
    return restore(out)


class IndexUpdateRef:
    """`x.at[idx]`: functional updates of the elements `x[idx]` selects (`jax.numpy.ndarray.at`).

    Every method returns a new array. Keyword arguments: `indices_are_sorted` and `unique_indices` (promises that
    can speed things up; a false `unique_indices=True` gives unspecified results), and `mode`: 'drop' (default for
    updates: out-of-bounds updates are ignored), 'clip' (clamp indices), 'fill' (reads: return `fill_value`),
    'promise_in_bounds'.
    """

    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array = array
        self.index = index

    def __repr__(self) -> str:
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

    def get(self, *, indices_are_sorted=False, unique_indices=False, mode=None, fill_value=None, out_sharding=None):
        """x[idx] (out-of-bounds reads clamp, or return `fill_value` with mode='fill')."""
        return _rewriting_take(self.array, self.index, mode=mode, fill_value=fill_value,
                               indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)

    def set(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """x[idx] = values (with repeated indices, the last update wins)."""
        return _scatter_update(self.array, self.index, values, "set", indices_are_sorted=indices_are_sorted,
                               unique_indices=unique_indices, mode=mode)

    def add(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """x[idx] += values (repeated indices accumulate)."""
        return _scatter_update(self.array, self.index, values, "add", indices_are_sorted=indices_are_sorted,
                               unique_indices=unique_indices, mode=mode)

    def subtract(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """x[idx] -= values (repeated indices accumulate)."""
        values = _cast_updates(self.array, values, "at[].subtract")
        return self.add(ew.neg(values), indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                        mode=mode)

    def multiply(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """x[idx] *= values (repeated indices accumulate)."""
        return _scatter_update(self.array, self.index, values, "mul", indices_are_sorted=indices_are_sorted,
                               unique_indices=unique_indices, mode=mode)

    mul = multiply

    def divide(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """x[idx] /= values: x divided by the product of the values scattered to each position."""
        from . import ufuncs
        return ufuncs.divide(self.array, self._scattered_product(values, indices_are_sorted, unique_indices, mode))

    def power(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """x[idx] **= values: x raised to the product of the exponents scattered to each position."""
        from . import ufuncs
        return ufuncs.power(self.array, self._scattered_product(values, indices_are_sorted, unique_indices, mode))

    def _scattered_product(self, values, indices_are_sorted, unique_indices, mode):
        x = asarray_arg(self.array, "at[]")
        aval = core.get_aval(x)
        ones = st.full(aval.shape, 1, aval.dtype)
        return _scatter_update(ones, self.index, values, "mul", indices_are_sorted=indices_are_sorted,
                               unique_indices=unique_indices, mode=mode)

    def min(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """x[idx] = minimum(x[idx], values)."""
        return _scatter_update(self.array, self.index, values, "min", indices_are_sorted=indices_are_sorted,
                               unique_indices=unique_indices, mode=mode)

    def max(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """x[idx] = maximum(x[idx], values)."""
        return _scatter_update(self.array, self.index, values, "max", indices_are_sorted=indices_are_sorted,
                               unique_indices=unique_indices, mode=mode)

    def apply(self, func: Callable, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """x[idx] = func(x[idx]) for an elementwise `func`; a position selected k times gets func applied k
        times (see `lax.scatter_apply`)."""
        return _apply_update(self.array, self.index, func, indices_are_sorted=indices_are_sorted,
                             unique_indices=unique_indices, mode=mode)


class IndexUpdateHelper:
    """The `x.at` property: `x.at[idx]` returns an `IndexUpdateRef`."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, index) -> IndexUpdateRef:
        return IndexUpdateRef(self.array, index)

    def __repr__(self) -> str:
        return f"_IndexUpdateHelper({self.array!r})"


# --------------------------------------------------------------------------------------------------------------
# take / take_along_axis
# --------------------------------------------------------------------------------------------------------------

def _gather_mode(mode, default: str = "fill"):
    mode = default if mode is None else mode
    if mode == "raise":
        raise NotImplementedError("The 'raise' mode is not supported (out-of-bounds checks would need concrete "
                                  "indices); use mode='fill', 'clip', 'wrap' or 'promise_in_bounds'")
    if mode == "wrap":
        return "wrap"
    return GatherScatterMode.from_any(mode)


def _wrap_or_normalize(i, n: int, mode):
    dt = _index_dtype([i])
    i = ew.convert_element_type(asarray_arg(i, "indices"), dt)
    if mode == "wrap":
        if n == 0:
            return i
        r = ew.rem(i, np.array(n, dt))
        return ew.select_n(ew.lt(r, np.array(0, dt)), r, ew.add(r, np.array(n, dt)))
    return _normalized_index(i, n, dt)


@staged_as_call("_take")
def take(a, indices, axis: int | None = None, out=None, mode: str | None = None, unique_indices: bool = False,
         indices_are_sorted: bool = False, fill_value=None):
    """Elements of `a` at `indices` along `axis` (flattened `a` if axis is None).

    Args:
      mode: 'fill' (default: out-of-bounds indices give `fill_value`, NaN for floats), 'clip', 'wrap' or
        'promise_in_bounds'. Negative indices wrap once, except in 'clip' mode (they clamp to 0), as in jnp.

    Returns:
      An array of shape a.shape[:axis] + indices.shape + a.shape[axis+1:].

    Raises:
      TypeError: non-integer indices. IndexError: a non-empty take from an empty axis.
    """
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.take is not supported.")
    a = asarray_arg(a, "take")
    indices = asarray_arg(indices, "take")
    if not dtypes.is_integer(core.get_aval(indices).dtype):
        raise TypeError(f"take: indices must be integers, got dtype {core.get_aval(indices).dtype.name}")
    if axis is None:
        a = st.reshape(a, (core.get_aval(a).size,))
        axis = 0
    shape = core.get_aval(a).shape
    axis = canonicalize_axis(axis, len(shape))
    gmode = _gather_mode(mode)
    n = shape[axis]
    i_shape = core.get_aval(indices).shape
    if n == 0 and int(np.prod(i_shape, dtype=np.int64)) and gmode is not GatherScatterMode.FILL_OR_DROP:
        raise IndexError("Cannot do a non-empty jnp.take() from an empty axis.")
    if gmode is GatherScatterMode.CLIP:
        # jnp.take clamps raw indices in 'clip' mode (-1 reads element 0), unlike the other modes.
        idx = ew.convert_element_type(indices, _index_dtype([indices]))
    else:
        idx = _wrap_or_normalize(indices, n, gmode)
    q = len(i_shape)
    dn = lind.GatherDimensionNumbers(offset_dims=tuple(range(axis)) + tuple(range(axis + q, len(shape) - 1 + q)),
                                     collapsed_slice_dims=(axis,), start_index_map=(axis,))
    slice_sizes = tuple(1 if d == axis else s for d, s in enumerate(shape))
    return lind.gather(a, st.reshape(idx, i_shape + (1,)), dn, slice_sizes,
                       mode=GatherScatterMode.PROMISE_IN_BOUNDS if gmode == "wrap" else gmode,
                       fill_value=fill_value, indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)


def take_along_axis(arr, indices, axis: int | None = -1, mode=None, fill_value=None):
    """`arr` gathered along `axis` at `indices` (same rank as `arr`; other dims broadcast).

    Args:
      mode: 'fill' (default), 'clip', 'wrap' or 'promise_in_bounds'; negative indices wrap once.

    Raises:
      ValueError: ranks differ or the other dimensions do not broadcast.
    """
    arr = asarray_arg(arr, "take_along_axis")
    indices = asarray_arg(indices, "take_along_axis")
    if not dtypes.is_integer(core.get_aval(indices).dtype):
        raise TypeError(f"take_along_axis: indices must be integers, got {core.get_aval(indices).dtype.name}")
    if axis is None:
        if core.get_aval(indices).ndim != 1:
            raise ValueError(f"take_along_axis with axis=None requires 1-d indices, got shape "
                             f"{core.get_aval(indices).shape}")
        arr = st.reshape(arr, (core.get_aval(arr).size,))
        axis = 0
    a_shape, i_shape = core.get_aval(arr).shape, core.get_aval(indices).shape
    if len(a_shape) != len(i_shape):
        raise ValueError(f"take_along_axis: indices and arr must have the same number of dimensions; got shapes "
                         f"{i_shape} and {a_shape}")
    axis = canonicalize_axis(axis, len(a_shape))
    others = [d for d in range(len(a_shape)) if d != axis]
    common = broadcast_shapes(tuple(a_shape[d] for d in others), tuple(i_shape[d] for d in others))
    a_target, i_target = list(common), list(common)
    a_target.insert(axis, a_shape[axis])
    i_target.insert(axis, i_shape[axis])
    arr = broadcast_to_shape(arr, tuple(a_target))
    gmode = _gather_mode(mode)
    idx = broadcast_to_shape(_wrap_or_normalize(indices, a_shape[axis], gmode), tuple(i_target))
    return lind.take_along_axis(arr, idx, axis,
                                mode=GatherScatterMode.PROMISE_IN_BOUNDS if gmode == "wrap" else gmode,
                                fill_value=fill_value)


# --------------------------------------------------------------------------------------------------------------
# Index arrays: ix_, diagonal and triangle indices, (un)ravelling
# --------------------------------------------------------------------------------------------------------------

def _concrete_or_error(x, name: str, hint: str):
    v = core.concrete_value(x)
    if v is None:
        raise errors.ConcretizationTypeError(
            f"{name} requires a concrete argument: its result shape depends on the values of an abstract "
            f"(traced) array of shape {core.get_aval(x).str_short()}. {hint}")
    return np.asarray(v)


def ix_(*args) -> tuple:
    """Open mesh from 1-d sequences: the i-th output has shape 1 everywhere except dimension i."""
    outs = []
    n = len(args)
    for i, a in enumerate(args):
        a = asarray_arg(a, "ix_")
        aval = core.get_aval(a)
        if aval.ndim != 1:
            raise ValueError(f"Cross index must be 1 dimensional, got shape {aval.shape} for argument {i}")
        if aval.dtype == dtypes.bool_:
            from .sorting import nonzero  # (sorting imports this module)
            (a,) = nonzero(a)
        shape = [1] * n
        shape[i] = core.get_aval(a).shape[0]
        outs.append(st.reshape(a, shape))
    return tuple(outs)


def diag_indices(n: int, ndim: int = 2) -> tuple:
    """Indices of the main diagonal of an n x ... x n array of rank `ndim`."""
    if n < 0 or ndim < 0:
        raise ValueError(f"diag_indices: n ({n}) and ndim ({ndim}) must be non-negative")
    i = st.iota(dtypes.default_int_dtype(), int(n))
    return (i,) * int(ndim)


def diag_indices_from(arr) -> tuple:
    """`diag_indices` for a square array `arr` of rank >= 2."""
    shape = core.get_aval(asarray_arg(arr, "diag_indices_from")).shape
    if len(shape) < 2 or len(set(shape)) != 1:
        raise ValueError(f"diag_indices_from requires an array of rank >= 2 with equal dimensions, got {shape}")
    return diag_indices(shape[0], len(shape))


def _static_indices(fn, *args) -> tuple:
    return tuple(Array(p.astype(dtypes.default_int_dtype())) for p in fn(*args))


def tril_indices(n: int, k: int = 0, m: int | None = None) -> tuple:
    """The (row, column) indices of the lower triangle of an `n` x `m` matrix: entries with `col <= row + k`.

    Args:
        n: the number of rows.
        k: the diagonal offset.
        m: the number of columns (default `n`).

    Returns:
        A pair of 1-d int32 arrays, in row-major order.

    >>> import fluxion.numpy as jnp
    >>> jnp.tril_indices(3)
    (Array([0, 1, 1, 2, 2, 2], dtype=int32), Array([0, 0, 1, 0, 1, 2], dtype=int32))
    """
    return _static_indices(np.tril_indices, int(n), int(k), None if m is None else int(m))


def triu_indices(n: int, k: int = 0, m: int | None = None) -> tuple:
    """The (row, column) indices of the upper triangle of an `n` x `m` matrix: entries with `col >= row + k`.

    Args:
        n: the number of rows.
        k: the diagonal offset.
        m: the number of columns (default `n`).

    Returns:
        A pair of 1-d int32 arrays, in row-major order.

    >>> import fluxion.numpy as jnp
    >>> jnp.triu_indices(3, k=1)
    (Array([0, 0, 1], dtype=int32), Array([1, 2, 2], dtype=int32))
    """
    return _static_indices(np.triu_indices, int(n), int(k), None if m is None else int(m))


def tril_indices_from(arr, k: int = 0) -> tuple:
    """`tril_indices` for the shape of the 2-d array `arr`.

    Args:
        arr: a 2-d array-like (only its shape is used, so it may be traced).
        k: the diagonal offset.

    Returns:
        A pair of 1-d int32 arrays.

    Raises:
        ValueError: if `arr` is not 2-d.

    >>> import fluxion.numpy as jnp
    >>> x = jnp.arange(6).reshape(2, 3)
    >>> rows, cols = jnp.tril_indices_from(x)
    >>> x[rows, cols]
    Array([0, 3, 4], dtype=int32)
    """
    shape = core.get_aval(asarray_arg(arr, "tril_indices_from")).shape
    if len(shape) != 2:
        raise ValueError(f"tril_indices_from requires a 2-d array, got shape {shape}")
    return tril_indices(shape[0], k, shape[1])


def triu_indices_from(arr, k: int = 0) -> tuple:
    """`triu_indices` for the shape of the 2-d array `arr`.

    Args:
        arr: a 2-d array-like (only its shape is used, so it may be traced).
        k: the diagonal offset.

    Returns:
        A pair of 1-d int32 arrays.

    Raises:
        ValueError: if `arr` is not 2-d.

    >>> import fluxion.numpy as jnp
    >>> x = jnp.arange(6).reshape(2, 3)
    >>> rows, cols = jnp.triu_indices_from(x, k=1)
    >>> x[rows, cols]
    Array([1, 2, 5], dtype=int32)
    """
    shape = core.get_aval(asarray_arg(arr, "triu_indices_from")).shape
    if len(shape) != 2:
        raise ValueError(f"triu_indices_from requires a 2-d array, got shape {shape}")
    return triu_indices(shape[0], k, shape[1])


def unravel_index(indices, shape: Sequence[int]) -> tuple:
    """Converts flat indices into a tuple of coordinate arrays for `shape` (C order).

    Unlike NumPy, negative indices wrap once and out-of-bounds indices are clipped (JAX's documented behavior).
    """
    indices = asarray_arg(indices, "unravel_index")
    dt = core.get_aval(indices).dtype
    if not dtypes.is_integer(dt):
        raise TypeError(f"unravel_index: indices must be integers, got dtype {dt.name}")
    shape = tuple(operator.index(d) for d in np.atleast_1d(shape))
    total = int(np.prod(shape, dtype=np.int64))
    i = _normalized_index(indices, total, dt)
    i = ew.clamp(np.array(0, dt), i, np.array(max(total - 1, 0), dt))
    coords = []
    for d in reversed(shape):
        coords.append(ew.rem(i, np.array(max(d, 1), dt)))
        i = ew.div(i, np.array(max(d, 1), dt))
    return tuple(reversed(coords))


def ravel_multi_index(multi_index: Sequence, dims: Sequence[int], mode: str = "raise", order: str = "C"):
    """Converts a tuple of coordinate arrays into flat indices for an array of shape `dims`.

    Args:
      mode: 'raise' (indices must be concrete and in bounds), 'wrap' (modulo each dim) or 'clip'.
      order: 'C' (row-major) or 'F' (column-major).

    Raises:
      ValueError: wrong number of index arrays, bad mode/order, or out-of-bounds indices with mode='raise'.
    """
    dims = tuple(operator.index(d) for d in dims)
    if len(multi_index) != len(dims):
        raise ValueError(f"ravel_multi_index: got {len(multi_index)} index arrays for {len(dims)} dimensions")
    if order not in ("C", "F"):
        raise ValueError(f"ravel_multi_index: order must be 'C' or 'F', got {order!r}")
    arrays = [asarray_arg(i, "ravel_multi_index") for i in multi_index]
    for i in arrays:
        if not dtypes.is_integer(core.get_aval(i).dtype):
            raise TypeError(f"ravel_multi_index: indices must be integers, got {core.get_aval(i).dtype.name}")
    arrays = promote_dtypes(*arrays)
    dt = core.get_aval(arrays[0]).dtype
    if mode == "raise":
        for i, d in zip(arrays, dims):
            v = _concrete_or_error(i, "ravel_multi_index with mode='raise'", "Use mode='wrap' or mode='clip'.")
            if v.size and (v.min() < 0 or v.max() >= d):
                raise ValueError("invalid entry in coordinates array")
    elif mode == "wrap":
        arrays = [_wrap_or_normalize(i, d, "wrap") for i, d in zip(arrays, dims)]
        arrays = [ew.convert_element_type(i, dt) for i in arrays]
    elif mode == "clip":
        arrays = [ew.clamp(np.array(0, dt), i, np.array(max(d - 1, 0), dt)) for i, d in zip(arrays, dims)]
    else:
        raise ValueError(f"ravel_multi_index: invalid mode {mode!r}; expected 'raise', 'wrap' or 'clip'")
    order_dims = list(range(len(dims)))
    if order == "F":
        order_dims.reverse()
    shape = broadcast_shapes(*[core.get_aval(i).shape for i in arrays])
    result = st.full(shape, 0, dt)
    stride = 1
    for k in reversed(order_dims):
        term = ew.mul(broadcast_to_shape(arrays[k], shape), np.array(stride, dt))
        result = ew.add(result, term)
        stride *= dims[k]
    return result


# --------------------------------------------------------------------------------------------------------------
# Selecting elementwise among arrays: select, choose
# --------------------------------------------------------------------------------------------------------------

def select(condlist: Sequence, choicelist: Sequence, default=0):
    """choicelist[i] where condlist[i] is the first true condition, else `default` (elementwise, broadcasting).

    Raises:
      ValueError: the lists differ in length. TypeError: a condition is not boolean.
    """
    if len(condlist) != len(choicelist):
        raise ValueError(f"condlist must have length equal to choicelist ({len(condlist)} vs {len(choicelist)})")
    conds = [asarray_arg(c, "select") for c in condlist]
    for k, c in enumerate(conds):
        if core.get_aval(c).dtype != dtypes.bool_:
            raise TypeError(f"select: condlist[{k}] must be a boolean array, got dtype {core.get_aval(c).dtype.name}")
    choices = promote_dtypes(*[asarray_arg(c, "select") for c in choicelist], asarray_arg(default, "select"))
    shape = broadcast_shapes(*[core.get_aval(v).shape for v in conds + choices])
    result = broadcast_to_shape(choices[-1], shape)
    for c, v in zip(reversed(conds), reversed(choices[:-1])):
        result = ew.select_n(broadcast_to_shape(c, shape), result, broadcast_to_shape(v, shape))
    return result


def choose(a, choices, out=None, mode: str = "raise"):
    """Builds an array from `choices` using the index array `a` (broadcast together).

    Args:
      mode: 'raise' (a must be concrete and in range), 'wrap' or 'clip'.
    """
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.choose is not supported.")
    a = asarray_arg(a, "choose")
    if isinstance(choices, (Array, Tracer)):
        choices = [st.index_in_dim(choices, i, 0, keepdims=False) for i in range(core.get_aval(choices).shape[0])]
    choices = promote_dtypes(*[asarray_arg(c, "choose") for c in choices])
    n = len(choices)
    dt = _index_dtype([a])
    a = ew.convert_element_type(a, dt)
    if mode == "raise":
        v = _concrete_or_error(a, "choose with mode='raise'", "Use mode='wrap' or mode='clip'.")
        if v.size and (v.min() < 0 or v.max() >= n):
            raise ValueError("invalid entry in choice array")
    elif mode == "wrap":
        a = _wrap_or_normalize(a, n, "wrap")
    elif mode == "clip":
        a = ew.clamp(np.array(0, dt), a, np.array(n - 1, dt))
    else:
        raise ValueError(f"choose: invalid mode {mode!r}; expected 'raise', 'wrap' or 'clip'")
    shape = broadcast_shapes(core.get_aval(a).shape, *[core.get_aval(c).shape for c in choices])
    stacked = st.concatenate([st.reshape(broadcast_to_shape(c, shape), (1,) + shape) for c in choices], 0)
    picked = lind.take_along_axis(stacked, st.reshape(broadcast_to_shape(a, shape), (1,) + shape), 0)
    return st.reshape(picked, shape)


# --------------------------------------------------------------------------------------------------------------
# bincount
# --------------------------------------------------------------------------------------------------------------

def bincount(x, weights=None, minlength: int = 0, *, length: int | None = None):
    """Counts (or sums `weights`) per non-negative integer value of the 1-d `x`; negatives count as 0 (as jnp).

    Args:
      length: the static output length (required under jit); values >= length are dropped.

    Raises:
      TypeError: non-integer x. ValueError: x not 1-d, or negative minlength.
    """
    x = asarray_arg(x, "bincount")
    aval = core.get_aval(x)
    if not dtypes.is_integer(aval.dtype):
        raise TypeError(f"x argument to bincount must have an integer type; got {aval.dtype.name}")
    if aval.ndim != 1:
        raise ValueError(f"bincount only accepts 1D input, got shape {aval.shape}")
    minlength = operator.index(minlength)
    if minlength < 0:
        raise ValueError(f"minlength must be non-negative, got {minlength}")
    if length is None:
        v = _concrete_or_error(x, "bincount", "Pass a static length=... to use it under jit.")
        length = max(minlength, int(v.max()) + 1 if v.size else 0)
    length = operator.index(length)
    if weights is None:
        weights = st.full(aval.shape, 1, dtypes.default_int_dtype())
    else:
        weights = asarray_arg(weights, "bincount")
        if core.get_aval(weights).weak_type:
            weights = ew._convert_weak(weights, core.get_aval(weights).dtype, False)
        weights = broadcast_to_shape(weights, aval.shape)
    zero = np.array(0, aval.dtype)
    idx = ew.max(x, zero)
    out_dt = core.get_aval(weights).dtype
    return lind.scatter_add(st.full((length,), 0, out_dt), st.reshape(idx, aval.shape + (1,)), weights,
                            _FLAT_DNUMS, mode=GatherScatterMode.FILL_OR_DROP)
