"""One-dimensional discrete convolution and cross-correlation: `convolve`, `correlate` (one `conv_general_dilated`
each)."""

from __future__ import annotations

from .. import core
from ..lax import convolution as conv
from ..lax import elementwise as ew
from ..lax import structural as st
from .util import arraylike_arg, promote_dtypes


def _conv(name, a, v, mode, precision, preferred_element_type):
    a, v = arraylike_arg(a, name), arraylike_arg(v, name, 1)
    if core.get_aval(a).ndim != 1 or core.get_aval(v).ndim != 1:
        raise ValueError(f"{name}() only support 1-dimensional inputs.")
    if preferred_element_type is None:
        from .differences import _promote_inexact_no_broadcast
        a, v = _promote_inexact_no_broadcast(name, a, v)
    else:
        a, v = promote_dtypes(a, v)
    na, nv = core.get_aval(a).shape[0], core.get_aval(v).shape[0]
    if na == 0 or nv == 0:
        raise ValueError(f"{name}: inputs cannot be empty, got shapes {core.get_aval(a).shape} and "
                         f"{core.get_aval(v).shape}.")
    reverse_out = False
    if name == "correlate":
        if core.get_aval(v).dtype.kind == "c":
            v = ew.conj(v)
        if na < nv:
            a, v = v, a
            reverse_out = True
    else:
        if na < nv:
            a, v = v, a
        v = st.rev(v, (0,))
    m = core.get_aval(v).shape[0]
    if mode == "valid":
        padding = [(0, 0)]
    elif mode == "same":
        padding = [(m // 2, m - m // 2 - 1)]
    elif mode == "full":
        padding = [(m - 1, m - 1)]
    else:
        raise ValueError("mode must be one of ['full', 'same', 'valid']")
    n = core.get_aval(a).shape[0]
    out = conv.conv_general_dilated(st.reshape(a, (1, 1, n)), st.reshape(v, (1, 1, m)), (1,), padding,
                                    precision=precision, preferred_element_type=preferred_element_type)
    out = st.reshape(out, (core.get_aval(out).shape[-1],))
    return st.rev(out, (0,)) if reverse_out else out


def convolve(a, v, mode: str = "full", *, precision=None, preferred_element_type=None):
    """Discrete linear convolution of two 1-d arrays: `out[k] = sum_i a[i] v[k - i]`.

    `mode`: 'full' (length n + m - 1), 'same' (length max(n, m), centred) or 'valid' (length max(n, m) -
    min(n, m) + 1). Inputs promote to an inexact dtype unless `preferred_element_type` is given.

    Raises:
      ValueError: inputs that are not 1-d or are empty, or an unknown mode.
    """
    return _conv("convolve", a, v, mode, precision, preferred_element_type)


def correlate(a, v, mode: str = "valid", *, precision=None, preferred_element_type=None):
    """Cross-correlation of two 1-d arrays: `out[k] = sum_i a[i + k] conj(v[i])` (modes as in `convolve`, default
    'valid')."""
    return _conv("correlate", a, v, mode, precision, preferred_element_type)
