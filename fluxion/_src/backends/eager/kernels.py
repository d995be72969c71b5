"""Precompiled Numba kernels for the eager primitives where one compiled loop beats NumPy's calls.

Most eager primitives are single NumPy ufunc calls, whose SIMD loops a compiled kernel cannot beat. The exceptions
measured so far:

* a float `select_n` (`jnp.where`) on a large array: NumPy's `where` branches per element, and the branch-free
  fallback (`elementwise.select_bits`) makes six passes over memory; one compiled pass of the same bit selection is
  about 4x faster for 1e6 float32 (one core, `benchmarks/eager_fusion.py` style pairing);
* `mul_add` (`a * b + c` rounded once, XLA's contracted multiply-add): NumPy has no fused multiply-add, and its exact
  emulation (`special.fma32`/`fma64`) takes several passes in float64; one compiled loop calling `llvm.fma` is a
  single vectorized pass with the same (correctly rounded) results;
* `pow` of float32/float64 arrays as XLA computes it: the C library's `powf`/`pow` (NumPy's SIMD `power` differs
  from them in the last bit for about 20% of float32 and 5% of float64 inputs on AVX-512 machines);
* float32 `tanh`, `exp` and `log` as XLA computes them (`mathlib._tanhf`, `_expf`, `_logf`: polynomials evaluated
  with fused multiply-adds), whose exact NumPy emulations (`special.tanh_f32`, ...) take a dozen passes each;
* `add`/`sub`/`mul`/`div` of a large float array and a broadcast operand that repeats along the leading axes (a
  row, `X - X.mean(0)`) or the trailing axes (a column, `X - X.mean(1, keepdims=True)`): NumPy's broadcasting loop
  calls its inner loop once per row, so for short rows it runs at a fraction of memory speed (10000 x 100 float32:
  `X - row` 2.3x, `X / row` 1.3x slower than the compiled two-level loop, one core, CPU time of 15 alternating
  rounds). The kernels compute each element with the same IEEE operation as NumPy, so results are bit-identical,
  up to the sign and payload of NaN results (which IEEE 754 leaves open: the hardware's default NaN for inf - inf,
  either operand's NaN when both are NaN).

Kernels compile in a background thread on first demand (Numba's on-disk cache makes later processes load them in
milliseconds); until a kernel is ready, callers get None and use their NumPy path, which computes the same values, so
when the switch happens is invisible in results. Without Numba every lookup returns None.
"""

from __future__ import annotations

import threading
from typing import Callable

import numpy as np

from ... import forks

_lock = forks.lock()
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


def _njit_each(fn: Callable, signatures: Callable) -> tuple | None:
    """`fn` compiled by Numba once per signature in `signatures(numba)`, one dispatcher each (machine code cached on
    disk; `disable_compile`, so a call with other types raises TypeError instead of compiling on the caller's
    thread), or None when Numba is missing or a compile failed: the caller's NumPy path then stays in use."""
    try:
        import numba
    except ImportError:
        return None
    out = []
    for sig in signatures(numba):
        try:
            kernel = numba.njit(cache=True, nogil=True, boundscheck=False, error_model="numpy")(fn)
            kernel.compile(sig)
            kernel.disable_compile()
        except Exception:  # noqa: BLE001 -- a failed compile only means the NumPy path stays in use
            return None
        out.append(kernel)
    return tuple(out)


def _compile_select(itemsize: int) -> None:
    def signatures(nb):
        it = nb.from_dtype(np.dtype(_INT[itemsize]))
        # Inputs typed read-only, which also accepts writeable arrays (a broadcast or a caller's read-only array).
        pred, value = nb.types.Array(nb.uint8, 1, "C", readonly=True), nb.types.Array(it, 1, "C", readonly=True)
        return [(pred, value, value, it[::1])]
    found = _njit_each(_SELECT[itemsize], signatures)
    if found is not None:
        _ready[itemsize] = found[0]


_threads: dict = {}  # (id of a `started` set, key) -> the thread compiling that kernel


def _compile_once(started: set, key, compile_fn: Callable) -> None:
    """Runs `compile_fn(key)` on a background thread, once per `key` (`started` records the keys begun)."""
    with _lock:
        if key in started:
            return
        started.add(key)
        thread = _threads[id(started), key] = threading.Thread(target=compile_fn, args=(key,),
                                                               name="fluxion-eager-kernels", daemon=True)
    thread.start()


def compiling() -> bool:
    """Whether an eager kernel is still being compiled in the background (until then its callers run their NumPy
    path; benchmarks wait for this before timing steady state)."""
    with _lock:
        return any(t.is_alive() for t in _threads.values())


def _wait_for(started: set, key) -> None:
    """Blocks until the background compile of `key` (started with `_compile_once`) has finished."""
    with _lock:
        thread = _threads.get((id(started), key))
    if thread is not None and thread is not threading.current_thread():
        thread.join()


def select_kernel(itemsize: int) -> Callable | None:
    """The compiled `select(pred_u8, on_false, on_true, out)` over flat integer views of `itemsize` bytes, or None
    while it compiles (the first call starts the compile)."""
    kernel = _ready.get(itemsize)
    if kernel is not None or itemsize not in _INT:
        return kernel
    _compile_once(_started, itemsize, _compile_select)
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


# -- broadcast binary arithmetic ----------------------------------------------------------------------------------
# One two-level loop per (operation, layout): `full` is the large C-contiguous operand seen as (rows, cols), `row` a
# vector of `cols` values repeated for every row, `col` a vector of `rows` values repeated along each row. The four
# layout templates are written once and instantiated per operation below (each instance a named module-level
# function, so Numba caches its machine code on disk like `_select32`).
_LAYOUTS = {
    "full_row": "out[i, j] = x[i, j] {op} y[j]",
    "row_full": "out[i, j] = x[j] {op} y[i, j]",
    "full_col": "out[i, j] = x[i, j] {op} y[i]",
    "col_full": "out[i, j] = x[i] {op} y[i, j]",
}
_OPS = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
_TEMPLATE = """
def {name}(x, y, out):
    rows, cols = out.shape
    for i in range(rows):
        for j in range(cols):
            {body}
"""
_BINARY_PY: dict = {}  # (op, layout) -> plain Python function
for _op, _symbol in _OPS.items():
    for _layout, _body in _LAYOUTS.items():
        _name = f"_{_op}_{_layout}"
        exec(compile(_TEMPLATE.format(name=_name, body=_body.format(op=_symbol)), __file__, "exec"), globals())
        _BINARY_PY[_op, _layout] = globals()[_name]

BINARY_MIN_ELEMENTS = 1 << 16
"""Output size from which `binary` is tried: below it NumPy's call overhead, not its loop, dominates."""
BINARY_MAX_ROW = 4096
"""Rows of this length or more stay with NumPy, whose per-row overhead is then negligible (100 x 10000 float32: the
kernel took 1.0-1.15x NumPy's time; 1000 x 1000: 0.6x; 10000 x 100: 0.5-0.8x; `benchmarks/eager_fusion.py`)."""

_binary_ready: dict = {}   # (op, layout, dtype) -> compiled kernel
_binary_started: set = set()
_BINARY_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _compile_binary(key: tuple) -> None:
    op, layout, dtype = key

    def signatures(nb):
        t = nb.from_dtype(dtype)
        # Inputs typed read-only, which also accepts writeable arrays (broadcast views are read-only).
        full, vec = (nb.types.Array(t, nd, "C", readonly=True) for nd in (2, 1))
        return [(full, vec, t[:, ::1]) if layout.startswith("full") else (vec, full, t[:, ::1])]
    found = _njit_each(_BINARY_PY[op, layout], signatures)
    if found is not None:
        _binary_ready[key] = found[0]


def binary_kernel(op: str, layout: str, dtype: np.dtype) -> Callable | None:
    """The compiled `kernel(x, y, out)` for `op` ('add', 'sub', 'mul', 'div') over `layout` (a key of `_LAYOUTS`)
    and float `dtype`, or None while it compiles (the first call starts the compile) or if there is none."""
    key = (op, layout, dtype)
    kernel = _binary_ready.get(key)
    if kernel is not None or dtype not in _BINARY_DTYPES:
        return kernel
    _compile_once(_binary_started, key, _compile_binary)
    return None


def _as_vector(v: np.ndarray, shape: tuple) -> tuple | None:
    """How the broadcast operand `v` (same ndim as `shape`, broadcastable to it) repeats: ('row', split, values) if
    it is constant along the axes before `split` and C-contiguous over the rest, ('col', split, values) if it is
    C-contiguous over the axes before `split` and constant along the rest, each with its distinct values as a
    contiguous vector; None for any other layout (and for a scalar or a full operand, which NumPy serves well)."""
    st = np.broadcast_to(v, shape).strides
    nd = len(shape)
    # Row: from the last axis, the contiguous axes, then only repeated ones (size-1 axes fit either).
    d, expected = nd - 1, v.itemsize
    while d >= 0 and (shape[d] == 1 or st[d] == expected):
        expected *= shape[d]
        d -= 1
    split = d + 1
    if 0 < split < nd and all(st[e] == 0 or shape[e] == 1 for e in range(split)):
        return "row", split, np.broadcast_to(v, shape)[(0,) * split].reshape(-1)
    # Column: from the last axis, the repeated axes, then only contiguous ones.
    d = nd - 1
    while d >= 0 and (st[d] == 0 or shape[d] == 1):
        d -= 1
    split, expected = d + 1, v.itemsize
    while d >= 0 and (shape[d] == 1 or st[d] == expected):
        expected *= shape[d]
        d -= 1
    if d < 0 and 0 < split < nd:
        return "col", split, np.broadcast_to(v, shape)[(Ellipsis,) + (0,) * (nd - split)].reshape(-1)
    return None


def binary(op: str, x: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """`x <op> y` for float32/float64 arrays of one dtype, with NumPy's broadcasting, by a compiled kernel when one
    operand is a large C-contiguous array of the result's shape and the other repeats as a row or a column of it
    (see `_as_vector`); None when that does not hold or the kernel is not ready yet (the caller uses NumPy, which
    gives the same values: the same bits, up to the sign and payload of NaNs)."""
    if type(x) is not np.ndarray or type(y) is not np.ndarray or x.dtype != y.dtype or x.dtype not in _BINARY_DTYPES:
        return None
    try:
        shape = np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        return None
    if x.shape == shape and x.flags.c_contiguous and x.size >= BINARY_MIN_ELEMENTS:
        full, other, first = x, y, "full"
    elif y.shape == shape and y.flags.c_contiguous and y.size >= BINARY_MIN_ELEMENTS:
        full, other, first = y, x, None
    else:
        return None
    if other.ndim < len(shape):
        other = other.reshape((1,) * (len(shape) - other.ndim) + other.shape)
    found = _as_vector(other, shape)
    if found is None:
        return None
    kind, split, values = found
    if values.size == 1:  # a scalar: NumPy's loop with a constant operand is as fast
        return None
    layout = f"full_{kind}" if first else f"{kind}_full"
    kernel = binary_kernel(op, layout, x.dtype)
    if kernel is None:
        return None
    if not (full.flags.aligned and values.flags.aligned):
        return None
    rows = 1
    for n in shape[:split]:
        rows *= n
    if full.size >= rows * BINARY_MAX_ROW or full.size == rows:  # long rows, or rows of one element (elementwise)
        return None
    out = np.empty(shape, x.dtype)
    grid = full.reshape(rows, -1)
    if first:
        kernel(grid, values, out.reshape(rows, -1))
    else:
        kernel(values, grid, out.reshape(rows, -1))
    return out


# -- fused multiply-add --------------------------------------------------------------------------------------------
_fma_ready: dict = {}   # dtype -> compiled kernels (contiguous operands, any strides)
_fma_started: set = set()


def _strided_pair(fn: Callable, dtype: np.dtype, n_in: int) -> tuple | None:
    """`fn(*inputs, out)` compiled for `n_in` one-dimensional read-only inputs of `dtype`: contiguous (a loop LLVM
    vectorizes) and any strides (a 0-d operand broadcast with stride 0). One dispatcher each, since a writeable
    contiguous array converts equally well to either signature."""
    def signatures(nb):
        t = nb.from_dtype(dtype)
        return [(*(nb.types.Array(t, 1, layout, readonly=True) for _ in range(n_in)), t[::1]) for layout in "CA"]
    return _njit_each(fn, signatures)


def _compile_fma(dtype: np.dtype) -> None:
    try:
        from ..compiler.fusion import mathlib
    except ImportError:  # no Numba: the NumPy path stays in use
        return
    found = _strided_pair(mathlib.fma_loop, dtype, 3)
    if found is not None:
        _fma_ready[dtype] = found


def _run_strided_pair(kernel: tuple, operands: tuple, out: np.ndarray | None = None) -> np.ndarray | None:
    """Runs a `_strided_pair` kernel on `operands` (aligned, of one shape or 0-d), into `out` if given (C-contiguous,
    of that shape) or a new array; None for other shapes or unaligned operands. Each operand is passed as a 1-D view
    of the output's elements -- a reshape, or a stride-0 broadcast of a 0-d operand -- to the contiguous kernel when
    all views are contiguous, else to the strided one."""
    shape = max((v.shape for v in operands), key=len)
    if any(v.shape not in (shape, ()) for v in operands) or not all(v.flags.aligned for v in operands):
        return None
    if out is None:
        out = np.empty(shape, operands[0].dtype)
    n = out.size
    flat = [v if v.ndim == 1 and v.size == n else v.reshape(-1) if v.shape == shape else np.broadcast_to(v, (n,))
            for v in operands]
    contiguous, strided = kernel
    (contiguous if all(v.flags.c_contiguous for v in flat) else strided)(*flat, out.reshape(-1))
    return out


def fma(a: np.ndarray, b: np.ndarray, c: np.ndarray, out: np.ndarray | None = None) -> np.ndarray | None:
    """`a * b + c` rounded once, for float32/float64 arrays of one dtype whose shapes are equal or 0-d, by the
    compiled kernel (into `out` if given: C-contiguous, of the result's shape and dtype, possibly one of the
    operands); None while it compiles (the first call starts the compile) or for other operands (the caller's exact
    NumPy emulation gives the same values)."""
    dt = a.dtype
    kernel = _fma_ready.get(dt)
    if kernel is not None and out is None and a.ndim == 1 and a.shape == b.shape == c.shape:
        # The hot path (a jitted program's small vectors): the contiguous kernel checks the operands' dtypes, layout
        # and alignment itself while it dispatches, and raises TypeError when they do not fit (no other signature
        # is compiled); the general path below then sorts them out. About 2 us less than checking them here.
        result = np.empty(a.shape, dt)
        try:
            kernel[0](a, b, c, result)
            return result
        except TypeError:
            pass
    if kernel is None or b.dtype != dt or c.dtype != dt:
        if dt in _BINARY_DTYPES:
            _compile_once(_fma_started, dt, _compile_fma)
        return None
    return _run_strided_pair(kernel, (a, b, c), out)


# -- float32 functions with XLA's bits -----------------------------------------------------------------------------
# name -> the `mathlib` loop computing it for float32
_UNARY_LOOPS = {"tanh": "tanhf_loop", "exp": "expf_loop", "log": "logf_loop"}
_unary_ready: dict = {}  # name -> compiled kernel
_unary_started: set = set()


def _compile_unary(name: str) -> None:
    try:
        from ..compiler.fusion import mathlib
    except ImportError:  # no Numba: the NumPy path stays in use
        return
    found = _njit_each(getattr(mathlib, _UNARY_LOOPS[name]),
                       lambda nb: [(nb.types.Array(nb.float32, 1, "C", readonly=True), nb.float32[::1])])
    if found is not None:
        _unary_ready[name] = found[0]


def unary(name: str, x: np.ndarray) -> np.ndarray | None:
    """Float32 function `name` (a key of `_UNARY_LOOPS`) of the float32 array `x` by its compiled kernel, or None
    while it compiles (the first call starts the compile; the caller's NumPy emulation gives the same values)."""
    kernel = _unary_ready.get(name)
    if kernel is None:
        _compile_once(_unary_started, name, _compile_unary)
        return None
    if not x.flags.aligned:
        return None
    out = np.empty(x.shape, np.float32)
    if x.ndim == 1 and x.flags.c_contiguous:
        kernel(x, out)
    else:
        kernel(np.ascontiguousarray(x).reshape(-1), out.reshape(-1))
    return out


# -- pow: the C library's, as XLA calls it --------------------------------------------------------------------------
def _pow_loop(x, y, out):
    # Numba lowers float32 ** float32 to the C library's powf and float64 ** float64 to pow, as LLVM does for XLA.
    for i in range(out.size):
        out[i] = x[i] ** y[i]


_pow_ready: dict = {}   # dtype -> compiled kernels (contiguous operands, any strides)
_pow_started: set = set()


def _compile_pow(dtype: np.dtype) -> None:
    found = _strided_pair(_pow_loop, dtype, 2)
    if found is not None:
        _pow_ready[dtype] = found


def power(x: np.ndarray, y: np.ndarray, wait: bool = False) -> np.ndarray | None:
    """`x ** y` for float32/float64 arrays of one dtype whose shapes are equal or 0-d, by the C library's pow/powf
    in a compiled loop. None while the kernel compiles (the first call starts the compile; with `wait`, the call
    blocks until it is ready instead), without Numba, or for other operands."""
    dt = x.dtype
    if y.dtype != dt or dt not in _BINARY_DTYPES:
        return None
    kernel = _pow_ready.get(dt)
    if kernel is None:
        _compile_once(_pow_started, dt, _compile_pow)
        if not wait:
            return None
        _wait_for(_pow_started, dt)
        kernel = _pow_ready.get(dt)
        if kernel is None:
            return None
    return _run_strided_pair(kernel, (x, y))
