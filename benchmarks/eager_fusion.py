"""Measures, per library function, whether its large eager calls are faster fused (through their `jit` program) or
inline (op by op on NumPy): the table that decides which functions carry `staged_as_call(..., fuse_eager=True)`.
Then, per broadcast arithmetic operation, the eager backend's compiled kernel (`backends/eager/kernels.binary`)
against NumPy's broadcasting ufunc on the same arrays: the table behind the layouts that kernel serves.

    FLUXION_JIT_SYNC_KERNELS=1 python -m benchmarks.eager_fusion [name ...]

Prints, per function, the median over 9 rounds of (fused time / inline time), each round timing the two paths back
to back in this process, on 1e6 float32 elements (10000 x 100 for the functions with an axis); likewise (kernel time
/ NumPy time) per operation. Below 1 the fused path (the kernel) wins. A function marked `fuse_eager=False` shows
1.00 (both paths are inline): mark it to measure it. Times are CPU time of the process, so other work on a shared
machine inflates them less. Run it pinned to one core (`taskset -c 0`, `NUMBA_NUM_THREADS=1`) and again with every
core.
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np

import fluxion
import fluxion.numpy as jnp
from fluxion._src import staged_call
from fluxion._src.backends.eager import kernels

nn = fluxion.nn
_x = jnp.asarray(np.random.default_rng(0).standard_normal(1_000_000).astype(np.float32))
_X = jnp.asarray(np.random.default_rng(1).standard_normal((10000, 100)).astype(np.float32))

FUNCTIONS = {
    "mean(X, 0)": lambda: jnp.mean(_X, 0), "mean(X, 1)": lambda: jnp.mean(_X, 1), "mean(x)": lambda: jnp.mean(_x),
    "var(X, 0)": lambda: jnp.var(_X, 0), "std(X, 0)": lambda: jnp.std(_X, 0), "std(X, 1)": lambda: jnp.std(_X, 1),
    "(X - X.mean(0)) / X.std(0)": lambda: (_X - _X.mean(0)) / _X.std(0),
    "softplus": lambda: nn.softplus(_x), "log_sigmoid": lambda: nn.log_sigmoid(_x), "silu": lambda: nn.silu(_x),
    "mish": lambda: nn.mish(_x), "elu": lambda: nn.elu(_x), "celu": lambda: nn.celu(_x),
    "selu": lambda: nn.selu(_x), "gelu": lambda: nn.gelu(_x), "gelu exact": lambda: nn.gelu(_x, approximate=False),
    "softmax": lambda: nn.softmax(_X), "log_softmax": lambda: nn.log_softmax(_X),
    "logsumexp": lambda: nn.logsumexp(_X, 1), "standardize": lambda: nn.standardize(_X),
    "hard_tanh": lambda: nn.hard_tanh(_x), "hard_sigmoid": lambda: nn.hard_sigmoid(_x),
    "hard_silu": lambda: nn.hard_silu(_x), "leaky_relu": lambda: nn.leaky_relu(_x),
    "soft_sign": lambda: nn.soft_sign(_x), "squareplus": lambda: nn.squareplus(_x),
    "sparse_plus": lambda: nn.sparse_plus(_x), "sparse_sigmoid": lambda: nn.sparse_sigmoid(_x),
    "glu": lambda: nn.glu(_X), "logmeanexp": lambda: nn.logmeanexp(_X, 1),
}


def _time(fn, fused: bool, number: int = 5) -> float:
    """Seconds per call with the fused path allowed (`fused`) or forced inline; the wrappers' decorator is kept, only
    its size threshold moves."""
    saved = staged_call.FUSE_EAGER_MIN_ELEMENTS
    staged_call.FUSE_EAGER_MIN_ELEMENTS = saved if fused else 1 << 62
    try:
        t0 = time.process_time()
        for _ in range(number):
            fn().block_until_ready()
        return (time.process_time() - t0) / number
    finally:
        staged_call.FUSE_EAGER_MIN_ELEMENTS = saved


_Xn = np.asarray(_X)
_row, _col = np.asarray(_X.std(0)), np.asarray(_X.std(1, keepdims=True))
_Wn = np.ascontiguousarray(_Xn.reshape(100, 10000))
_short = np.asarray(_row[:10])
BROADCASTS = {  # name: (op, x, y, the ufunc)
    "X - row": ("sub", _Xn, _row, np.subtract), "X / row": ("div", _Xn, _row, np.true_divide),
    "X + row": ("add", _Xn, _row, np.add), "X * row": ("mul", _Xn, _row, np.multiply),
    "row - X": ("sub", _row, _Xn, np.subtract), "X - col": ("sub", _Xn, _col, np.subtract),
    "X / col": ("div", _Xn, _col, np.true_divide), "col - X": ("sub", _col, _Xn, np.subtract),
    "W (100x10000) - row": ("sub", _Wn, np.asarray(_Wn[0]), np.subtract),
    "W (100x10000) - col": ("sub", _Wn, np.ascontiguousarray(_Wn[:, :1]), np.subtract),
    "X (1e5x10) - row": ("sub", _Xn.reshape(-1, 10), _short, np.subtract),
    "Y (1000x1000) - row": ("sub", _Xn.reshape(1000, 1000), np.asarray(_row.repeat(10)), np.subtract),
    "Y (1000x1000) - col": ("sub", _Xn.reshape(1000, 1000), np.ascontiguousarray(_Wn[:, :10].reshape(1000, 1)),
                            np.subtract),
}


def _time_binary(op, x, y, ufunc, kernel: bool, number: int = 5) -> float:
    t0 = time.process_time()
    for _ in range(number):
        out = kernels.binary(op, x, y) if kernel else ufunc(x, y)
        assert out is not None, "the broadcast kernel does not serve this layout"
    return (time.process_time() - t0) / number


def main(names: list[str]) -> None:
    for name in [n for n in names if n in BROADCASTS] or (list(BROADCASTS) if not names else []):
        op, x, y, ufunc = BROADCASTS[name]
        deadline = time.monotonic() + 120
        while kernels.binary(op, x, y) is None:  # compiles in the background
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name}: no broadcast kernel after 120 s (is Numba installed?)")
            time.sleep(0.05)
        ratios = []
        for _ in range(9):
            numpy_time = _time_binary(op, x, y, ufunc, False)
            ratios.append(_time_binary(op, x, y, ufunc, True) / numpy_time)
        print(f"{name:28s} kernel / NumPy = {statistics.median(ratios):.2f}", flush=True)
    for name in [n for n in names if n in FUNCTIONS] or (list(FUNCTIONS) if not names else []):
        fn = FUNCTIONS[name]
        _time(fn, True)
        _time(fn, False)
        ratios = []
        for _ in range(9):
            inline = _time(fn, False)
            ratios.append(_time(fn, True) / inline)
        print(f"{name:28s} fused / inline = {statistics.median(ratios):.2f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
