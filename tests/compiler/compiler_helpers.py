"""Shared helpers for the compiler tests: building jaxprs, counting primitives, running the reference interpreter."""

from __future__ import annotations

import threading

import numpy as np

import fluxion
from fluxion._src import core
from fluxion._src.backends.eager import eval_jaxpr_raw, raw_const
from fluxion._src.backends.compiler import ir, passes
from fluxion._src.backends.compiler.fusion import runtime


def closed_of(fun, *args):
    """The closed jaxpr of `fun` traced on `args` (as `make_jaxpr` gives it)."""
    return fluxion.make_jaxpr(fun)(*args)


def prim_names(closed, recursive: bool = True) -> list[str]:
    """Primitive names of every equation (and, recursively, of sub-jaxprs)."""
    out = []
    for e in closed.jaxpr.eqns:
        out.append(e.primitive.name)
        if recursive:
            for sub in ir.sub_jaxprs(e.params):
                out.extend(prim_names(sub if isinstance(sub, core.ClosedJaxpr) else core.ClosedJaxpr(sub, [])))
    return out


def reference(closed, *args, contracted: bool = False) -> list:
    """Outputs of the equation-by-equation interpreter (the semantics every pass must preserve); with `contracted`,
    of the program after multiply-add contraction (`passes.contract`), whose single roundings (XLA's) the optimized
    compiled code computes instead of rounding each product."""
    if contracted:
        closed = passes.contract(closed)
    return eval_jaxpr_raw(closed.jaxpr, [raw_const(c) for c in closed.consts], [np.asarray(a) for a in args])


def assert_same_values(a: list, b: list, exact: bool = True) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        x, y = np.asarray(x), np.asarray(y)
        assert x.shape == y.shape and x.dtype == y.dtype, (x.shape, x.dtype, y.shape, y.dtype)
        if exact:
            np.testing.assert_array_equal(x, y)
        else:
            np.testing.assert_allclose(x, y, rtol=2e-6, atol=1e-6)


class BlockedWorker:
    """Holds fluxion's background compiler thread on a job until `finish`, so that jobs submitted meanwhile stay
    queued (tests of what runs before the background tier arrives, and of job order)."""

    def __init__(self):
        self.started = threading.Event()
        self.release = threading.Event()
        runtime.submit(self._job)
        assert self.started.wait(30)

    def _job(self):
        self.started.set()
        self.release.wait(30)

    def finish(self, timeout: float = 120):
        self.release.set()
        assert runtime.wait_for_kernels(timeout)
