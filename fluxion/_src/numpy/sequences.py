"""`geomspace`: numbers spaced evenly on a log scale between two endpoints."""

from __future__ import annotations

import numpy as np

from ..staged_call import staged_as_call
from .. import core, dtypes
from ..lax import elementwise as ew
from .util import asarray_arg


@staged_as_call("_geomspace")
def geomspace(start, stop, num: int = 50, endpoint: bool = True, dtype=None, axis: int = 0):
    """`num` samples of a geometric progression from `start` to `stop` (`stop` included if `endpoint`).

    Both endpoints negative gives the negated progression of their absolute values (NumPy's convention);
    endpoints of different signs give NaN, as the logarithm of a negative number does. Integer `dtype`s truncate.
    """
    from .creation import logspace
    from .shape import moveaxis
    from .ufuncs import log10, multiply, real, sign
    dt = dtypes.canonicalize_dtype(dtype) if dtype is not None else dtypes.result_type(
        start, stop, float(num), np.zeros((), dtypes.default_float_dtype()))
    cdt = dt if dtypes.is_inexact(dt) else dtypes.default_float_dtype()
    s = ew.convert_element_type(asarray_arg(start, "geomspace"), cdt)
    e = ew.convert_element_type(asarray_arg(stop, "geomspace"), cdt)
    # -1 when both endpoints are negative, else 1.
    flip = 1 - (1 - sign(real(s))) * (1 - sign(real(e))) // 2
    res = logspace(log10(multiply(flip, s)), log10(multiply(flip, e)), num, endpoint=endpoint, base=10.0,
                   dtype=cdt, axis=0)
    nd = core.get_aval(flip).ndim
    res = multiply(flip, res) if nd == 0 else multiply(flip, res)
    if axis != 0:
        res = moveaxis(res, 0, axis)
    return ew.convert_element_type(res, dt)
