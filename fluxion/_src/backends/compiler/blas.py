"""OpenBLAS's thread-count controls, found in the OpenBLAS library NumPy ships with (through ctypes), and in the one
SciPy ships (`scipy_controls`).

Generated functions set the count before each BLAS call (`threads.blas_for`), from the call's size and the
configured limits (never the machine's load, which would change the bits of some products), and restore it on
exit. If this NumPy's BLAS does not expose the functions (another BLAS, or a NumPy built differently), `available()` is False and BLAS keeps its own thread count.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import os

import numpy as np

from ...lax.convolution import conv_general_dilated_p
from ...lax.linalg import cholesky_p, det_p, eigh_p, qr_p, slogdet_p, solve_p, svd_p, triangular_solve_p
from ...lax.reductions import dot_general_p


def _find_controls(libdir: str = os.path.join(os.path.dirname(np.__file__), "..", "numpy.libs")):
    for path in glob.glob(os.path.join(libdir, "*openblas*")):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for get_name, set_name in (("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
                                   ("scipy_openblas_get_num_threads", "scipy_openblas_set_num_threads"),
                                   ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
                                   ("openblas_get_num_threads", "openblas_set_num_threads")):
            if hasattr(lib, get_name) and hasattr(lib, set_name):
                return getattr(lib, get_name), getattr(lib, set_name)
    return None, None


_get_threads, _set_threads = _find_controls()


@functools.cache
def scipy_controls():
    """(get, set) of the thread count of the OpenBLAS SciPy ships -- the BLAS Numba's `np.dot` calls, which the
    whole-step tier and the scan loop kernels use -- or (None, None). Looked up once."""
    try:
        import scipy
    except ImportError:
        return None, None
    return _find_controls(os.path.join(os.path.dirname(scipy.__file__), "..", "scipy.libs"))


def available() -> bool:
    return _set_threads is not None


def get_threads() -> int:
    """OpenBLAS's current thread count (only when `available()`)."""
    return _get_threads()


def set_threads(n: int) -> None:
    """Sets OpenBLAS's thread count (only when `available()`; about 0.4 us)."""
    _set_threads(n)


# Primitives whose implementation calls BLAS.
BLAS_PRIMITIVES = frozenset({dot_general_p, conv_general_dilated_p, cholesky_p, triangular_solve_p, solve_p, det_p,
                             slogdet_p, eigh_p, qr_p, svd_p})
