"""Fusion: elementwise chains and the reductions consuming them become single-pass Numba kernels.

* `groups` decides what to fuse and in which order nodes run;
* `kernel` writes each group's kernel source; `scalar`/`mathlib` give the per-element operations;
* `runtime` compiles kernels (on disk, in the background) and loads them.

Fusion only pays above a size: a kernel call costs about a microsecond, as does each NumPy operation on a small
array, and every kernel costs compile time (about a second, once per machine thanks to the disk cache, and once for
all shapes of the same class: see `kernel`). Measured on the benchmark machine with `benchmarks/fusion_threshold.py`:
a fused `x * 2 + 1` beats NumPy from about 2K elements (0.6 vs 0.8 us), a fused `where(x > 0, x, exp(x) - 1)`
from 1K (1.8 vs 6.3 us), and at 4K elements fused chains are 1.5-6x faster; the threshold is 4K elements (or 8
operations on smaller arrays). Both are options (`fluxion_fuse_min_elements`, `fluxion_small_group_min_ops`), as is
the parallel threshold below (`fluxion_parallel_min_work`).

Threads (`prange`) are used when a group's work -- elements times operations -- is at least `parallel_min_work()`,
and only while the machine's other cores are idle (`compiler.threads` decides per call, which cannot change results;
a parallel kernel run on one thread costs about what a serial one does). Measured with the same script on the idle 2-core machine, serial vs
parallel kernel: `x * 2 + 1` 2.9 vs 3.5 us at 64K elements and 8.5 vs 4.7 us at 128K; the 5-operation select
chain 5.2 vs 4.6 us at 16K; a sum of `x * x - 1` 3.9 vs 3.9 us at 64K and 7.2 vs 5.6 us at 128K; 2^18 element-
operations is where threads start to win. Without Numba everything runs on NumPy.

A multi-threaded kernel costs more to compile than its serial twin: Numba's `parallel=True` pipeline (its parfor
passes and their lowering) took 1.1-1.4 s of the 1.3-2.2 s a selu, standardize or one-hot kernel needed on the
benchmark machine, against 0.3-0.8 s for the serial kernel. So a background compilation first builds every kernel
serial (`Planner(allow_parallel=False)`: the program runs fused code sooner), and the threaded variants are compiled
afterwards, only where more than one thread can ever be used (`parallel_possible`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....config import config, thread_limit
from ....core import ClosedJaxpr, Var
from .. import ir, memory
from ..memory import FRESH
from . import check, runtime
from . import groups as _groups
from . import kernel as _kernel
from . import loops as _loops
from . import onehot as _onehot
from .rewrite import recompute_residuals, vector_dots_as_reductions

# In check mode (`check`), groups of any size are fused, and kernels use threads from this much work on, so that
# small test programs exercise serial and parallel kernels alike.
CHECK_PARALLEL_MIN_WORK = 1 << 10
# Version of the helpers in `mathlib` (written into every kernel's source, so it is part of the disk-cache key).
MATHLIB_VERSION = 12


def min_elements() -> int:
    """Groups over smaller domains are not fused unless long and exact (`fluxion_fuse_min_elements`; 1 in check
    mode)."""
    return 1 if check.enabled() else int(config.fluxion_fuse_min_elements)


def parallel_min_work() -> int:
    """Kernels with at least this much work (elements x operations) use threads (`fluxion_parallel_min_work`)."""
    return CHECK_PARALLEL_MIN_WORK if check.enabled() else int(config.fluxion_parallel_min_work)


def prepare(closed: ClosedJaxpr) -> ClosedJaxpr:
    """The program the fused tier generates code for: `closed` after the rewrites in `rewrite`."""
    return recompute_residuals(vector_dots_as_reductions(closed))


def available() -> bool:
    """Whether fused kernels can be used (Numba installed)."""
    return runtime.numba_installed()


def parallel_possible() -> bool:
    """Whether multi-threaded kernels can run on more than one thread in this process: more than one core is
    available, and neither `fluxion_num_threads` nor a thread-limit variable (`OMP_NUM_THREADS`, ...,
    `NUMBA_NUM_THREADS`) pins compiled code to one thread, and the process is not a child forked after OpenMP
    started (`threads.forked_after_openmp`). Otherwise a threaded kernel only costs compile time (or, in such a
    child, ends the process)."""
    from .. import threads
    if threads.forked_after_openmp():  # see there: no OpenMP parallel region may start in this process
        return False
    limits = [threads.CORES, config.fluxion_num_threads, thread_limit()]
    return min(n for n in limits if n is not None) > 1


class KernelNode:
    """A fused group in the generated code: allocate (or reuse) outputs, reshape operands, call the kernel."""

    def __init__(self, spec: _kernel.KernelSpec, dispatcher: Any):
        self.spec = spec
        self.dispatcher = dispatcher
        seen: list = []
        for v, _, _ in spec.inputs:
            if v not in seen:
                seen.append(v)
        self.invars = seen
        self.outvars = [v for v, _ in spec.outputs]
        self.broadcast_tolerant = False
        # Operands also read through a broadcast are never overwritten (they are read at other positions).
        self._partial = {v for v, shp, m in spec.inputs if len(m) != len(shp) or v.aval.shape == ()}

    def lower(self, g, ins: list, outs: list) -> list:
        fn = g.bind(self.dispatcher, f"kernel_{self.spec.digest[:8]}")
        contig = g.bind(np.ascontiguousarray, "ascontiguousarray")
        args = []
        for v, shape, mshape in self.spec.inputs:
            e = g.expr(v)
            scalar_in = tuple(shape) == () and tuple(mshape) == (1,)
            if scalar_in or g.planner.layout.get(v) not in (memory.FRESH, memory.VIEW):
                e = f"{contig}({e})"  # also turns a scalar into the (1,) array the kernel takes
            args.append(f"{e}.reshape({tuple(mshape)!r})" if tuple(mshape) != tuple(shape) and not scalar_in else e)
        kinds = []
        # Outputs overwrite no operand computed by the program: LLVM vectorizes a kernel's loops only after
        # checking at run time that the arrays it writes do not overlap those it reads, and an output in an
        # operand's buffer fails that check, so the whole kernel ran its scalar loop (measured on the transformer
        # block's masked-softmax kernel over 32x4x128x128 float32: 25-40 ms in place, 0.7 ms into another buffer).
        # Donated arguments are still updated in place: that is what the caller donated them for.
        arguments = set(g.closed.jaxpr.invars)
        exclude = set(self._partial) | {v for v in self.invars if v not in arguments}
        st = g.planner.storages
        for v in self.invars:  # an operand sharing memory with another operand is read at other positions
            if any(o is not v and st.get(o, frozenset()) & st.get(v, frozenset()) for o in self.invars):
                exclude.add(v)
        for (v, mshape), name in zip(self.spec.outputs, outs):
            buf = g.out_buffer(v, exclude=exclude)
            if buf is None:
                dt = v.aval.dtype
                g.line(f"{name} = {g.bind(np.empty, 'empty')}({v.aval.shape!r}, {g.bind(dt, dt.name)})")
                kinds.append(FRESH)
            else:
                g.line(f"{name} = {buf}")
                kinds.append(("adopt", buf))
            args.append(f"{name}.reshape({tuple(mshape)!r})" if tuple(mshape) != v.aval.shape else name)
        args += [str(int(n)) for n in self.spec.extents]
        g.line(f"{fn}({', '.join(args)})")
        return kinds


class Planner:
    """Plans fused nodes for every function of a module (top level and loop bodies).

    Args:
      kernels: a list that receives the `KernelSpec` of every kernel used (for `as_text()`).
      load: compile/load kernels now (blocking) and emit calls to them; if False, `plan_nodes` only records
        which kernels a program needs and returns plain equation nodes.
      allow_parallel: if False, every kernel is serial, and `deferred_parallel` tells whether some group would
        have used threads (the quicker-to-compile first tier: see the module docstring).
      min_elements: fuse groups from this many elements (default: `min_elements()`).
      serial: never use threads (default: when the program makes multi-threaded BLAS calls,
        `threads.multithreaded_blas`, decided on the first program planned).
    """

    def __init__(self, kernels: list | None = None, load: bool = True, allow_parallel: bool = True,
                 min_elements: int | None = None, serial: bool | None = None):
        self.kernels = kernels if kernels is not None else []
        self.load = load
        from .. import threads  # imported here: threads imports this package's runtime
        # In a child forked after OpenMP started, kernels that would use threads are left for a later tier that
        # never comes (`parallel_possible` is False there): the tier is stored as a serial one (see `compiler`).
        self.allow_parallel = allow_parallel and not threads.forked_after_openmp()
        self.deferred_parallel = False
        # The whole-step tier (`compiler.wholestep`) fuses groups of any size on one thread: it passes 1 and True.
        self.min_elements = min_elements
        self.serial = serial  # None: decided on the first (top-level) program planned: see `specs`

    def specs(self, closed: ClosedJaxpr) -> list:
        """The kernels `closed` (not its sub-jaxprs) would use: (group, spec) pairs, and the node schedule."""
        j = closed.jaxpr
        if self.serial is None:
            # Programs with multi-threaded BLAS calls keep their kernels on one thread: two thread pools taking
            # turns in one program wait for each other's threads (see `threads`).
            from .. import threads  # imported here: threads imports this package's runtime
            self.serial = threads.multithreaded_blas(closed)
        limit = min_elements() if self.min_elements is None else self.min_elements
        gs = _groups.Grouping(j.eqns, j.outvars, limit).run()
        if not gs:
            return [], None
        order = _groups.schedule(j.eqns, gs)
        readers: dict = {}
        for n in order:
            for m in n.members:
                for v in j.eqns[m].invars:
                    if type(v) is Var:
                        readers.setdefault(v, set()).add(id(n))
        outset = {v for v in j.outvars if type(v) is Var}
        pairs = []
        for g in gs:
            needed = set()
            for m in g.members:
                for v in j.eqns[m].outvars:
                    if v in outset or readers.get(v, set()) - {id(g)}:
                        needed.add(v)
            size = int(np.prod(g.domain, dtype=np.int64))
            parallel = not self.serial and size * len(g.members) >= parallel_min_work()
            if parallel and not self.allow_parallel:
                parallel, self.deferred_parallel = False, True
            spec = None if g.red_axes is not None else \
                _onehot.match(closed, g.members, needed, g.domain, parallel, MATHLIB_VERSION)
            if spec is None:
                spec = _kernel.build(j.eqns, g.members, needed, g.domain, g.red_axes, parallel=parallel,
                                     version=MATHLIB_VERSION)
            pairs.append((g, spec))
        return pairs, order

    def scan_kernel(self, eqn) -> Any:
        """The compiled loop kernel for a scan equation, or None (not eligible, or failed to compile)."""
        if not _loops.scan_eligible(eqn):
            return None
        try:
            spec = _loops.build_scan(eqn, version=MATHLIB_VERSION)
        except _loops.Unsupported:
            return None
        self.kernels.append(spec)
        if not self.load:
            return None
        try:
            fn = runtime.load_kernel(spec.digest, spec.source)
        except RuntimeError as err:
            spec.status = f"failed: {err}"
            return None
        spec.status = "compiled"
        return check.CheckedScanKernel(fn, eqn) if check.enabled() else fn

    def plan_nodes(self, closed: ClosedJaxpr) -> list:
        from ..codegen import EqnNode
        j = closed.jaxpr
        pairs, order = self.specs(closed)
        if not pairs:
            return [EqnNode(e) for e in j.eqns]
        node_for: dict = {}
        checking = check.enabled()
        if checking:
            producers = ir.producers(j)
            consts = {v: getattr(c, "_value", c) for v, c in zip(j.constvars, closed.consts)}
        for g, spec in pairs:
            self.kernels.append(spec)
            if not self.load:
                continue
            try:
                fn = runtime.load_kernel(spec.digest, spec.source)
                if checking:
                    fn = check.CheckedKernel(fn, spec, [j.eqns[m] for m in g.members], producers, consts)
                node_for[id(g)] = KernelNode(spec, fn)
                spec.status = "compiled"
            except RuntimeError as err:
                spec.status = f"failed: {err}"
        nodes = []
        for n in order:
            kn = node_for.get(id(n))
            if kn is not None:
                nodes.append(kn)
            else:
                nodes.extend(EqnNode(j.eqns[m]) for m in n.members)
        return nodes


def needs_kernels(closed: ClosedJaxpr) -> bool:
    """Whether any function of the program (including loop bodies) has a group worth a kernel."""
    j = closed.jaxpr
    if _groups.Grouping(j.eqns, j.outvars, min_elements()).run():
        return True
    for e in j.eqns:
        if _loops.scan_eligible(e):
            return True
        for sub in ir.sub_jaxprs(e.params):
            if needs_kernels(sub if isinstance(sub, ClosedJaxpr) else ClosedJaxpr(sub, [])):
                return True
    return False
