"""Faster lowerings of `reduce_window_sum/max/min` for small windows, and of `pad` (compiler lowering hints).

The result is the elementwise sum (max, min) over window taps of strided slices of the (identity-padded) operand:

    out = op over taps t of x_padded[t * window_dilation : ... : window_strides]

computed by the Numba kernel of `convkernels` (one pass over the output, the taps combined per output row while it
is in cache) for float32/float64/int32/int64 operands of rank at most 4 once it is compiled, and otherwise by one
NumPy pass per tap over the output (4 passes for 2x2 pooling and its gradient), instead of reducing a strided window
view element by element. Windows with more than `MAX_TAPS` taps, and base dilation, use the backend's
implementation. Sums are accumulated in the operand's dtype in tap order, as XLA's CPU backend does, by both paths
(the first tap is copied, then the others are added).
"""

from __future__ import annotations

import itertools

import numpy as np

from ..eager import minmax
from ..eager.windowed import identity as _window_identity
from ...core import Literal, Var
from ...lax.structural import pad_p
from ...lax.windowed import reduce_window_max_p, reduce_window_min_p, reduce_window_sum_p
from . import convkernels, ir, threads
from .memory import FRESH, STRIDED

MAX_TAPS = 64
# The kernels run on the chunk threads (`threads.run_chunks`, split along the first axis, rows of outputs each
# computed whole by one thread, so the bits do not depend on the split) from this much work (output elements x
# taps: the `fluxion_parallel_min_work` default of fused kernels), in chunks of about this many outputs.
THREADED_MIN_WORK = 1 << 18
CHUNK_ELEMENTS = 1 << 15

# The dtypes the Numba kernel is compiled for, and its code for each tap-combining ufunc.
_KERNEL_DTYPES = tuple(np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64))
_OP_CODES = {np.add: 0, np.maximum: 1, np.minimum: 2}

# Per primitive: the ufunc combining taps, and the reduction kind naming its identity in the backend's table.
_OPS = {reduce_window_sum_p: (np.add, "sum"), reduce_window_max_p: (np.maximum, "max"),
        reduce_window_min_p: (np.minimum, "min")}


def supported(eqn) -> bool:
    p = eqn.params
    x = eqn.invars[0]
    taps = int(np.prod(p["window_dimensions"], dtype=np.int64))
    return (all(b == 1 for b in p["base_dilation"]) and taps <= MAX_TAPS and ir.size(x) > 0
            and ir.size(eqn.outvars[0]) > 0 and x.aval.dtype.kind in "biuf")


def _kernel_reduce(x, op, window_dimensions, window_strides, window_dilation, out_shape):
    """The reduction on the Numba kernel (operands of rank <= 4, kernel dtypes), or None when it does not apply or
    is not compiled yet. Leading unit axes lift the operand to rank 4."""
    if x.ndim > 4 or x.dtype not in _KERNEL_DTYPES:
        return None
    fn = convkernels.reduce_window.get()
    if fn is None:
        return None
    lift = 4 - x.ndim
    x4 = np.ascontiguousarray(x).reshape((1,) * lift + x.shape)
    out = np.empty((1,) * lift + tuple(out_shape), x.dtype)
    dims, strides, dils = ((1,) * lift + tuple(v) for v in (window_dimensions, window_strides, window_dilation))
    code = _OP_CODES[op]

    def rows(lo, hi):  # outputs lo .. hi - 1 along the first axis read operand rows from lo * stride on
        fn(x4[lo * strides[0]:], out[lo:hi], code, *dims, *strides, *dils)
    _by_rows(out, int(np.prod(dims)), rows)
    return out.reshape(out_shape)


def _by_rows(out, taps, rows) -> None:
    """Calls `rows(lo, hi)` over chunks of `out`'s first axis, on the chunk threads when the work is large enough
    (`THREADED_MIN_WORK`); one call for all rows otherwise."""
    n = out.shape[0]
    per_row = max(int(np.prod(out.shape[1:])), 1)
    if n < 2 or out.size * taps < THREADED_MIN_WORK:
        rows(0, n)
        return
    chunk = max(1, -(-CHUNK_ELEMENTS // per_row))

    def make_body():
        return lambda k: rows(k * chunk, min(n, (k + 1) * chunk))
    threads.run_chunks(-(-n // chunk), make_body)


def _taps_table(n_out, n_taps, size, stride, dil, ldil, lo):
    """(n_out, n_taps) operand indices read along one axis (stride, window dilation, base dilation `ldil`, low
    padding `lo`), -1 where the tap falls on padding or a dilation hole."""
    q = np.arange(n_out, dtype=np.int64)[:, None] * stride + np.arange(n_taps, dtype=np.int64)[None, :] * dil - lo
    ok = (q >= 0) & (q < (size - 1) * ldil + 1) & (q % ldil == 0)
    return np.where(ok, q // ldil, -1)


def _tables_reduce(x, op, identity, window_dimensions, window_strides, window_dilation, lows, ldils, out_shape):
    """The reduction over `x` virtually padded (low padding `lows`, high padding implied by `out_shape`) and
    base-dilated (`ldils`) by the `reduce_window_tables` kernel, or None when the last axis is not a plain vector
    axis, the operand's rank or dtype is not the kernel's, or the kernel is not compiled yet."""
    if (x.ndim > 4 or x.dtype not in _KERNEL_DTYPES or window_dimensions[-1] != 1 or window_strides[-1] != 1
            or lows[-1] != 0 or ldils[-1] != 1 or x.shape[-1] != out_shape[-1]):
        return None
    fn = convkernels.reduce_window_tables.get()
    if fn is None:
        return None
    lift = 4 - x.ndim
    x4 = np.ascontiguousarray(x).reshape((1,) * lift + x.shape)
    out = np.empty((1,) * lift + tuple(out_shape), x.dtype)
    tables = [_taps_table(*args) for args in zip(
        out.shape[:3], (1,) * lift + tuple(window_dimensions[:-1]), x4.shape[:3],
        (1,) * lift + tuple(window_strides[:-1]), (1,) * lift + tuple(window_dilation[:-1]),
        (1,) * lift + tuple(ldils[:-1]), (0,) * lift + tuple(lows[:-1]))]
    code, init = _OP_CODES[op], x.dtype.type(identity)
    t0, t1, t2 = tables

    def rows(lo, hi):  # the tables hold absolute operand indices: only the first one is cut
        fn(x4, out[lo:hi], code, init, t0[lo:hi], t1, t2)
    _by_rows(out, int(np.prod(window_dimensions)), rows)
    return out.reshape(out_shape)


def reduce_window(x, *, op, identity, window_dimensions, window_strides, padding, window_dilation, out_shape,
                  absorbed=None):
    """See the module docstring; `op` is the NumPy ufunc combining taps. With `absorbed = (padding_config,
    padded_shape)`, `x` is the operand of a `pad` with the reduction's identity (see `absorbed_pad`) whose result
    this reduces."""
    x = np.asarray(x)
    if absorbed is not None:
        cfg, padded_shape = absorbed
        out = _tables_reduce(x, op, identity, window_dimensions, window_strides, window_dilation,
                             [lo + plo for (lo, _, _), (plo, _) in zip(cfg, padding)],
                             [interior + 1 for _, _, interior in cfg], out_shape)
        if out is not None:
            return out
        x = pad(x, identity, padding_config=cfg, out_shape=padded_shape)
    if any(lo or hi for lo, hi in padding) and all(lo >= 0 and hi >= 0 for lo, hi in padding):
        out = _tables_reduce(x, op, identity, window_dimensions, window_strides, window_dilation,
                             [lo for lo, _ in padding], [1] * x.ndim, out_shape)
        if out is not None:
            return out
    if any(lo or hi for lo, hi in padding):
        crop = tuple(slice(max(-lo, 0), x.shape[k] - max(-hi, 0)) for k, (lo, hi) in enumerate(padding))
        x = x[crop]
        pads = [(max(lo, 0), max(hi, 0)) for lo, hi in padding]
        xp = np.full(tuple(s + lo + hi for s, (lo, hi) in zip(x.shape, pads)), identity, x.dtype)
        xp[tuple(slice(lo, lo + s) for s, (lo, _) in zip(x.shape, pads))] = x
        x = xp
    out = _kernel_reduce(x, op, window_dimensions, window_strides, window_dilation, out_shape)
    if out is not None:
        return out
    taps = [tuple(slice(t * d, t * d + (m - 1) * st + 1, st)
                  for t, d, st, m in zip(tap, window_dilation, window_strides, out_shape))
            for tap in itertools.product(*(range(w) for w in window_dimensions))]
    for sl in taps:
        if out is None:
            out = np.array(x[sl], copy=True, order="C")  # the lowering promises a C-contiguous result
        else:
            op(out, x[sl], out=out)
    if op is not np.add and minmax.floating(out.dtype) and np.equal(out, 0).any():
        _signed_zeros(out, x, taps, op is np.maximum)
    return out


def _signed_zeros(out, x, taps, is_max):
    """Gives the zeros of a max (min) window reduction XLA's signs, in place: NumPy's maximum keeps the first of
    -0 and +0. A zero maximum has only values <= 0 in its window, so it is -0 exactly when every sign bit in the
    window is set (the AND of the signs); a zero minimum is -0 when any is (the OR). Padding holds the identity,
    -inf for max and +inf for min, which leaves the AND (OR) unchanged."""
    combine = np.logical_and if is_max else np.logical_or
    neg = None
    for sl in taps:
        s = np.signbit(x[sl])
        neg = s if neg is None else combine(neg, s, out=neg)
    zero = np.equal(out, 0)
    out[zero] = np.where(neg[zero], out.dtype.type(-0.0), out.dtype.type(0.0))


def _scalar_value(atom, closed):
    """The value of a scalar operand known at compile time (a literal or a constant), else None."""
    if type(atom) is Literal:
        return np.asarray(atom.val)
    if type(atom) is Var and atom in closed.jaxpr.constvars:
        return np.asarray(closed.consts[closed.jaxpr.constvars.index(atom)])
    return None


def _absorbs(closed, eqn, pad_eqn) -> bool:
    """Whether reduce-window `eqn` can read the operand of `pad_eqn` (which produces its operand) instead of the
    padded array: the pad value is the reduction's identity, the padding is not negative, the last axis is a plain
    vector axis (not padded, window 1, stride 1) and the rank and dtype are the kernel's."""
    if eqn.primitive not in _OPS or not supported(eqn):
        return False
    x = pad_eqn.invars[0]
    dt = x.aval.dtype
    if x.aval.ndim > 4 or dt not in _KERNEL_DTYPES:
        return False
    value = _scalar_value(pad_eqn.invars[1], closed)
    ident = _window_identity(_OPS[eqn.primitive][1], dt)
    if value is None or value.dtype != dt or value != ident:
        return False
    cfg = pad_eqn.params["padding_config"]
    p = eqn.params
    return (all(lo >= 0 and hi >= 0 for lo, hi, _ in cfg) and tuple(cfg[-1]) == (0, 0, 0)
            and p["window_dimensions"][-1] == 1 and p["window_strides"][-1] == 1
            and tuple(p["padding"][-1]) == (0, 0) and all(lo >= 0 and hi >= 0 for lo, hi in p["padding"]))


# The last jaxpr `_graph` indexed and its index (lowerings visit one jaxpr's equations in a row).
_last_graph: tuple = (None, None)


def _graph(jaxpr) -> tuple:
    """(producer equation of each variable, equations reading each variable, once per operand) of `jaxpr`."""
    global _last_graph
    last, index = _last_graph
    if last is not jaxpr:
        producers, readers = {}, {}
        for e in jaxpr.eqns:
            for v in e.outvars:
                producers[v] = e
            for v in e.invars:
                if type(v) is Var:
                    readers.setdefault(v, []).append(e)
        index = (producers, readers)
        _last_graph = (jaxpr, index)
    return index


def absorbed_pad(closed, eqn):
    """The `pad` equation whose result is the operand of reduce-window `eqn` when every reader of that result can
    read the pad's operand instead (so the padded array is never written; see `lower_pad`), else None. This is the
    transpose of average pooling as JAX writes it: a pad with interior padding, then a stride-1 window sum."""
    x = eqn.invars[0]
    if type(x) is not Var or x in closed.jaxpr.outvars:
        return None
    producers, readers = _graph(closed.jaxpr)
    producer = producers.get(x)
    readers = readers.get(x, ())
    if producer is None or producer.primitive is not pad_p:
        return None
    if all(_absorbs(closed, e, producer) and e.invars[0] is x and sum(v is x for v in e.invars) == 1
           for e in readers):
        return producer
    return None


def lower_reduce_window(g, eqn, ins, outs, fallback):
    if not supported(eqn):
        return fallback(g, eqn, ins, outs)
    p = eqn.params
    op, kind = _OPS[eqn.primitive]
    ident = _window_identity(kind, eqn.invars[0].aval.dtype)
    fn = g.bind(reduce_window, "reduce_window_taps")
    pad_eqn = absorbed_pad(g.closed, eqn)
    absorbed = "" if pad_eqn is None else (
        f", absorbed=({tuple(tuple(int(v) for v in c) for c in pad_eqn.params['padding_config'])!r}, "
        f"{eqn.invars[0].aval.shape!r})")
    g.line(f"{outs[0]} = {fn}({ins[0]}, op={g.bind(op, op.__name__)}, "
           f"identity={g.bind(ident, 'identity')}, window_dimensions={tuple(p['window_dimensions'])!r}, "
           f"window_strides={tuple(p['window_strides'])!r}, padding={tuple(tuple(q) for q in p['padding'])!r}, "
           f"window_dilation={tuple(p['window_dilation'])!r}, out_shape={eqn.outvars[0].aval.shape!r}{absorbed})")
    return [FRESH]


def pad(x, padding_value, *, padding_config, out_shape):
    """`lax.pad` in one allocation: the output is filled with the padding value and the operand is written into it
    through one strided slice per dimension (interior padding is the slice's step; negative low/high padding crops)."""
    x = np.asarray(x)
    out = np.full(out_shape, padding_value, dtype=x.dtype)
    src, dst = [], []
    for n, (lo, _, interior), m in zip(x.shape, padding_config, out_shape):
        step = interior + 1
        p0 = -(lo // step) if lo < 0 else 0          # first operand element landing at index >= 0
        p1 = min(n, (m - 1 - lo) // step + 1) if m - 1 - lo >= 0 else 0  # one past the last landing < m
        if p1 <= p0:
            return out
        src.append(slice(p0, p1))
        dst.append(slice(lo + p0 * step, lo + (p1 - 1) * step + 1, step))
    out[tuple(dst)] = x[tuple(src)]
    return out


def _read_by_absorbing_reductions(closed, eqn) -> bool:
    """Whether every reader of pad `eqn`'s result is a reduce-window that reads the pad's operand instead."""
    readers = _graph(closed.jaxpr)[1].get(eqn.outvars[0], ())
    return bool(readers) and all(absorbed_pad(closed, e) is eqn for e in readers)


def lower_pad(g, eqn, ins, outs, fallback):
    x = eqn.invars[0]
    if ir.size(x) == 0 or ir.size(eqn.outvars[0]) == 0 or x.aval.ndim == 0:
        return fallback(g, eqn, ins, outs)
    if _read_by_absorbing_reductions(g.closed, eqn):
        # The readers pad virtually (`reduce_window(..., absorbed=...)`): the name stands for the operand.
        g.line(f"{outs[0]} = {ins[0]}")
        return [STRIDED]
    cfg = tuple(tuple(int(v) for v in c) for c in eqn.params["padding_config"])
    g.line(f"{outs[0]} = {g.bind(pad, 'pad_strided')}({ins[0]}, {ins[1]}, padding_config={cfg!r}, "
           f"out_shape={eqn.outvars[0].aval.shape!r})")
    return [FRESH]
