"""Loop kernels: a whole `scan` over a body of small arrays compiled into one Numba function.

A Python loop calling a body of NumPy operations costs about a microsecond per operation per step, which dominates
recurrent cells (an RNN step is about 30 operations on 32-element vectors). When every equation of the body is
supported, the scan becomes one kernel: each body value gets a buffer allocated once before the loop (scalars are
locals), each equation becomes a small loop nest computing its elements (`scalar` gives the element formulas;
`dot_general` and reductions get explicit accumulation loops in the output dtype, as BLAS and XLA accumulate, with
reassociation allowed so they vectorize), and the time loop runs inside the kernel -- no allocation and no Python
per step.

The kernel's source holds the body's (small) shapes as constants, which lets LLVM unroll and vectorize the per-step
loops, but not the number of steps: that is read from the leading axis of xs or ys, so sequences of any length share
one compiled kernel.

Matrix products large enough for BLAS to win over an explicit loop (`blas_product`: 2-D float32/float64 operands,
one contracted axis, at least `BLAS_MIN_WORK` multiply-adds) call `np.dot(a, b, out)` inside the kernel instead --
Numba calls the `gemm` of SciPy's OpenBLAS on the operands as they are (a transposed operand is passed as the
transposed view `x.T`, never copied) into a buffer allocated once. This is what makes recurrent cells of realistic
size (an LSTM with 128 hidden units at batch 16: 1.3M multiply-adds per step) loop kernels: the products run at
BLAS speed and everything else -- gate nonlinearities, slices, pads, accumulation of gradient carries -- runs in
the same native loop, with no Python per step. A transpose of such a product (what the transposed `scan` of a
gradient computes for a weight's gradient) is computed as the product of the transposed operands in the other
order, so no transposed copy is made.

The element loops of a step are planned to touch memory few times: adjacent loop nests over the same ranges share
one nest when that is exact (`_fuse_nests`: an LSTM cell's gate nonlinearities, their derivatives and the carry
updates become one pass over the batch x hidden block); a pad read once by an element formula is expanded in it,
with one nest per box of the output where each pad is wholly its operand or its fill (the gradient's sum of four
zero-padded gate blocks becomes four loops writing the blocks, no zero-filled buffers); operands of products summed
after the loop are computed in their row of the stack; a carry summing a stacked value's columns (a bias gradient)
is summed once after the loop; and carried product sums sharing their right operand run as one product.

Only programs whose per-step work outside BLAS products is small use loop kernels (`MAX_STEP_WORK` element
operations): larger bodies are dominated by their NumPy calls, which the Python loop runs at full speed.
"""

from __future__ import annotations

import hashlib
from typing import Sequence

import numpy as np

from ....core import ClosedJaxpr, Literal, Var
from ....lax.control_flow import scan_p
from ....lax.elementwise import add_p
from ....lax.reductions import dot_general_p, reduce_max_p, reduce_min_p, reduce_sum_p
from ....lax.structural import (broadcast_in_dim_p, copy_p, iota_p, pad_p, reshape_p, slice_p, squeeze_p,
                               stop_gradient_p, transpose_p)
from .. import contractions, ir
from . import scalar
from .scalar import REDUCTIONS, np_type, numba_type

# Per-step element operations outside BLAS products (output elements times contracted/reduced extents) above which
# a scan stays a Python loop over NumPy calls. A gradient's transposed scan accumulates each weight's gradient in a
# carry every step (an LSTM with 128 hidden units: 82K elements of weights), which must stay below it.
MAX_STEP_WORK = 1 << 20
# Multiply-adds per step from which a 2-D matrix product calls BLAS (`np.dot`) rather than an explicit loop: below
# it the call's fixed cost (argument checks, dispatch inside OpenBLAS; about a microsecond) outweighs the loop,
# which LLVM unrolls for the small constant shapes.
BLAS_MIN_WORK = 1 << 15


class Unsupported(Exception):
    pass


def _size(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _dtype_ok(dt) -> bool:
    return scalar.dtype_ok(dt)


def eqn_supported(eqn) -> bool:
    prim = eqn.primitive
    if prim.multiple_results or ir.has_sub_jaxprs(eqn):
        return False
    if not all(_dtype_ok(v.aval.dtype) for v in list(eqn.invars) + list(eqn.outvars)):
        return False
    if prim in _STRUCTURAL:
        if prim is reshape_p and eqn.params.get("dimensions") is not None:
            return False
        if prim is dot_general_p:
            return eqn.outvars[0].aval.dtype.kind == "f" and contractions.computes_in_operand_dtype(eqn)
        if prim is iota_p:
            return np.dtype(eqn.params["dtype"]).kind in "iuf"
        if prim is reduce_sum_p and eqn.invars[0].aval.dtype == np.bool_:
            return False
        if prim is pad_p:
            return all(i >= 0 for _, _, i in eqn.params["padding_config"])
        return True
    return scalar.fusible(eqn)


def blas_product(eqn) -> bool:
    """Whether a loop kernel computes `eqn` with `np.dot` (BLAS): a product of two float32/float64 matrices in
    their dtype, one contracted axis each, no batch axes, at least `BLAS_MIN_WORK` multiply-adds."""
    if eqn.primitive is not dot_general_p:
        return False
    lhs, rhs = eqn.invars
    if type(lhs) is not Var or type(rhs) is not Var or lhs.aval.ndim != 2 or rhs.aval.ndim != 2:
        return False
    if lhs.aval.dtype not in (np.float32, np.float64) or not contractions.computes_in_operand_dtype(eqn):
        return False
    c = contractions.Contraction(eqn)
    if c.lhs_batch or len(c.lhs_contract) != 1:
        return False
    k = contractions.contracted_size(eqn)
    return k >= 2 and _size(eqn.outvars[0].aval.shape) * k >= BLAS_MIN_WORK


def step_work(jaxpr) -> int:
    """Element operations per step outside BLAS products (see `MAX_STEP_WORK`)."""
    work = 0
    for e in jaxpr.eqns:
        out = _size(e.outvars[0].aval.shape) if e.outvars else 0
        if blas_product(e):
            continue
        if e.primitive is dot_general_p:
            out *= contractions.contracted_size(e)
        elif e.primitive in REDUCTIONS:
            out = _size(e.invars[0].aval.shape)
        work += out
    return work


def scan_eligible(eqn) -> bool:
    """Whether a `scan` equation can (and should) become a loop kernel."""
    if eqn.primitive is not scan_p:
        return False
    body: ClosedJaxpr = eqn.params["jaxpr"]
    j = body.jaxpr
    if eqn.params["length"] < 2 or not j.eqns:
        return False
    if not all(eqn_supported(e) for e in j.eqns):
        return False
    if not all(_dtype_ok(v.aval.dtype) for v in list(j.invars) + list(j.constvars)):
        return False
    if any(type(v) is Var and _size(v.aval.shape) == 0 for v in list(j.invars) + [o for e in j.eqns for o in e.outvars]):
        return False
    return step_work(j) <= MAX_STEP_WORK


class _Nest:
    """A loop nest of the step writing its results at the loop index (`j0, j1, ...` over `ranges`), kept apart from
    plain statements until the step is complete so that adjacent nests over the same ranges can share their loops
    (see `_fuse_nests`)."""

    __slots__ = ("ranges", "body", "reads", "writes")

    def __init__(self, ranges, body, reads, writes):
        self.ranges = tuple(ranges)  # (start, stop) per axis
        self.body = list(body)       # statements inside the innermost loop
        self.reads = list(reads)     # (buffer, read at the loop index through the buffer's own name)
        self.writes = set(writes)    # buffers written (always at the loop index)

    def lines(self) -> list[str]:
        code = []
        for d, (a, z) in enumerate(self.ranges):
            code.append("    " * d + f"for j{d} in range({f'{a}, ' if a else ''}{z}):")
        return code + ["    " * len(self.ranges) + ln for ln in self.body]


# Buffers one merged nest may write. LLVM vectorizes a loop storing to many arrays only behind runtime overlap checks
# of every store against every load; measured on the LSTM's forward kernel, its 12 gate values in one nest run 8%
# faster than in separate nests, but with the 4 carry and residual copies merged too (16 buffers) 2.3x slower.
MAX_NEST_WRITES = 12


def _fuse_nests(step: list) -> list[str]:
    """The step's statements with runs of adjacent nests over the same ranges merged into one nest (one pass over
    the elements instead of one per equation). Merging is exact: a nest joins the run only if it reads no buffer the
    run wrote other than at the loop index, and writes no buffer the run read at another index -- so every element
    is read after the writes it depends on and before the writes that replace it, as in separate loops. A run writes
    at most `MAX_NEST_WRITES` buffers."""
    out: list[str] = []
    run = None
    for st in step + [None]:
        if isinstance(st, _Nest) and run is not None and st.ranges == run.ranges:
            bad_read = any(buf in run.writes and not aligned for buf, aligned in st.reads)
            bad_write = any(buf in st.writes for buf, aligned in run.reads if not aligned)
            if not bad_read and not bad_write and len(run.writes | st.writes) <= MAX_NEST_WRITES:
                run.body += st.body
                run.reads += st.reads
                run.writes |= st.writes
                continue
        if run is not None:
            out += run.lines()
            run = None
        if isinstance(st, _Nest):
            run = _Nest(st.ranges, st.body, st.reads, st.writes)
        elif st is not None:
            out.append(st)
    return out


class _Body:
    """Generates the prologue (buffers) and per-step statements of a body jaxpr."""

    def __init__(self):
        self.prologue: list[str] = []
        self.head: list[str] = []   # per-step views (rows of ys and stacks), made at the start of the step
        self.step: list = []        # statements and `_Nest`s
        self.alias: dict = {}       # reshaped view name -> the name of the buffer it views
        self._reads = None          # while a nest is generated: the (buffer, aligned) pairs it reads
        self._region: dict = {}     # ... and whether each inlined pad is its operand (True) or its fill (False)
        self._idx = None            # ... and its loop indices
        self.names: dict = {}       # var -> source name (array) or scalar local
        self.persistent: set = set()  # vars whose array buffer lives across steps (temps, carries, consts)
        self.views_of: dict = {}    # var -> input var whose buffer it views (reshape of an input)
        self.inline: dict = {}      # var -> eqn computing it, expanded at its (single, elementwise) use
        self.inplace: dict = {}     # var -> carry buffer it is computed into (see build_scan)
        self.tviews: set = set()    # transposes read only by BLAS products: the view `x.T`, no buffer
        self.folded: dict = {}      # transpose result -> the BLAS product it transposes (computed swapped)
        self.skipped: set = set()   # BLAS products computed by the transpose reading them (see `folded`)
        self.hoisted: dict = {}     # product of xs and a constant -> its eqn (all steps in one product, see below)
        self.stacked: dict = {}     # product summed into a carry -> (carry, (A, B) operand vars; see below)
        self.accumulated: dict = {} # carry var -> (stack of A, stack of B, shape of A) after emission
        self.xs_arg: dict = {}      # xs var -> its kernel argument (the stacked per-step arrays)
        self.producer: dict = {}    # var -> the body equation computing it
        self.stack_of: dict = {}    # per-step value -> its stack over steps (see `_stack_operands`)
        self.ys_direct: dict = {}   # per-step output -> its ys argument, whose row i is the value's buffer
        self.stack_direct: set = set()  # stacked operands computed in their row of the stack (`_plan_stack_rows`)
        self.colsum: dict = {}      # carry var -> stacked value whose column sums it adds up (`_plan_products`)
        self.tout: set = set()      # products of few rows computed transposed (see `_plan_transposed_products`)
        self.consts: set = set()    # loop-invariant inputs (body constants, the scan's constant operands)
        self.const_t: dict = {}     # constant -> its transposed C-contiguous copy, made before the loop
        self._n = 0

    def fresh(self, hint: str) -> str:
        self._n += 1
        return f"{hint}{self._n}"

    def elem(self, v, idx: Sequence[str]) -> str:
        if type(v) is Literal:
            return scalar.literal_source(ir.literal_value(v))
        e = self.inline.get(v)
        if e is not None:
            return self._element_expr(e, list(idx))
        name = self.names[v]
        if v.aval.ndim == 0:
            return name
        if self._reads is not None:
            self._reads.append(self._buffer(name, list(idx)))
        return f"{name}[{', '.join(idx)}]"

    def _buffer(self, name: str, idx: list) -> tuple:
        """(the buffer `name` reads, whether element `idx` of `name` is the nest's element of that buffer)."""
        if name.endswith(".T"):
            return name[:-2], False
        if name in self.alias:
            return self.alias[name], False
        return name, idx == self._idx

    def nest(self, shape, target: str, make_body, ranges=None) -> None:
        """Appends a loop nest over `shape` (or `ranges`) writing `target` at the loop index; `make_body(idx)` gives
        its statements (the element reads they make are recorded for `_fuse_nests`)."""
        if not shape:
            self.step += make_body([])
            return
        idx = [f"j{d}" for d in range(len(shape))]
        self._reads, self._idx = [], idx
        try:
            body = make_body(idx)
            reads = self._reads
        finally:
            self._reads, self._idx = None, None
        self.step.append(_Nest(ranges or [(0, n) for n in shape], body, reads, [self._buffer(target, idx)[0]]))

    def loops(self, shape: Sequence[int], inner: list[str], prefix: str = "j") -> tuple[list[str], list[str]]:
        idx = [f"{prefix}{d}" for d in range(len(shape))]
        code = []
        for d, n in enumerate(shape):
            code.append("    " * d + f"for {idx[d]} in range({n}):")
        pad = "    " * len(shape)
        return idx, code + [pad + ln for ln in inner]

    def _element_expr(self, e, idx: list) -> str:
        """The source of element `idx` of an inlined equation's result (elementwise or broadcast)."""
        prim = e.primitive
        if prim is broadcast_in_dim_p:
            x = e.invars[0]
            shape = e.outvars[0].aval.shape
            src = [idx[d] if x.aval.shape[k] == shape[d] else "0" for k, d in enumerate(e.params["broadcast_dimensions"])]
            return self.elem(x, src) if (type(x) is Var and x.aval.ndim) else self.elem(x, [])
        if prim is slice_p:
            strides = e.params.get("strides") or (1,) * len(idx)
            src = [f"{s0} + {st} * {j}" if st != 1 else (f"{s0} + {j}" if s0 else j)
                   for s0, st, j in zip(e.params["start_indices"], strides, idx)]
            return self.elem(e.invars[0], src)
        if prim is transpose_p:
            src = [None] * len(idx)
            for d, p in enumerate(e.params["permutation"]):
                src[p] = idx[d]
            return self.elem(e.invars[0], src)
        if prim is pad_p:  # (see `_region_pad`)
            x, fill = e.invars
            lo = [c[0] for c in e.params["padding_config"]]
            src = [f"{j} - {a}" if a else j for j, a in zip(idx, lo)]
            inside = self._region.get(e.outvars[0]) if list(idx) == self._idx else None
            if inside is not None:
                return self.elem(x, src) if inside else self.elem(fill, [])
            cond = " and ".join(f"{a} <= ({j}) < {a + n}" for j, a, n in zip(idx, lo, x.aval.shape))
            return f"({self.elem(x, src)} if {cond} else {self.elem(fill, [])})"
        if prim is dot_general_p:  # only with a single contracted element: an outer-product-like map
            li, ri = contractions.operand_indices(e, idx, ["0"] * len(e.params["dimension_numbers"][0][0]))
            return f"({self.elem(e.invars[0], li)} * {self.elem(e.invars[1], ri)})"
        args = [self.elem(v, idx if (type(v) is Var and v.aval.ndim) else []) for v in e.invars]
        expr = scalar.scalar_expr(e, args)
        if expr is None:
            raise Unsupported(e.primitive.name)
        return expr

    def emit_eqn(self, e) -> None:
        emit = _EMITTERS.get(e.primitive, _Body._elementwise)
        out = e.outvars[0]
        shape = out.aval.shape
        dt = out.aval.dtype
        if out in self.inline or out in self.skipped:
            return  # expanded where it is used, or computed transposed by its reader
        if out in self.hoisted:
            self._hoist(e)
            return
        if out in self.stacked:
            self._stack_operands(out)
            return
        if out in self.tviews:
            self.names[out] = f"{self.names[e.invars[0]]}.T"
            return
        if out in self.tout:
            buf = self.fresh("t")
            self.prologue.append(f"{buf} = np.empty({shape[::-1]!r}, {np_type(dt)})")
            self.persistent.add(out)
            self.names[out] = f"{buf}.T"
            prod, swapped = (self.folded[out], True) if out in self.folded else (e, False)
            self._blas_dot(prod, buf, shape[::-1], dt, swapped=not swapped)
            return
        if out in self.folded:
            emit = _Body._folded_product
        elif blas_product(e):
            emit = _Body._blas_dot
        if out in self.inplace:
            target = self.inplace[out]
            self.names[out] = target
            emit(self, e, target, shape, dt)
            return
        if out.aval.ndim == 0:
            target = self.fresh("s")
            self.names[out] = target
        else:
            target = self.fresh("t")
            self.names[out] = target
            if out in self.ys_direct:  # computed in place in this step's row of its ys output
                self.head.append(f"{target} = {self.ys_direct[out]}[i]")
            elif out in self.stack_direct:  # ... or of its stack
                self.head.append(f"{target} = {self.stack_of[out]}[i]")
            elif e.primitive not in (reshape_p, squeeze_p):
                self.prologue.append(f"{target} = np.empty({shape!r}, {np_type(dt)})")
                self.persistent.add(out)
        emit(self, e, target, shape, dt)

    # -- element formulas ----------------------------------------------------------------------------------------
    def _assign(self, target: str, shape, idx: list[str], expr: str) -> str:
        return f"{target} = {expr}" if not shape else f"{target}[{', '.join(idx)}] = {expr}"

    def _elementwise(self, e, target, shape, dt):
        def body(idx):
            return [self._assign(target, shape, idx, self._element_expr(e, idx))]
        regions = self._pad_regions(e, shape)
        if regions is None:
            self.nest(shape, target, body)
            return
        for ranges, inside in regions:
            self._region = inside
            try:
                self.nest(shape, target, body, ranges)
            finally:
                self._region = {}

    # Regions above which an element loop reading pads tests the bounds per element instead.
    MAX_PAD_REGIONS = 16

    def _pad_regions(self, e, shape):
        """The boxes of the output in which every inlined pad the element formula reads at the loop index (through
        elementwise equations) is entirely its operand or entirely its fill: one loop nest per box then reads each
        pad without a bounds test (a gradient's sum of pads, each filling one gate's block of columns, becomes one
        loop per block). None without such pads."""
        pads = []

        def walk(eq):
            for v in eq.invars:
                sub = self.inline.get(v) if type(v) is Var else None
                if sub is None:
                    continue
                if sub.primitive is pad_p:
                    pads.append(sub)
                elif _index_aligned(sub):
                    walk(sub)
        walk(e)
        if not pads or not shape:
            return None
        cuts = [{0, n} for n in shape]
        for p in pads:
            for d, ((lo, _, _), n) in enumerate(zip(p.params["padding_config"], p.invars[0].aval.shape)):
                cuts[d] |= {min(lo, shape[d]), min(lo + n, shape[d])}
        spans = [sorted(c) for c in cuts]
        spans = [[(a, z) for a, z in zip(c, c[1:]) if z > a] for c in spans]
        if _size([len(s_) for s_ in spans]) > self.MAX_PAD_REGIONS:
            return None
        regions = [[]]
        for s_ in spans:
            regions = [r + [span] for r in regions for span in s_]
        out = []
        for r in regions:
            inside = {}
            for p in pads:
                cfg, xs_ = p.params["padding_config"], p.invars[0].aval.shape
                inside[p.outvars[0]] = all(lo <= a and z <= lo + n for (a, z), (lo, _, _), n in zip(r, cfg, xs_))
            out.append((r, inside))
        return out

    def _copy(self, e, target, shape, dt):
        self.nest(shape, target, lambda idx: [self._assign(target, shape, idx, self.elem(e.invars[0], idx))])

    def _broadcast_in_dim(self, e, target, shape, dt):
        self.nest(shape, target, lambda idx: [self._assign(target, shape, idx, self._element_expr(e, idx))])

    def _reshape(self, e, target, shape, dt):
        x = e.invars[0]
        if type(x) is Literal or x.aval.ndim == 0:
            self.prologue.append(f"{target} = np.empty({shape!r}, {np_type(dt)})")
            self.persistent.add(e.outvars[0])
            self.step.append(f"{target}.reshape({_size(shape)})[0] = {self.elem(x, [])}")
            return
        if not shape:  # size-1 array -> scalar
            self.step.append(f"{target} = {self.names[x]}.reshape(1)[0]")
            return
        src = self.names[x]
        base = self.views_of.get(x, x)
        self.alias[target] = self.alias.get(src, src[:-2] if src.endswith(".T") else src)
        if x in self.persistent:  # a buffer that lives across steps: one view, made before the loop
            self.prologue.append(f"{target} = {src}.reshape({shape!r})")
            self.persistent.add(e.outvars[0])
        else:  # a per-step value (a slice of xs): a view per step
            self.step.append(f"{target} = {src}.reshape({shape!r})")
        self.views_of[e.outvars[0]] = base

    def _transpose(self, e, target, shape, dt):
        self.nest(shape, target, lambda idx: [self._assign(target, shape, idx, self._element_expr(e, idx))])

    def _slice(self, e, target, shape, dt):
        self.nest(shape, target, lambda idx: [self._assign(target, shape, idx, self._element_expr(e, idx))])

    def _iota(self, e, target, shape, dt):
        self.nest(shape, target,
                  lambda idx: [self._assign(target, shape, idx, scalar.cast(dt, idx[e.params["dimension"]]))])

    def _dot_general(self, e, target, shape, dt):
        self.nest(shape, target, lambda idx: self._dot_body(e, target, shape, dt, idx))

    def _dot_body(self, e, target, shape, dt, idx):
        lhs, rhs = e.invars
        kidx = [f"k{d}" for d in range(len(e.params["dimension_numbers"][0][0]))]
        li, ri = contractions.operand_indices(e, idx, kidx)
        kl = [lhs.aval.shape[a] for a in e.params["dimension_numbers"][0][0]]
        lname, rname = self.elem(lhs, li), self.elem(rhs, ri)
        # dot order: accumulate over the contracted indices (in the output dtype, as BLAS and XLA do).
        inner = [f"acc = {np_type(dt)}(0)"]
        for k, n in enumerate(kl):
            inner.append("    " * k + f"for {kidx[k]} in range({n}):")
        inner.append("    " * len(kl) + f"acc += {lname} * {rname}")
        inner.append(self._assign(target, shape, idx, "acc"))
        return inner

    def _blas_operand(self, v, transposed: bool) -> str:
        while v in self.tviews:  # read the transposed view's operand instead
            v, transposed = self.producer[v].invars[0], not transposed
        if transposed and v in self.consts:
            # A constant read transposed: one C-contiguous copy before the loop (OpenBLAS through Numba runs
            # products with a Fortran-ordered operand markedly slower at these sizes).
            if v not in self.const_t:
                self.const_t[v] = self.fresh("kt")
                self.prologue.append(f"{self.const_t[v]} = np.ascontiguousarray({self.names[v]}.T)")
            return self.const_t[v]
        return self._blas_operand_t(self.names[v]) if transposed else self.names[v]

    def _blas_dot(self, e, target, shape, dt, swapped: bool = False):
        """`np.dot` into the buffer `target` (see `blas_product`); `swapped`: `target` is the product's transpose,
        computed as rhs' @ lhs'."""
        lhs, rhs = e.invars
        c = contractions.Contraction(e)
        ta, tb = c.lhs_contract == (0,), c.rhs_contract == (1,)
        if swapped:  # (A B)' = B' A'
            a, b = self._blas_operand(rhs, not tb), self._blas_operand(lhs, not ta)
        else:
            a, b = self._blas_operand(lhs, ta), self._blas_operand(rhs, tb)
        self.step.append(f"np.dot({a}, {b}, {target})")

    @staticmethod
    def _blas_operand_t(expr: str) -> str:
        """The transpose of a matrix expression (a view; `x.T.T` is written `x`)."""
        return expr[:-2] if expr.endswith(".T") else f"{expr}.T"

    def _hoist(self, e) -> None:
        """A product of the per-step slice of xs (m, k) and a constant (k, n): one product of all steps' slices,
        (steps * m, k) @ (k, n), before the loop; each step reads its rows."""
        lhs, rhs = e.invars
        c = contractions.Contraction(e)
        (m, k), n = lhs.aval.shape, e.outvars[0].aval.shape[1]
        dt = np_type(e.outvars[0].aval.dtype)
        h, h3, x = self.fresh("h"), self.fresh("h"), self.fresh("x")
        rhs_expr = self._blas_operand(rhs, c.rhs_contract == (1,))
        self.prologue += [f"{h} = np.empty((nsteps * {m}, {n}), {dt})",
                          "if nsteps > 0:",
                          f"    np.dot({self.xs_arg[lhs]}.reshape((nsteps * {m}, {k})), {rhs_expr}, {h})",
                          f"{h3} = {h}.reshape((nsteps, {m}, {n}))"]
        self.head.append(f"{x} = {h3}[i]")
        self.names[e.outvars[0]] = x

    def _stack_operands(self, out) -> None:
        """Keeps this step's operands of a product summed into a carry (see `_plan_stacked`): a slice of xs is
        already stacked; any other value is copied into a stack of all steps' values."""
        cv, operands = self.stacked[out]
        stacks = []
        for v in operands:
            if v in self.xs_arg or v in self.stack_of:  # (a value two products read is stacked once)
                stacks.append(self.xs_arg.get(v) or self.stack_of[v])
                continue
            st = self.stack_of[v] = self.fresh("st")
            shape = v.aval.shape
            self.prologue.append(f"{st} = np.empty((nsteps, {', '.join(map(str, shape))}), {np_type(v.aval.dtype)})")
            self.nest(shape, st, lambda idx, st=st, v=v: [f"{st}[i, {', '.join(idx)}] = {self.elem(v, idx)}"])
            stacks.append(st)
        self.accumulated[cv] = (stacks[0], stacks[1], operands[0].aval.shape, operands[1].aval.shape)

    def column_sum(self, cv) -> list[str]:
        """After the loop: carry `cv` += the column sums of its value stacked over steps (`colsum`), accumulated in
        float64 over all steps' rows."""
        v = self.colsum[cv]
        st = self.xs_arg.get(v) or self.stack_of[v]
        k, r = v.aval.shape
        acc, rows, c = self.fresh("cs"), self.fresh("rows"), self.names[cv]
        return [f"{acc} = np.zeros({r}, np.float64)",
                f"{rows} = {st}.reshape((nsteps * {k}, {r}))",
                f"for q0 in range(nsteps * {k}):",
                f"    for q1 in range({r}):",
                f"        {acc}[q1] += {rows}[q0, q1]",
                f"for q1 in range({r}):",
                f"    {c}[q1] = {c}[q1] + {np_type(cv.aval.dtype)}({acc}[q1])"]

    def accumulate(self, cvs: list) -> list[str]:
        """After the loop: each carry `cv` += A_stack' @ B_stack (the sum over steps of A_t' @ B_t as one product
        over the stacked (steps * k) axis). Carries whose products share B (a recurrent layer's input and hidden
        weight gradients, both against the gates' gradients) take one product of their A stacks side by side:
        B, the larger stack, is read once, and the product has more rows for BLAS (measured on one core, 1,600
        steps x batch rows: (32 + 128) x 512 outputs in one product 0.8x the time of two)."""
        groups: dict = {}
        for cv in cvs:
            sa, sb, (k, r), (_, s_) = self.accumulated[cv]
            groups.setdefault((sb, k, s_, cv.aval.dtype), []).append(cv)
        code = []
        for (sb, k, s_, dtype), group in groups.items():
            dt = np_type(dtype)
            tmp = self.fresh("acc")
            rows = sum(self.accumulated[cv][2][1] for cv in group)
            if len(group) == 1:
                lhs = f"{self.accumulated[group[0]][0]}.reshape((nsteps * {k}, {rows}))"
            else:  # the A stacks side by side: (steps * k, r1 + r2 + ...)
                lhs = self.fresh("cat")
                code.append(f"{lhs} = np.empty((nsteps * {k}, {rows}), {dt})")
                at = 0
                for cv in group:
                    sa, _, (_, r), _ = self.accumulated[cv]
                    rv = self.fresh("rows")
                    code += [f"{rv} = {sa}.reshape((nsteps * {k}, {r}))",
                             f"for q0 in range(nsteps * {k}):",
                             f"    for q1 in range({r}):",
                             f"        {lhs}[q0, {at} + q1] = {rv}[q0, q1]"]
                    at += r
            code += [f"{tmp} = np.zeros(({rows}, {s_}), {dt})",
                     "if nsteps > 0:",
                     f"    np.dot({lhs}.T, {sb}.reshape((nsteps * {k}, {s_})), {tmp})"]
            at = 0
            for cv in group:
                c, r = self.names[cv], self.accumulated[cv][2][1]
                code += [f"for q0 in range({r}):",
                         f"    for q1 in range({s_}):",
                         f"        {c}[q0, q1] = {c}[q0, q1] + {tmp}[{at} + q0, q1]"]
                at += r
        return code

    def _folded_product(self, e, target, shape, dt):
        self._blas_dot(self.folded[e.outvars[0]], target, shape, dt, swapped=True)

    def _pad(self, e, target, shape, dt):
        """Fills `target` with the padding value, then copies the operand's elements that land inside it (edge
        padding may be negative: it crops)."""
        x, fill = e.invars
        idx = [f"j{d}" for d in range(len(shape))]
        self.nest(shape, target, lambda idx: [self._assign(target, shape, idx, self.elem(fill, []))])
        src, dst, extents = [], [], []
        for d, (lo, _, interior) in enumerate(e.params["padding_config"]):
            step = interior + 1
            first = max(0, -(lo // step))  # the first operand index k with lo + k * step >= 0
            last = x.aval.shape[d]
            while last > first and lo + (last - 1) * step >= shape[d]:
                last -= 1
            if last <= first:
                return  # nothing of the operand lands inside the result
            extents.append(last - first)
            src.append(f"{first} + {idx[d]}" if first else idx[d])
            dst.append(f"{lo + first * step} + {step} * {idx[d]}")
        _, code = self.loops(extents, [self._assign(target, shape, dst, self.elem(x, src))])
        self.step += code

    def _reduce(self, e, target, shape, dt):
        self.nest(shape, target, lambda idx: self._reduce_body(e, target, shape, dt, idx))

    def _reduce_body(self, e, target, shape, dt, idx):
        x = e.invars[0]
        axes = sorted(e.params["axes"])
        kept = [d for d in range(x.aval.ndim) if d not in axes]
        ridx = [f"r{d}" for d in range(len(axes))]
        src = [None] * x.aval.ndim
        for d, j in zip(kept, idx):
            src[d] = j
        for d, r in zip(axes, ridx):
            src[d] = r
        if e.primitive is reduce_sum_p:
            # Unsigned sums accumulate in their own dtype here (the same values after the final cast).
            acc_dt = np.dtype(np.float64) if dt.kind == "f" else (np.dtype(np.int64) if dt.kind == "i" else dt)
            init = f"{np_type(acc_dt)}(0)"
            upd = f"acc = acc + {np_type(acc_dt)}({self.elem(x, src)})"
        else:
            init = scalar.initial_value(e.primitive, dt)
            upd = f"acc = {scalar.combine(e.primitive, dt, 'acc', self.elem(x, src))}"
        inner = [f"acc = {init}"]
        for k, d in enumerate(axes):
            inner.append("    " * k + f"for {ridx[k]} in range({x.aval.shape[d]}):")
        inner.append("    " * len(axes) + upd)
        inner.append(self._assign(target, shape, idx, f"{np_type(dt)}(acc)"))
        return inner



# How each structural primitive's result is computed in a loop kernel (any other supported equation is elementwise,
# from its `scalar` form); these are also the primitives `eqn_supported` checks beyond their scalar form.
_EMITTERS = {
    broadcast_in_dim_p: _Body._broadcast_in_dim, reshape_p: _Body._reshape, squeeze_p: _Body._reshape,
    transpose_p: _Body._transpose, dot_general_p: _Body._dot_general, reduce_sum_p: _Body._reduce,
    reduce_max_p: _Body._reduce, reduce_min_p: _Body._reduce, iota_p: _Body._iota, slice_p: _Body._slice,
    copy_p: _Body._copy, stop_gradient_p: _Body._copy, pad_p: _Body._pad,
}
_STRUCTURAL = frozenset(_EMITTERS)


# Pure index maps: expanding them where they are read costs nothing, whatever reads them.
_INDEX_MAPS = frozenset({broadcast_in_dim_p, transpose_p, slice_p})


def _region_pad(e) -> bool:
    """A pad that only places its operand inside a box of fill (no interior or negative padding): element `idx`
    is the operand's element `idx - lo` inside the box, the fill outside."""
    x, fill = e.invars
    return (type(x) is Var and x.aval.ndim > 0 and (type(fill) is Literal or fill.aval.ndim == 0)
            and all(lo >= 0 and hi >= 0 and interior == 0 for lo, hi, interior in e.params["padding_config"]))


def _outer_product(e) -> bool:
    """A `dot_general` contracting a single element: each output element is one product."""
    return e.primitive is dot_general_p and contractions.contracted_size(e) == 1


def _index_aligned(e) -> bool:
    """Whether `e` computes element `idx` of its result from elements `idx` of its (same-shape) operands."""
    return e.primitive not in _STRUCTURAL and scalar.fusible(e)


def _plan_inlining(b: _Body, j, carry_in: list) -> None:
    """Chooses values never stored (elementwise results read once, by an elementwise equation, at the same index)
    and carries updated in place (an elementwise result that is the new carry, when the old carry's only reader is
    that equation)."""
    uses: dict = {}
    readers: dict = {}
    for e in j.eqns:
        for v in e.invars:
            if type(v) is Var:
                uses[v] = uses.get(v, 0) + 1
                readers.setdefault(v, []).append(e)
    outputs = {v for v in j.outvars if type(v) is Var}
    _plan_blas(b, j, readers, outputs)
    pads = set()  # pads read once, at the same index, by an element formula: expanded there (`_pad_regions`)
    for e in j.eqns:
        out = e.outvars[0] if e.outvars else None
        if e.primitive is not pad_p or not _region_pad(e) or out in outputs or uses.get(out) != 1:
            continue
        (reader,) = readers[out]
        if _index_aligned(reader) and reader.outvars[0].aval.shape == out.aval.shape:
            pads.add(out)
    for e in j.eqns:
        out = e.outvars[0] if e.outvars else None
        if out is None or out.aval.ndim == 0 or out in outputs or uses.get(out) != 1:
            continue
        if out in b.tviews or out in b.folded or out in b.skipped:
            continue
        (reader,) = readers[out]
        if blas_product(reader) or reader.outvars[0] in b.tviews:
            continue  # BLAS reads stored operands (directly or through a transposed view)
        if out in pads:
            b.inline[out] = e
        elif e.primitive in _INDEX_MAPS and reader.primitive not in (reshape_p, squeeze_p):
            b.inline[out] = e
        elif ((_index_aligned(e) or _outer_product(e))
              and ((_index_aligned(reader) and reader.outvars[0].aval.shape == out.aval.shape)
                   or reader.outvars[0] in pads)):
            b.inline[out] = e
    for k, cv in enumerate(carry_in):
        new = j.outvars[k]
        if type(new) is not Var or cv.aval.ndim == 0 or list(j.outvars).count(new) != 1 or new in b.inline:
            continue
        producer = next((e for e in j.eqns if new in e.outvars), None)
        if producer is None or not _index_aligned(producer) or new.aval.shape != cv.aval.shape:
            continue
        if any(type(v) is Var and v in b.inline and _reads(b, v, cv) for v in producer.invars):
            continue
        if uses.get(cv, 0) == 1 and cv in producer.invars and cv not in outputs:
            b.inplace[new] = b.names[cv]


def _plan_blas(b: _Body, j, readers: dict, outputs: set) -> None:
    """Transposes only BLAS products read become views; a BLAS product only a transpose reads is computed
    transposed (as the product of the transposed operands in the other order) into the transpose's buffer."""
    for e in j.eqns:
        if e.primitive is not transpose_p or tuple(e.params["permutation"]) != (1, 0):
            continue
        x, out = e.invars[0], e.outvars[0]
        if type(x) is not Var or out in outputs:
            continue
        rs = readers.get(out, [])
        if rs and all(blas_product(r) for r in rs):
            b.tviews.add(out)
            continue
        producer = next((p for p in j.eqns if x in p.outvars), None)
        if (producer is not None and blas_product(producer) and x not in outputs
                and len(readers.get(x, [])) == 1):
            b.folded[out] = producer
            b.skipped.add(x)


def _blas_vars(b: _Body, e, swapped: bool) -> list:
    """The product's operands as (var, transposed) pairs, A (m, k) then B (k, n), seeing through transposed views
    (`tviews`); `swapped`: of the product's transpose."""
    c = contractions.Contraction(e)
    ops = [[e.invars[0], c.lhs_contract == (0,)], [e.invars[1], c.rhs_contract == (1,)]]
    if swapped:
        ops = [[ops[1][0], not ops[1][1]], [ops[0][0], not ops[0][1]]]
    for op in ops:
        while op[0] in b.tviews:
            producer = b.producer[op[0]]
            op[0], op[1] = producer.invars[0], not op[1]
    return [tuple(op) for op in ops]


def _plan_products(b: _Body, j, nc: int, nk: int, carry_in: list) -> None:
    """Moves products out of the time loop where the loop's algebra allows it (both exact up to the order of
    floating-point sums):

    * hoisted: `x_t @ W` with x_t the step's slice of xs and W a constant: one product of all of xs before the loop
      (a recurrent layer's input projection);
    * stacked: a carry updated only as `c + A_t' @ B_t` (A_t, B_t per-step values (k, r), (k, s), read nowhere
      else; the carry read nowhere else) ends as `c + sum_t A_t' @ B_t`, which is one product of the operands
      stacked over steps, `A' @ B` with A (steps * k, r) -- a weight's gradient in the transposed scan of a
      recurrent layer. The operands are kept per step (xs already are), the product runs once after the loop.
    """
    uses: dict = {}
    for e in j.eqns:
        for v in e.invars:
            if type(v) is Var:
                uses[v] = uses.get(v, 0) + 1
    outputs = [v for v in j.outvars if type(v) is Var]
    xs_set = set(j.invars[nc + nk:])
    consts = set(j.constvars) | set(j.invars[:nc])
    b.producer = {o: e for e in j.eqns for o in e.outvars}
    for e in j.eqns:
        out = e.outvars[0] if e.outvars else None
        if out is None or not blas_product(e) or out in b.skipped:
            continue
        lhs, rhs = e.invars
        c = contractions.Contraction(e)
        if lhs in xs_set and c.lhs_contract == (1,) and rhs in consts:
            b.hoisted[out] = e
    per_step = xs_set | {o for e in j.eqns for o in e.outvars}
    for k, cv in enumerate(carry_in):
        new = j.outvars[k]
        if (type(new) is not Var or cv.aval.ndim != 2 or outputs.count(new) != 1 or uses.get(new, 0)
                or uses.get(cv, 0) != 1 or cv in outputs):
            continue
        add = b.producer.get(new)
        if add is None or add.primitive is not add_p or cv not in add.invars:
            continue
        (other,) = [v for v in add.invars if v is not cv] or [None]
        if type(other) is not Var or uses.get(other, 0) != 1 or other in outputs or other.aval.shape != cv.aval.shape:
            continue
        if other in b.folded:
            prod, swapped = b.folded[other], True
        elif other in b.producer and blas_product(b.producer[other]) and other not in b.hoisted:
            prod, swapped = b.producer[other], False
        else:
            continue
        (va, ta), (vb, tb) = _blas_vars(b, prod, swapped)
        if not ta or tb or va not in per_step or vb not in per_step or va.aval.ndim != 2 or vb.aval.ndim != 2:
            continue
        if va in b.hoisted or vb in b.hoisted:
            continue
        b.stacked[other] = (cv, (va, vb))
        b.skipped.add(new)
        b.inplace.pop(new, None)
    # A carry updated only as `c + reduce_sum(v, axis 0)` with v stacked anyway (an operand of a stacked product, or
    # xs): `c + column sums of v over all steps`, summed once after the loop (a bias's gradient).
    stacked_vals = xs_set | {v for _, ops in b.stacked.values() for v in ops}
    for k, cv in enumerate(carry_in):
        new = j.outvars[k]
        if (type(new) is not Var or cv.aval.ndim != 1 or cv.aval.dtype.kind != "f" or outputs.count(new) != 1
                or uses.get(new, 0) or uses.get(cv, 0) != 1 or cv in outputs or new in b.skipped):
            continue
        add = b.producer.get(new)
        if add is None or add.primitive is not add_p or cv not in add.invars:
            continue
        (other,) = [v for v in add.invars if v is not cv] or [None]
        red = b.producer.get(other) if type(other) is Var else None
        if (red is None or red.primitive is not reduce_sum_p or tuple(red.params["axes"]) != (0,)
                or uses.get(other, 0) != 1 or other in outputs or other.aval.shape != cv.aval.shape):
            continue
        v = red.invars[0]
        if type(v) is not Var or v not in stacked_vals or v.aval.ndim != 2 or v.aval.dtype != cv.aval.dtype:
            continue
        b.colsum[cv] = v
        b.skipped |= {new, other}
        b.inplace.pop(new, None)


def _plan_stack_rows(b: _Body) -> None:
    """Operands of stacked products (other than xs) computed straight into their row of the stack, rather than
    into a buffer copied there."""
    for _, operands in b.stacked.values():
        for v in operands:
            if v in b.xs_arg or v in b.stack_of or v.aval.ndim == 0 or v not in b.producer:
                continue
            if b.producer[v].primitive in (reshape_p, squeeze_p) or v in b.skipped or v in b.tout:
                continue
            if any(v in d for d in (b.inline, b.inplace, b.hoisted, b.stacked, b.tviews, b.folded, b.ys_direct)):
                continue
            st = b.stack_of[v] = b.fresh("st")
            b.prologue.append(f"{st} = np.empty((nsteps, {', '.join(map(str, v.aval.shape))}), "
                              f"{np_type(v.aval.dtype)})")
            b.stack_direct.add(v)


def _plan_ys_rows(b: _Body, j, nk: int, ys_names: list) -> None:
    """Per-step outputs computed straight into their row of ys (a C-contiguous view `ys[i]`), rather than into a
    buffer copied there at the end of the step: a value the body computes (into a buffer of its own), output once
    as ys."""
    ys_out = list(j.outvars[nk:])
    for out, name in zip(ys_out, ys_names):
        if (type(out) is not Var or out.aval.ndim == 0 or ys_out.count(out) != 1 or out not in b.producer
                or b.producer[out].primitive in (reshape_p, squeeze_p)):
            continue
        if any(out in d for d in (b.inline, b.inplace, b.hoisted, b.stacked, b.tviews, b.folded)) or out in b.skipped:
            continue
        b.ys_direct[out] = name


# Rows of a product result up to which it is computed transposed when it has more columns than rows.
TRANSPOSED_MAX_ROWS = 64


def _plan_transposed_products(b: _Body, j) -> None:
    """BLAS products with few rows and more columns (a batch of 16 times 512 gates) computed as their transpose,
    B' @ A' into an (n, m) buffer read through the view `.T`: OpenBLAS's small-matrix path runs the wide-and-short
    shape about 3x slower than its transpose on one core (measured: 16x128 @ 128x512 in 80 us, the transposed
    form in 25 us). Only for values read element by element (no reshape or BLAS product reads the view)."""
    readers: dict = {}
    for e in j.eqns:
        for v in e.invars:
            if type(v) is Var:
                readers.setdefault(v, []).append(e)
    for e in j.eqns:
        out = e.outvars[0] if e.outvars else None
        if out is None or out.aval.ndim != 2:
            continue  # (outputs are copied out element by element: they may be computed transposed too)
        if not ((blas_product(e) and out not in b.skipped and out not in b.hoisted and out not in b.stacked)
                or (out in b.folded and out not in b.stacked)):
            continue
        m, n = out.aval.shape
        if not m < n or m > TRANSPOSED_MAX_ROWS or out in b.inplace or out in b.ys_direct or out in b.inline:
            continue
        rs = readers.get(out, [])
        if all(r.primitive not in (reshape_p, squeeze_p) and not blas_product(r) and r.outvars[0] not in b.tviews
               and r.outvars[0] not in b.folded for r in rs):
            b.tout.add(out)


def _reads(b: _Body, v, target) -> bool:
    """Whether inlined value `v` (transitively) reads `target`."""
    e = b.inline.get(v)
    if e is None:
        return v is target
    return any(type(x) is Var and _reads(b, x, target) for x in e.invars)


class ScanKernelSpec:
    """The kernel of one scan: source, digest, and the argument layout the caller must follow.

    Kernel arguments, in order: body constants, the scan's constant operands, initial carries, xs, then the
    outputs the caller allocates: ys (length, *shape) and final carries. Scalars travel as arrays of shape (1,).
    """

    def __init__(self):
        self.source = ""
        self.digest = ""
        self.status = "pending"
        self.name = "scan_kernel"


def build_scan(eqn, version: int) -> ScanKernelSpec:
    """Generates the loop kernel of a scan equation (see `scan_eligible`).

    Raises:
      Unsupported: an equation of the body has no loop form.
    """
    p = eqn.params
    body: ClosedJaxpr = p["jaxpr"]
    j = body.jaxpr
    nc, nk, length = p["num_consts"], p["num_carry"], p["length"]
    b = _Body()
    args, sig = [], []

    def arg(v, hint: str, readonly: bool, per_step: bool = False) -> str:
        name = b.fresh(hint)
        args.append(name)
        aval = v.aval
        nd = aval.ndim + (1 if per_step else 0)
        sig.append(f"types.Array({numba_type(aval.dtype)}, {max(nd, 1)}, 'C'{', readonly=True' if readonly else ''})")
        return name

    # Body constants and scan constants: read-only, persistent.
    for v in list(j.constvars) + list(j.invars[:nc]):
        b.consts.add(v)
        a = arg(v, "k", True)
        if v.aval.ndim == 0:
            s = b.fresh("ks")
            b.prologue.append(f"{s} = {a}[0]")
            b.names[v] = s
        else:
            b.names[v] = a
            b.persistent.add(v)
    # Carries: writable buffers copied from the initial values.
    carry_in = []
    for v in j.invars[nc:nc + nk]:
        a = arg(v, "cin", True)
        if v.aval.ndim == 0:
            s = b.fresh("c")
            b.prologue.append(f"{s} = {a}[0]")
            b.names[v] = s
        else:
            c = b.fresh("c")
            b.prologue.append(f"{c} = {a}.copy()")
            b.names[v] = c
            b.persistent.add(v)
        carry_in.append(v)
    xs_names = []
    for v in j.invars[nc + nk:]:
        xs_names.append((v, arg(v, "xs", True, per_step=True)))
    ys_names = []
    for v in j.outvars[nk:]:
        ys_names.append(arg(v, "ys", False, per_step=True))
    cout_names = []
    for v in j.invars[nc:nc + nk]:
        cout_names.append(arg(v, "cout", False))

    for v, a in xs_names:
        x = b.fresh("x")
        b.step.append(f"{x} = {a}[i]")
        b.names[v] = x
        b.xs_arg[v] = a
    _plan_inlining(b, j, carry_in)
    _plan_products(b, j, nc, nk, carry_in)
    _plan_ys_rows(b, j, nk, ys_names)
    _plan_transposed_products(b, j)
    _plan_stack_rows(b)
    for e in j.eqns:
        if not eqn_supported(e):
            raise Unsupported(e.primitive.name)
        b.emit_eqn(e)

    def src(v) -> str:
        return scalar.literal_source(ir.literal_value(v)) if type(v) is Literal else b.names[v]

    def copy_into(dst: str, shape, val: str, lead: str = "") -> None:
        """A nest copying array `val` (of `shape`) into `dst[lead, ...]` (Numba's generic slice assignment costs far
        more than the copy for these small arrays)."""
        if not shape:
            b.step.append(f"{dst}[{lead.rstrip(', ')}] = {val}" if lead else f"{dst} = {val}")
            return

        def body(idx):
            b._reads.append(b._buffer(val, idx))
            return [f"{dst}[{lead}{', '.join(idx)}] = {val}[{', '.join(idx)}]"]
        b.nest(shape, dst, body)

    # Outputs of the step: ys first (they may read carries), then carries (staged when they alias an input).
    for out, name in zip(j.outvars[nk:], ys_names):
        if type(out) is Var and b.ys_direct.get(out) == name:
            continue  # already in place
        if type(out) is Literal or out.aval.ndim == 0:
            b.step.append(f"{name}[i] = {src(out)}")
        else:
            copy_into(name, out.aval.shape, src(out), "i, ")
    staged = []
    carry_set = set(carry_in)
    for out, cv in zip(j.outvars[:nk], carry_in):
        if cv in b.accumulated or cv in b.colsum:
            continue  # summed after the loop
        if cv.aval.ndim == 0:
            val = src(out)
            tmp = b.fresh("sc")
            b.step.append(f"{tmp} = {val}")
            staged.append((cv, tmp))
            continue
        base = b.views_of.get(out, out) if type(out) is Var else out
        if type(out) is Var and b.inplace.get(out) == b.names[cv]:
            continue  # computed directly into the carry's buffer
        if type(out) is Literal:
            st = b.fresh("st")
            b.prologue.append(f"{st} = np.full({cv.aval.shape!r}, {src(out)}, {np_type(cv.aval.dtype)})")
            staged.append((cv, st))
        elif base in carry_set or out in carry_set:
            st = b.fresh("st")
            b.prologue.append(f"{st} = np.empty({cv.aval.shape!r}, {np_type(cv.aval.dtype)})")
            copy_into(st, cv.aval.shape, src(out))
            staged.append((cv, st))
        else:
            staged.append((cv, src(out)))
    for cv, val in staged:
        if cv.aval.ndim == 0:
            b.step.append(f"{b.names[cv]} = {val}")
        else:
            copy_into(b.names[cv], cv.aval.shape, val)

    # The number of steps is read from a per-step array when there is one (xs or ys: their leading axis), so one
    # compiled kernel serves every sequence length; a scan of carries only keeps its length as a constant.
    per_step = [a for _, a in xs_names] + ys_names
    steps = f"{per_step[0]}.shape[0]" if per_step else str(length)
    order = "range(nsteps - 1, -1, -1)" if p["reverse"] else "range(nsteps)"
    lines = [f"nsteps = {steps}", *b.prologue]
    lines.append(f"for i in {order}:")
    lines += ["    " + ln for ln in b.head + _fuse_nests(b.step)]
    lines += b.accumulate([cv for cv in carry_in if cv in b.accumulated])
    for cv in carry_in:
        if cv in b.colsum:
            lines += b.column_sum(cv)
    for cv, name in zip(carry_in, cout_names):
        lines.append(f"{name}[0] = {b.names[cv]}" if cv.aval.ndim == 0 else f"{name}[...] = {b.names[cv]}")
    header = [
        "# Generated by fluxion's compiler (loop kernel of a scan). The file name is the hash of this text.",
        f"# helpers version {version}",
        "import math",
        "import numba",
        "import numpy as np",
        "from numba import types",
        scalar.MATHLIB_IMPORT,
        "",
        f"SIGNATURE = types.void({', '.join(sig)})",
        "",
        "",
        "@numba.njit(SIGNATURE, cache=True, error_model='numpy', nogil=True, fastmath={'reassoc', 'contract'})",
        f"def kernel({', '.join(args)}):",
    ]
    spec = ScanKernelSpec()
    spec.source = "\n".join(header + ["    " + ln for ln in lines]) + "\n"
    spec.digest = hashlib.sha256(spec.source.encode()).hexdigest()[:24]
    return spec
