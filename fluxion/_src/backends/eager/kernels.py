"""Precompiled Numba kernels for the eager primitives where one compiled loop beats NumPy's calls.

Most eager primitives are single NumPy ufunc calls, whose SIMD loops a compiled kernel cannot beat. The exception
measured so far is a float `select_n` (`jnp.where`) on a large array: NumPy's `where` branches per element, and the
branch-free fallback (`elementwise.select_bits`) makes six passes over memory; one compiled pass of the same bit
selection is about 4x faster for 1e6 float32 (one core, `benchmarks/eager_fusion.py` style pairing).

Kernels compile in a background thread on first demand (Numba's on-disk cache makes later processes load them in
milliseconds); until a kernel is ready, callers get None and use their NumPy path, which computes the same bits, so
when the switch happens is invisible in results. Without Numba every lookup returns None.
"""

from __future__ import annotations

import threading
from typing import Callable

import numpy as np

_lock = threading.Lock()
_ready: dict = {}    # itemsize -> compiled select kernel
_started: set = set()
_INT = {4: np.int32, 8: np.int64}


# Bit selection, as `elementwise.select_bits`: exact for every float value (NaN payloads and signed zeros
# included). Plain Python functions here; `_compile_select` compiles them with Numba (cached on disk).
def _select32(pred, on_false, on_true, out):
    for i in range(out.size):
        m = -np.int32(pred[i])
        out[i] = (on_true[i] & m) | (on_false[i] & ~m)


def _select64(pred, on_false, on_true, out):
    for i in range(out.size):
        m = -np.int64(pred[i])
        out[i] = (on_true[i] & m) | (on_false[i] & ~m)


_SELECT = {4: _select32, 8: _select64}


def _compile_select(itemsize: int) -> None:
    try:
        import numba
    except ImportError:  # the NumPy path stays in use
        return
    it = numba.from_dtype(np.dtype(_INT[itemsize]))
    try:
        kernel = numba.njit(cache=True, nogil=True, boundscheck=False)(_SELECT[itemsize])
        kernel.compile((numba.uint8[::1], it[::1], it[::1], it[::1]))
    except Exception:  # noqa: BLE001 -- a failed compile only means the NumPy path stays in use
        return
    _ready[itemsize] = kernel


def select_kernel(itemsize: int) -> Callable | None:
    """The compiled `select(pred_u8, on_false, on_true, out)` over flat integer views of `itemsize` bytes, or None
    while it compiles (the first call starts the compile)."""
    kernel = _ready.get(itemsize)
    if kernel is not None or itemsize not in _INT:
        return kernel
    with _lock:
        if itemsize in _started:
            return None
        _started.add(itemsize)
    threading.Thread(target=_compile_select, args=(itemsize,), name="fluxion-eager-kernels", daemon=True).start()
    return None


def select(pred: np.ndarray, on_false: np.ndarray, on_true: np.ndarray) -> np.ndarray | None:
    """`where(pred, on_true, on_false)` for same-shape float arrays of 4 or 8 bytes by the compiled kernel, or None
    if it is not ready yet."""
    itemsize = on_true.dtype.itemsize
    kernel = select_kernel(itemsize)
    if kernel is None:
        return None
    it = _INT[itemsize]
    out = np.empty(on_true.shape, it)
    kernel(np.ascontiguousarray(pred).view(np.uint8).reshape(-1),
           np.ascontiguousarray(on_false).view(it).reshape(-1),
           np.ascontiguousarray(on_true).view(it).reshape(-1), out.reshape(-1))
    return out.view(on_true.dtype)
