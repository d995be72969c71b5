"""NumPy implementations of the windowed reductions (`reduce_window_sum/max/min`).

The operand is padded (and base-dilated) with the reduction's identity, its windows are read as a strided view
with `sliding_window_view`, and the window axes are reduced -- no copy of the windows is made.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ...lax import windowed as lw
from ...lax.windowed import identity  # the identity element per reduction (re-exported for the compiler)
from . import minmax, register_impl
from .structural import pad as _pad


def windows(x, kind, *, window_dimensions, window_strides, padding, base_dilation, window_dilation):
    """The strided view (*out, *window) of the windows of `x` after identity padding; None if out is empty."""
    x = np.asarray(x)
    nd = x.ndim
    cfg = [(lo, hi, b - 1) for (lo, hi), b in zip(padding, base_dilation)]
    if any(c != (0, 0, 0) for c in cfg):
        x = _pad(x, identity(kind, x.dtype), padding_config=cfg)
    spans = [(w - 1) * d + 1 for w, d in zip(window_dimensions, window_dilation)]
    if any(s > n for s, n in zip(spans, x.shape)):
        return None
    view = sliding_window_view(x, spans)
    sel = tuple(slice(None, None, s) for s in window_strides) + tuple(slice(None, None, d) for d in window_dilation)
    return view[sel] if nd else view


def _make(kind, reducer):
    def impl(x, **params):
        x = np.asarray(x)
        v = windows(x, kind, **params)
        if v is None:
            shape = []
            for n, (lo, hi), b, w, s, d in zip(x.shape, params["padding"], params["base_dilation"],
                                                params["window_dimensions"], params["window_strides"],
                                                params["window_dilation"]):
                size = (0 if n == 0 else (n - 1) * b + 1) + lo + hi
                span = (w - 1) * d + 1
                shape.append(max(0, (size - span) // s + 1) if size >= span else 0)
            return np.full(shape, identity(kind, x.dtype), x.dtype)
        axes = tuple(range(x.ndim, 2 * x.ndim))
        return np.asarray(reducer(v, axes, x.dtype), dtype=x.dtype)
    return impl


reduce_window_sum = _make("sum", lambda v, axes, dt: np.sum(v, axis=axes, dtype=dt))
reduce_window_max = _make("max", lambda v, axes, dt: minmax.reduce_max(v, axes))  # XLA's signed zeros
reduce_window_min = _make("min", lambda v, axes, dt: minmax.reduce_min(v, axes))
register_impl(lw.reduce_window_sum_p, reduce_window_sum)
register_impl(lw.reduce_window_max_p, reduce_window_max)
register_impl(lw.reduce_window_min_p, reduce_window_min)
