"""`lax` functions that are compositions of existing primitives (no rules of their own), and shape helpers.

Each function here binds only primitives defined elsewhere in `lax`, so jit, grad and vmap work through them
unchanged. Grouped as `jax.lax` groups them: indexing along one dimension, shape manipulation, products and
top-k, and pure shape arithmetic (the `*_shape_tuple` helpers, which take and return tuples of ints).
"""

from __future__ import annotations

import builtins
from typing import Any, Callable, Sequence

import numpy as np

from .. import core, dtypes
from . import elementwise as ew
from . import structural as st
from .convolution import _conv_transpose_padding, _dilate, conv_general_permutations, padtype_to_pads
from .indexing import GatherDimensionNumbers, gather
from .reductions import dot_general
from .sorting import top_k
from .utils import canonicalize_axis


def _aval(x):
    return core.get_aval(x)


# --------------------------------------------------------------------------------------------------------------
# Indexing along one dimension
# --------------------------------------------------------------------------------------------------------------

def dynamic_slice_in_dim(operand, start_index, slice_size: int, axis: int = 0, *,
                         allow_negative_indices: bool = True):
    """`operand[..., start:start + slice_size, ...]` along `axis` with a traced start (clamped into bounds).

    A negative `start_index` counts from the end unless `allow_negative_indices` is False.

    Raises:
      ValueError: `axis` out of range. TypeError: `slice_size` larger than the dimension or a non-integer index.
    """
    operand = st._as_array(operand)
    shape = _aval(operand).shape
    axis = canonicalize_axis(int(axis), len(shape))
    start = st._index_scalar(start_index)
    starts = [core.Array(np.zeros((), _aval(start).dtype))] * len(shape)
    starts[axis] = start
    sizes = list(shape)
    sizes[axis] = int(slice_size)
    # (dynamic_slice itself counts a negative start from the end, or refuses it, per allow_negative_indices)
    return st.dynamic_slice(operand, starts, sizes, allow_negative_indices=allow_negative_indices)


def dynamic_index_in_dim(operand, index, axis: int = 0, keepdims: bool = True, *,
                         allow_negative_indices: bool = True):
    """The slice of `operand` at a traced `index` along `axis` (kept as a size-1 dimension if `keepdims`)."""
    out = dynamic_slice_in_dim(operand, index, 1, axis, allow_negative_indices=allow_negative_indices)
    if keepdims:
        return out
    return st.squeeze(out, (canonicalize_axis(int(axis), _aval(out).ndim),))


def dynamic_update_slice_in_dim(operand, update, start_index, axis: int, *, allow_negative_indices: bool = True):
    """`operand` with `update` written at a traced `start_index` along `axis` (clamped so it fits).

    Raises:
      TypeError: `update` has a different rank or dtype than `operand`, or does not fit.
    """
    operand = st._as_array(operand)
    shape = _aval(operand).shape
    axis = canonicalize_axis(int(axis), len(shape))
    start = st._index_scalar(start_index)
    starts = [core.Array(np.zeros((), _aval(start).dtype))] * len(shape)
    starts[axis] = start
    return st.dynamic_update_slice(operand, update, starts, allow_negative_indices=allow_negative_indices)


def dynamic_update_index_in_dim(operand, update, index, axis: int, *, allow_negative_indices: bool = True):
    """`operand` with the slice at `index` along `axis` replaced by `update` (which may lack that dimension)."""
    operand = st._as_array(operand)
    update = st._as_array(update)
    nd = _aval(operand).ndim
    axis = canonicalize_axis(int(axis), nd)
    if _aval(update).ndim == nd - 1:
        update = st.expand_dims(update, (axis,))
    return dynamic_update_slice_in_dim(operand, update, index, axis, allow_negative_indices=allow_negative_indices)


def index_take(src, idxs: Sequence, axes: Sequence[int]):
    """`src[idxs[0], idxs[1], ...]` with the index arrays applied to `axes` (a gather): the result has the
    indices' common length first, then the dimensions of `src` not in `axes`.

    Raises:
      ValueError: `idxs` and `axes` differ in length.
    """
    src = st._as_array(src)
    axes = tuple(int(a) for a in axes)
    idxs = list(idxs)
    if len(idxs) != len(axes):
        raise ValueError(f"index_take: got {len(idxs)} index arrays for {len(axes)} axes")
    shape = _aval(src).shape
    columns = [st.expand_dims(st._as_array(i), (1,)) for i in idxs]
    indices = st.concatenate(columns, 1) if len(columns) > 1 else columns[0]
    offset = tuple(range(1, len(shape) - len(axes) + 1))
    dnums = GatherDimensionNumbers(offset_dims=offset, collapsed_slice_dims=tuple(sorted(axes)),
                                   start_index_map=axes)
    sizes = tuple(1 if d in axes else s for d, s in enumerate(shape))
    return gather(src, indices, dnums, sizes, mode="promise_in_bounds")


# --------------------------------------------------------------------------------------------------------------
# Shapes
# --------------------------------------------------------------------------------------------------------------

def collapse(operand, start_dimension: int, stop_dimension: int | None = None):
    """Merges dimensions [start_dimension, stop_dimension) of `operand` into one (to the end if stop is None)."""
    operand = st._as_array(operand)
    shape = _aval(operand).shape
    nd = len(shape)
    lo = canonicalize_axis(int(start_dimension), nd, "start_dimension")
    hi = nd if stop_dimension is None else int(stop_dimension) + (nd if int(stop_dimension) < 0 else 0)
    if not lo <= hi <= nd:
        raise ValueError(f"collapse: need start_dimension <= stop_dimension <= rank {nd}, got {start_dimension}, "
                         f"{stop_dimension}")
    size = int(np.prod(shape[lo:hi], dtype=np.int64))
    return st.reshape(operand, shape[:lo] + (size,) + shape[hi:])


def broadcast_to_rank(x, rank: int):
    """`x` with leading size-1 dimensions added up to `rank` (unchanged if it already has that rank or more)."""
    x = st._as_array(x)
    nd = _aval(x).ndim
    if nd >= rank:
        return x
    return st.broadcast(x, (1,) * (rank - nd))


def broadcast_like(arr, like_arr):
    """`arr` broadcast (NumPy rules: trailing dimensions aligned) to the shape of `like_arr`.

    Raises:
      TypeError: `arr`'s shape cannot broadcast to `like_arr`'s.
    """
    arr = st._as_array(arr)
    shape = tuple(np.shape(like_arr)) if not isinstance(like_arr, (core.Array, core.Tracer)) \
        else _aval(like_arr).shape
    return _broadcast_to(arr, shape, "broadcast_like")


def _broadcast_to(x, shape: tuple, name: str):
    xs = _aval(x).shape
    if xs == shape:
        return x
    lead = len(shape) - len(xs)
    if lead < 0 or any(d != 1 and d != s for d, s in zip(xs, shape[lead:])):
        raise TypeError(f"{name}: cannot broadcast shape {xs} to {shape}")
    keep = [i for i, d in enumerate(xs) if d == shape[lead + i]]
    squeezed = st.reshape(x, tuple(xs[i] for i in keep)) if len(keep) != len(xs) else x
    return st.broadcast_in_dim(squeezed, shape, tuple(lead + i for i in keep))


def broadcast_shapes(*shapes: Sequence[int]) -> tuple:
    """The NumPy broadcast of `shapes` (a tuple of ints).

    Raises:
      ValueError: naming the shapes that do not broadcast together.
    """
    shapes = [tuple(int(d) for d in s) for s in shapes]
    nd = builtins.max((len(s) for s in shapes), default=0)
    out = []
    for i in range(nd):
        size = 1
        for s in shapes:
            d = s[i - nd + len(s)] if i - nd + len(s) >= 0 else 1
            if d != 1:
                if size not in (1, d):
                    raise ValueError(f"Incompatible shapes for broadcasting: shapes={shapes}")
                size = d
        out.append(size)
    return tuple(out)


def full_like(x, fill_value, dtype=None, shape=None, sharding=None):
    """An array like `x` (its shape and dtype unless `shape`/`dtype` are given) filled with `fill_value`.

    `sharding` is accepted and ignored (one device). The result is weakly typed when `x` is and no dtype is given.
    """
    if isinstance(x, (core.Array, core.Tracer)):
        aval = _aval(x)
        x_shape, x_dtype, weak = aval.shape, aval.dtype, aval.weak_type
    else:
        x_dtype, weak = dtypes.dtype_and_weak(x)
        x_shape = np.shape(x)
    out = st.full(x_shape if shape is None else shape, fill_value, x_dtype if dtype is None else dtype)
    if dtype is None and weak and not _aval(out).weak_type:
        out = ew._convert_weak(out, x_dtype, True)
    return out


def empty(shape, dtype, *, out_sharding=None):
    """An array of `shape` and `dtype` whose contents are unspecified (zeros here, as JAX's CPU backend gives).

    `out_sharding` is accepted and ignored (one device)."""
    return st.full(shape if isinstance(shape, (tuple, list)) else (shape,), 0, dtype)


def reciprocal(x):
    """1 / x elementwise (`integer_pow(x, -1)`), for inexact dtypes."""
    return ew.integer_pow(x, -1)


def dtype(x: Any) -> np.dtype:
    """The dtype an array made from `x` gets (Python scalars take the default dtypes; x64 off narrows 64-bit)."""
    if isinstance(x, (core.Array, core.Tracer)):
        return _aval(x).dtype
    if isinstance(x, (type, np.dtype, str)):
        return dtypes.canonicalize_dtype(x)
    return dtypes.dtype_and_weak(x)[0]


def split(operand, sizes: Sequence[int], axis: int = 0) -> list:
    """Splits `operand` along `axis` into consecutive pieces of the given `sizes` (which must sum to its size).

    Raises:
      ValueError: the sizes do not sum to the dimension, or one is negative.
    """
    operand = st._as_array(operand)
    shape = _aval(operand).shape
    axis = canonicalize_axis(int(axis), len(shape))
    sizes = [int(s) for s in sizes]
    if any(s < 0 for s in sizes) or sum(sizes) != shape[axis]:
        raise ValueError(f"split: sizes {tuple(sizes)} must be non-negative and sum to the size {shape[axis]} of "
                         f"axis {axis} (operand shape {shape})")
    out, start = [], 0
    for s in sizes:
        out.append(st.slice_in_dim(operand, start, start + s, axis=axis))
        start += s
    return out


def tile(operand, reps: Sequence[int]):
    """`operand` repeated `reps[i]` times along dimension i (len(reps) must equal the rank).

    Raises:
      ValueError: `reps` has the wrong length or a negative entry.
    """
    operand = st._as_array(operand)
    shape = _aval(operand).shape
    reps = tuple(int(r) for r in reps)
    if len(reps) != len(shape) or any(r < 0 for r in reps):
        raise ValueError(f"tile: reps {reps} must be non-negative, one per dimension of the operand (shape {shape})")
    # Broadcast to (r0, d0, r1, d1, ...) and merge each pair.
    inter = tuple(v for r, d in zip(reps, shape) for v in (r, d))
    y = st.broadcast_in_dim(operand, inter, tuple(range(1, 2 * len(shape), 2)))
    return st.reshape(y, tuple(r * d for r, d in zip(reps, shape)))


def stack(operands: Sequence, axis: int = 0):
    """Joins same-shape arrays along a new dimension `axis`.

    Raises:
      ValueError: no operands. TypeError: the shapes or dtypes differ.
    """
    operands = [st._as_array(o) for o in operands]
    if not operands:
        raise ValueError("stack: need at least one operand")
    nd = _aval(operands[0]).ndim
    axis = canonicalize_axis(int(axis), nd + 1)
    return st.concatenate([st.expand_dims(o, (axis,)) for o in operands], axis)


def unstack(x, axis: int = 0) -> tuple:
    """The slices of `x` along `axis`, each without that dimension."""
    x = st._as_array(x)
    nd = _aval(x).ndim
    axis = canonicalize_axis(int(axis), nd)
    return tuple(st.index_in_dim(x, i, axis, keepdims=False) for i in range(_aval(x).shape[axis]))


# --------------------------------------------------------------------------------------------------------------
# Products and top-k
# --------------------------------------------------------------------------------------------------------------

def batch_matmul(lhs, rhs, precision=None):
    """Matrix products over the leading (batch) dimensions: (..., m, k) @ (..., k, n) -> (..., m, n).

    Raises:
      ValueError: ranks below 2 or different ranks, or mismatched batch dimensions.
    """
    lhs, rhs = st._as_array(lhs), st._as_array(rhs)
    ls, rs = _aval(lhs).shape, _aval(rhs).shape
    if len(ls) < 2 or len(ls) != len(rs):
        raise ValueError(f"batch_matmul: operands must have the same rank >= 2, got shapes {ls} and {rs}")
    if ls[:-2] != rs[:-2]:
        raise ValueError(f"batch_matmul: batch dimensions differ: {ls} and {rs}")
    batch = tuple(range(len(ls) - 2))
    return dot_general(lhs, rhs, (((len(ls) - 1,), (len(rs) - 2,)), (batch, batch)), precision=precision)


def _approx_k(operand, k, reduction_dimension, largest: bool):
    operand = st._as_array(operand)
    nd = _aval(operand).ndim
    dim = canonicalize_axis(int(reduction_dimension), nd, "reduction_dimension")
    if not largest:
        operand = ew.neg(operand)
    values, indices = top_k(operand, int(k), axis=dim)
    return [values if largest else ew.neg(values), indices]


def approx_max_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):
    """The `k` largest entries along `reduction_dimension` and their indices, as [values, indices].

    JAX's TPU algorithm may miss some of the true top-k (up to `recall_target`); on CPU it returns the exact
    top-k, and so does fluxion always: `recall_target`, `reduction_input_size_override` and `aggregate_to_topk`
    are accepted and have no effect. Ties go to the lower index. Differentiable through the values.
    """
    return _approx_k(operand, k, reduction_dimension, True)


def approx_min_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):
    """The `k` smallest entries along `reduction_dimension` and their indices, as [values, indices] (exact, as
    `approx_max_k`)."""
    return _approx_k(operand, k, reduction_dimension, False)


# --------------------------------------------------------------------------------------------------------------
# Shape arithmetic
# --------------------------------------------------------------------------------------------------------------

def _stride_dim(d: int, window: int, stride: int) -> int:
    return builtins.max(0, (d - window) // stride + 1)


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count: int = 1) -> tuple:
    """The output shape of a convolution of NC... `lhs_shape` with OI... `rhs_shape` (no dilation).

    Raises:
      TypeError: `pads` has the wrong length. ValueError: negative padding exceeds a dimension.
    """
    lhs_shape, rhs_shape = tuple(int(d) for d in lhs_shape), tuple(int(d) for d in rhs_shape)
    if isinstance(pads, str):
        pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    if len(pads) != len(lhs_shape) - 2:
        raise TypeError(f"Wrong number of explicit pads for convolution: expected {len(lhs_shape) - 2}, "
                        f"got {len(pads)}.")
    padded = [d + int(lo) + int(hi) for d, (lo, hi) in zip(lhs_shape[2:], pads)]
    if any(p < 0 for p in padded):
        raise ValueError(f"Negative padding is larger than the size of the corresponding dimension: got padding="
                         f"{pads} for lhs_shape[2:]={lhs_shape[2:]}")
    space = tuple(_stride_dim(p, k, int(s)) for p, k, s in zip(padded, rhs_shape[2:], strides))
    return (lhs_shape[0] // int(batch_group_count), rhs_shape[0]) + space


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers) -> tuple:
    """The output shape of `conv_general_dilated` (no dilation) with the given dimension numbers."""
    lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
    out = conv_shape_tuple([lhs_shape[i] for i in lhs_perm], [rhs_shape[i] for i in rhs_perm], window_strides,
                           padding)
    return tuple(out[i] for i in np.argsort(out_perm))


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers) -> tuple:
    """The output shape of `conv_transpose` with the given strides, padding and dimension numbers."""
    lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
    lt = [int(lhs_shape[i]) for i in lhs_perm]
    rt = [int(rhs_shape[i]) for i in rhs_perm]
    if isinstance(padding, str):
        padding = [_conv_transpose_padding(k, int(s), padding) for k, s in zip(rt[2:], window_strides)]
    space = [(i - 1) * int(s) - k + 2 + int(sum(p)) for i, k, s, p in zip(lt[2:], rt[2:], window_strides, padding)]
    out = (lt[0], rt[0]) + tuple(space)
    return tuple(out[i] for i in np.argsort(out_perm))


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding, base_dilation=None,
                              window_dilation=None) -> tuple:
    """The output shape of `reduce_window` with explicit (low, high) `padding` pairs."""
    shape = [int(d) for d in operand_shape]
    window = [int(w) for w in window_dimensions]
    if base_dilation is not None:
        shape = [_dilate(d, int(b)) for d, b in zip(shape, base_dilation)]
    if window_dilation is not None:
        window = [_dilate(w, int(d)) for w, d in zip(window, window_dilation)]
    padded = [d + int(lo) + int(hi) for d, (lo, hi) in zip(shape, padding)]
    return tuple(_stride_dim(p, w, int(s)) for p, w, s in zip(padded, window, window_strides))


def platform_dependent(*args: Any, default: Callable | None = None, **per_platform: Callable):
    """Calls the function given for the "cpu" platform (fluxion's only one) on `args`, else `default`.

    Raises:
      NotImplementedError: neither a "cpu" function nor `default` was given.
    """
    fn = per_platform.get("cpu", default)
    if fn is None:
        raise NotImplementedError(f"platform_dependent: no function for platform 'cpu' and no default (got "
                                  f"{sorted(per_platform)})")
    return fn(*args)


def composite(decomposition: Callable, name: str, version: int = 0) -> Callable:
    """Marks `decomposition` as a named composite operation. JAX records the name so a compiler may substitute a
    fused kernel; fluxion has no such kernels, so the returned function simply evaluates `decomposition` (same
    values, derivatives and batching)."""
    def composite_fn(*args, **kwargs):
        return decomposition(*args, **kwargs)
    composite_fn.__name__ = getattr(decomposition, "__name__", name)
    composite_fn.__doc__ = decomposition.__doc__
    composite_fn.composite_name, composite_fn.composite_version = name, int(version)
    return composite_fn


def conv_general_dilated_patches(lhs, filter_shape: Sequence[int], window_strides: Sequence[int], padding,
                                 lhs_dilation=None, rhs_dilation=None, dimension_numbers=None, precision=None,
                                 preferred_element_type=None):
    """The patches a convolution with a kernel of spatial shape `filter_shape` would see, as output channels.

    Each output position holds its receptive field flattened channel-major (all of channel 0's filter positions,
    then channel 1's, ...): the output has C * prod(filter_shape) features, laid out per `dimension_numbers`'
    output spec. Computed as JAX does, as a grouped convolution with a one-hot kernel, so it is differentiable
    and batchable; the other arguments are those of `conv_general_dilated`.

    Raises:
      TypeError/ValueError: as `conv_general_dilated` for inconsistent arguments.
    """
    from .convolution import conv_dimension_numbers, conv_general_dilated
    lhs = st._as_array(lhs)
    aval = _aval(lhs)
    filter_shape = tuple(int(f) for f in filter_shape)
    dn = conv_dimension_numbers(aval.shape, (1, 1) + filter_shape, dimension_numbers)
    spatial = int(np.prod(filter_shape, dtype=np.int64))
    channels = aval.shape[dn.lhs_spec[1]]
    eye = np.broadcast_to(np.eye(spatial, dtype=aval.dtype), (channels, spatial, spatial))
    kernel = np.moveaxis(eye.reshape((channels * spatial, 1) + filter_shape), (0, 1), (dn.rhs_spec[0], dn.rhs_spec[1]))
    return conv_general_dilated(lhs, core.Array(np.ascontiguousarray(kernel)), window_strides, padding,
                                lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation, dimension_numbers=dn,
                                feature_group_count=channels, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_general_dilated_local(lhs, rhs, window_strides: Sequence[int], padding, filter_shape: Sequence[int],
                               lhs_dilation=None, rhs_dilation=None, dimension_numbers=None, precision=None):
    """A locally connected ("unshared") convolution: like `conv_general_dilated`, but every output position has
    its own kernel.

    `rhs` has the layout of `dimension_numbers`' kernel spec, with the spatial dimensions being the *output*
    spatial shape and the input-feature dimension holding C_in * prod(filter_shape) weights per output feature,
    ordered as `conv_general_dilated_patches` orders a patch (channel-major). Computed as JAX does: the patches,
    then a `dot_general` batched over the output positions.

    Raises:
      TypeError/ValueError: inconsistent shapes (from the patches or the contraction).
    """
    from .convolution import conv_dimension_numbers
    lhs, rhs = st._as_array(lhs), st._as_array(rhs)
    filter_shape = tuple(int(f) for f in filter_shape)
    patches = conv_general_dilated_patches(lhs, filter_shape, window_strides, padding, lhs_dilation=lhs_dilation,
                                           rhs_dilation=rhs_dilation, dimension_numbers=dimension_numbers)
    lhs_spec, rhs_spec, out_spec = conv_dimension_numbers(_aval(lhs).shape, (1, 1) + filter_shape,
                                                          dimension_numbers)
    out_spatial, rhs_spatial = list(out_spec[2:]), list(rhs_spec[2:])
    # Pair each output spatial dimension with the kernel's matching one, in the output's dimension order.
    rhs_batch = [rhs_spatial[i] for i in sorted(range(len(out_spatial)), key=lambda k: out_spatial[k])]
    dn = (((out_spec[1],), (rhs_spec[1],)), (tuple(sorted(out_spatial)), tuple(rhs_batch)))
    out = dot_general(patches, rhs, dn, precision=precision)
    nd = _aval(out).ndim
    perm = [i for i in range(nd) if i not in (nd - 2, nd - 1)]
    for dst, src in sorted(zip((out_spec[0], out_spec[1]), (nd - 2, nd - 1))):
        perm.insert(dst, src)
    return st.transpose(out, tuple(perm))
