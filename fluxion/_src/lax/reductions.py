"""Reductions (`reduce_sum/max/min/prod/and/or/xor`), arg-reductions (`argmax/argmin`) and `dot_general`.

The reductions share one shape/dtype rule and one batching rule (made by `_reduce_primitive`); each primitive then
has one block: its definition, public wrapper, JVP and transpose.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Sequence

import numpy as np

from .. import core, dtypes
from ..config import config
from ..core import ShapedArray, abstract_eval_rules
from ..interpreters import ad, batching
from ..interpreters.ad import Zero
from . import elementwise as ew
from . import structural as st
from .utils import standard_primitive


# --------------------------------------------------------------------------------------------------------------
# Reductions
# --------------------------------------------------------------------------------------------------------------

def _reduce_abstract_eval(name, allow_bool=True):
    def abstract_eval(x, *, axes):
        for a in axes:
            if not 0 <= a < x.ndim:
                raise TypeError(f"{name}: axis {a} is out of bounds for an operand of shape {x.shape}")
        if not allow_bool and x.dtype == dtypes.bool_:
            raise TypeError(f"{name} does not accept bool operands")
        return ShapedArray(tuple(d for i, d in enumerate(x.shape) if i not in axes), x.dtype)
    return abstract_eval


def _reduce_batch_rule(prim):
    def rule(vals, dims, *, axes):
        (x,), (d,) = vals, dims
        new_axes = tuple(a + 1 if a >= d else a for a in axes)
        out_d = d - sum(1 for a in axes if a < d)
        return prim.bind(x, axes=new_axes), out_d
    return rule


def _reduce_primitive(name, allow_bool=True):
    """Creates a reduction primitive (parameter `axes`) with the shared shape/dtype rule and batching rule."""
    prim = standard_primitive(name, _reduce_abstract_eval(name, allow_bool), weak_type="first")
    batching.primitive_batchers[prim] = _reduce_batch_rule(prim)
    return prim


def _axes(x, axes) -> tuple:
    nd = core.get_aval(x).ndim
    for a in axes:
        if not -max(nd, 1) <= int(a) < max(nd, 1):
            raise ValueError(f"reduction axis {a} is out of bounds for an operand of shape {core.get_aval(x).shape}")
    return tuple(sorted(int(a) % nd for a in axes)) if nd else ()


def _bind_reduce(prim, x, axes):
    x = st._as_array(x)
    axes = _axes(x, axes)
    if not axes:
        return x
    return prim.bind(x, axes=axes)


def _expand_back(y, in_shape, axes):
    kept = tuple(i for i in range(len(in_shape)) if i not in axes)
    return st.broadcast_in_dim(y, in_shape, kept)


reduce_sum_p = _reduce_primitive("reduce_sum", allow_bool=False)
core.param_print_rules[reduce_sum_p] = lambda params: {**params, "out_sharding": None}  # (JAX's; None here)


def reduce_sum(x, axes: Sequence[int]):
    """Sums `x` over `axes` (dtype preserved).

    Raises:
      ValueError: `x` is float16 or bfloat16, some reduced dimension is longer than 1, and `jax.allow_f16_reductions`
        is False (half-precision sums lose accuracy quickly; `jnp.sum` accumulates them in float32 instead).
    """
    x = st._as_array(x)
    if not config.jax_allow_f16_reductions:
        aval = core.get_aval(x)
        if aval.dtype in (dtypes.float16, dtypes.bfloat16) and any(aval.shape[a] != 1 for a in _axes(x, axes)):
            raise ValueError(f"reduce_sum on operand {aval.str_short()} is not allowed when "
                             "jax_allow_f16_reductions=False.")
    return _bind_reduce(reduce_sum_p, x, axes)


def _reduce_sum_transpose(ct, x, *, axes):
    if type(ct) is Zero:
        return [None]
    return [_expand_back(ct, x.aval.shape, axes)]


ad.deflinear(reduce_sum_p, _reduce_sum_transpose)

reduce_prod_p = _reduce_primitive("reduce_prod", allow_bool=False)


def reduce_prod(x, axes: Sequence[int]):
    """Multiplies `x` over `axes` (dtype preserved)."""
    return _bind_reduce(reduce_prod_p, x, axes)


def _reduce_prod_jvp(primals, tangents, *, axes):
    """d prod(x) = sum_i t_i * prod_{j != i} x_j, computed without dividing (so zeros in x are handled).

    The "product of all others" uses exclusive cumulative products from both ends along the flattened reduced axes.
    """
    (x,), (t,) = primals, tangents
    ans = reduce_prod_p.bind(x, axes=axes)
    shape = core.get_aval(x).shape
    kept = [i for i in range(len(shape)) if i not in axes]
    perm = kept + list(axes)
    n = int(np.prod([shape[a] for a in axes], dtype=np.int64))
    kept_shape = tuple(shape[i] for i in kept)
    xr = st.reshape(st.transpose(x, perm), kept_shape + (n,))
    tr = st.reshape(st.transpose(t, perm), kept_shape + (n,))
    from .cumulative import cumprod
    ax = len(kept_shape)
    one = st.full(kept_shape + (1,), 1, core.get_aval(x).dtype)
    left = st.concatenate([one, st.slice_in_dim(cumprod(xr, ax), 0, n - 1, 1, ax)], ax) if n > 1 else one
    right = st.concatenate([st.slice_in_dim(cumprod(xr, ax, reverse=True), 1, n, 1, ax), one], ax) \
        if n > 1 else one
    others = ew.mul(left, right)
    return ans, reduce_sum(ew.mul(tr, others), (ax,))


ad.primitive_jvps[reduce_prod_p] = _reduce_prod_jvp


def _reduce_chooser_jvp(prim):
    """The JVP of max/min reductions: the mean of the tangents at the positions holding the extreme value."""
    def jvp(primals, tangents, *, axes):
        (x,), (t,) = primals, tangents
        ans = prim.bind(x, axes=axes)
        shape = core.get_aval(x).shape
        location = ew.eq(x, _expand_back(ans, shape, axes))
        dt = core.get_aval(x).dtype
        loc = ew.convert_element_type(location, dt)
        counts = reduce_sum(loc, axes)
        picked = reduce_sum(ew.mul(t, loc), axes)
        return ans, ew.div(picked, counts)
    return jvp


reduce_max_p = _reduce_primitive("reduce_max")


def reduce_max(x, axes: Sequence[int]):
    """Maximum of `x` over `axes` (-inf / the dtype's minimum for empty reductions)."""
    return _bind_reduce(reduce_max_p, x, axes)


ad.primitive_jvps[reduce_max_p] = _reduce_chooser_jvp(reduce_max_p)

reduce_min_p = _reduce_primitive("reduce_min")


def reduce_min(x, axes: Sequence[int]):
    """Minimum of `x` over `axes` (+inf / the dtype's maximum for empty reductions)."""
    return _bind_reduce(reduce_min_p, x, axes)


ad.primitive_jvps[reduce_min_p] = _reduce_chooser_jvp(reduce_min_p)

reduce_and_p = _reduce_primitive("reduce_and")


def reduce_and(x, axes: Sequence[int]):
    """Logical (bool) or bitwise (integers) AND of `x` over `axes`."""
    return _bind_reduce(reduce_and_p, x, axes)


ad.defjvp_zero(reduce_and_p)

reduce_or_p = _reduce_primitive("reduce_or")


def reduce_or(x, axes: Sequence[int]):
    """Logical (bool) or bitwise (integers) OR of `x` over `axes`."""
    return _bind_reduce(reduce_or_p, x, axes)


ad.defjvp_zero(reduce_or_p)

reduce_xor_p = _reduce_primitive("reduce_xor")


def reduce_xor(x, axes: Sequence[int]):
    """Logical (bool) or bitwise (integers) XOR of `x` over `axes`."""
    return _bind_reduce(reduce_xor_p, x, axes)


ad.defjvp_zero(reduce_xor_p)


# --------------------------------------------------------------------------------------------------------------
# argmax / argmin
# --------------------------------------------------------------------------------------------------------------

def _arg_abstract_eval(name):
    def abstract_eval(x, *, axes, index_dtype):
        (axis,) = axes
        if not 0 <= axis < x.ndim:
            raise TypeError(f"{name}: axis {axis} out of bounds for shape {x.shape}")
        if x.shape[axis] == 0:
            raise ValueError(f"{name} of an empty dimension (shape {x.shape}, axis {axis}) is undefined")
        return ShapedArray(tuple(d for i, d in enumerate(x.shape) if i != axis), index_dtype)
    return abstract_eval


def _arg_batch_rule(prim):
    def rule(vals, dims, *, axes, index_dtype):
        (x,), (d,) = vals, dims
        (axis,) = axes
        new_axis = axis + 1 if axis >= d else axis
        return prim.bind(x, axes=(new_axis,), index_dtype=index_dtype), d - (1 if axis < d else 0)
    return rule


def _arg_primitive(name):
    """Creates an arg-reduction primitive: shared shape and batching rules; an integer output (zero derivative)."""
    prim = standard_primitive(name, _arg_abstract_eval(name), weak_type="never")
    batching.primitive_batchers[prim] = _arg_batch_rule(prim)
    ad.defjvp_zero(prim)
    return prim


def _bind_arg(prim, x, axis, index_dtype):
    x = st._as_array(x)
    aval = core.get_aval(x)
    if not -aval.ndim <= int(axis) < aval.ndim:
        raise ValueError(f"{prim.name}: axis {axis} is out of bounds for an operand of shape {aval.shape}")
    params = dict(axes=(int(axis) % aval.ndim,), index_dtype=dtypes.canonicalize_dtype(index_dtype))
    abstract_eval_rules[prim](aval, **params)
    return prim.bind(x, **params)


argmax_p = _arg_primitive("argmax")


def argmax(x, axis: int, index_dtype=np.int32):
    """Index of the maximum along `axis` (the first one on ties and for NaN).

    Raises:
      ValueError: `axis` is out of bounds, or the operand is empty along it.
    """
    return _bind_arg(argmax_p, x, axis, index_dtype)


argmin_p = _arg_primitive("argmin")


def argmin(x, axis: int, index_dtype=np.int32):
    """Index of the minimum along `axis` (the first one on ties and for NaN).

    Raises:
      ValueError: `axis` is out of bounds, or the operand is empty along it.
    """
    return _bind_arg(argmin_p, x, axis, index_dtype)


# --------------------------------------------------------------------------------------------------------------
# dot_general
# --------------------------------------------------------------------------------------------------------------

def _free_dims(ndim, contract, batch):
    return [i for i in range(ndim) if i not in contract and i not in batch]


def _norm_dims(dimension_numbers):
    (lc, rc), (lb, rb) = dimension_numbers
    return ((tuple(int(i) for i in lc), tuple(int(i) for i in rc)), (tuple(int(i) for i in lb),
                                                                      tuple(int(i) for i in rb)))


dot_general_p = standard_primitive("dot_general", weak_type="all")


class _RequestedSharding(threading.local):
    def __init__(self):
        self.stack = []


_REQUESTED = _RequestedSharding()


@contextlib.contextmanager
def dot_out_sharding(entries: tuple | None):
    """Inside the block, `dot_general` results (in explicit sharding mode) are typed with the spec `entries`
    (padded with None) instead of the propagated one: what `out_sharding=` of `jnp.matmul`/`dot`/`einsum` asks
    for, and what the transpose rule asks for its cotangent (the operand's own sharding, as in JAX). None: no
    request."""
    if entries is None:
        yield
        return
    _REQUESTED.stack.append(tuple(entries))
    try:
        yield
    finally:
        _REQUESTED.stack.pop()


def requested_dot_sharding() -> tuple | None:
    """The innermost `dot_out_sharding` request (None when there is none)."""
    return _REQUESTED.stack[-1] if _REQUESTED.stack else None


def _dot_general_print_params(params):
    # As JAX prints it: None-valued parameters hidden, dimension_numbers as lists (shorter).
    out = {k: v for k, v in params.items() if v is not None}
    (lc, rc), (lb, rb) = params["dimension_numbers"]
    out["dimension_numbers"] = ((list(lc), list(rc)), (list(lb), list(rb)))
    return out


core.param_print_rules[dot_general_p] = _dot_general_print_params


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None, out_sharding=None):
    """Generalized tensor contraction.

    Args:
      lhs, rhs: arrays of one dtype.
      dimension_numbers: ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)).
      precision: accepted for compatibility (NumPy computes at full precision).
      preferred_element_type: the output dtype (defaults to the operands' dtype).

      out_sharding: a sharding (or a PartitionSpec resolved against the current mesh) the result is typed and
        placed with; in explicit sharding mode, required when a contracted dimension is split on both operands.

    Returns:
      An array of shape batch + lhs free dims + rhs free dims.
    """
    if out_sharding is not None:
        from .sharding_rules import with_out_sharding
        return with_out_sharding(lambda a, b: dot_general(a, b, dimension_numbers, precision, preferred_element_type),
                                 [lhs, rhs], out_sharding)
    lhs, rhs = ew._lift_scalars(lhs, rhs)
    pet = dtypes.canonicalize_dtype(preferred_element_type) if preferred_element_type is not None else None
    dims = _norm_dims(dimension_numbers)
    # The eager path skips shape rules for speed; a user-facing call checks its operands first.
    _dot_general_abstract_eval(core.get_aval(lhs), core.get_aval(rhs), dimension_numbers=dims,
                               preferred_element_type=pet)
    return dot_general_p.bind(lhs, rhs, dimension_numbers=dims, precision=None, preferred_element_type=pet)


def dot(lhs, rhs, precision=None, preferred_element_type=None):
    """Vector/matrix product of rank-1 or rank-2 arrays (contracts lhs's last and rhs's first dimension)."""
    lhs, rhs = ew._lift_scalars(lhs, rhs)
    ln, rn = core.get_aval(lhs).ndim, core.get_aval(rhs).ndim
    if ln not in (1, 2) or rn not in (1, 2):
        raise TypeError(f"lax.dot requires rank-1 or rank-2 operands, got shapes {core.get_aval(lhs).shape} "
                        f"and {core.get_aval(rhs).shape}")
    return dot_general(lhs, rhs, (((ln - 1,), (0,)), ((), ())), precision, preferred_element_type)


def _dot_general_abstract_eval(lhs, rhs, *, dimension_numbers, precision=None, preferred_element_type=None):
    (lc, rc), (lb, rb) = dimension_numbers
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise TypeError(f"dot_general: contracting/batch dimension lists must pair up, got {dimension_numbers}")
    for a, b in zip(lc, rc):
        if lhs.shape[a] != rhs.shape[b]:
            raise TypeError(f"dot_general requires contracting dimensions to have the same shape, got "
                            f"{lhs.shape} (dim {a}) and {rhs.shape} (dim {b})")
    for a, b in zip(lb, rb):
        if lhs.shape[a] != rhs.shape[b]:
            raise TypeError(f"dot_general requires batch dimensions to have the same shape, got "
                            f"{lhs.shape} (dim {a}) and {rhs.shape} (dim {b})")
    if lhs.dtype != rhs.dtype:
        raise TypeError(f"dot_general requires operands of one dtype, got {lhs.dtype.name} and {rhs.dtype.name}")
    shape = tuple(lhs.shape[i] for i in lb) + tuple(lhs.shape[i] for i in _free_dims(lhs.ndim, lc, lb)) + \
        tuple(rhs.shape[i] for i in _free_dims(rhs.ndim, rc, rb))
    return ShapedArray(shape, preferred_element_type or lhs.dtype)


abstract_eval_rules[dot_general_p] = _dot_general_abstract_eval


def _dot_general_transpose_operand(ct, x_aval, y, dimension_numbers, swap_ct=False):
    """The cotangent of the operand `x` of `dot_general(x, y)` (with `swap_ct`, of the rhs: the dimension numbers
    are then given from the rhs's side and the cotangent's free dimensions are in the other order)."""
    (lc, rc), (lb, rb) = dimension_numbers
    y_aval = core.get_aval(y)
    x_kept = _free_dims(x_aval.ndim, lc, lb)
    y_kept = _free_dims(y_aval.ndim, rc, rb)
    nb = len(lb)
    if swap_ct:
        # ct is laid out batch + y_kept + x_kept (we are transposing for the rhs); bring x_kept first.
        ct_perm = list(range(nb)) + list(range(nb + len(y_kept), nb + len(y_kept) + len(x_kept))) + \
            list(range(nb, nb + len(y_kept)))
        ct = st.transpose(ct, ct_perm)
    ans_batch = tuple(range(nb))
    ans_y = tuple(range(nb + len(x_kept), nb + len(x_kept) + len(y_kept)))
    if core.get_aval(ct).dtype != y_aval.dtype:
        # With preferred_element_type the cotangent has the output dtype; contract in the operands' dtype.
        ct = ew.convert_element_type(ct, y_aval.dtype)
    src = list(lb) + list(x_kept) + [lc[list(rc).index(r)] for r in sorted(rc)]
    # In explicit sharding mode the cotangent takes the operand's sharding (contracting the output's split
    # dimensions would otherwise be ambiguous): ask the product for it, in the product's dimension order.
    x_spec = (None,) * x_aval.ndim if x_aval.sharding is None else tuple(x_aval.sharding.spec)
    with dot_out_sharding(tuple(x_spec[i] for i in src)):
        out = dot_general_p.bind(ct, y, dimension_numbers=((ans_y, tuple(y_kept)), (ans_batch, tuple(rb))),
                                 precision=None, preferred_element_type=x_aval.dtype)
    return st.transpose(out, tuple(int(i) for i in np.argsort(src)))


def _dot_general_transpose_lhs(ct, lhs, rhs, *, dimension_numbers, precision=None, preferred_element_type=None):
    return _dot_general_transpose_operand(ct, lhs.aval, rhs, dimension_numbers)


def _dot_general_transpose_rhs(ct, lhs, rhs, *, dimension_numbers, precision=None, preferred_element_type=None):
    (lc, rc), (lb, rb) = dimension_numbers
    return _dot_general_transpose_operand(ct, rhs.aval, lhs, ((rc, lc), (rb, lb)), swap_ct=True)


ad.defbilinear(dot_general_p, _dot_general_transpose_lhs, _dot_general_transpose_rhs)


def _dot_general_batch_rule(vals, dims, *, dimension_numbers, precision=None, preferred_element_type=None):
    lhs, rhs = vals
    dl, dr = dims
    (lc, rc), (lb, rb) = dimension_numbers
    kw = dict(precision=precision, preferred_element_type=preferred_element_type)

    def shift(ds, d):
        return tuple(i + 1 if i >= d else i for i in ds)

    if dl is not None and dr is not None:
        lhs = batching.moveaxis(lhs, dl, 0, None)
        rhs = batching.moveaxis(rhs, dr, 0, None)
        new = ((shift(lc, 0), shift(rc, 0)), ((0,) + shift(lb, 0), (0,) + shift(rb, 0)))
        return dot_general_p.bind(lhs, rhs, dimension_numbers=new, **kw), 0
    if dl is not None:
        new = ((shift(lc, dl), rc), (shift(lb, dl), rb))
        ndim = core.get_aval(lhs).ndim
        free = _free_dims(ndim, new[0][0], new[1][0])
        out_d = len(lb) + free.index(dl)
        return dot_general_p.bind(lhs, rhs, dimension_numbers=new, **kw), out_d
    new = ((lc, shift(rc, dr)), (lb, shift(rb, dr)))
    l_free = _free_dims(core.get_aval(lhs).ndim, lc, lb)
    r_free = _free_dims(core.get_aval(rhs).ndim, new[0][1], new[1][1])
    out_d = len(lb) + len(l_free) + r_free.index(dr)
    return dot_general_p.bind(lhs, rhs, dimension_numbers=new, **kw), out_d


batching.primitive_batchers[dot_general_p] = _dot_general_batch_rule
