"""Structural primitives: broadcasting, reshaping, transposition, slicing, padding, concatenation, iota.

All of them are linear, so each has a transpose rule; their JVPs apply the primitive to the tangent. Each primitive
has one block: its definition, public wrapper(s), abstract evaluation, JVP, transpose and batching rule.

The wrappers validate their arguments in every mode, eagerly too (where the primitive's NumPy implementation would
otherwise clip, wrap or broadcast silently), raising the error classes `jax.lax` raises, with messages that name the
offending argument and the shapes. The common case pays only for cheap checks: the wrappers that return their
operand unchanged (a full slice, an identity transpose, ...) do so before validating.
"""

from __future__ import annotations

import builtins
import math
from typing import Sequence

import numpy as np

from .. import core, dtypes
from ..core import ShapedArray, abstract_eval_rules
from ..interpreters import ad, array_ops, batching
from ..interpreters.ad import Zero
from .utils import standard_primitive


def _tuple_ints(xs) -> tuple:
    return tuple(map(int, xs))


def _as_array(x):
    if isinstance(x, (core.Array, core.Tracer)):
        return x
    return core.to_array(x)


# --------------------------------------------------------------------------------------------------------------
# broadcast_in_dim
# --------------------------------------------------------------------------------------------------------------

broadcast_in_dim_p = standard_primitive("broadcast_in_dim")


def _broadcast_in_dim_print_params(params):
    # As JAX prints it: the shape is the output's; an empty broadcast_dimensions is not shown.
    return {k: v for k, v in params.items() if k != "shape" and not (k == "broadcast_dimensions" and not v)}


core.param_print_rules[broadcast_in_dim_p] = _broadcast_in_dim_print_params


def broadcast_in_dim(x, shape: Sequence[int], broadcast_dimensions: Sequence[int]):
    """Broadcasts `x` to `shape`, operand dimension i becoming output dimension broadcast_dimensions[i].

    Raises:
      TypeError: `shape` has a negative size, or `x` cannot be broadcast to it along `broadcast_dimensions`.
    """
    x = _as_array(x)
    shape, dims = _tuple_ints(shape), _tuple_ints(broadcast_dimensions)
    aval = core.get_aval(x)
    if aval.shape == shape and dims == tuple(range(len(shape))):
        return x
    _check_broadcast_in_dim(aval, shape, dims)
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


def _check_broadcast_in_dim(x, shape, broadcast_dimensions):
    if any(d < 0 for d in shape):
        raise TypeError(f"broadcast_in_dim: shape {tuple(shape)} must have every element be non-negative")
    if len(broadcast_dimensions) != x.ndim:
        raise TypeError(f"broadcast_in_dim: broadcast_dimensions {broadcast_dimensions} must have one entry per "
                        f"operand dimension (operand shape {x.shape})")
    for src, dst in enumerate(broadcast_dimensions):
        if not 0 <= dst < len(shape) or x.shape[src] not in (1, shape[dst]):
            raise TypeError(f"broadcast_in_dim: operand shape {x.shape} cannot be broadcast to {shape} with "
                            f"broadcast_dimensions={broadcast_dimensions}")
    if list(broadcast_dimensions) != sorted(broadcast_dimensions):
        raise TypeError(f"broadcast_in_dim: broadcast_dimensions must be increasing, got {broadcast_dimensions}")


def _broadcast_in_dim_abstract_eval(x, *, shape, broadcast_dimensions):
    _check_broadcast_in_dim(x, shape, broadcast_dimensions)
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
core.param_print_rules[reshape_p] = lambda params: {**params, "sharding": None}  # (JAX's, always None here)


def reshape(x, new_sizes: Sequence[int], dimensions: Sequence[int] | None = None, *, out_sharding=None):
    """Reshapes `x` to `new_sizes` (after transposing by `dimensions` if given). `out_sharding` (a sharding, or a
    PartitionSpec resolved against the current mesh) types and places the result: in explicit sharding mode, the
    way to reshape where the sharding rule cannot say how the split carries over (see lax/sharding_rules.py)."""
    if out_sharding is not None:
        from .sharding_rules import with_out_sharding
        return with_out_sharding(lambda v: reshape(v, new_sizes, dimensions), [x], out_sharding)
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
    # (math.prod on Python ints: np.prod costs microseconds on the eager path, which validates every reshape.)
    size, new_size = math.prod(x.shape), math.prod(new_sizes)
    if new_size != size or min(new_sizes, default=0) < 0:
        if min(new_sizes, default=0) < 0:
            raise TypeError(f"reshape: new_sizes {tuple(new_sizes)} must have every element be non-negative "
                            f"(operand shape {x.shape})")
        raise TypeError(f"reshape: cannot reshape array of shape {x.shape} (size {size}) into shape "
                        f"{tuple(new_sizes)} (size {new_size})")
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
    """Permutes the dimensions of `x`: output dim i is input dim permutation[i].

    Raises:
      TypeError: `permutation` is not a permutation of x's dimensions.
    """
    x = _as_array(x)
    permutation = _tuple_ints(permutation)
    aval = core.get_aval(x)
    if permutation == tuple(range(aval.ndim)):
        return x
    _check_transpose(aval, permutation)
    return transpose_p.bind(x, permutation=permutation)


def _check_transpose(x, permutation):
    if sorted(permutation) != list(range(x.ndim)):
        raise TypeError(f"transpose permutation {permutation} is not a permutation of the operand's "
                        f"{x.ndim} dimensions (shape {x.shape})")


def _transpose_abstract_eval(x, *, permutation):
    _check_transpose(x, permutation)
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
    """Removes the size-1 `dimensions` of `x` (negative values count from the end).

    Raises:
      ValueError: a dimension is out of bounds or not of size 1.
    """
    x = _as_array(x)
    aval = core.get_aval(x)
    nd = aval.ndim
    for d in dimensions:
        if not -nd <= int(d) < nd:
            raise ValueError(f"squeeze: axis {d} is out of bounds for an operand of rank {nd} (shape {aval.shape})")
    dims = tuple(sorted(int(d) % nd for d in dimensions))
    if not dims:
        return x
    _squeeze_abstract_eval(aval, dimensions=dims)
    return squeeze_p.bind(x, dimensions=dims)


def expand_dims(x, dimensions: Sequence[int]):
    """Inserts size-1 dimensions at `dimensions` (positions in the output; negative values count from its end).

    Raises:
      ValueError: a position is out of bounds for the output's rank, or repeated.
    """
    x = _as_array(x)
    shape = list(core.get_aval(x).shape)
    nd = len(shape) + len(dimensions)
    for d in dimensions:
        if not -nd <= int(d) < nd:
            raise ValueError(f"expand_dims: axis {d} is out of bounds for the result of rank {nd} (operand shape "
                             f"{tuple(shape)}, dimensions {tuple(dimensions)})")
    dims = sorted(int(d) % nd for d in dimensions)
    if len(set(dims)) != len(dims):
        raise ValueError(f"expand_dims: repeated axis in dimensions {tuple(dimensions)} (result rank {nd})")
    for d in dims:
        shape.insert(d, 1)
    return reshape(x, shape)


def _squeeze_abstract_eval(x, *, dimensions):
    for d in dimensions:
        if not 0 <= d < x.ndim or x.shape[d] != 1:
            raise ValueError(f"squeeze: cannot remove dimension {d} of an operand of shape {x.shape}: its size is "
                             "not 1")
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
    """Reverses `x` along `dimensions`.

    Raises:
      TypeError: a dimension is negative or not less than x's rank.
    """
    x = _as_array(x)
    dimensions = _tuple_ints(dimensions)
    _rev_abstract_eval(core.get_aval(x), dimensions=dimensions)
    return rev_p.bind(x, dimensions=dimensions)


def _rev_abstract_eval(x, *, dimensions):
    for d in dimensions:
        if not 0 <= d < x.ndim:
            raise TypeError(f"rev: dimensions {tuple(dimensions)} must be non-negative and less than the operand's "
                            f"rank {x.ndim} (shape {x.shape})")
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
    """Pads `x` with `padding_value`: per dimension (low, high, interior); negative low/high crop.

    Raises:
      TypeError: `padding_value` is not a scalar of x's dtype (a Python scalar adopts it).
      ValueError: `padding_config` does not have one triple per dimension, has negative interior padding, or
        removes more elements than a dimension has.
    """
    x = _as_array(x)
    aval = core.get_aval(x)
    if isinstance(padding_value, (bool, int, float, complex)) and not isinstance(padding_value, np.generic):
        padding_value = core.Array(np.asarray(padding_value, aval.dtype), True)  # Python scalars adopt x's dtype
    elif not isinstance(padding_value, (core.Array, core.Tracer)):
        padding_value = core.to_array(padding_value)
    cfg = tuple(tuple(int(v) for v in c) for c in padding_config)
    _pad_abstract_eval(aval, core.get_aval(padding_value), padding_config=cfg)
    return pad_p.bind(x, padding_value, padding_config=cfg)


def _pad_abstract_eval(x, pv, *, padding_config):
    if pv.shape != () or pv.dtype != x.dtype:
        raise TypeError(f"pad: padding_value must be a scalar of the operand's dtype {x.dtype.name}, got "
                        f"{pv.str_short()}")
    if len(padding_config) != x.ndim:
        raise ValueError(f"pad: padding_config {tuple(padding_config)} needs one (low, high, interior) triple per "
                         f"dimension of the operand (shape {x.shape})")
    shape = []
    for i, (d, (lo, hi, interior)) in enumerate(zip(x.shape, padding_config)):
        if interior < 0:
            raise ValueError(f"pad: interior padding in padding_config {tuple(padding_config)} must be non-negative")
        size = lo + hi + d + max(d - 1, 0) * interior
        if size < 0:
            raise ValueError(f"pad: padding_config {tuple(padding_config)} removes more than the {d} elements of "
                             f"dimension {i} of the operand (shape {x.shape}): its size would be {size}")
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
    """The static slice x[start:limit:stride] per dimension.

    Raises:
      TypeError: the index sequences do not have one entry per dimension, or violate
        0 <= start <= limit <= size, or a stride is not positive.
    """
    x = _as_array(x)
    starts, limits = _tuple_ints(start_indices), _tuple_ints(limit_indices)
    strides = None if strides is None else _tuple_ints(strides)
    aval = core.get_aval(x)
    unit = strides is None or (len(strides) == aval.ndim and all(s == 1 for s in strides))
    if unit and limits == aval.shape and starts == (0,) * aval.ndim:
        return x
    _check_slice(aval, starts, limits, strides)
    return slice_p.bind(x, start_indices=starts, limit_indices=limits, strides=None if unit else strides)


def _canonical_axis(name: str, axis: int, shape: tuple) -> int:
    nd = len(shape)
    if not -nd <= int(axis) < nd:
        raise IndexError(f"{name}: axis {axis} is out of bounds for an operand of rank {nd} (shape {shape})")
    return int(axis) % nd


def slice_in_dim(x, start_index: int | None, limit_index: int | None, stride: int = 1, axis: int = 0):
    """Slices `x` along one axis: `x[start_index:limit_index:stride]` there.

    The indices follow Python's slice semantics (None for the ends, negative values count from the end, values past
    the ends are clipped to them); `jax.lax.slice_in_dim` raises for a limit past the end instead.

    Raises:
      IndexError: `axis` is out of bounds.
    """
    shape = core.get_aval(x).shape
    axis = _canonical_axis("slice_in_dim", axis, shape)
    starts = [0] * len(shape)
    limits = list(shape)
    strides = [1] * len(shape)
    s, l, _ = builtins.slice(start_index, limit_index).indices(shape[axis])
    starts[axis], limits[axis], strides[axis] = s, max(l, s), stride
    return slice(x, starts, limits, strides)


def index_in_dim(x, index: int, axis: int = 0, keepdims: bool = True):
    """x[..., index, ...] along `axis` (a static index; negative values count from the end).

    Raises:
      IndexError: `index` or `axis` is out of bounds.
    """
    shape = core.get_aval(x).shape
    axis = _canonical_axis("index_in_dim", axis, shape)
    size = shape[axis]
    wrapped = int(index) + size if int(index) < 0 else int(index)
    if not 0 <= wrapped < size:
        raise IndexError(f"index_in_dim: index {index} is out of bounds for axis {axis} with size {size} (operand "
                         f"shape {shape})")
    # The slice is valid by construction: bind it directly rather than re-validate it in `slice`.
    starts, limits = [0] * len(shape), list(shape)
    starts[axis], limits[axis] = wrapped, wrapped + 1
    out = slice_p.bind(_as_array(x), start_indices=tuple(starts), limit_indices=tuple(limits), strides=None)
    return out if keepdims else squeeze_p.bind(out, dimensions=(axis,))


def _check_slice(x, start_indices, limit_indices, strides):
    nd = x.ndim
    if len(start_indices) != nd or len(limit_indices) != nd or (strides is not None and len(strides) != nd):
        for what, v in (("start_indices", start_indices), ("limit_indices", limit_indices), ("strides", strides)):
            if v is not None and len(v) != nd:
                raise TypeError(f"slice: {what} {tuple(v)} must have one entry per dimension of the operand (shape "
                                f"{x.shape})")
    for d, start, limit, stride in zip(x.shape, start_indices, limit_indices, strides or (1,) * x.ndim):
        if 0 <= start <= limit <= d and stride >= 1:
            continue
        if start < 0:
            raise TypeError(f"slice: start_indices {tuple(start_indices)} must be non-negative (operand shape "
                            f"{x.shape})")
        if limit > d:
            raise TypeError(f"slice: limit_indices {tuple(limit_indices)} must be less than or equal to the operand "
                            f"shape {x.shape}")
        if limit < start:
            raise TypeError(f"slice: limit_indices {tuple(limit_indices)} must be greater than or equal to "
                            f"start_indices {tuple(start_indices)} (operand shape {x.shape})")
        raise TypeError(f"slice: strides {tuple(strides)} must be positive (operand shape {x.shape})")


def _slice_abstract_eval(x, *, start_indices, limit_indices, strides=None):
    _check_slice(x, start_indices, limit_indices, strides)
    strides = strides or (1,) * x.ndim
    shape = tuple(-(-(limit - start) // stride) for start, limit, stride in zip(start_indices, limit_indices, strides))
    return ShapedArray(shape, x.dtype)


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


def _check_index_count(name: str, start_indices: Sequence, shape: tuple) -> None:
    if len(start_indices) != len(shape):
        raise ValueError(f"{name}: len(start_indices) is {len(start_indices)} but the operand has {len(shape)} "
                         f"dimensions (shape {shape}); give one start index per dimension")


def _wrap_negative(name: str, starts: list, shape: tuple, allow_negative_indices: bool) -> list:
    """JAX's default for dynamic slices: a negative start index counts from the end of its dimension (then the
    start is clamped into bounds as usual). With `allow_negative_indices=False` a known negative index raises."""
    out = []
    for i, d in zip(starts, shape):
        v = core.concrete_value(i)
        if v is not None:
            iv = int(np.asarray(v))
            if iv < 0 and not allow_negative_indices:
                raise ValueError(f"Index {iv} is out of bounds for dimension {d} if allow_negative_indices=False "
                                 f"(in {name})")
            out.append(i if iv >= 0 else core.Array(np.asarray(iv + d, np.asarray(v).dtype)))
        elif allow_negative_indices:
            from .elementwise import add, lt, select_n  # (elementwise imports this module)
            dt = core.get_aval(i).dtype
            out.append(select_n(lt(i, core.Array(np.zeros((), dt))), i, add(i, core.Array(np.asarray(d, dt)))))
        else:
            out.append(i)
    return out


def dynamic_slice(x, start_indices: Sequence, slice_sizes: Sequence[int], *, allow_negative_indices: bool = True):
    """x[start:start+size] per dimension. As in JAX, a negative start counts from the end of its dimension (unless
    `allow_negative_indices=False`), and starts are then clamped so the slice stays in bounds.

    Raises:
      ValueError: `start_indices` or `slice_sizes` does not have one entry per dimension of `x`; a known negative
        index with `allow_negative_indices=False`.
      TypeError: a slice size is negative or larger than its dimension, or a start index is not an integer scalar.
    """
    return _bind_dynamic_slice(x, start_indices, slice_sizes, wrap=allow_negative_indices, refuse_negative=True)


def dynamic_slice_clamped(x, start_indices: Sequence, slice_sizes: Sequence[int]):
    """`dynamic_slice` whose starts are only clamped, never counted from the end: for callers that have already
    normalized their indices (`jnp` indexing, as JAX's does before it slices)."""
    return _bind_dynamic_slice(x, start_indices, slice_sizes, wrap=False, refuse_negative=False)


def _bind_dynamic_slice(x, start_indices, slice_sizes, *, wrap: bool, refuse_negative: bool):
    x = _as_array(x)
    aval = core.get_aval(x)
    _check_index_count("dynamic_slice", start_indices, aval.shape)
    sizes = _tuple_ints(slice_sizes)
    if len(sizes) != aval.ndim:
        raise ValueError(f"dynamic_slice: slice_sizes {sizes} must have one entry per dimension of the operand "
                         f"(shape {aval.shape})")
    _check_slice_sizes(aval, sizes)
    starts = [_index_scalar(i) for i in start_indices]  # (checks that they are integers)
    if wrap or refuse_negative:
        starts = _wrap_negative("dynamic_slice", starts, aval.shape, wrap)
    return dynamic_slice_p.bind(x, *starts, slice_sizes=sizes)


def _check_slice_sizes(x, slice_sizes):
    if len(slice_sizes) != x.ndim:
        raise TypeError(f"dynamic_slice: slice_sizes {tuple(slice_sizes)} must have one entry per dimension of the "
                        f"operand (shape {x.shape})")
    for d, z in zip(x.shape, slice_sizes):
        if 0 <= z <= d:
            continue
        if z < 0:
            raise TypeError(f"dynamic_slice: slice_sizes {tuple(slice_sizes)} must be non-negative (operand shape "
                            f"{x.shape})")
        if z > d:
            raise TypeError(f"dynamic_slice: slice_sizes {tuple(slice_sizes)} must be less than or equal to the "
                            f"operand shape {x.shape}")


def _dynamic_slice_abstract_eval(x, *starts, slice_sizes):
    _check_index_avals("dynamic_slice", starts, x.ndim)
    _check_slice_sizes(x, slice_sizes)
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


def dynamic_update_slice(x, update, start_indices: Sequence, *, allow_negative_indices: bool = True):
    """A copy of `x` with `update` written at `start_indices` (negative starts count from the end, as in JAX; then
    clamped to stay in bounds).

    Raises:
      ValueError: `start_indices` does not have one entry per dimension of `x`; a known negative index with
        `allow_negative_indices=False`.
      TypeError: `update` differs from `x` in dtype or rank, or is larger than `x` in some dimension.
    """
    return _bind_dynamic_update_slice(x, update, start_indices, wrap=allow_negative_indices, refuse_negative=True)


def dynamic_update_slice_clamped(x, update, start_indices: Sequence):
    """`dynamic_update_slice` whose starts are only clamped (see `dynamic_slice_clamped`)."""
    return _bind_dynamic_update_slice(x, update, start_indices, wrap=False, refuse_negative=False)


def _bind_dynamic_update_slice(x, update, start_indices, *, wrap: bool, refuse_negative: bool):
    x, update = _as_array(x), _as_array(update)
    aval = core.get_aval(x)
    _check_index_count("dynamic_update_slice", start_indices, aval.shape)
    _check_update(aval, core.get_aval(update))
    starts = [_index_scalar(i) for i in start_indices]  # (checks that they are integers)
    if wrap or refuse_negative:
        starts = _wrap_negative("dynamic_update_slice", starts, aval.shape, wrap)
    return dynamic_update_slice_p.bind(x, update, *starts)


def _check_update(x, update):
    if update.dtype != x.dtype:
        raise TypeError(f"dynamic_update_slice: update dtype {update.dtype.name} must equal operand dtype "
                        f"{x.dtype.name}")
    if update.ndim != x.ndim:
        raise TypeError(f"dynamic_update_slice: update must have the operand's rank, got update shape "
                        f"{update.shape} for operand shape {x.shape}")
    if any(u > d for u, d in zip(update.shape, x.shape)):
        raise TypeError(f"dynamic_update_slice: update shape {update.shape} must be less than or equal to the "
                        f"operand shape {x.shape}")


def _dynamic_update_slice_abstract_eval(x, update, *starts):
    _check_index_avals("dynamic_update_slice", starts, x.ndim)
    _check_update(x, update)
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
core.param_print_rules[iota_p] = lambda params: {**params, "sharding": None}  # (JAX's, always None here)


def iota(dtype, size: int):
    """[0, 1, ..., size-1] of `dtype`."""
    params = dict(dtype=dtypes.canonicalize_dtype(dtype), shape=(int(size),), dimension=0)
    _iota_abstract_eval(**params)
    return iota_p.bind(**params)


def broadcasted_iota(dtype, shape: Sequence[int], dimension: int):
    """An array of `shape` whose values count along `dimension`."""
    params = dict(dtype=dtypes.canonicalize_dtype(dtype), shape=_tuple_ints(shape), dimension=int(dimension))
    _iota_abstract_eval(**params)
    return iota_p.bind(**params)


def _iota_abstract_eval(*, dtype, shape, dimension):
    if any(d < 0 for d in shape):
        raise TypeError(f"iota: shape {tuple(shape)} must have every element be non-negative")
    if not 0 <= dimension < len(shape):
        raise ValueError(f"iota: dimension {dimension} must be between 0 and len(shape) for shape {tuple(shape)}")
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



# --------------------------------------------------------------------------------------------------------------
# stop_gradient (the identity on values, with a zero derivative; `fluxion.lax.stop_gradient` maps it over pytrees)
# --------------------------------------------------------------------------------------------------------------

stop_gradient_p = standard_primitive("stop_gradient", weak_type="first")


def _stop_gradient_abstract_eval(x):
    return ShapedArray(x.shape, x.dtype)


abstract_eval_rules[stop_gradient_p] = _stop_gradient_abstract_eval
ad.defjvp_zero(stop_gradient_p)
batching.primitive_batchers[stop_gradient_p] = lambda vals, dims: (stop_gradient_p.bind(vals[0]), dims[0])


# The interpreters move batch dimensions and instantiate zeros with these (they cannot import lax).
array_ops.provide("full", full)
array_ops.provide("broadcast_in_dim", broadcast_in_dim)
array_ops.provide("transpose", transpose)
