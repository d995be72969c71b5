"""Kernel source generation: one fused group becomes one Numba function of plain loops.

The group's domain is simplified first: size-1 dimensions are dropped and adjacent dimensions that every array
reads the same way (all through consecutive axes, or all broadcast) are merged, so most kernels are a single loop
over contiguous memory that LLVM vectorizes. Each array the kernel touches has an *access*: which (merged) domain
dimensions index its axes. The caller reshapes arrays to those merged shapes (views for contiguous arrays).

Loop structures (K = kept dimensions, R = reduced ones, after merging):

* no reduction:  `prange` over the first dimension, plain loops inside, one store per output;
* `KR` (row-wise reductions): `prange` over kept indices, scalar accumulators over the reduced dimensions;
* `R` (full reductions) and `RK` (column-wise): the first reduced dimension is split into a fixed number of chunks
  (`prange`), each with its own partial accumulators, combined afterwards in chunk order -- so results do not
  depend on the number of threads.

Float sums accumulate in float64 (more accurate than NumPy's pairwise float32 sum; the result is rounded to the
output dtype), integer sums in 64 bits (identical to NumPy's wrapping sum after the final cast). Kernels are
compiled with `error_model="numpy"` (IEEE results, no exceptions) and, when they sum floats, `fastmath={"reassoc"}`
so the accumulation vectorizes.
"""

from __future__ import annotations

import hashlib
from typing import Any, Sequence

import numpy as np

from ...core import Literal
from ...lax.reductions import reduce_sum_p
from ...lax.structural import broadcast_in_dim_p, iota_p
from .. import ir
from . import scalar
from .scalar import REDUCTIONS, accumulator_dtype, combine, initial_value, np_type, numba_type

# Partial accumulators per full or column-wise reduction; fixed so results are reproducible on any machine.
REDUCTION_CHUNKS = 16


class Access:
    """How one array is indexed: `dims[k]` is the domain dimension indexing the array's axis k (None: size 1)."""

    __slots__ = ("dims",)

    def __init__(self, dims: tuple):
        self.dims = dims

    def __eq__(self, other):
        return isinstance(other, Access) and self.dims == other.dims

    def __hash__(self):
        return hash(self.dims)


class KernelSpec:
    """Everything the caller and the kernel source need to agree on for one group.

    Attributes:
      inputs: list of (var, original shape, merged shape) read by the kernel, in argument order.
      outputs: list of (var, merged shape) written by the kernel, in argument order after the inputs.
      source: the kernel module's source; `name` is the kernel function's name in it.
      parallel: whether the kernel uses `prange` with threads.
    """

    def __init__(self):
        self.inputs: list = []
        self.outputs: list = []
        self.source = ""
        self.name = "kernel"
        self.parallel = False
        self.digest = ""
        self.status = "pending"


def build(eqns: Sequence[Any], members: Sequence[int], outvars_needed: set, domain: tuple,
          red_axes: tuple | None, parallel: bool, version: int) -> KernelSpec:
    """Generates the kernel for a group.

    Args:
      eqns: the jaxpr's equations.
      members: indices of the group's equations, in program order.
      outvars_needed: member outputs read outside the group (they are written to memory).
      domain: the group's iteration shape.
      red_axes: the reduced axes of the group's reductions, or None.
      parallel: use threads (`prange`).
      version: the helper library version (part of the source, hence of the disk-cache key).
    """
    spec = KernelSpec()
    spec.parallel = parallel
    member_eqns = [eqns[i] for i in members]
    produced = {v for e in member_eqns for v in e.outvars}
    reductions = [e for e in member_eqns if e.primitive in REDUCTIONS]
    rset = set(red_axes or ())
    nd = len(domain)

    # -- accesses: inputs, iotas and outputs ---------------------------------------------------------------------
    inputs: list = []          # (var, Access)
    input_index: dict = {}

    def add_input(v, acc: Access) -> int:
        key = (v, acc)
        if key not in input_index:
            input_index[key] = len(inputs)
            inputs.append(key)
        return input_index[key]

    def read_broadcast(b):
        """How to read the result of broadcast equation `b`: its operand through an index map (or a literal)."""
        x = b.invars[0]
        dims = tuple(d if x.aval.shape[k] == domain[d] and domain[d] != 1 else None
                     for k, d in enumerate(b.params["broadcast_dimensions"]))
        return ("lit", scalar.literal_source(ir.literal_value(x))) if type(x) is Literal else \
            ("in", add_input(x, Access(dims)))

    # Broadcasts computed outside the group (shared with other consumers) are read through their operands too,
    # never as materialized arrays (a relu's broadcast zero would otherwise be copied to full size every call).
    outside_broadcasts = {e.outvars[0]: e for e in eqns if e.primitive is broadcast_in_dim_p
                          and e.outvars[0] not in produced and tuple(e.outvars[0].aval.shape) == tuple(domain)
                          and (type(e.invars[0]) is Literal or e.invars[0] not in produced)}

    reads: dict = {}           # (member eqn position, operand position) -> ("in", k) / ("var", v) / ("lit", src)
    for pos, e in enumerate(member_eqns):
        if e.primitive is broadcast_in_dim_p:
            reads[(pos, 0)] = read_broadcast(e)
            continue
        for k, v in enumerate(e.invars):
            if type(v) is Literal:
                reads[(pos, k)] = ("lit", scalar.literal_source(ir.literal_value(v)))
            elif v in produced:
                reads[(pos, k)] = ("var", v)
            elif v.aval.shape == ():
                reads[(pos, k)] = ("in", add_input(v, Access(())))
            elif v in outside_broadcasts:
                reads[(pos, k)] = read_broadcast(outside_broadcasts[v])
            else:
                full = tuple(d if domain[d] != 1 else None for d in range(nd))
                reads[(pos, k)] = ("in", add_input(v, Access(full)))

    iota_dims = [e.params["dimension"] for e in member_eqns if e.primitive is iota_p]
    out_accesses = []
    ew_outs = [v for e in member_eqns if e.primitive not in REDUCTIONS for v in e.outvars
               if v in outvars_needed]
    for v in ew_outs:
        out_accesses.append(Access(tuple(d if domain[d] != 1 else None for d in range(nd))))
    for e in reductions:
        out_accesses.append(Access(tuple(d if domain[d] != 1 else None for d in range(nd) if d not in rset)))

    # -- merge adjacent dimensions -------------------------------------------------------------------------------
    live_dims = [d for d in range(nd) if domain[d] != 1]
    all_acc = [a for _, a in inputs] + out_accesses + [Access((d,)) for d in iota_dims]

    def indexed(acc: Access, d: int):
        return [k for k, x in enumerate(acc.dims) if x == d]

    merged: list[list[int]] = []
    for d in live_dims:
        if merged:
            prev = merged[-1][-1]
            same_class = (prev in rset) == (d in rset)
            ok = same_class
            for acc in all_acc:
                a, b = indexed(acc, prev), indexed(acc, d)
                if bool(a) != bool(b) or (a and b and b[0] != a[0] + 1):
                    ok = False
                    break
            if ok:
                merged[-1].append(d)
                continue
        merged.append([d])
    mdim = {d: g for g, ds in enumerate(merged) for d in ds}
    msize = [int(np.prod([domain[d] for d in ds], dtype=np.int64)) for ds in merged]
    mclass = ["R" if ds[0] in rset else "K" for ds in merged]

    def merged_dims(acc: Access) -> tuple:
        out = []
        for d in acc.dims:
            if d is None:
                continue
            g = mdim[d]
            if not out or out[-1] != g:
                out.append(g)
        return tuple(out)

    def merged_shape(acc: Access) -> tuple:
        return tuple(msize[g] for g in merged_dims(acc))

    # -- kernel arguments ----------------------------------------------------------------------------------------
    in_names = []
    for k, (v, acc) in enumerate(inputs):
        shp = merged_shape(acc)
        spec.inputs.append((v, v.aval.shape, shp if shp else (1,)))
        in_names.append(f"in{k}")
    out_names = []
    for k, (v, acc) in enumerate(zip(ew_outs + [e.outvars[0] for e in reductions], out_accesses)):
        shp = merged_shape(acc)
        spec.outputs.append((v, shp if shp else (1,)))
        out_names.append(f"out{k}")

    idx = [f"i{g}" for g in range(len(merged))]
    nred = len(reductions)
    pattern = "".join(c for k, c in enumerate(mclass) if k == 0 or mclass[k - 1] != c)
    # Full and column-wise reductions split their first (reduced) dimension into chunks. Inside a chunk, arrays
    # spanning that dimension are read through slices starting at the chunk (`w3 = in3[lo:hi]`), indexed from 0:
    # Numba vectorizes loops over `range(n)` of such views, not loops over `range(lo, hi)` inside a `prange`
    # (measured, a float32 sum over 1M elements on two threads: 30 us with views, 180 us without).
    chunked = nred > 0 and pattern in ("R", "RK")   # the chunked dimension is then merged dimension 0

    def via_chunk(dims: tuple) -> bool:
        return chunked and bool(dims) and dims[0] == 0

    def load(k: int) -> str:
        dims = merged_dims(inputs[k][1])
        if not dims:
            return f"s{k}"
        return f"{'w' if via_chunk(dims) else 'in'}{k}[{', '.join(idx[g] for g in dims)}]"

    # -- body: one statement per member -------------------------------------------------------------------------
    body: list[str] = []
    names: dict = {}
    red_vals = []
    for pos, e in enumerate(member_eqns):
        prim = e.primitive
        if prim in REDUCTIONS:
            src = reads[(pos, 0)]
            red_vals.append(names[src[1]] if src[0] == "var" else (load(src[1]) if src[0] == "in" else src[1]))
            continue
        out = e.outvars[0]
        x = f"x{pos}"
        names[out] = x
        if prim is broadcast_in_dim_p:
            src = reads[(pos, 0)]
            expr = load(src[1]) if src[0] == "in" else src[1]
        elif prim is iota_p:
            d = e.params["dimension"]
            i = idx[mdim[d]] if domain[d] != 1 else "0"
            if chunked and domain[d] != 1 and mdim[d] == 0:
                i = f"(lo + {i})"
            expr = scalar.cast(out.aval.dtype, i)
        else:
            args = []
            for k in range(len(e.invars)):
                src = reads[(pos, k)]
                args.append(names[src[1]] if src[0] == "var" else (load(src[1]) if src[0] == "in" else src[1]))
            expr = scalar.scalar_expr(e, args)
            assert expr is not None, prim.name
        body.append(f"{x} = {expr}")
    for k, v in enumerate(ew_outs):
        dims = merged_dims(out_accesses[k])
        arr = f"wo{k}" if via_chunk(dims) else f"out{k}"
        body.append(f"{arr}[{', '.join(idx[g] for g in dims) if dims else '0'}] = {names[v]}")

    # -- loops ---------------------------------------------------------------------------------------------------
    lines = []
    prange = "numba.prange" if parallel else "range"
    for k, (v, acc) in enumerate(inputs):
        if not merged_dims(acc):
            lines.append(f"s{k} = in{k}[0]")
    red_kinds = [e.primitive for e in reductions]
    red_dts = [e.invars[0].aval.dtype for e in reductions]
    acc_dts = [accumulator_dtype(kd, dt) for kd, dt in zip(red_kinds, red_dts)]
    out_base = len(ew_outs)

    def emit_loops(ds: list[int], inner: list[str], depth: int, first_parallel: bool) -> list[str]:
        code = []
        pad = "    " * depth
        for j, g in enumerate(ds):
            rng = prange if (j == 0 and first_parallel) else "range"
            code.append(f"{pad}{'    ' * j}for {idx[g]} in {rng}({msize[g]}):")
        pad2 = pad + "    " * len(ds)
        code.extend(pad2 + ln for ln in inner)
        return code

    if nred == 0:
        lines += emit_loops(list(range(len(merged))), body, 0, True) if merged else body
    else:
        kdims = [g for g in range(len(merged)) if mclass[g] == "K"]
        rdims = [g for g in range(len(merged)) if mclass[g] == "R"]
        acc_update = [f"acc{r} = " + combine(red_kinds[r], red_dts[r], f"acc{r}",
                                             f"{np_type(acc_dts[r])}({red_vals[r]})")
                      for r in range(nred)]
        if pattern == "KR" or (pattern == "K" and not rdims):
            inner = [f"acc{r} = {initial_value(red_kinds[r], acc_dts[r])}" for r in range(nred)]
            inner += emit_loops(rdims, body + acc_update, 0, False)
            kidx = ", ".join(idx[g] for g in kdims) if kdims else "0"
            inner += [f"out{out_base + r}[{kidx}] = {np_type(red_dts[r])}(acc{r})" for r in range(nred)]
            lines += emit_loops(kdims, inner, 0, True) if kdims else inner
        else:  # "R" or "RK": chunk the first reduced dimension
            g0 = rdims[0]
            n0 = msize[g0]
            nch = max(1, min(REDUCTION_CHUNKS, n0))
            step = -(-n0 // nch)
            kshape = tuple(msize[g] for g in kdims)
            for r in range(nred):
                lines.append(f"part{r} = np.empty({(nch,) + kshape!r}, {np_type(acc_dts[r])})")
            lines.append(f"for c in {prange}({nch}):")
            chunk = [f"lo = c * {step}", f"hi = min(lo + {step}, {n0})"]
            kidx = ", ".join(idx[g] for g in kdims)
            if kdims:
                init = [f"part{r}[c, {kidx}] = {initial_value(red_kinds[r], acc_dts[r])}" for r in range(nred)]
                chunk += emit_loops(kdims, init, 0, False)
                upd = [f"part{r}[c, {kidx}] = " + combine(red_kinds[r], red_dts[r], f"part{r}[c, {kidx}]",
                                                            f"{np_type(acc_dts[r])}({red_vals[r]})")
                       for r in range(nred)]
                inner = emit_loops(rdims[1:] + kdims, body + upd, 0, False)
            else:
                chunk += [f"acc{r} = {initial_value(red_kinds[r], acc_dts[r])}" for r in range(nred)]
                inner = emit_loops(rdims[1:], body + acc_update, 0, False)
            chunk += [f"w{k} = in{k}[lo:hi]" for k, (_, acc) in enumerate(inputs) if via_chunk(merged_dims(acc))]
            chunk += [f"wo{k} = out{k}[lo:hi]" for k in range(len(ew_outs)) if via_chunk(merged_dims(out_accesses[k]))]
            chunk.append(f"for {idx[g0]} in range(hi - lo):" if chunked else f"for {idx[g0]} in range(lo, hi):")
            chunk += ["    " + ln for ln in inner]
            if not kdims:
                chunk += [f"part{r}[c] = acc{r}" for r in range(nred)]
            lines += ["    " + ln for ln in chunk]
            # Combine the partials in chunk order (deterministic).
            fin = [f"acc{r} = part{r}[0{', ' + kidx if kdims else ''}]" for r in range(nred)]
            fin += ["for c in range(1, %d):" % nch]
            ksuffix = (", " + kidx) if kdims else ""
            fin += [f"    acc{r} = " + combine(red_kinds[r], red_dts[r], f"acc{r}", f"part{r}[c{ksuffix}]")
                    for r in range(nred)]
            fin += [f"out{out_base + r}[{kidx if kdims else '0'}] = {np_type(red_dts[r])}(acc{r})" for r in range(nred)]
            lines += emit_loops(kdims, fin, 0, False) if kdims else fin

    # -- module source -------------------------------------------------------------------------------------------
    has_fsum = any(k is reduce_sum_p and np.dtype(dt).kind == "f" for k, dt in zip(red_kinds, red_dts))
    sig_args = [f"types.Array({numba_type(v.aval.dtype)}, {len(shp)}, 'C', readonly=True)"
                for v, _, shp in spec.inputs]
    sig_args += [f"types.Array({numba_type(v.aval.dtype)}, {len(shp)}, 'C')" for v, shp in spec.outputs]
    fastmath = "{'reassoc'}" if has_fsum else "False"
    header = [
        "# Generated by fluxion's compiler (fusion). Do not edit: the file name is the hash of this text.",
        f"# helpers version {version}",
        "import math",
        "import numba",
        "import numpy as np",
        "from numba import types",
        "from fluxion._src.compiler.fusion.mathlib import _expf, _fmax, _fmin, _logistic, _logisticf, _tanhf",
        "",
        f"SIGNATURE = types.void({', '.join(sig_args)})",
        "",
        "",
        f"@numba.njit(SIGNATURE, parallel={parallel}, cache=True, error_model='numpy', nogil=True, "
        f"fastmath={fastmath})",
        f"def kernel({', '.join(in_names + out_names)}):",
    ]
    spec.source = "\n".join(header + ["    " + ln for ln in (lines or ["pass"])]) + "\n"
    spec.digest = hashlib.sha256(spec.source.encode()).hexdigest()[:24]
    return spec
