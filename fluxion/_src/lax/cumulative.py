"""Cumulative reductions (`cumsum`, `cumprod`, `cummax`, `cummin`, `cumlogsumexp`) and `associative_scan`.

`cumsum` is linear (its transpose is a reversed cumsum). The others get their JVP by differentiating a
log-depth `associative_scan` of the combining function (Blelloch-style odd/even recursion), so ties, zeros and
infinities are handled by the elementwise rules of `mul`, `max`, `min` and `logaddexp` rather than by division.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .. import core
from ..core import ShapedArray
from ..interpreters import ad, batching
from ..interpreters.ad import Zero
from . import elementwise as ew
from . import structural as st
from .utils import standard_primitive


# --------------------------------------------------------------------------------------------------------------
# Shared rules
# --------------------------------------------------------------------------------------------------------------

def _cumulative_abstract_eval(x, *, axis, reverse=False):
    if not 0 <= axis < x.ndim:
        raise TypeError(f"cumulative reduction: axis {axis} out of bounds for shape {x.shape}")
    return ShapedArray(x.shape, x.dtype)


def _cumulative_batch_rule(prim):
    def rule(vals, dims, *, axis, reverse=False):
        (x,), (d,) = vals, dims
        return prim.bind(x, axis=axis + 1 if axis >= d else axis, reverse=reverse), d
    return rule


def _cumulative_primitive(name):
    """Creates a cumulative reduction (parameters `axis`, `reverse`) with the shared shape and batching rules."""
    prim = standard_primitive(name, _cumulative_abstract_eval, weak_type="first")
    batching.primitive_batchers[prim] = _cumulative_batch_rule(prim)
    return prim


def _bind(prim, x, axis, reverse):
    x = st._as_array(x)
    nd = core.get_aval(x).ndim
    if not -nd <= int(axis) < nd:
        raise ValueError(f"{prim.name}: axis {axis} is out of bounds for an operand of shape {core.get_aval(x).shape}")
    return prim.bind(x, axis=int(axis) % nd, reverse=bool(reverse))


def _cumulative_jvp(prim, combine):
    """The JVP of a cumulative reduction: the JVP of the log-depth `associative_scan` of its `combine`."""
    def jvp(primals, tangents, *, axis, reverse=False):
        (x,), (t,) = primals, tangents
        out = prim.bind(x, axis=axis, reverse=reverse)
        _, t_out = ad.jvp_flat(lambda v: [associative_scan(combine, v, reverse=reverse, axis=axis)], [x], [t])
        return out, t_out[0]
    return jvp


def _logaddexp(a, b):
    m = ew.max(a, b)
    delta = ew.sub(a, b)
    # Both the same infinity (or a nan): delta is nan and the answer is a + b, as JAX's logaddexp.
    return ew.select_n(ew.ne(delta, delta), ew.add(m, ew.log1p(ew.exp(ew.neg(ew.abs(delta))))), ew.add(a, b))


def _without_posinf(x):
    a = core.get_aval(x)
    inf = st.full(a.shape, np.inf, a.dtype)
    return ew.select_n(ew.eq(x, inf), x, st.full(a.shape, 0, a.dtype))


def _logaddexp_with_tangents(p, q):
    """logaddexp on (value, tangent) pairs with JAX's derivative of logaddexp, t_a exp(a - out) + t_b exp(b - out)
    (+inf counted as 0 in the exponents): the softmax weights of the two values, 1/2 each at a tie. Differentiating
    the formula above instead would split a tie by the one-sided derivatives of max and |a - b|."""
    (a, ta), (b, tb) = p, q
    out = _logaddexp(a, b)
    ro = _without_posinf(out)
    wa = ew.exp(ew.sub(_without_posinf(a), ro))
    wb = ew.exp(ew.sub(_without_posinf(b), ro))
    return out, ew.add(ew.mul(ta, wa), ew.mul(tb, wb))


def _cumlogsumexp_jvp(primals, tangents, *, axis, reverse=False):
    (x,), (t,) = primals, tangents
    out = cumlogsumexp_p.bind(x, axis=axis, reverse=reverse)
    _, t_out = associative_scan(_logaddexp_with_tangents, (x, ad.instantiate_zeros(t)), reverse=reverse, axis=axis)
    return out, t_out


# --------------------------------------------------------------------------------------------------------------
# The primitives
# --------------------------------------------------------------------------------------------------------------

cumsum_p = _cumulative_primitive("cumsum")


def cumsum(x, axis: int = 0, reverse: bool = False):
    """Cumulative sum along `axis` (from the end if `reverse`)."""
    return _bind(cumsum_p, x, axis, reverse)


def _cumsum_transpose(ct, x, *, axis, reverse=False):
    return [None if type(ct) is Zero else cumsum_p.bind(ct, axis=axis, reverse=not reverse)]


ad.deflinear(cumsum_p, _cumsum_transpose)

cumprod_p = _cumulative_primitive("cumprod")


def cumprod(x, axis: int = 0, reverse: bool = False):
    """Cumulative product along `axis`."""
    return _bind(cumprod_p, x, axis, reverse)


ad.primitive_jvps[cumprod_p] = _cumulative_jvp(cumprod_p, ew.mul)

cummax_p = _cumulative_primitive("cummax")


def cummax(x, axis: int = 0, reverse: bool = False):
    """Cumulative maximum along `axis`."""
    return _bind(cummax_p, x, axis, reverse)


ad.primitive_jvps[cummax_p] = _cumulative_jvp(cummax_p, ew.max)

cummin_p = _cumulative_primitive("cummin")


def cummin(x, axis: int = 0, reverse: bool = False):
    """Cumulative minimum along `axis`."""
    return _bind(cummin_p, x, axis, reverse)


ad.primitive_jvps[cummin_p] = _cumulative_jvp(cummin_p, ew.min)

cumlogsumexp_p = _cumulative_primitive("cumlogsumexp")


def cumlogsumexp(x, axis: int = 0, reverse: bool = False):
    """Cumulative log(sum(exp(x))) along `axis`."""
    return _bind(cumlogsumexp_p, x, axis, reverse)


ad.primitive_jvps[cumlogsumexp_p] = _cumlogsumexp_jvp


# --------------------------------------------------------------------------------------------------------------
# associative_scan
# --------------------------------------------------------------------------------------------------------------

def associative_scan(fn: Callable, elems, reverse: bool = False, axis: int = 0):
    """Inclusive scan of an associative binary `fn` over `axis` in O(log n) depth.

    Args:
      fn: associative function of two pytrees of arrays with the shape of `elems` slices.
      elems: a pytree of arrays sharing the length of `axis`.
      reverse: scan from the end.
      axis: the scanned axis.

    Returns:
      A pytree like `elems` whose i-th slice combines slices 0..i.
    """
    from ..tree_util import tree_flatten, tree_unflatten
    leaves, tree = tree_flatten(elems)
    if not leaves:
        return elems
    nd = core.get_aval(leaves[0]).ndim
    axis = int(axis) % nd
    n = core.get_aval(leaves[0]).shape[axis]
    if reverse:
        leaves = [st.rev(x, (axis,)) for x in leaves]

    def combine(a, b):
        return tree_flatten(fn(tree_unflatten(tree, a), tree_unflatten(tree, b)))[0]

    def scan(xs):
        k = core.get_aval(xs[0]).shape[axis]
        if k < 2:
            return xs
        evens = [st.slice_in_dim(x, 0, k - 1, 2, axis) for x in xs]
        odds = [st.slice_in_dim(x, 1, k, 2, axis) for x in xs]
        reduced = scan(combine(evens, odds))
        m = core.get_aval(reduced[0]).shape[axis]
        # Elements 2, 4, ... combine the running result of their predecessor pair with themselves.
        rest = [st.slice_in_dim(x, 2, None, 2, axis) for x in xs]
        if k % 2 == 0:
            later = combine([st.slice_in_dim(r, 0, m - 1, 1, axis) for r in reduced], rest)
        else:
            later = combine(reduced, rest)
        firsts = [st.slice_in_dim(x, 0, 1, 1, axis) for x in xs]
        evens_out = [st.concatenate([f, l], axis) for f, l in zip(firsts, later)]
        return [_interleave(e, o, axis) for e, o in zip(evens_out, reduced)]

    out = scan(leaves) if n else leaves
    if reverse:
        out = [st.rev(x, (axis,)) for x in out]
    return tree_unflatten(tree, out)


def _interleave(a, b, axis):
    """Interleaves a (length ceil(n/2)) and b (length floor(n/2)) along `axis`: a0 b0 a1 b1 ..."""
    na = core.get_aval(a).shape[axis]
    nb = core.get_aval(b).shape[axis]
    zero = core.Array(np.zeros((), core.get_aval(a).dtype))
    cfg_a = [(0, 0, 0)] * core.get_aval(a).ndim
    cfg_b = [(0, 0, 0)] * core.get_aval(b).ndim
    cfg_a[axis] = (0, 1 if na == nb else 0, 1)
    cfg_b[axis] = (1, 0 if na == nb else 1, 1)
    pa = st.pad(a, zero, cfg_a)
    pb = st.pad(b, zero, cfg_b)
    if core.get_aval(a).dtype == np.bool_:
        return ew.bitwise_or(pa, pb)
    return ew.add(pa, pb)
