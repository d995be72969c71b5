"""Structural primitives: broadcasting, reshaping, transposition, slicing, padding, concatenation, iota.

All of them are linear, so each has a transpose rule; their JVPs apply the primitive to the tangent. Each primitive
has one block: its definition, public wrapper(s), abstract evaluation, JVP, transpose and batching rule.
"""

from __future__ import annotations

import builtins
from typing import Sequence

import numpy as np

from .. import core, dtypes
from ..core import ShapedArray, abstract_eval_rules
from ..interpreters import ad, batching
from ..interpreters.ad import Zero
from .utils import standard_primitive


def _tuple_ints(xs) -> tuple:
    return tuple(int(x) for x in xs)


def _as_array(x):
    if isinstance(x, (core.Array, core.Tracer)):
        return x
    return core.to_array(x)


# --------------------------------------------------------------------------------------------------------------
# broadcast_in_dim
# --------------------------------------------------------------------------------------------------------------

broadcast_in_dim_p = standard_primitive("broadcast_in_dim")


def broadcast_in_dim(x, shape: Sequence[int], broadcast_dimensions: Sequence[int]):
    """Broadcasts `x` to `shape`, operand dimension i becoming output dimension broadcast_dimensions[i]."""
    x = _as_array(x)
    shape, dims = _tuple_ints(shape), _tuple_ints(broadcast_dimensions)
    if core.get_aval(x).shape == shape and dims == tuple(range(len(shape))):
        return x
    return broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=dims)


def broadcast(x, sizes: Sequence[int]):
    """Adds leading dimensions of `sizes` to `x`."""
    x = _as_array(x)
    nd = core.get_aval(x).ndim
    sizes = _tuple_ints(sizes)
    return broadcast_in_dim(x, sizes + core.get_aval(x).shape, tuple(range(len(sizes), len(sizes) + nd)))


def full(shape: Sequence[int], fill_value, dtype=None):
    """An array of `shape` filled with `fill_value` (a broadcast of a scalar)."""
    shape = _tuple_ints(shape)
    if dtype is None:
        dt, weak = dtypes.dtype_and_weak(fill_value)
    else:
        dt, weak = dtypes.canonicalize_dtype(dtype), False
    if isinstance(fill_value, (core.Tracer,)) or (isinstance(fill_value, core.Array)):
        from .elementwise import _convert_weak
        v = _convert_weak(fill_value, dt, weak)
        if core.get_aval(v).ndim:
            raise TypeError(f"full: fill_value must be a scalar, got shape {core.get_aval(v).shape}")
    else:
        v = core.Array(np.asarray(fill_value, dtype=dt), weak)
    return broadcast_in_dim(v, shape, ())


def _broadcast_in_dim_abstract_eval(x, *, shape, broadcast_dimensions):
    if len(broadcast_dimensions) != x.ndim:
        raise TypeError(f"broadcast_in_dim: broadcast_dimensions {broadcast_dimensions} must have one entry per "
                        f"operand dimension (operand shape {x.shape})")
    for src, dst in enumerate(broadcast_dimensions):
        if not 0 <= dst < len(shape) or x.shape[src] not in (1, shape[dst]):
            raise TypeError(f"broadcast_in_dim: operand shape {x.shape} cannot be broadcast to {shape} with "
                            f"broadcast_dimensions={broadcast_dimensions}")
    if list(broadcast_dimensions) != sorted(broadcast_dimensions):
        raise TypeError(f"broadcast_in_dim: broadcast_dimensions must be increasing, got {broadcast_dimensions}")
    return ShapedArray(shape, x.dtype)


abstract_eval_rules[broadcast_in_dim_p] = _broadcast_in_dim_abstract_eval


def _broadcast_in_dim_transpose(ct, x, *, shape, broadcast_dimensions):
    if type(ct) is Zero:
        return [None]
    from .reductions import reduce_sum
    in_shape = x.aval.shape
    summed = tuple(i for i in range(len(shape)) if i not in broadcast_dimensions)
    expanded = tuple(d for i, d in enumerate(broadcast_dimensions) if in_shape[i] == 1 and shape[d] != 1)
    out = reduce_sum(ct, summed + expanded) if summed or expanded else ct
    if expanded:
        out = reshape(out, in_shape)
    return [out]


ad.deflinear(broadcast_in_dim_p, _broadcast_in_dim_transpose)


def _broadcast_in_dim_batch_rule(vals, dims, *, shape, broadcast_dimensions):
    (x,), (d,) = vals, dims
    x = batching.moveaxis(x, d, 0, core.get_aval(x).shape[d])
    size = core.get_aval(x).shape[0]
    return broadcast_in_dim_p.bind(x, shape=(size,) + tuple(shape),
                                   broadcast_dimensions=(0,) + tuple(b + 1 for b in broadcast_dimensions)), 0


batching.primitive_batchers[broadcast_in_dim_p] = _broadcast_in_dim_batch_rule


# --------------------------------------------------------------------------------------------------------------
# reshape
# --------------------------------------------------------------------------------------------------------------

reshape_p = standard_primitive("reshape", weak_type="first")


def reshape(x, new_sizes: Sequence[int], dimensions: Sequence[int] | None = None):
    """Reshapes `x` to `new_sizes` (after transposing by `dimensions` if given)."""
    x = _as_array(x)
    new_sizes = _tuple_ints(new_sizes)
    if dimensions is not None:
        x = transpose(x, dimensions)
    aval = core.get_aval(x)
    if aval.shape == new_sizes:
        return x
    _reshape_abstract_eval(aval, new_sizes=new_sizes)
    return reshape_p.bind(x, new_sizes=new_sizes, dimensions=None)


def _reshape_abstract_eval(x, *, new_sizes, dimensions=None):
    if int(np.prod(new_sizes, dtype=np.int64)) != x.size:
        raise TypeError(f"reshape: cannot reshape array of shape {x.shape} (size {x.size}) into shape "
                        f"{tuple(new_sizes)} (size {int(np.prod(new_sizes, dtype=np.int64))})")
    return ShapedArray(new_sizes, x.dtype)


abstract_eval_rules[reshape_p] = _reshape_abstract_eval


def _reshape_transpose(ct, x, *, new_sizes, dimensions=None):
    return [None if type(ct) is Zero else reshape(ct, x.aval.shape)]


ad.deflinear(reshape_p, _reshape_transpose)


def _reshape_batch_rule(vals, dims, *, new_sizes, dimensions=None):
    (x,), (d,) = vals, dims
    size = core.get_aval(x).shape[d]
    x = batching.moveaxis(x, d, 0, size)
    return reshape_p.bind(x, new_sizes=(size,) + tuple(new_sizes), dimensions=None), 0


batching.primitive_batchers[reshape_p] = _reshape_batch_rule


# --------------------------------------------------------------------------------------------------------------
# transpose
# --------------------------------------------------------------------------------------------------------------

transpose_p = standard_primitive("transpose", weak_type="first")


def transpose(x, permutation: Sequence[int]):
    """Permutes the dimensions of `x`: output dim i is input dim permutation[i]."""
    x = _as_array(x)
    permutation = _tuple_ints(permutation)
    if permutation == tuple(range(len(permutation))):
        return x
    return transpose_p.bind(x, permutation=permutation)


def _transpose_abstract_eval(x, *, permutation):
    if sorted(permutation) != list(range(x.ndim)):
        raise TypeError(f"transpose permutation {permutation} is not a permutation of the operand's "
                        f"{x.ndim} dimensions (shape {x.shape})")
    return ShapedArray(tuple(x.shape[p] for p in permutation), x.dtype)


abstract_eval_rules[transpose_p] = _transpose_abstract_eval


def _transpose_transpose(ct, x, *, permutation):
    if type(ct) is Zero:
        return [None]
    inv = tuple(np.argsort(permutation))
    return [transpose(ct, inv)]


ad.deflinear(transpose_p, _transpose_transpose)


def _transpose_batch_rule(vals, dims, *, permutation):
    (x,), (d,) = vals, dims
    perm = [p + 1 if p >= d else p for p in permutation]
    perm.insert(0, d)
    # Output has the batch dim first; shift to keep it at the front.
    return transpose_p.bind(x, permutation=tuple(perm)), 0


batching.primitive_batchers[transpose_p] = _transpose_batch_rule


# --------------------------------------------------------------------------------------------------------------
# squeeze / expand_dims
# --------------------------------------------------------------------------------------------------------------

squeeze_p = standard_primitive("squeeze", weak_type="first")


def squeeze(x, dimensions: Sequence[int]):
    """Removes the size-1 `dimensions` of `x`."""
    x = _as_array(x)
    nd = core.get_aval(x).ndim
    dims = tuple(sorted(int(d) % nd for d in dimensions)) if nd else ()
    if not dims:
        return x
    return squeeze_p.bind(x, dimensions=dims)


def expand_dims(x, dimensions: Sequence[int]):
    """Inserts size-1 dimensions at `dimensions` (positions in the output)."""
    x = _as_array(x)
    shape = list(core.get_aval(x).shape)
    nd = len(shape) + len(dimensions)
    dims = sorted(int(d) % nd for d in dimensions)
    for d in dims:
        shape.insert(d, 1)
    return reshape(x, shape)


def _squeeze_abstract_eval(x, *, dimensions):
    for d in dimensions:
        if not 0 <= d < x.ndim or x.shape[d] != 1:
            raise TypeError(f"squeeze: dimension {d} of shape {x.shape} is not of size 1")
    return ShapedArray(tuple(s for i, s in enumerate(x.shape) if i not in dimensions), x.dtype)


abstract_eval_rules[squeeze_p] = _squeeze_abstract_eval


def _squeeze_transpose(ct, x, *, dimensions):
    return [None if type(ct) is Zero else reshape(ct, x.aval.shape)]


ad.deflinear(squeeze_p, _squeeze_transpose)


def _squeeze_batch_rule(vals, dims, *, dimensions):
    (x,), (d,) = vals, dims
    x = batching.moveaxis(x, d, 0, core.get_aval(x).shape[d])
    return squeeze_p.bind(x, dimensions=tuple(k + 1 for k in dimensions)), 0


batching.primitive_batchers[squeeze_p] = _squeeze_batch_rule


# --------------------------------------------------------------------------------------------------------------
# rev
# --------------------------------------------------------------------------------------------------------------

rev_p = standard_primitive("rev", weak_type="first")


def rev(x, dimensions: Sequence[int]):
    """Reverses `x` along `dimensions`."""
    x = _as_array(x)
    return rev_p.bind(x, dimensions=_tuple_ints(dimensions))


def _rev_abstract_eval(x, *, dimensions):
    for d in dimensions:
        if not 0 <= d < x.ndim:
            raise TypeError(f"rev: dimension {d} out of range for shape {x.shape}")
    return ShapedArray(x.shape, x.dtype)


abstract_eval_rules[rev_p] = _rev_abstract_eval
ad.deflinear(rev_p, lambda ct, x, *, dimensions: [None if type(ct) is Zero else rev(ct, dimensions)])


def _rev_batch_rule(vals, dims, *, dimensions):
    (x,), (d,) = vals, dims
    return rev_p.bind(x, dimensions=tuple(k + 1 if k >= d else k for k in dimensions)), d


batching.primitive_batchers[rev_p] = _rev_batch_rule


# --------------------------------------------------------------------------------------------------------------
# concatenate
# --------------------------------------------------------------------------------------------------------------

concatenate_p = standard_primitive("concatenate")


def concatenate(operands: Sequence, dimension: int):
    """Concatenates arrays of one dtype along `dimension`."""
    operands = [_as_array(x) for x in operands]
    if len(operands) == 1:
        return operands[0]
    _concatenate_abstract_eval(*[core.get_aval(x) for x in operands], dimension=int(dimension))
    return concatenate_p.bind(*operands, dimension=int(dimension))


def _concatenate_abstract_eval(*xs, dimension):
    if not xs:
        raise TypeError("concatenate needs at least one operand")
    x0 = xs[0]
    for x in xs:
        if x.dtype != x0.dtype:
            raise TypeError("concatenate requires operands of one dtype, got "
                            + ", ".join(a.dtype.name for a in xs))
        if x.ndim != x0.ndim or any(a != b for i, (a, b) in enumerate(zip(x.shape, x0.shape)) if i != dimension):
            raise TypeError("concatenate: operand shapes must match except along dimension "
                            f"{dimension}, got " + ", ".join(str(a.shape) for a in xs))
    shape = list(x0.shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return ShapedArray(tuple(shape), x0.dtype)


abstract_eval_rules[concatenate_p] = _concatenate_abstract_eval


def _concatenate_transpose(ct, *xs, dimension):
    if type(ct) is Zero:
        return [None] * len(xs)
    outs, start = [], 0
    ct_shape = core.get_aval(ct).shape
    for x in xs:
        size = (x.aval if ad.is_undefined_primal(x) else core.get_aval(x)).shape[dimension]
        if ad.is_undefined_primal(x):
            starts = [0] * len(ct_shape)
            limits = list(ct_shape)
            starts[dimension], limits[dimension] = start, start + size
            outs.append(slice(ct, starts, limits))
        else:
            outs.append(None)
        start += size
    return outs


ad.deflinear(concatenate_p, _concatenate_transpose)


def _concatenate_batch_rule(vals, dims, *, dimension):
    size = next(core.get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not None)
    vals = [batching.moveaxis(v, d, 0, size) for v, d in zip(vals, dims)]
    return concatenate_p.bind(*vals, dimension=dimension + 1), 0


batching.primitive_batchers[concatenate_p] = _concatenate_batch_rule


# --------------------------------------------------------------------------------------------------------------
# pad
# --------------------------------------------------------------------------------------------------------------

pad_p = standard_primitive("pad", weak_type="first")


def pad(x, padding_value, padding_config: Sequence[tuple[int, int, int]]):
    """Pads `x` with `padding_value`: per dimension (low, high, interior); negative low/high crop."""
    x = _as_array(x)
    if not isinstance(padding_value, (core.Array, core.Tracer)):
        padding_value = core.Array(np.asarray(padding_value, core.get_aval(x).dtype), True)
    cfg = tuple(tuple(int(v) for v in c) for c in padding_config)
    return pad_p.bind(x, padding_value, padding_config=cfg)


def _pad_abstract_eval(x, pv, *, padding_config):
    if pv.shape != () or pv.dtype != x.dtype:
        raise TypeError(f"pad: padding_value must be a scalar of the operand's dtype {x.dtype.name}, got "
                        f"{pv.str_short()}")
    if len(padding_config) != x.ndim:
        raise TypeError(f"pad: padding_config needs one (lo, hi, interior) per dimension of shape {x.shape}")
    shape = []
    for d, (lo, hi, interior) in zip(x.shape, padding_config):
        if interior < 0:
            raise TypeError("pad: interior padding must be non-negative")
        size = lo + hi + d + max(d - 1, 0) * interior
        if size < 0:
            raise TypeError(f"pad: negative output size for dimension of size {d} with padding {(lo, hi, interior)}")
        shape.append(size)
    return ShapedArray(tuple(shape), x.dtype)


abstract_eval_rules[pad_p] = _pad_abstract_eval


def _pad_transpose(ct, x, pv, *, padding_config):
    if type(ct) is Zero:
        return [None, None]
    res = [None, None]
    if ad.is_undefined_primal(x):
        # Undo the low/high padding (negative padding), then take every (interior+1)-th element.
        unpadded = pad(ct, core.Array(np.zeros((), core.get_aval(ct).dtype)),
                       [(-lo, -hi, 0) for lo, hi, _ in padding_config])
        shape = core.get_aval(unpadded).shape
        res[0] = slice(unpadded, [0] * len(shape), shape, [i + 1 for _, _, i in padding_config])
    if ad.is_undefined_primal(pv):
        from .reductions import reduce_sum
        total = reduce_sum(ct, tuple(range(core.get_aval(ct).ndim)))
        if ad.is_undefined_primal(x):
            total = total - reduce_sum(res[0], tuple(range(core.get_aval(res[0]).ndim)))
        else:
            total = total - reduce_sum(x, tuple(range(core.get_aval(x).ndim)))
        res[1] = total
    return res


ad.deflinear(pad_p, _pad_transpose)


def _pad_batch_rule(vals, dims, *, padding_config):
    x, pv = vals
    dx, dpv = dims
    if dpv is not None:
        # Pad with zeros, then select the per-example padding value wherever the output is padding.
        size = core.get_aval(pv).shape[dpv]
        x = batching.moveaxis(x, dx, 0, size)
        cfg = ((0, 0, 0),) + tuple(padding_config)
        zero = core.Array(np.zeros((), core.get_aval(x).dtype))
        padded = pad_p.bind(x, zero, padding_config=cfg)
        from .elementwise import select_n
        ones = full(core.get_aval(x).shape, True, dtypes.bool_)
        mask = pad_p.bind(ones, core.Array(np.asarray(False)), padding_config=cfg)
        shape = core.get_aval(padded).shape
        pvb = broadcast_in_dim(batching.moveaxis(pv, dpv, 0, size), shape, (0,))
        return select_n(mask, pvb, padded), 0
    cfg = list(padding_config)
    cfg.insert(dx, (0, 0, 0))
    return pad_p.bind(x, pv, padding_config=tuple(cfg)), dx


batching.primitive_batchers[pad_p] = _pad_batch_rule


# --------------------------------------------------------------------------------------------------------------
# slice
# --------------------------------------------------------------------------------------------------------------

slice_p = standard_primitive("slice", weak_type="first")


def slice(x, start_indices: Sequence[int], limit_indices: Sequence[int], strides: Sequence[int] | None = None):  # noqa: A001
    """The static slice x[start:limit:stride] per dimension."""
    x = _as_array(x)
    st = _tuple_ints(strides) if strides is not None and any(s != 1 for s in strides) else None
    starts, limits = _tuple_ints(start_indices), _tuple_ints(limit_indices)
    if st is None and starts == (0,) * len(starts) and limits == core.get_aval(x).shape:
        return x
    return slice_p.bind(x, start_indices=starts, limit_indices=limits, strides=st)


def slice_in_dim(x, start_index: int | None, limit_index: int | None, stride: int = 1, axis: int = 0):
    """Slices `x` along one axis."""
    shape = core.get_aval(x).shape
    axis = int(axis) % len(shape)
    starts = [0] * len(shape)
    limits = list(shape)
    strides = [1] * len(shape)
    s, l, _ = builtins.slice(start_index, limit_index).indices(shape[axis])
    starts[axis], limits[axis], strides[axis] = s, max(l, s), stride
    return slice(x, starts, limits, strides)


def index_in_dim(x, index: int, axis: int = 0, keepdims: bool = True):
    """x[..., index, ...] along `axis` (static index)."""
    shape = core.get_aval(x).shape
    axis = int(axis) % len(shape)
    index = int(index) % shape[axis]
    out = slice_in_dim(x, index, index + 1, 1, axis)
    return out if keepdims else squeeze(out, (axis,))


def _slice_abstract_eval(x, *, start_indices, limit_indices, strides=None):
    if len(start_indices) != x.ndim or len(limit_indices) != x.ndim:
        raise TypeError(f"slice: start_indices {start_indices} and limit_indices {limit_indices} must have one entry "
                        f"per dimension of shape {x.shape}")
    strides = strides or (1,) * x.ndim
    shape = []
    for d, s, l, st in zip(x.shape, start_indices, limit_indices, strides):
        if not 0 <= s <= l <= d:
            raise TypeError(f"slice: indices [{s}:{l}] out of bounds for dimension of size {d} (shape {x.shape})")
        shape.append(max(0, -(-(l - s) // st)))
    return ShapedArray(tuple(shape), x.dtype)


abstract_eval_rules[slice_p] = _slice_abstract_eval


def _slice_transpose(ct, x, *, start_indices, limit_indices, strides=None):
    if type(ct) is Zero:
        return [None]
    shape = x.aval.shape
    strides = strides or (1,) * len(shape)
    ct_shape = core.get_aval(ct).shape
    cfg = []
    for d, s, st, n in zip(shape, start_indices, strides, ct_shape):
        real_limit = s + (n - 1) * st + 1 if n else s
        cfg.append((s, d - real_limit, st - 1))
    return [pad(ct, core.Array(np.zeros((), core.get_aval(ct).dtype)), cfg)]


ad.deflinear(slice_p, _slice_transpose)


def _slice_batch_rule(vals, dims, *, start_indices, limit_indices, strides=None):
    (x,), (d,) = vals, dims
    size = core.get_aval(x).shape[d]
    starts, limits = list(start_indices), list(limit_indices)
    starts.insert(d, 0)
    limits.insert(d, size)
    st = None
    if strides is not None:
        st = list(strides)
        st.insert(d, 1)
        st = tuple(st)
    return slice_p.bind(x, start_indices=tuple(starts), limit_indices=tuple(limits), strides=st), d


batching.primitive_batchers[slice_p] = _slice_batch_rule


# --------------------------------------------------------------------------------------------------------------
# dynamic_slice / dynamic_update_slice
# --------------------------------------------------------------------------------------------------------------

def _index_scalar(i):
    if isinstance(i, (core.Array, core.Tracer)):
        a = core.get_aval(i)
        if not dtypes.is_integer(a.dtype):
            raise TypeError(f"index must be an integer, got dtype {a.dtype.name}")
        return i if a.shape == () else reshape(i, ())
    return core.Array(np.asarray(int(i), dtypes.default_int_dtype()))


def _check_index_avals(name, idx_avals, ndim):
    if len(idx_avals) != ndim:
        raise TypeError(f"{name}: needs one start index per operand dimension ({ndim}), got {len(idx_avals)}")
    for a in idx_avals:
        if a.shape != () or not dtypes.is_integer(a.dtype):
            raise TypeError(f"{name}: start indices must be integer scalars, got {a.str_short()}")


def _batch_size(vals, dims) -> int:
    return next(core.get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not None)


dynamic_slice_p = standard_primitive("dynamic_slice", weak_type="first")


def dynamic_slice(x, start_indices: Sequence, slice_sizes: Sequence[int]):
    """x[start:start+size] per dimension, with traced start indices clamped so the slice stays in bounds."""
    x = _as_array(x)
    starts = [_index_scalar(i) for i in start_indices]
    return dynamic_slice_p.bind(x, *starts, slice_sizes=_tuple_ints(slice_sizes))


def _dynamic_slice_abstract_eval(x, *starts, slice_sizes):
    _check_index_avals("dynamic_slice", starts, x.ndim)
    for d, z in zip(x.shape, slice_sizes):
        if not 0 <= z <= d:
            raise TypeError(f"dynamic_slice: slice_sizes {tuple(slice_sizes)} must fit within operand shape "
                            f"{x.shape}")
    return ShapedArray(tuple(slice_sizes), x.dtype)


abstract_eval_rules[dynamic_slice_p] = _dynamic_slice_abstract_eval


def _dynamic_slice_jvp(primals, tangents, *, slice_sizes):
    x, *starts = primals
    tx = tangents[0]
    out = dynamic_slice_p.bind(x, *starts, slice_sizes=slice_sizes)
    if type(tx) is Zero:
        return out, Zero(core.get_aval(out))
    return out, dynamic_slice_p.bind(tx, *starts, slice_sizes=slice_sizes)


def _dynamic_slice_transpose(ct, x, *starts, slice_sizes):
    if type(ct) is Zero:
        return [None] * (1 + len(starts))
    zeros = full(x.aval.shape, 0, x.aval.dtype)
    return [dynamic_update_slice_p.bind(zeros, ct, *starts)] + [None] * len(starts)


ad.primitive_jvps[dynamic_slice_p] = _dynamic_slice_jvp
ad.primitive_transposes[dynamic_slice_p] = _dynamic_slice_transpose


def _dynamic_slice_batch_rule(vals, dims, *, slice_sizes):
    x, *starts = vals
    dx, *dstarts = dims
    size = _batch_size(vals, dims)
    if all(d is None for d in dstarts):
        x = batching.moveaxis(x, dx, 0, size)
        zero = core.Array(np.zeros((), core.get_aval(starts[0]).dtype if starts else dtypes.int32))
        return dynamic_slice_p.bind(x, zero, *starts, slice_sizes=(size,) + tuple(slice_sizes)), 0
    from .indexing import batched_dynamic_slice
    return batched_dynamic_slice(x, dx, starts, dstarts, slice_sizes, size), 0


batching.primitive_batchers[dynamic_slice_p] = _dynamic_slice_batch_rule

dynamic_update_slice_p = standard_primitive("dynamic_update_slice", weak_type="first")


def dynamic_update_slice(x, update, start_indices: Sequence):
    """A copy of `x` with `update` written at `start_indices` (clamped to stay in bounds)."""
    x, update = _as_array(x), _as_array(update)
    starts = [_index_scalar(i) for i in start_indices]
    return dynamic_update_slice_p.bind(x, update, *starts)


def _dynamic_update_slice_abstract_eval(x, update, *starts):
    _check_index_avals("dynamic_update_slice", starts, x.ndim)
    if update.dtype != x.dtype:
        raise TypeError(f"dynamic_update_slice: update dtype {update.dtype.name} must equal operand dtype "
                        f"{x.dtype.name}")
    if update.ndim != x.ndim or any(u > d for u, d in zip(update.shape, x.shape)):
        raise TypeError(f"dynamic_update_slice: update shape {update.shape} must fit in operand shape {x.shape}")
    return ShapedArray(x.shape, x.dtype)


abstract_eval_rules[dynamic_update_slice_p] = _dynamic_update_slice_abstract_eval


def _dynamic_update_slice_jvp(primals, tangents):
    x, upd, *starts = primals
    tx, tu = tangents[0], tangents[1]
    out = dynamic_update_slice_p.bind(x, upd, *starts)
    if type(tx) is Zero and type(tu) is Zero:
        return out, Zero(core.get_aval(out))
    tx, tu = ad.instantiate_zeros(tx), ad.instantiate_zeros(tu)
    return out, dynamic_update_slice_p.bind(tx, tu, *starts)


def _dynamic_update_slice_transpose(ct, x, upd, *starts):
    if type(ct) is Zero:
        return [None] * (2 + len(starts))
    upd_aval = upd.aval if ad.is_undefined_primal(upd) else core.get_aval(upd)
    res_x = res_u = None
    if ad.is_undefined_primal(x):
        res_x = dynamic_update_slice_p.bind(ct, full(upd_aval.shape, 0, upd_aval.dtype), *starts)
    if ad.is_undefined_primal(upd):
        res_u = dynamic_slice_p.bind(ct, *starts, slice_sizes=upd_aval.shape)
    return [res_x, res_u] + [None] * len(starts)


ad.primitive_jvps[dynamic_update_slice_p] = _dynamic_update_slice_jvp
ad.primitive_transposes[dynamic_update_slice_p] = _dynamic_update_slice_transpose


def _dynamic_update_slice_batch_rule(vals, dims):
    x, upd, *starts = vals
    dx, du, *dstarts = dims
    size = _batch_size(vals, dims)
    if all(d is None for d in dstarts):
        x = batching.moveaxis(x, dx, 0, size)
        upd = batching.moveaxis(upd, du, 0, size)
        zero = core.Array(np.zeros((), core.get_aval(starts[0]).dtype if starts else dtypes.int32))
        return dynamic_update_slice_p.bind(x, upd, zero, *starts), 0
    from .indexing import batched_dynamic_update_slice
    return batched_dynamic_update_slice(x, dx, upd, du, starts, dstarts, size), 0


batching.primitive_batchers[dynamic_update_slice_p] = _dynamic_update_slice_batch_rule


# --------------------------------------------------------------------------------------------------------------
# iota
# --------------------------------------------------------------------------------------------------------------

iota_p = standard_primitive("iota", weak_type="never")


def iota(dtype, size: int):
    """[0, 1, ..., size-1] of `dtype`."""
    return iota_p.bind(dtype=dtypes.canonicalize_dtype(dtype), shape=(int(size),), dimension=0)


def broadcasted_iota(dtype, shape: Sequence[int], dimension: int):
    """An array of `shape` whose values count along `dimension`."""
    return iota_p.bind(dtype=dtypes.canonicalize_dtype(dtype), shape=_tuple_ints(shape), dimension=int(dimension))


def _iota_abstract_eval(*, dtype, shape, dimension):
    return ShapedArray(shape, dtype)


abstract_eval_rules[iota_p] = _iota_abstract_eval


# --------------------------------------------------------------------------------------------------------------
# copy (an identity kept as an equation; used where a distinct buffer is semantically required)
# --------------------------------------------------------------------------------------------------------------

copy_p = standard_primitive("copy", weak_type="first")


def _copy_abstract_eval(x):
    return ShapedArray(x.shape, x.dtype)


abstract_eval_rules[copy_p] = _copy_abstract_eval
ad.deflinear(copy_p, lambda ct, x: [ct if type(ct) is Zero else copy_p.bind(ct)])
batching.primitive_batchers[copy_p] = lambda vals, dims: (copy_p.bind(vals[0]), dims[0])
