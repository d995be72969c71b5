"""How each primitive becomes Python source on the NumPy path: a table keyed by primitive object.

A lowering is `lower(g, eqn, ins, outs) -> kinds`: it writes statements through the emitter `g` (see `codegen`)
that assign the output names `outs` from the operand expressions `ins`, and returns, per output, how its buffer
relates to the operands (a `memory` kind, or `("inplace", k)` when it overwrote operand `k`).

Lowerings call NumPy directly where the backend's implementation is exactly a NumPy function (ufuncs, matmul,
reductions, views), so the generated code computes bit-identical values to eager execution without a per-operation
Python wrapper; everything else calls the backend implementation (`impl_rules`) with its parameters bound once.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..eager import minmax, special
from ..eager.elementwise import (COMPLEX_NAN_PRIMITIVES, QUIET_PRIMITIVES, SELECT_BITS_MIN_ELEMENTS, select_bits,
                                         select_bits_supported)
from ...core import Primitive, Var
from ...lax.control_flow import cond_p, scan_p, while_p
from ...lax.convolution import conv_general_dilated_p
from ...lax.elementwise import (abs_p, acos_p, acosh_p, add_p, and_p, asin_p, asinh_p, atan2_p, atan_p, atanh_p,
                               cbrt_p, ceil_p, clamp_p, convert_element_type_p, cos_p, cosh_p, div_p, eq_p, exp2_p,
                               exp_p, expm1_p, floor_p, ge_p, gt_p, integer_pow_p, is_finite_p, le_p, log1p_p, log_p,
                               lt_p, max_p, min_p, mul_p, ne_p, neg_p, nextafter_p, not_p, or_p, rem_p, select_n_p,
                               sign_p, sin_p, sinh_p, sqrt_p, square_p, sub_p, tan_p, tanh_p, xor_p)
from ...lax.indexing import gather_p, scatter_add_p, scatter_max_p, scatter_min_p, scatter_mul_p, scatter_p
from ...lax.mul_add import mul_add_p
from ...lax.reductions import dot_general_p, reduce_max_p, reduce_min_p, reduce_prod_p, reduce_sum_p
from ...lax.structural import (broadcast_in_dim_p, concatenate_p, dynamic_update_slice_p, iota_p, pad_p, reshape_p,
                              rev_p, slice_p, squeeze_p, transpose_p)
from ...lax.windowed import reduce_window_max_p, reduce_window_min_p, reduce_window_sum_p
from . import contractions, conv, ir, memory, rows, threads, windowed
from .fusion import loops
from .memory import FRESH, STRIDED, UNKNOWN, VIEW

Lowering = Callable[..., list]
LOWERINGS: dict[Primitive, Lowering] = {}

# Primitives whose eager implementation silences floating-point warnings (the backend's `QUIET_PRIMITIVES`):
# generated code that calls their NumPy function directly runs them with warnings silenced too.
NOISY = QUIET_PRIMITIVES


def register(*prims: Primitive):
    def deco(fn):
        for p in prims:
            LOWERINGS[p] = fn
        return fn
    return deco


# --------------------------------------------------------------------------------------------------------------
# Fallback: call the backend implementation
# --------------------------------------------------------------------------------------------------------------

def lower_impl(g, eqn, ins, outs) -> list:
    """`outs = impl(*ins, **params)` with the implementation and each parameter bound as module globals."""
    fn = g.bind(eqn.primitive.impl, f"impl_{eqn.primitive.name}")
    kw = "".join(f", {k}={g.bind(v, k)}" for k, v in eqn.params.items())
    args = ", ".join(ins)
    call = f"{fn}({args}{kw})" if ins else f"{fn}({kw[2:]})"
    if eqn.primitive.multiple_results and not outs:  # an effect without results (a debug callback)
        g.line(call)
    elif eqn.primitive.multiple_results:
        target = ", ".join(outs) + ("," if len(outs) == 1 else "")
        g.line(f"{target} = {call}")
    else:
        g.line(f"{outs[0]} = {call}")
    return [UNKNOWN] * len(outs)


# --------------------------------------------------------------------------------------------------------------
# Elementwise: NumPy ufuncs
# --------------------------------------------------------------------------------------------------------------

UFUNCS = {
    neg_p: "negative", floor_p: "floor", ceil_p: "ceil", is_finite_p: "isfinite", exp_p: "exp", exp2_p: "exp2",
    log_p: "log", log1p_p: "log1p", expm1_p: "expm1", tanh_p: "tanh", sin_p: "sin", cos_p: "cos", tan_p: "tan",
    asin_p: "arcsin", acos_p: "arccos", atan_p: "arctan", sinh_p: "sinh", cosh_p: "cosh", asinh_p: "arcsinh",
    acosh_p: "arccosh", atanh_p: "arctanh", sqrt_p: "sqrt", cbrt_p: "cbrt", abs_p: "absolute", not_p: "invert",
    square_p: "square", sign_p: "sign", add_p: "add", sub_p: "subtract", mul_p: "multiply", max_p: "maximum",
    min_p: "minimum", atan2_p: "arctan2", nextafter_p: "nextafter", and_p: "bitwise_and", or_p: "bitwise_or",
    xor_p: "bitwise_xor", eq_p: "equal", ne_p: "not_equal", lt_p: "less", le_p: "less_equal", gt_p: "greater",
    ge_p: "greater_equal",
}
# Float-only correspondences (integer division/remainder follow XLA's rules in the backend implementation; `pow` is
# the C library's in the backend, as XLA calls it, where NumPy's SIMD `power` differs in the last bit).
FLOAT_UFUNCS = {div_p: "true_divide", rem_p: "fmod"}


def _is_float(dt: np.dtype) -> bool:
    return dt.kind == "f"


def ufunc_for(eqn) -> str | None:
    """The NumPy ufunc computing `eqn` exactly as the backend implementation does, or None."""
    prim = eqn.primitive
    if prim in UFUNCS:
        if prim is sign_p and eqn.outvars[0].aval.dtype.kind in "cf":
            return None  # the backend keeps XLA's sign of zeros (NumPy's ufunc does not)
        if prim in COMPLEX_NAN_PRIMITIVES and eqn.invars[0].aval.dtype.kind == "c":
            return None  # the backend gives XLA's results at NaN, infinite and zero parts
        if prim in (tanh_p, exp_p, log_p) and eqn.invars[0].aval.dtype != np.float64:
            return None  # the backend computes XLA's float32 tanh, exp and log (NumPy's differ in the last bits)
        return UFUNCS[prim]
    if prim in FLOAT_UFUNCS and all(_is_float(v.aval.dtype) for v in eqn.invars) and len(
            {v.aval.dtype for v in eqn.invars}) == 1:
        return FLOAT_UFUNCS[prim]
    return None


def c_order_needed(g, eqn) -> bool:
    """Whether a NumPy call computing `eqn` with its default memory order ('K': the result follows its operands'
    layout) could return an array that is not C-contiguous.

    A lowering that reports a FRESH result promises a C-contiguous buffer (fused kernels are compiled for C arrays
    and reshape their operands as views), so it asks NumPy for C order -- or copies -- exactly when this is True:
    the result has two or more dimensions and an operand of two or more dimensions is not known to be C-contiguous
    (an argument, a transpose, a broadcast, a slice). With only C-contiguous operands, broadcasting included,
    NumPy's 'K' order is C order. 1-D results are always contiguous.
    """
    if eqn.outvars[0].aval.ndim < 2:
        return False
    layout = g.planner.layout
    return any(type(v) is Var and v.aval.ndim >= 2 and layout.get(v) not in (FRESH, VIEW) for v in eqn.invars)


def _order(g, eqn) -> str:
    """The keyword argument giving a ufunc call C order when `c_order_needed` (else nothing)."""
    return ", order='C'" if c_order_needed(g, eqn) else ""


def _contiguous(g, eqn, expr: str) -> str:
    """`expr` wrapped in `ascontiguousarray` when `c_order_needed` (for NumPy calls without an `order` argument)."""
    return f"{g.bind(np.ascontiguousarray, 'ascontiguousarray')}({expr})" if c_order_needed(g, eqn) else expr


def _signed_zero_repair(g, eqn) -> tuple[str | None, bool]:
    """For float max/min (NumPy's ufunc may return either of a -0/+0 tie; XLA orders -0 below +0, see `minmax`):
    the bound name of the function repairing the result, and whether it takes the operands too. A scalar literal
    operand (relu's 0.) picks a cheaper repair, or none."""
    prim = eqn.primitive
    if prim not in (max_p, min_p) or not minmax.floating(eqn.outvars[0].aval.dtype):
        return None, False
    bound = None
    for v in eqn.invars:
        if type(v) is not Var and np.ndim(getattr(v.val, "_value", v.val)) == 0:
            bound = getattr(v.val, "_value", v.val)
    repair, with_operands = minmax.repair_for(prim is max_p, bound, eqn.outvars[0].aval.dtype)
    return (None if repair is None else g.bind(repair, repair.__name__)), with_operands


def _lower_ufunc(g, eqn, ins, outs, ufunc: str) -> list:
    out = eqn.outvars[0]
    fn = g.bind(getattr(np, ufunc), ufunc)
    if eqn.primitive in NOISY:
        g.needs_quiet = True
    repair, with_operands = _signed_zero_repair(g, eqn)
    # (Not into a reused buffer when the repair reads the operands: that buffer may have held one of them.)
    buf = g.out_buffer(out) if out.aval.ndim and not with_operands else None
    if buf is not None:
        g.line(f"{outs[0]} = {fn}({', '.join(ins)}, out={buf})")
        if repair is not None:
            g.line(f"{repair}({outs[0]})")
        return [("adopt", buf)]
    call = f"{fn}({', '.join(ins)}{_order(g, eqn)})"
    if repair is not None:
        call = f"{repair}({call}, {', '.join(ins)})" if with_operands else f"{repair}({call})"
    g.line(f"{outs[0]} = {call}")
    return [FRESH if out.aval.ndim else UNKNOWN]


def lower_elementwise(g, eqn, ins, outs) -> list:
    uf = ufunc_for(eqn)
    if uf is None:
        return lower_impl(g, eqn, ins, outs)
    return _lower_ufunc(g, eqn, ins, outs, uf)


for _p in list(UFUNCS) + list(FLOAT_UFUNCS):
    LOWERINGS[_p] = lower_elementwise


@register(integer_pow_p)
def _integer_pow(g, eqn, ins, outs):
    # The eager implementation multiplies in XLA's order (`lax.elementwise.binary_power`), not with np.power.
    return lower_impl(g, eqn, ins, outs)


@register(mul_add_p)
def _mul_add(g, eqn, ins, outs):
    # The contraction pass's fused multiply-adds: into a dead operand's buffer when one is free, as the ufuncs.
    out = eqn.outvars[0]
    if out.aval.dtype not in (np.float32, np.float64) or not out.aval.ndim:
        return lower_impl(g, eqn, ins, outs)
    buf = g.out_buffer(out)
    if buf is not None:
        g.line(f"{outs[0]} = {g.bind(special.mul_add_into, 'mul_add_into')}({', '.join(ins)}, out={buf})")
        return [("adopt", buf)]
    call = f"{g.bind(special.mul_add, 'mul_add')}({', '.join(ins)})"
    g.line(f"{outs[0]} = {_contiguous(g, eqn, call)}")
    return [FRESH]


@register(clamp_p)
def _clamp(g, eqn, ins, outs):
    lo, x, hi = ins
    if minmax.floating(eqn.outvars[0].aval.dtype):  # XLA's signed zeros (see `minmax`)
        mx, mn = g.bind(minmax.maximum, "xla_maximum"), g.bind(minmax.minimum, "xla_minimum")
        g.line(f"{outs[0]} = {_contiguous(g, eqn, f'{mn}({mx}({x}, {lo}), {hi})')}")
    else:
        mx, mn = g.bind(np.maximum, "maximum"), g.bind(np.minimum, "minimum")
        g.line(f"{outs[0]} = {mn}({mx}({x}, {lo}), {hi}{_order(g, eqn)})")
    return [FRESH if eqn.outvars[0].aval.ndim else UNKNOWN]


@register(select_n_p)
def _select_n(g, eqn, ins, outs):
    which = eqn.invars[0]
    out = eqn.outvars[0]
    if len(ins) != 3 or which.aval.dtype != np.bool_:
        return lower_impl(g, eqn, ins, outs)
    full = all(v.aval.shape == out.aval.shape for v in eqn.invars)
    if (full and ir.size(out) >= SELECT_BITS_MIN_ELEMENTS and select_bits_supported(out.aval.dtype)
            and not g.is_compact(eqn.invars)):
        g.line(f"{outs[0]} = {g.bind(select_bits, 'select_bits')}({ins[0]}, {ins[1]}, {ins[2]})")
        return [FRESH]
    where = f"{g.bind(np.where, 'where')}({ins[0]}, {ins[2]}, {ins[1]})"
    g.line(f"{outs[0]} = {_contiguous(g, eqn, where)}")
    return [FRESH if out.aval.ndim else UNKNOWN]


@register(convert_element_type_p)
def _convert(g, eqn, ins, outs):
    src = eqn.invars[0].aval.dtype
    dst = np.dtype(eqn.params["new_dtype"])
    direct = (src.kind in "biuf" and dst.kind in "iuf" and not (src.kind == "f" and dst.kind in "iu"))
    if dst == np.bool_ and src.kind in "biuf":
        g.line(f"{outs[0]} = {g.bind(np.not_equal, 'not_equal')}({ins[0]}, 0{_order(g, eqn)})")
        return [FRESH if eqn.outvars[0].aval.ndim else UNKNOWN]
    if not direct:
        return lower_impl(g, eqn, ins, outs)
    g.needs_quiet = True
    g.line(f"{outs[0]} = {g.bind(np.asarray, 'asarray')}({ins[0]}).astype({g.bind(dst, dst.name)}{_order(g, eqn)})")
    return [FRESH if eqn.outvars[0].aval.ndim else UNKNOWN]


# --------------------------------------------------------------------------------------------------------------
# Structural: views
# --------------------------------------------------------------------------------------------------------------

@register(broadcast_in_dim_p)
def _broadcast_in_dim(g, eqn, ins, outs):
    x = eqn.invars[0]
    shape = tuple(eqn.params["shape"])
    expanded = [1] * len(shape)
    for src, dst in enumerate(eqn.params["broadcast_dimensions"]):
        expanded[dst] = x.aval.shape[src]
    expanded = tuple(expanded)
    if g.compact_ok(eqn.outvars[0]):
        # Every consumer is a NumPy ufunc that broadcasts: keep the small operand (a view, or the scalar itself).
        if x.aval.ndim == 0:
            g.line(f"{outs[0]} = {ins[0]}")
        else:
            g.line(f"{outs[0]} = {ins[0]}.reshape({expanded!r})")
        g.set_compact(eqn.outvars[0])
        return [STRIDED]
    bt = g.bind(np.broadcast_to, "broadcast_to")
    src = ins[0] if x.aval.shape == expanded else f"{g.bind(np.reshape, 'reshape')}({ins[0]}, {expanded!r})"
    g.line(f"{outs[0]} = {bt}({src}, {shape!r})")
    return [STRIDED]


@register(reshape_p)
def _reshape(g, eqn, ins, outs):
    if eqn.params.get("dimensions") is not None:
        return lower_impl(g, eqn, ins, outs)
    g.line(f"{outs[0]} = {g.bind(np.reshape, 'reshape')}({ins[0]}, {tuple(eqn.params['new_sizes'])!r})")
    return [VIEW]


@register(squeeze_p)
def _reshape_like(g, eqn, ins, outs):
    g.line(f"{outs[0]} = {g.bind(np.reshape, 'reshape')}({ins[0]}, {eqn.outvars[0].aval.shape!r})")
    return [VIEW]


@register(transpose_p)
def _transpose(g, eqn, ins, outs):
    g.line(f"{outs[0]} = {g.bind(np.transpose, 'transpose')}({ins[0]}, {tuple(eqn.params['permutation'])!r})")
    return [STRIDED]


def _index_expr(slices: list) -> str:
    parts = []
    for s in slices:
        if isinstance(s, slice):
            a = "" if s.start in (None, 0) else str(s.start)
            b = "" if s.stop is None else str(s.stop)
            c = "" if s.step in (None, 1) else f":{s.step}"
            parts.append(f"{a}:{b}{c}")
        else:
            parts.append(str(s))
    return ", ".join(parts) + ("," if len(parts) == 1 else "")


@register(slice_p)
def _slice(g, eqn, ins, outs):
    p = eqn.params
    strides = p.get("strides") or (1,) * len(p["start_indices"])
    sl = [slice(s, l, st) for s, l, st in zip(p["start_indices"], p["limit_indices"], strides)]
    g.line(f"{outs[0]} = {ins[0]}[{_index_expr(sl)}]")
    return [STRIDED]


@register(rev_p)
def _rev(g, eqn, ins, outs):
    dims = set(eqn.params["dimensions"])
    sl = [slice(None, None, -1) if d in dims else slice(None) for d in range(eqn.invars[0].aval.ndim)]
    g.line(f"{outs[0]} = {ins[0]}[{_index_expr(sl)}]")
    return [STRIDED]


@register(iota_p)
def _iota(g, eqn, ins, outs):
    shape = tuple(eqn.params["shape"])
    dt = np.dtype(eqn.params["dtype"])
    if len(shape) != 1:
        return lower_impl(g, eqn, ins, outs)
    g.line(f"{outs[0]} = {g.bind(np.arange, 'arange')}({shape[0]}, dtype={g.bind(dt, dt.name)})")
    return [FRESH]


@register(concatenate_p)
def _concatenate(g, eqn, ins, outs):
    cat = f"{g.bind(np.concatenate, 'concatenate')}(({', '.join(ins)},), axis={int(eqn.params['dimension'])})"
    g.line(f"{outs[0]} = {_contiguous(g, eqn, cat)}")
    return [FRESH]


# --------------------------------------------------------------------------------------------------------------
# Reductions and contractions
# --------------------------------------------------------------------------------------------------------------

_SIGNED_ZERO_REDUCTIONS = {"maximum": (minmax.reduce_max, "xla_reduce_max"),
                           "minimum": (minmax.reduce_min, "xla_reduce_min")}


def _reduce(ufunc: str, with_dtype: bool, needs_nonempty: bool):
    def lower(g, eqn, ins, outs):
        x = eqn.invars[0]
        if needs_nonempty and ir.size(x) == 0 or x.aval.ndim == 0:
            return lower_impl(g, eqn, ins, outs)
        fn = g.bind(getattr(np, ufunc).reduce, f"{ufunc}_reduce")
        if ufunc in _SIGNED_ZERO_REDUCTIONS and minmax.floating(x.aval.dtype):
            fn = g.bind(*_SIGNED_ZERO_REDUCTIONS[ufunc])
        axes = tuple(eqn.params["axes"])
        dt = f", dtype={g.bind(x.aval.dtype, x.aval.dtype.name)}" if with_dtype else ""
        g.line(f"{outs[0]} = {_contiguous(g, eqn, f'{fn}({ins[0]}, axis={axes!r}{dt})')}")
        return [FRESH if eqn.outvars[0].aval.ndim else UNKNOWN]
    return lower


LOWERINGS[reduce_sum_p] = _reduce("add", True, False)
LOWERINGS[reduce_prod_p] = _reduce("multiply", True, False)
LOWERINGS[reduce_max_p] = _reduce("maximum", False, True)
LOWERINGS[reduce_min_p] = _reduce("minimum", False, True)


@register(dot_general_p)
def _dot_general(g, eqn, ins, outs):
    form = contractions.matmul_form(eqn)
    if form is None:
        plan = contractions.batched_product(eqn)
        if plan is None:
            return lower_impl(g, eqn, ins, outs)
        fn = g.bind(contractions.batched_matmul, "batched_matmul")
        g.line(f"{outs[0]} = {fn}({ins[0]}, {ins[1]}, {g.bind(plan, 'product')})")
        return [FRESH]
    # Stacks of small matrices run whole matrices on the chunk threads (`contractions.stacked_matmul`).
    matmul = contractions.stacked_matmul if threads.stacked_blas(eqn) else np.matmul
    expr = form.replace("dot(", f"{g.bind(np.dot, 'dot')}(").replace(
        "matmul(", f"{g.bind(matmul, matmul.__name__)}(").replace("swap(", f"{g.bind(contractions.swap, 'swap')}(")
    g.line(f"{outs[0]} = {expr.format(a=ins[0], b=ins[1])}")
    return [FRESH if eqn.outvars[0].aval.ndim else UNKNOWN]


@register(conv_general_dilated_p)
def _conv(g, eqn, ins, outs):
    return conv.lower_conv(g, eqn, ins, outs, lower_impl)


@register(pad_p)
def _pad(g, eqn, ins, outs):
    return windowed.lower_pad(g, eqn, ins, outs, lower_impl)


@register(reduce_window_sum_p, reduce_window_max_p, reduce_window_min_p)
def _reduce_window(g, eqn, ins, outs):
    return windowed.lower_reduce_window(g, eqn, ins, outs, lower_impl)


# --------------------------------------------------------------------------------------------------------------
# Updates: in place when the operand is dead
# --------------------------------------------------------------------------------------------------------------

@register(dynamic_update_slice_p)
def _dynamic_update_slice(g, eqn, ins, outs):
    x, upd = eqn.invars[0], eqn.invars[1]
    if not g.can_overwrite(0) or x.aval.ndim == 0:
        return lower_impl(g, eqn, ins, outs)
    idx = []
    for k, (d, z) in enumerate(zip(x.aval.shape, upd.aval.shape)):
        s = g.fresh_name("s")
        g.line(f"{s} = min(max(int({ins[2 + k]}), 0), {d - z})")
        idx.append(f"{s}:{s} + {z}")
    g.line(f"{ins[0]}[{', '.join(idx)}] = {ins[1]}")
    g.line(f"{outs[0]} = {ins[0]}")
    return [("inplace", 0)]


def _scatter_inplace_impl(prim: Primitive):
    """The backend's scatter without its defensive copy, for operands the generated code owns and may overwrite.

    Returns None if the backend does not expose the pieces (then the copying implementation is used).
    """
    try:
        from ..eager import indexing as ix
        combine = {scatter_p: ix._set, scatter_add_p: ix._accumulate(np.add),
                   scatter_mul_p: ix._accumulate(np.multiply), scatter_min_p: minmax.scatter_minimum,
                   scatter_max_p: minmax.scatter_maximum}[prim]
        index_arrays = ix._scatter_index_arrays
    except (ImportError, AttributeError, KeyError):
        return None

    def impl(out, indices, updates, *, dimension_numbers, mode=None, **_):
        updates = np.asarray(updates)
        if updates.size == 0 or out.size == 0:
            return out
        arrays, mask = index_arrays(out.shape, np.asarray(indices), updates.shape, dimension_numbers, mode)
        if mask is not None and not mask.all():
            arrays = [a[mask] for a in arrays]
            updates = updates[mask]
        combine(out, tuple(arrays), updates)
        return out
    impl.__name__ = f"{prim.name.replace('-', '_')}_inplace"
    return impl


_SCATTER_INPLACE: dict = {}


@register(gather_p)
def _gather(g, eqn, ins, outs):
    return rows.lower_gather(g, eqn, ins, outs, lower_impl)


@register(scatter_p, scatter_add_p, scatter_mul_p, scatter_min_p, scatter_max_p)
def _scatter(g, eqn, ins, outs):
    prim = eqn.primitive
    if prim is scatter_add_p:
        kinds = rows.lower_scatter_add(g, eqn, ins, outs)
        if kinds is not None:
            return kinds
    if prim not in _SCATTER_INPLACE:
        _SCATTER_INPLACE[prim] = _scatter_inplace_impl(prim)
    impl = _SCATTER_INPLACE[prim]
    if impl is None or not g.can_overwrite(0):
        return lower_impl(g, eqn, ins, outs)
    fn = g.bind(impl, impl.__name__)
    kw = "".join(f", {k}={g.bind(v, k)}" for k, v in eqn.params.items())
    g.line(f"{outs[0]} = {fn}({', '.join(ins)}{kw})")
    return [("inplace", 0)]


# --------------------------------------------------------------------------------------------------------------
# Control flow: Python loops over compiled bodies
# --------------------------------------------------------------------------------------------------------------

def _scan_kernel_call(g, eqn, ins, outs, kernel) -> list:
    """Calls a loop kernel (see `fusion.loops`): the whole scan runs inside it."""
    p = eqn.params
    body = p["jaxpr"]
    nk = p["num_carry"]
    contig = g.bind(np.ascontiguousarray, "ascontiguousarray")
    empty = g.bind(np.empty, "empty")
    args = []
    operands = [g.bind(getattr(c, "_value", c), "const") for c in body.consts] + list(ins)
    avals = [v.aval for v in body.jaxpr.constvars] + [v.aval for v in eqn.invars]
    for e, a in zip(operands, avals):
        args.append(f"{contig}({e}).reshape((1,))" if a.ndim == 0 else f"{contig}({e})")
    ys_avals = body.out_avals[nk:]
    carry_avals = body.out_avals[:nk]
    ys = [g.fresh_name("ys") for _ in ys_avals]
    couts = [g.fresh_name("c") for _ in carry_avals]
    for name, a in zip(ys, ys_avals):
        g.line(f"{name} = {empty}({(p['length'],) + a.shape!r}, {g.bind(a.dtype, a.dtype.name)})")
    for name, a in zip(couts, carry_avals):
        g.line(f"{name} = {empty}({a.shape or (1,)!r}, {g.bind(a.dtype, a.dtype.name)})")
    if any(loops.blas_product(e) for e in eqn.params["jaxpr"].jaxpr.eqns):
        g.line(f"{g.bind(threads.scipy_blas_serial, 'scipy_blas_serial')}()")
    g.line(f"{g.bind(kernel, 'scan_kernel')}({', '.join(args + ys + couts)})")
    for o, c, a in zip(outs[:nk], couts, carry_avals):
        g.line(f"{o} = {c}" if a.ndim else f"{o} = {c}.reshape(())")
    for o, y in zip(outs[nk:], ys):
        g.line(f"{o} = {y}")
    return [FRESH if a.ndim else UNKNOWN for a in carry_avals] + [FRESH] * len(ys)


@register(scan_p)
def _scan(g, eqn, ins, outs):
    loop_kernel = getattr(g.module, "loop_kernel", None)
    kernel = loop_kernel(eqn) if loop_kernel is not None else None
    if kernel is not None:
        return _scan_kernel_call(g, eqn, ins, outs, kernel)
    p = eqn.params
    nc, nk, length = p["num_consts"], p["num_carry"], p["length"]
    body = g.compile_sub(p["jaxpr"], "scan_body")
    consts, carry, xs = ins[:nc], ins[nc:nc + nk], ins[nc + nk:]
    carry_names = [g.fresh_name("c") for _ in carry]
    y_avals = p["jaxpr"].out_avals[nk:]
    ys = [g.fresh_name("ys") for _ in y_avals]
    empty = g.bind(np.empty, "empty")
    for name, c in zip(carry_names, carry):
        g.line(f"{name} = {c}")
    for name, a in zip(ys, y_avals):
        g.line(f"{name} = {empty}({(length,) + a.shape!r}, {g.bind(a.dtype, a.dtype.name)})")
    i = g.fresh_name("i")
    order = f"range({length - 1}, -1, -1)" if p["reverse"] else f"range({length})"
    ynames = [g.fresh_name("y") for _ in ys]
    targets = carry_names + ynames
    args = consts + carry_names + [f"{x}[{i}]" for x in xs]
    g.line(f"for {i} in {order}:")
    g.indent += 1
    if targets:
        g.line(f"{', '.join(targets)}{',' if len(targets) == 1 else ''} = {body}({', '.join(args)})")
    else:
        g.line(f"{body}({', '.join(args)})")
    for buf, y in zip(ys, ynames):
        g.line(f"{buf}[{i}] = {y}")
    if not targets:
        g.line("pass")
    g.indent -= 1
    for o, src in zip(outs, carry_names + ys):
        g.line(f"{o} = {src}")
    return [UNKNOWN] * nk + [FRESH] * len(ys)


@register(while_p)
def _while(g, eqn, ins, outs):
    p = eqn.params
    ncc, nbc = p["cond_nconsts"], p["body_nconsts"]
    cond = g.compile_sub(p["cond_jaxpr"], "while_cond")
    body = g.compile_sub(p["body_jaxpr"], "while_body")
    cc, bc, carry = ins[:ncc], ins[ncc:ncc + nbc], ins[ncc + nbc:]
    names = [g.fresh_name("c") for _ in carry]
    for n, c in zip(names, carry):
        g.line(f"{n} = {c}")
    tgt = ", ".join(names) + ("," if len(names) == 1 else "")
    g.line(f"while {cond}({', '.join(cc + names)})[0]:")
    g.indent += 1
    g.line(f"{tgt} = {body}({', '.join(bc + names)})" if names else f"{body}({', '.join(bc)})")
    g.indent -= 1
    for o, n in zip(outs, names):
        g.line(f"{o} = {n}")
    return [UNKNOWN] * len(outs)


@register(cond_p)
def _cond(g, eqn, ins, outs):
    branches = eqn.params["branches"]
    fns = [g.compile_sub(b, f"branch{k}") for k, b in enumerate(branches)]
    ops = ", ".join(ins[1:])
    tgt = (", ".join(outs) + ("," if len(outs) == 1 else "") + " = ") if outs else ""
    if len(fns) == 1:
        g.line(f"{tgt}{fns[0]}({ops})")
        return [UNKNOWN] * len(outs)
    i = g.fresh_name("b")
    g.line(f"{i} = int({ins[0]})")
    for k, fn in enumerate(fns):
        if k == 0:
            g.line(f"if {i} <= 0:")
        elif k == len(fns) - 1:
            g.line("else:")
        else:
            g.line(f"elif {i} == {k}:")
        g.line(f"    {tgt}{fn}({ops})")
    return [UNKNOWN] * len(outs)


def lowering_for(eqn) -> Lowering:
    return LOWERINGS.get(eqn.primitive, lower_impl)


def broadcast_tolerant(eqn) -> bool:
    """Whether `eqn` is lowered to a NumPy ufunc that broadcasts its operands itself (so a broadcast operand can be
    passed in its small, un-broadcast form when another operand has the full shape)."""
    prim = eqn.primitive
    if prim is select_n_p:
        return len(eqn.invars) == 3 and eqn.invars[0].aval.dtype == np.bool_
    if prim is clamp_p:
        return True
    if prim is integer_pow_p:
        return eqn.params["y"] > 0
    return ufunc_for(eqn) is not None


__all__ = ["LOWERINGS", "lowering_for", "lower_impl", "broadcast_tolerant", "memory"]
