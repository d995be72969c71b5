"""Window functions for spectral analysis: `bartlett`, `blackman`, `hamming`, `hanning`, `kaiser` (the formulas of
NumPy's documentation; Blackman and Hamming windows from Oppenheim & Schafer, "Discrete-Time Signal Processing",
Kaiser's from J. F. Kaiser, "Nonrecursive digital filter design using the I0-sinh window function", 1974).

`M` (the number of points) must be a concrete integer; M < 1 gives an empty array and M == 1 a single 1. Results
have the default float dtype.
"""

from __future__ import annotations

import operator

import numpy as np

from .. import core, dtypes
from ..core import Array, Tracer


def _points(M, name):
    if isinstance(M, Tracer):
        raise M._concretization_error("int", f"M argument of jnp.{name}")
    return operator.index(M) if not isinstance(M, Array) else operator.index(M.item())


def _symmetric(M, name, fn):
    from .creation import arange, ones
    from .ufuncs import cos, multiply
    M = _points(M, name)
    dt = dtypes.default_float_dtype()
    if M < 1:
        return Array(np.zeros((0,), dt))
    if M == 1:
        return ones((1,), dt)
    # n runs over 1-M, 3-M, ..., M-1, so that pi * n / (M - 1) covers [-pi, pi] symmetrically.
    phase = multiply(arange(1 - M, M, 2, dtype=dt), np.pi / (M - 1))
    return fn(phase, cos)


def bartlett(M):
    """Triangular window of `M` points (zero at both ends).

    >>> import fluxion.numpy as jnp
    >>> jnp.bartlett(5)
    Array([0. , 0.5, 1. , 0.5, 0. ], dtype=float32)
    """
    from .ufuncs import abs as _abs
    return _symmetric(M, "bartlett", lambda ph, cos: 1 - _abs(ph) / np.pi)


def blackman(M):
    """Blackman window: 0.42 + 0.5 cos(phase) + 0.08 cos(2 phase).

    >>> import fluxion.numpy as jnp
    >>> jnp.round(jnp.blackman(5), 4)[1:4]
    Array([0.34, 1.  , 0.34], dtype=float32)
    """
    return _symmetric(M, "blackman", lambda ph, cos: 0.42 + 0.5 * cos(ph) + 0.08 * cos(2 * ph))


def hamming(M):
    """Hamming window: 0.54 + 0.46 cos(phase).

    >>> import fluxion.numpy as jnp
    >>> jnp.round(jnp.hamming(3), 4)
    Array([0.08, 1.  , 0.08], dtype=float32)
    """
    return _symmetric(M, "hamming", lambda ph, cos: 0.54 + 0.46 * cos(ph))


def hanning(M):
    """Hann window: 0.5 + 0.5 cos(phase).

    >>> import fluxion.numpy as jnp
    >>> jnp.round(jnp.hanning(5), 4)
    Array([0. , 0.5, 1. , 0.5, 0. ], dtype=float32)
    """
    return _symmetric(M, "hanning", lambda ph, cos: 0.5 + 0.5 * cos(ph))


def kaiser(M, beta):
    """Kaiser window: I0(beta * sqrt(1 - (2n / (M - 1) - 1)^2)) / I0(beta) for n = 0..M-1 (`beta` may be traced).

    >>> import fluxion.numpy as jnp
    >>> jnp.round(jnp.kaiser(3, 0.0), 4)
    Array([1., 1., 1.], dtype=float32)
    """
    from .creation import arange, ones
    from .ufuncs import sqrt, true_divide
    from .ufuncs_extra import i0
    M = _points(M, "kaiser")
    dt = dtypes.default_float_dtype()
    if M < 1:
        return Array(np.zeros((0,), dt))
    if M == 1:
        return ones((1,), dt)
    alpha = (M - 1) / 2.0
    r = true_divide(arange(0, M, dtype=dt) - alpha, alpha)
    from ..lax import elementwise as ew
    beta = ew.convert_element_type(core.to_array(beta) if not isinstance(beta, (Array, Tracer)) else beta, dt)
    return true_divide(i0(beta * sqrt(1 - r * r)), i0(beta))
