"""Numba's one-time costs, paid ahead of the first fused kernel (used only by `runtime.prewarm`; needs Numba).

Measured on the benchmark machine (2 cores shared with other work): `import numba` 0.6-0.8 s; then, before its
first compilation or its first load of cached machine code, Numba installs its typing and lowering registries
(importing its implementation modules) and sets up LLVM and its runtime: 0.7-1.2 s in a process that has imported
fluxion (which has already imported the `scipy.linalg` Numba's BLAS bindings need). The first kernel using a
construct -- `np.empty` with a tuple shape, `min`/`max` of integers, a stepped `range`, a slice of a 2-D array --
also compiles Numba's implementation of it (up to 0.6 s of typing in the standardization's first reduction
kernel). `set_up` pays the registries and LLVM (what a load from the disk cache needs too, so it is never wasted),
`check` the constructs, with a small function written the way `fusion.kernel` writes a chunked column reduction,
run once against NumPy so that a broken Numba installation shows up here rather than in a user's kernel. Both work
in memory: nothing is written to, or read from, the kernel cache.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types

from . import mathlib  # noqa: F401 -- imported by every generated kernel: its import is part of the one-time cost

_SIGNATURE = types.void(types.Array(types.float32, 2, "C", readonly=True), types.Array(types.float32, 1, "C"))


def set_up() -> None:
    """Installs Numba's typing and lowering registries and sets up its LLVM code generator (what its first
    compilation, or first load from the disk cache, would do), under Numba's compiler lock like a compilation."""
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.registry import cpu_target
    with global_compiler_lock:
        cpu_target.target_context.refresh()  # also refreshes the typing context


def _column_sums_of_double(x, out):  # pragma: no cover -- compiled by Numba in `check`
    """out[j] = sum_i 2 * x[i, j], accumulated per chunk of rows in float64 (the shape of a fused reduction)."""
    n0 = x.shape[0]
    n1 = x.shape[1]
    nch = max(1, min(16, n0))
    step = (n0 + nch - 1) // nch
    part = np.empty((nch, n1), np.float64)
    for c in range(nch):
        c0 = c * step
        c1 = min(c0 + step, n0)
        for j in range(n1):
            part[c, j] = np.float64(0)
        for lo in range(c0, c1, 128):
            hi = min(lo + 128, c1)
            w = x[lo:hi]
            for i in range(hi - lo):
                for j in range(n1):
                    part[c, j] = part[c, j] + np.float64(np.float32(w[i, j] * np.float32(2)))
    for j in range(n1):
        acc = part[0, j]
        for c in range(1, nch):
            acc = acc + part[c, j]
        out[j] = np.float32(acc)


def check() -> None:
    """Compiles the reduction-shaped warm-up function, runs it on a small array and compares it with NumPy.

    Raises:
      RuntimeError: the compiled function computed something else (a broken Numba or LLVM).
    """
    x = np.arange(40, dtype=np.float32).reshape(20, 2) - np.float32(7)
    out = np.empty(2, np.float32)
    compiled = njit(_SIGNATURE, cache=False, error_model="numpy", nogil=True, fastmath={"reassoc"})
    compiled(_column_sums_of_double)(x, out)
    want = (2 * x.astype(np.float64)).sum(0).astype(np.float32)
    if not np.array_equal(out, want):
        raise RuntimeError(f"Numba's warm-up function computed {out.tolist()}, expected {want.tolist()}")
