"""Windowed reductions: `reduce_window_sum/max/min` primitives and the generic `lax.reduce_window`.

Windows are described as in XLA's ReduceWindow: `window_dimensions`, `window_strides`, (low, high) `padding`,
`base_dilation` (holes inserted in the operand) and `window_dilation` (holes inserted in the window). Padding and
holes never contribute (they hold the reduction's identity).

Differentiation: the sum is linear; its transpose pads the cotangent (strides become interior padding) and sums
windows again. The max/min JVP passes each window's tangent from the first (row-major) position holding the
extreme value -- the element XLA's select-and-scatter picks, so max-pool gradients with ties match JAX. It is
written with strided slices, one per window offset, so it needs no scatter and is itself differentiable.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from .. import core, dtypes
from ..core import ShapedArray
from ..interpreters import ad, batching
from ..interpreters import partial_eval as pe
from ..interpreters.ad import Zero
from . import elementwise as ew
from . import structural as st
from .convolution import conv_vjp_lhs_padding, padtype_to_pads
from .utils import standard_primitive


# --------------------------------------------------------------------------------------------------------------
# Shared rules
# --------------------------------------------------------------------------------------------------------------

def identity(kind: str, dtype: np.dtype) -> np.ndarray:
    """The identity element of 'sum', 'max' or 'min' for `dtype`: what padding and holes hold in a window."""
    dtype = np.dtype(dtype)
    if kind == "sum":
        return np.zeros((), dtype)
    is_max = kind == "max"
    if dtype == np.bool_:
        return np.asarray(not is_max)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return np.asarray(info.min if is_max else info.max, dtype)
    return np.asarray(-np.inf if is_max else np.inf, dtype)


def _dilate(n: int, d: int) -> int:
    return 0 if n == 0 else 1 + d * (n - 1)


def _window_abstract_eval(name):
    def abstract_eval(x, *, window_dimensions, window_strides, padding, base_dilation, window_dilation):
        nd = x.ndim
        for what, v in (("window_dimensions", window_dimensions), ("window_strides", window_strides),
                        ("padding", padding), ("base_dilation", base_dilation),
                        ("window_dilation", window_dilation)):
            if len(v) != nd:
                raise TypeError(f"{name}: {what} {tuple(v)} must have one entry per operand dimension (operand "
                                f"shape {x.shape})")
        if any(v < 1 for v in window_dimensions + window_strides + base_dilation + window_dilation):
            raise TypeError(f"{name}: window dimensions, strides and dilations must be positive, got "
                            f"window_dimensions={window_dimensions}, window_strides={window_strides}, "
                            f"base_dilation={base_dilation}, window_dilation={window_dilation}")
        if name == "reduce_window_sum" and x.dtype == dtypes.bool_:
            raise TypeError("reduce_window_sum does not accept bool operands")
        shape = []
        for n, (lo, hi), b, w, s, d in zip(x.shape, padding, base_dilation, window_dimensions, window_strides,
                                            window_dilation):
            size = _dilate(n, b) + lo + hi
            span = _dilate(w, d)
            shape.append(max(0, (size - span) // s + 1) if size >= span else 0)
        return ShapedArray(tuple(shape), x.dtype)
    return abstract_eval


def _window_batch_rule(prim):
    def rule(vals, dims, *, window_dimensions, window_strides, padding, base_dilation, window_dilation):
        (x,), (d,) = vals, dims

        def ins(t, v):
            t = list(t)
            t.insert(d, v)
            return tuple(t)

        return prim.bind(x, window_dimensions=ins(window_dimensions, 1), window_strides=ins(window_strides, 1),
                         padding=ins(padding, (0, 0)), base_dilation=ins(base_dilation, 1),
                         window_dilation=ins(window_dilation, 1)), d
    return rule


def _window_primitive(name):
    """Creates a windowed reduction with the shared shape/dtype rule and batching rule."""
    prim = standard_primitive(name, _window_abstract_eval(name), weak_type="first")
    batching.primitive_batchers[prim] = _window_batch_rule(prim)
    return prim


def _params(x, window_dimensions, window_strides, padding, base_dilation, window_dilation) -> dict:
    shape = core.get_aval(x).shape
    nd = len(shape)
    window_dimensions = tuple(int(w) for w in window_dimensions)
    window_strides = (1,) * nd if window_strides is None else tuple(int(s) for s in window_strides)
    base_dilation = (1,) * nd if base_dilation is None else tuple(int(b) for b in base_dilation)
    window_dilation = (1,) * nd if window_dilation is None else tuple(int(d) for d in window_dilation)
    if isinstance(padding, str):
        if len(window_dimensions) != nd or len(window_strides) != nd or len(window_dilation) != nd:
            raise TypeError(f"reduce_window: window_dimensions {window_dimensions}, window_strides {window_strides} "
                            f"and window_dilation {window_dilation} must have one entry per operand dimension "
                            f"(operand shape {shape})")
        spans = [_dilate(w, d) for w, d in zip(window_dimensions, window_dilation)]
        padding = padtype_to_pads(shape, spans, window_strides, padding)
    padding = tuple((int(lo), int(hi)) for lo, hi in padding)
    return dict(window_dimensions=window_dimensions, window_strides=window_strides, padding=padding,
                base_dilation=base_dilation, window_dilation=window_dilation)


def _bind(prim, operand, window_dimensions, window_strides, padding, base_dilation, window_dilation):
    operand = st._as_array(operand)
    params = _params(operand, window_dimensions, window_strides, padding, base_dilation, window_dilation)
    core.abstract_eval_rules[prim](core.get_aval(operand), **params)  # the eager path skips abstract evaluation
    return prim.bind(operand, **params)


def _window_offsets(window_dimensions):
    return [tuple(int(i) for i in idx) for idx in np.ndindex(*window_dimensions)]


def _strided_window_slices(x, fill, *, window_dimensions, window_strides, padding, base_dilation, window_dilation,
                           out_shape):
    """For each window offset (row-major), the slice of padded `x` holding that offset of every window."""
    cfg = [(lo, hi, b - 1) for (lo, hi), b in zip(padding, base_dilation)]
    padded = st.pad(x, fill, cfg)
    slices = []
    for off in _window_offsets(window_dimensions):
        starts = [o * d for o, d in zip(off, window_dilation)]
        limits = [s + (m - 1) * st_ + 1 if m else s for s, m, st_ in zip(starts, out_shape, window_strides)]
        slices.append(st.slice(padded, starts, limits, window_strides))
    return slices


def _window_chooser_jvp(prim, kind):
    """The JVP of a max/min windowed reduction (see the module docstring)."""
    def jvp(primals, tangents, **params):
        (x,), (t,) = primals, tangents
        out = prim.bind(x, **params)
        out_aval = core.get_aval(out)
        if type(t) is Zero:
            return out, Zero(out_aval)
        dt = out_aval.dtype
        ident = core.Array(np.asarray(identity(kind, dt)))
        values = _strided_window_slices(x, ident, out_shape=out_aval.shape, **params)
        tans = _strided_window_slices(t, core.Array(np.zeros((), dt)), out_shape=out_aval.shape, **params)
        # Take the tangent of the first position (row-major within the window) equal to the extreme value.
        chosen = st.full(out_aval.shape, 0, dt)
        found = st.full(out_aval.shape, False, np.bool_)
        for v, tv in zip(values, tans):
            hit = ew.bitwise_and(ew.eq(v, out), ew.bitwise_not(found))
            chosen = ew.select_n(hit, chosen, tv)
            found = ew.bitwise_or(found, hit)
        return out, chosen
    return jvp


# --------------------------------------------------------------------------------------------------------------
# The primitives
# --------------------------------------------------------------------------------------------------------------

reduce_window_sum_p = _window_primitive("reduce_window_sum")


def reduce_window_sum(operand, window_dimensions: Sequence[int], window_strides: Sequence[int] | None = None,
                      padding="VALID", base_dilation=None, window_dilation=None):
    """Sums over sliding windows (padding and holes count as 0). Output shape as XLA's ReduceWindow."""
    return _bind(reduce_window_sum_p, operand, window_dimensions, window_strides, padding, base_dilation,
                 window_dilation)


def _reduce_window_sum_transpose(ct, operand, *, window_dimensions, window_strides, padding, base_dilation,
                                 window_dilation):
    if type(ct) is Zero:
        return [None]
    in_shape = operand.aval.shape
    ct_shape = core.get_aval(ct).shape
    pads = conv_vjp_lhs_padding(in_shape, window_dimensions, window_strides, ct_shape, padding, base_dilation,
                                window_dilation)
    cfg = [(lo, hi, s - 1) for (lo, hi), s in zip(pads, window_strides)]
    padded = st.pad(ct, core.Array(np.zeros((), core.get_aval(ct).dtype)), cfg)
    ones = (1,) * len(in_shape)
    out = reduce_window_sum_p.bind(padded, window_dimensions=window_dimensions, window_strides=base_dilation,
                                   padding=((0, 0),) * len(in_shape), base_dilation=ones,
                                   window_dilation=window_dilation)
    return [out]


ad.deflinear(reduce_window_sum_p, _reduce_window_sum_transpose)

reduce_window_max_p = _window_primitive("reduce_window_max")


def reduce_window_max(operand, window_dimensions: Sequence[int], window_strides: Sequence[int] | None = None,
                      padding="VALID", base_dilation=None, window_dilation=None):
    """Maximum over sliding windows (padding and holes count as -inf / the dtype's minimum)."""
    return _bind(reduce_window_max_p, operand, window_dimensions, window_strides, padding, base_dilation,
                 window_dilation)


ad.primitive_jvps[reduce_window_max_p] = _window_chooser_jvp(reduce_window_max_p, "max")

reduce_window_min_p = _window_primitive("reduce_window_min")


def reduce_window_min(operand, window_dimensions: Sequence[int], window_strides: Sequence[int] | None = None,
                      padding="VALID", base_dilation=None, window_dilation=None):
    """Minimum over sliding windows (padding and holes count as +inf / the dtype's maximum)."""
    return _bind(reduce_window_min_p, operand, window_dimensions, window_strides, padding, base_dilation,
                 window_dilation)


ad.primitive_jvps[reduce_window_min_p] = _window_chooser_jvp(reduce_window_min_p, "min")


# --------------------------------------------------------------------------------------------------------------
# reduce_window: the generic form
# --------------------------------------------------------------------------------------------------------------

# The binary operations `reduce_window` recognizes: primitive -> (windowed primitive, identity kind, binary op).
_MONOIDS = {
    ew.add_p: (reduce_window_sum_p, "sum", ew.add),
    ew.max_p: (reduce_window_max_p, "max", ew.max),
    ew.min_p: (reduce_window_min_p, "min", ew.min),
}


def _monoid_of(computation: Callable, dtype: np.dtype):
    """Recognizes `computation` as add/max/min by tracing it on two scalars of `dtype`."""
    for entry in _MONOIDS.values():
        if computation is entry[2]:
            return entry
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
    return _MONOIDS.get(eqn.primitive)


def reduce_window(operand, init_value, computation: Callable, window_dimensions: Sequence[int],
                  window_strides: Sequence[int] | None = None, padding="VALID", base_dilation=None,
                  window_dilation=None):
    """Reduces sliding windows of `operand` with `computation`, starting from `init_value` (as jax.lax).

    Args:
      operand: the array to reduce.
      init_value: scalar starting value of every window (combined once per window).
      computation: the binary reduction; must be addition, maximum or minimum (lax.add/max/min, jnp.add, ...).
      window_dimensions, window_strides: per operand dimension (strides default to 1).
      padding: 'SAME', 'SAME_LOWER', 'VALID' or (low, high) pairs (pads computed with the dilated window).
      base_dilation, window_dilation: per-dimension dilations (default 1).

    Returns:
      The windowed reduction, of operand's dtype.

    Raises:
      NotImplementedError: `computation` is not add/max/min, or `operand` is a tuple of arrays.
    """
    if isinstance(operand, (list, tuple)):
        raise NotImplementedError("reduce_window over several operands is not supported")
    operand = st._as_array(operand)
    aval = core.get_aval(operand)
    monoid = _monoid_of(computation, aval.dtype)
    if monoid is None:
        raise NotImplementedError("reduce_window supports computation = lax.add, lax.max or lax.min (or functions "
                                  f"equivalent to them); got {computation!r}")
    prim, kind, op = monoid
    out = _bind(prim, operand, window_dimensions, window_strides, padding, base_dilation, window_dilation)
    init = init_value
    if not isinstance(init, (core.Array, core.Tracer)):
        init = core.Array(np.asarray(init, aval.dtype), aval.weak_type)
    elif core.get_aval(init).dtype != aval.dtype:
        init = ew.convert_element_type(init, aval.dtype)
    concrete = core.concrete_value(init)
    if concrete is not None and np.array_equal(np.asarray(concrete), identity(kind, aval.dtype),
                                               equal_nan=False):
        return out
    # XLA starts every window from init_value and skips padding: combine once with the init value.
    return op(out, init)
