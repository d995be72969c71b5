"""BLAS on one thread for programs whose products are small.

NumPy's OpenBLAS splits even small products across all cores; waking the other threads costs more than the
product itself, and when the machine is busy a product waits for a descheduled thread. Measured on the 2-core
benchmark machine under load: a 32x784 @ 784x128 float32 product took 530 us on two threads and 160 us on one; the
MNIST CNN training step spent 606 ms in one convolution on two threads and 36 ms on one. So a generated function
whose largest product is below `SINGLE_THREAD_FLOPS` switches OpenBLAS to one thread on entry and back on exit (two
calls of about 0.4 us). If this NumPy's BLAS does not expose the thread-count functions, nothing changes.
"""

from __future__ import annotations

import ctypes
import glob
import os

import numpy as np

# Programs whose largest matrix product (or convolution) has fewer floating-point operations than this run their
# BLAS calls on one thread.
SINGLE_THREAD_FLOPS = 1 << 31
# ...and whose operands are all smaller than this (memory-bound products of big operands gain from two threads'
# bandwidth: `dot` of two 1e7-element vectors took 2.1 ms on two threads, 2.9 ms on one).
SINGLE_THREAD_MAX_OPERAND = 1 << 22


def _find_controls():
    libdir = os.path.join(os.path.dirname(np.__file__), "..", "numpy.libs")
    for path in glob.glob(os.path.join(libdir, "*openblas*")):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for get_name, set_name in (("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
                                   ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
                                   ("openblas_get_num_threads", "openblas_set_num_threads")):
            if hasattr(lib, get_name) and hasattr(lib, set_name):
                return getattr(lib, get_name), getattr(lib, set_name)
    return None, None


_get_threads, _set_threads = _find_controls()


def available() -> bool:
    return _set_threads is not None


def single_thread_enter() -> int:
    """Switches OpenBLAS to one thread; returns the previous count for `single_thread_leave`."""
    n = _get_threads()
    if n > 1:
        _set_threads(1)
    return n


def single_thread_leave(previous: int) -> None:
    if previous > 1:
        _set_threads(previous)


# Primitives whose implementation calls BLAS.
BLAS_PRIMITIVES = frozenset({"dot_general", "conv_general_dilated", "cholesky", "triangular_solve", "solve", "det",
                             "slogdet", "eigh", "qr", "svd"})


def flops(eqn) -> int:
    """A rough count of the floating-point work of a BLAS-using equation (products only)."""
    name = eqn.primitive.name
    out = eqn.outvars[0].aval
    out_size = int(np.prod(out.shape, dtype=np.int64))
    if name == "dot_general":
        (lc, _), _ = eqn.params["dimension_numbers"]
        k = int(np.prod([eqn.invars[0].aval.shape[d] for d in lc], dtype=np.int64))
        return 2 * out_size * k
    if name == "conv_general_dilated":
        rhs = eqn.invars[1].aval
        o = rhs.shape[eqn.params["dimension_numbers"][1][0]]
        return 2 * out_size * int(np.prod(rhs.shape, dtype=np.int64)) // max(o, 1)
    n = max(eqn.invars[0].aval.shape[-2:] or (1,))
    return 2 * n ** 3 * max(out_size // max(n * n, 1), 1)
