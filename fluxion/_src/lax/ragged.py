"""Ragged dot products (`lax.ragged_dot`, `lax.ragged_dot_general`): compositions of existing primitives.

One dimension of `lhs` (its ragged dimension) is cut into consecutive groups whose sizes are `group_sizes` (an
integer array, traced values allowed). The groups are expressed as a 0/1 membership mask of shape [g, ragged
size] built from the cumulative group sizes, so the whole product is one masked `dot_general`: jit, grad (in
`lhs` and `rhs`) and vmap go through the primitives it binds. The cost is that of g dense products (XLA's grouped
kernels skip the zeros); rows past sum(group_sizes) contribute nothing.

The three modes, by where the ragged dimension sits (b batch, m lhs free, k contracting, n rhs free dims):
  1. non-contracting: lhs [b.., m.., k..], rhs [g, b.., k.., n..] (one rhs slice per group) -> [b.., m.., n..];
  2. contracting: lhs [b.., m.., k..], rhs [b.., k.., n..] -> [g, b.., m.., n..] (one product per group);
  3. batch: lhs [b.., m.., k..], rhs [b.., k.., n..] -> [b.., m.., n..]: every batch entry already has its own
     product, so the grouping does not change the result, which is `dot_general`'s (as in JAX, whose reference
     implementation ignores group_sizes in this mode).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .. import core, dtypes
from . import elementwise as ew
from . import structural as st
from .cumulative import cumsum
from .reductions import dot_general, reduce_sum


@dataclasses.dataclass(frozen=True, init=False)
class RaggedDotDimensionNumbers:
    """The dimensions of a ragged dot product: `dot_dimension_numbers` ((lhs_contracting, rhs_contracting),
    (lhs_batch, rhs_batch)) as for `dot_general`, the lhs ragged dimension (a one-element sequence) and the rhs
    group dimension (one element in mode 1, none otherwise). Hashable, with every field a tuple."""

    dot_dimension_numbers: tuple
    lhs_ragged_dimensions: tuple
    rhs_group_dimensions: tuple

    def __init__(self, dot_dimension_numbers, lhs_ragged_dimensions, rhs_group_dimensions):
        dims = tuple(tuple(tuple(int(d) for d in side) for side in pair) for pair in dot_dimension_numbers)
        object.__setattr__(self, "dot_dimension_numbers", dims)
        object.__setattr__(self, "lhs_ragged_dimensions", tuple(int(d) for d in lhs_ragged_dimensions))
        object.__setattr__(self, "rhs_group_dimensions", tuple(int(d) for d in rhs_group_dimensions))


_BASIC = RaggedDotDimensionNumbers((([1], [1]), ([], [])), [0], [0])


def _group_mask(group_sizes, size: int, dtype):
    """mask[j, i] = 1 where offset[j] <= i < offset[j + 1] (offsets are the exclusive cumulative sizes)."""
    sizes = ew.convert_element_type(group_sizes, "int32")
    ends = cumsum(sizes, axis=0)
    starts = ew.sub(ends, sizes)
    g = core.get_aval(sizes).shape[0]
    pos = st.broadcast_in_dim(st.iota("int32", size), (g, size), (1,))
    lo = st.broadcast_in_dim(starts, (g, size), (0,))
    hi = st.broadcast_in_dim(ends, (g, size), (0,))
    inside = ew.bitwise_and(ew.ge(pos, lo), ew.lt(pos, hi))
    return ew.convert_element_type(inside, dtype)


def _masked_lhs(lhs, mask, ragged: int):
    """lhs with a leading group axis: out[j] = lhs with the entries outside group j along `ragged` zeroed."""
    shape = core.get_aval(lhs).shape
    g = core.get_aval(mask).shape[0]
    full = (g, *shape)
    return ew.mul(st.broadcast_in_dim(lhs, full, tuple(range(1, len(full)))),
                  st.broadcast_in_dim(mask, full, (0, ragged + 1)))


def _check(lhs, rhs, group_sizes, dims: RaggedDotDimensionNumbers, group_offset):
    if not isinstance(dims, RaggedDotDimensionNumbers):
        raise TypeError(f"ragged_dot_general: ragged_dot_dimension_numbers must be a RaggedDotDimensionNumbers, "
                        f"got {type(dims).__name__}")
    if group_offset is not None:
        raise NotImplementedError("ragged_dot_general: group_offset is not supported (as in JAX)")
    gs = core.get_aval(group_sizes)
    if not dtypes.is_integer(gs.dtype):
        raise TypeError(f"ragged_dot_general: group_sizes must be integers, got {gs.dtype}")
    if gs.ndim != 1:
        raise NotImplementedError(f"ragged_dot_general: only group_sizes of shape [g] are supported, got shape "
                                  f"{gs.shape} (per-batch group sizes are not implemented)")
    if len(dims.lhs_ragged_dimensions) != 1:
        raise TypeError(f"ragged_dot_general: expects exactly one lhs ragged dimension, got "
                        f"{dims.lhs_ragged_dimensions}")
    ragged = dims.lhs_ragged_dimensions[0]
    lnd, rnd = core.get_aval(lhs).ndim, core.get_aval(rhs).ndim
    if not 0 <= ragged < lnd:
        raise TypeError(f"ragged_dot_general: the lhs ragged dimension {ragged} is out of range for lhs of rank "
                        f"{lnd}")
    (lc, _), (lb, _) = dims.dot_dimension_numbers
    non_contracting = ragged not in lc and ragged not in lb
    if non_contracting:
        if len(dims.rhs_group_dimensions) != 1:
            raise TypeError("ragged_dot_general: a non-contracting ragged dimension needs exactly one rhs group "
                            f"dimension, got {dims.rhs_group_dimensions}")
        grp = dims.rhs_group_dimensions[0]
        if not 0 <= grp < rnd:
            raise TypeError(f"ragged_dot_general: the rhs group dimension {grp} is out of range for rhs of rank "
                            f"{rnd}")
        if core.get_aval(rhs).shape[grp] != gs.shape[0]:
            raise TypeError(f"ragged_dot_general: rhs has {core.get_aval(rhs).shape[grp]} groups along dimension "
                            f"{grp} but group_sizes has {gs.shape[0]}")
    elif dims.rhs_group_dimensions:
        raise TypeError("ragged_dot_general: rhs group dimensions are only allowed when the ragged dimension is "
                        f"non-contracting, got {dims.rhs_group_dimensions}")


def ragged_dot_general(lhs, rhs, group_sizes, ragged_dot_dimension_numbers: RaggedDotDimensionNumbers,
                       precision: Any = None, preferred_element_type: Any = None, group_offset: Any = None,
                       out_sharding: Any = None):
    """The ragged dot product in one of its three modes (see the module docstring for shapes).

    Args:
      lhs, rhs: arrays of one dtype (as `dot_general`).
      group_sizes: integer array of shape [g]; group j covers lhs's ragged dimension from sum(group_sizes[:j]) on.
      ragged_dot_dimension_numbers: a `RaggedDotDimensionNumbers`.
      precision: accepted for compatibility (NumPy computes at full precision).
      preferred_element_type: the output dtype, as for `dot_general`.
      group_offset: must be None (JAX does not implement it either). out_sharding: ignored (one device).

    Raises:
      TypeError: for inconsistent dimension numbers or non-integer group sizes. NotImplementedError: for a
      `group_offset` or group_sizes of rank above 1 (JAX's per-batch group sizes).
    """
    del precision, out_sharding
    dims = ragged_dot_dimension_numbers
    _check(lhs, rhs, group_sizes, dims, group_offset)
    ragged = dims.lhs_ragged_dimensions[0]
    (lc, rc), (lb, rb) = dims.dot_dimension_numbers
    if ragged in lb:  # mode 3
        return dot_general(lhs, rhs, ((lc, rc), (lb, rb)), preferred_element_type=preferred_element_type)
    lhs_aval = core.get_aval(lhs)
    mask = _group_mask(group_sizes, lhs_aval.shape[ragged], lhs_aval.dtype)
    shift = tuple(d + 1 for d in lc), tuple(d + 1 for d in lb)
    masked = _masked_lhs(lhs, mask, ragged)
    if ragged in lc:  # mode 2: the group axis is a free lhs axis, moved to the front of the result
        out = dot_general(masked, rhs, ((shift[0], rc), (shift[1], rb)),
                          preferred_element_type=preferred_element_type)
        nb = len(lb)
        perm = (nb, *range(nb), *range(nb + 1, core.get_aval(out).ndim))
        return st.transpose(out, perm)
    grp = dims.rhs_group_dimensions[0]  # mode 1: the group axis is a batch axis shared with rhs, then summed
    out = dot_general(masked, rhs, ((shift[0], rc), ((0, *shift[1]), (grp, *rb))),
                      preferred_element_type=preferred_element_type)
    return reduce_sum(out, (0,))


def ragged_dot(lhs, rhs, group_sizes, precision: Any = None, preferred_element_type: Any = None,
               group_offset: Any = None):
    """The grouped matrix product of mode 1: lhs [m, k], rhs [g, k, n], group_sizes [g] -> [m, n], where the rows of
    group j (consecutive, sum(group_sizes[:j]) on) are multiplied by rhs[j] and rows past sum(group_sizes) are 0.

    Raises:
      TypeError: for operands that are not [m, k], [g, k, n], [g]; see `ragged_dot_general` for the rest.
    """
    l_aval, r_aval = core.get_aval(lhs), core.get_aval(rhs)
    if l_aval.ndim != 2 or r_aval.ndim != 3 or l_aval.shape[1] != r_aval.shape[1]:
        raise TypeError(f"ragged_dot: expected lhs [m, k] and rhs [g, k, n], got shapes {l_aval.shape} and "
                        f"{r_aval.shape}")
    return ragged_dot_general(lhs, rhs, group_sizes, _BASIC, precision=precision,
                              preferred_element_type=preferred_element_type, group_offset=group_offset)


