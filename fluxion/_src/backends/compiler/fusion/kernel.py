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
  depend on the number of threads. A threaded kernel called on one thread (`mathlib._num_threads() == 1`: the load
  left one core) runs the same chunks in a plain loop: entering a parallel region costs about 2.5 us even then
  (measured through `jit` on one thread, a float32 sum of x*y over 2**16 elements: 10.2 us threaded, 7.6 serial).

Sizes. A kernel's source holds no extent above `SMALL_EXTENT`: it reads them from its array arguments (`n0 =
in0.shape[0]`), so one compiled kernel -- and one disk-cache entry, keyed by the hash of the source -- serves every
shape with the same rank after merging, dtypes, pattern of size-1 (broadcast) dimensions and thread choice. What
does depend on the shape is decided when the group is planned and is written into the source, so the key stays
honest: which dimensions are 1 (dropped) or broadcast, how dimensions merge, whether to use threads, and the
constant extents of short dimensions.

float32 sums over one (merged) reduced dimension accumulate in float32 over blocks (`SUM_BLOCK` elements of a
row or chunk, `COLUMN_SUM_BLOCK` rows of a column-wise sum; rows of a constant extent up to `SMALL_EXTENT` in one
block), each block's sum added to a float64 accumulator: as accurate as NumPy's pairwise sum (tested on 1e7
elements) at the speed of 16-lane float32 adds. Other float sums accumulate in float64, integer sums in 64 bits
(identical to NumPy's wrapping sum after the final cast); results are rounded to the output dtype. Kernels are
compiled with `error_model="numpy"` (IEEE results, no exceptions) and, when they sum floats, `fastmath={"reassoc"}`
so the accumulation vectorizes (max/min reductions vectorize through LLVM's `maximum`/`minimum`, see `mathlib`).

`build` runs these steps, one class or function each: `_Group` (the members, their outputs and reductions),
`_Accesses` (every array read or written and how), `_MergedDomain` (dimension merging), `_lay_out_arguments` (the
caller's side of the call), `_LoopWriter` (the per-element statements and the loop nest of the group's pattern) and
`_module_source`. The text they produce is the disk cache's key: `tests/compiler/test_kernel_source.py` pins it.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Sequence

import numpy as np

from ....core import Literal
from ....lax.reductions import reduce_sum_p
from ....lax.structural import broadcast_in_dim_p, iota_p
from .. import ir
from . import scalar
from .scalar import REDUCTIONS, accumulator_dtype, combine, initial_value, np_type, numba_type

# Partial accumulators per full or column-wise reduction; fixed so results are reproducible on any machine.
REDUCTION_CHUNKS = 16
# Merged dimensions up to this extent are constants in the kernel's source (a kernel per size); larger ones are read
# from the arguments (one kernel for all sizes). A constant trip count lets LLVM unroll short loops: measured on
# the benchmark machine, a column sum over (4096, 3) int32 took 11 us with the constant and 45 us without, a row
# max over (4096, 4) float32 10 vs 16 us. Longer loops amortize their overhead either way, and the bound keeps the
# number of variants of a kernel small (a shape (n, k) needs one kernel per k <= 16, one for every larger k).
SMALL_EXTENT = 16
# float32 sums accumulate in float32 over blocks of this many elements (rows of a column-wise sum), each block's sum
# added to a float64 accumulator: the float32 adds vectorize 16 lanes wide (float64 ones 8, with a conversion per
# element), and a block is short enough that its float32 rounding stays below NumPy's pairwise sum's (LLVM splits
# the block's sum over a few vector accumulators, each adding SUM_BLOCK / 64 elements). Measured on one core of the
# benchmark machine, the sum of x*x over 1e5 float32 elements held in cache: 4 us blocked, 8 us in float64, 7 us
# for BLAS's sdot. Blocks are read through views (`w0 = in0[lo:hi]`): LLVM vectorizes a loop over `range(hi - lo)`
# indexing a view, not one over `range(lo, hi)` indexing the array (11x slower, measured).
SUM_BLOCK = 512
# A column-wise block adds each column sequentially (the vector lanes run across columns), so it is shorter; its
# rows are read COLUMN_UNROLL at a time and added pairwise before they reach the block's row of sums (measured on one
# core, the column sums of a (10000, 100) float32 array: 0.06 ms, against 0.09 ms accumulating in float64 and 0.33
# ms row by row in float32 -- LLVM's 64-lane vector loop leaves 36 of the 100 columns to its scalar remainder).
COLUMN_SUM_BLOCK = 128
COLUMN_UNROLL = 4


# Imported by the kernels that read their thread count (threaded full and column-wise reductions) only, so that the
# source of every other kernel, and its disk-cache entry, stays as it was.
NUM_THREADS_IMPORT = "from fluxion._src.backends.compiler.fusion.mathlib import _num_threads"


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
      extents: sizes the caller passes after the outputs, one per merged dimension that no array argument spans
        (only iotas count along it); usually empty.
      parallel: whether the kernel uses `prange` with threads.
    """

    def __init__(self):
        self.inputs: list = []
        self.outputs: list = []
        self.extents: list = []
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

    Returns:
      The kernel's spec: argument layout, source and digest (the hash of the source, its disk-cache key).
    """
    group = _Group(eqns, members, outvars_needed, domain, red_axes)
    accesses = _Accesses(group)
    merged = _MergedDomain(group, accesses.all())
    spec = KernelSpec()
    spec.parallel = parallel
    arg_names = _lay_out_arguments(spec, accesses, merged)
    writer = _LoopWriter(group, accesses, merged, parallel)
    arg_names += [f"n{g}" for g in writer.extent_params]
    spec.extents = [merged.sizes[g] for g in writer.extent_params]
    spec.source = _module_source(spec, arg_names, writer.statements(), writer.sums_floats(), parallel, version)
    spec.digest = hashlib.sha256(spec.source.encode()).hexdigest()[:24]
    return spec


class _Group:
    """The equations of one fused group and what the kernel must compute from them.

    Attributes:
      all_eqns: every equation of the program (a broadcast outside the group may be read through its operand).
      eqns: the group's equations, in program order.
      produced: the variables they define.
      reductions: the group's reductions (its sinks), in program order.
      ew_outs: elementwise results read outside the group (written to memory), in program order.
      domain: the iteration shape; red_axes: the set of reduced axes (empty without reductions).
    """

    def __init__(self, eqns, members, outvars_needed, domain, red_axes):
        self.all_eqns = eqns
        self.eqns = [eqns[i] for i in members]
        self.produced = {v for e in self.eqns for v in e.outvars}
        self.reductions = [e for e in self.eqns if e.primitive in REDUCTIONS]
        self.ew_outs = [v for e in self.eqns if e.primitive not in REDUCTIONS for v in e.outvars
                        if v in outvars_needed]
        self.domain = tuple(domain)
        self.red_axes = set(red_axes or ())

    def full_access(self, keep=lambda d: True) -> Access:
        """The access of an array indexed by every domain dimension `keep` selects (size-1 dimensions: None)."""
        return Access(tuple(d if self.domain[d] != 1 else None for d in range(len(self.domain)) if keep(d)))


class _Accesses:
    """Step 1: every array the kernel touches and how it is indexed.

    Attributes:
      inputs: (var, Access) read by the kernel, in argument order; one entry per distinct pair.
      reads: (member position, operand position) -> how the member reads that operand: ("in", k) input k,
        ("var", v) a value computed earlier in the kernel, or ("lit", source) a literal.
      outputs: one Access per output: elementwise outputs (`group.ew_outs`), then reductions.
      iota_dims: the domain dimension each iota counts along.
    """

    def __init__(self, group: _Group):
        self.group = group
        self.inputs: list = []
        self._input_index: dict = {}
        self.reads: dict = {}
        # Broadcasts computed outside the group (shared with other consumers) are read through their operands too,
        # never as materialized arrays (a relu's broadcast zero would otherwise be copied to full size every call).
        self._outside_broadcasts = {
            e.outvars[0]: e for e in group.all_eqns
            if e.primitive is broadcast_in_dim_p and e.outvars[0] not in group.produced
            and tuple(e.outvars[0].aval.shape) == group.domain
            and (type(e.invars[0]) is Literal or e.invars[0] not in group.produced)}
        for pos, e in enumerate(group.eqns):
            if e.primitive is broadcast_in_dim_p:
                self.reads[(pos, 0)] = self._read_broadcast(e)
                continue
            for k, v in enumerate(e.invars):
                self.reads[(pos, k)] = self._read_operand(v)
        self.iota_dims = [e.params["dimension"] for e in group.eqns if e.primitive is iota_p]
        self.outputs = [group.full_access() for _ in group.ew_outs]
        self.outputs += [group.full_access(lambda d: d not in group.red_axes) for _ in group.reductions]

    def _add_input(self, v, acc: Access) -> int:
        key = (v, acc)
        if key not in self._input_index:
            self._input_index[key] = len(self.inputs)
            self.inputs.append(key)
        return self._input_index[key]

    def _read_broadcast(self, b) -> tuple:
        """How to read the result of broadcast equation `b`: its operand through an index map (or a literal)."""
        x = b.invars[0]
        if type(x) is Literal:
            return ("lit", scalar.literal_source(ir.literal_value(x)))
        domain = self.group.domain
        dims = tuple(d if x.aval.shape[k] == domain[d] and domain[d] != 1 else None
                     for k, d in enumerate(b.params["broadcast_dimensions"]))
        return ("in", self._add_input(x, Access(dims)))

    def _read_operand(self, v) -> tuple:
        if type(v) is Literal:
            return ("lit", scalar.literal_source(ir.literal_value(v)))
        if v in self.group.produced:
            return ("var", v)
        if v.aval.shape == ():
            return ("in", self._add_input(v, Access(())))
        if v in self._outside_broadcasts:
            return self._read_broadcast(self._outside_broadcasts[v])
        return ("in", self._add_input(v, self.group.full_access()))

    def all(self) -> list:
        """Every access, for dimension merging: inputs, outputs, and the dimensions iotas count along."""
        return [a for _, a in self.inputs] + self.outputs + [Access((d,)) for d in self.iota_dims]


class _MergedDomain:
    """Step 2: the domain with size-1 dimensions dropped and adjacent dimensions merged where every access reads
    them alike (both through consecutive axes of the array, or both not at all) and both are kept or both reduced.

    Attributes:
      groups: the domain dimensions of each merged dimension.
      of: domain dimension -> its merged dimension.
      sizes: extent of each merged dimension.
      classes: "K" (kept) or "R" (reduced) per merged dimension.
      pattern: the classes with runs collapsed ("", "K", "R", "KR", "RK", ...).
    """

    def __init__(self, group: _Group, accesses: list):
        domain, rset = group.domain, group.red_axes
        self.groups: list[list[int]] = []
        for d in (d for d in range(len(domain)) if domain[d] != 1):
            if self.groups and self._mergeable(self.groups[-1][-1], d, rset, accesses):
                self.groups[-1].append(d)
            else:
                self.groups.append([d])
        self.of = {d: g for g, ds in enumerate(self.groups) for d in ds}
        self.sizes = [int(np.prod([domain[d] for d in ds], dtype=np.int64)) for ds in self.groups]
        self.classes = ["R" if ds[0] in rset else "K" for ds in self.groups]
        self.pattern = "".join(c for k, c in enumerate(self.classes) if k == 0 or self.classes[k - 1] != c)

    @staticmethod
    def _mergeable(prev: int, d: int, rset: set, accesses: list) -> bool:
        if (prev in rset) != (d in rset):
            return False
        for acc in accesses:
            a = [k for k, x in enumerate(acc.dims) if x == prev]
            b = [k for k, x in enumerate(acc.dims) if x == d]
            if bool(a) != bool(b) or (a and b and b[0] != a[0] + 1):
                return False
        return True

    def dims(self, acc: Access) -> tuple:
        """The merged dimensions indexing an array's (merged) axes, in order."""
        out = []
        for d in acc.dims:
            if d is None:
                continue
            g = self.of[d]
            if not out or out[-1] != g:
                out.append(g)
        return tuple(out)

    def shape(self, acc: Access) -> tuple:
        """The shape the caller reshapes an array to (a view for contiguous arrays)."""
        return tuple(self.sizes[g] for g in self.dims(acc))


def _lay_out_arguments(spec: KernelSpec, accesses: _Accesses, merged: _MergedDomain) -> list[str]:
    """Step 3: fills `spec.inputs`/`spec.outputs` (the caller's side of the call) and returns the kernel's parameter
    names: `in0, in1, ...` then `out0, out1, ...`. Arrays read or written through no dimension travel as (1,)."""
    names = []
    for k, (v, acc) in enumerate(accesses.inputs):
        shp = merged.shape(acc)
        spec.inputs.append((v, v.aval.shape, shp if shp else (1,)))
        names.append(f"in{k}")
    group = accesses.group
    for k, (v, acc) in enumerate(zip(group.ew_outs + [e.outvars[0] for e in group.reductions], accesses.outputs)):
        shp = merged.shape(acc)
        spec.outputs.append((v, shp if shp else (1,)))
        names.append(f"out{k}")
    return names


class _LoopWriter:
    """Steps 4 and 5: the kernel's statements -- one per member for one element of the domain -- inside the loop
    nest of the group's pattern (see the module docstring).

    Index variable `i<g>` runs over merged dimension g. Full (`R`) and column-wise (`RK`) reductions split their
    first, reduced, dimension (merged dimension 0) into chunks; inside a chunk, arrays spanning that dimension are
    read through slices starting at the chunk (`w3 = in3[lo:hi]`) and indexed from 0: Numba vectorizes loops over
    `range(n)` of such views, not loops over `range(lo, hi)` inside a `prange` (measured, a float32 sum over 1M
    elements on two threads: 30 us with views, 180 us without).
    """

    def __init__(self, group: _Group, accesses: _Accesses, merged: _MergedDomain, parallel: bool):
        self.group = group
        self.accesses = accesses
        self.merged = merged
        self.idx = [f"i{g}" for g in range(len(merged.groups))]
        # Extents up to SMALL_EXTENT are constants of the source (see `SMALL_EXTENT`); the others are read from an
        # axis of the first argument spanning the dimension, so one compiled kernel serves all those sizes.
        self.n = [str(size) if size <= SMALL_EXTENT else f"n{g}" for g, size in enumerate(merged.sizes)]
        self.prange = "numba.prange" if parallel else "range"
        self.chunked = bool(group.reductions) and merged.pattern in ("R", "RK")
        reds = group.reductions
        self.red_kinds = [e.primitive for e in reds]
        self.red_dts = [e.invars[0].aval.dtype for e in reds]
        self.acc_dts = [accumulator_dtype(p, dt) for p, dt in zip(self.red_kinds, self.red_dts)]
        # Which reductions are float32 sums, accumulated in float32 blocks (see `SUM_BLOCK`).
        self.blocked = [p is reduce_sum_p and np.dtype(dt) == np.float32
                        for p, dt in zip(self.red_kinds, self.red_dts)]
        rdims = [g for g in range(len(merged.groups)) if merged.classes[g] == "R"]
        self.single_r = rdims[0] if len(rdims) == 1 else None
        # The merged dimension whose arrays are read through views starting at `lo` (a chunk of a full or
        # column-wise reduction, or a block of a row), and whether those views also fix the outer indices (a row's
        # block: `w3 = in3[i0, lo:hi]`, indexed by the reduced index alone).
        self.window = 0 if self.chunked else None
        self.window_fixes_outer = False
        if (any(self.blocked) and merged.pattern == "KR" and self.single_r is not None
                and not self.n[self.single_r].isdigit()):
            self.window, self.window_fixes_outer = self.single_r, True
        self.extent_source: dict = {}
        arrays = [(f"in{k}", merged.dims(acc)) for k, (_, acc) in enumerate(accesses.inputs)]
        arrays += [(f"out{k}", merged.dims(acc)) for k, acc in enumerate(accesses.outputs)]
        for name, dims in arrays:
            for axis, g in enumerate(dims):
                if self.n[g] == f"n{g}":
                    self.extent_source.setdefault(g, f"{name}.shape[{axis}]")
        # Large dimensions only iotas count along: their extents are parameters after the outputs.
        self.extent_params = [g for g in range(len(merged.groups))
                              if self.n[g] == f"n{g}" and g not in self.extent_source]

    def sums_floats(self) -> bool:
        """Whether a reduction sums floats (the kernel then allows reassociation, so the sum vectorizes)."""
        return any(p is reduce_sum_p and np.dtype(dt).kind == "f" for p, dt in zip(self.red_kinds, self.red_dts))

    def statements(self) -> list[str]:
        """The kernel function's body."""
        body, red_vals = self._body()
        lines = [f"n{g} = {src}" for g, src in sorted(self.extent_source.items())]
        lines += [f"s{k} = in{k}[0]" for k, (_, acc) in enumerate(self.accesses.inputs) if not self.merged.dims(acc)]
        if not self.group.reductions:
            lines += self._elementwise_nest(body)
        elif self.merged.pattern == "KR" or (self.merged.pattern == "K" and not self._dims("R")):
            lines += self._rowwise_nest(body, red_vals)
        else:
            lines += self._chunked_nest(body, red_vals)
        return lines

    # -- step 4: one element --------------------------------------------------------------------------------------
    def _via_chunk(self, dims: tuple) -> bool:
        """Whether an array indexed by merged dimensions `dims` is read (or written) through a view (`w<k>`)."""
        if self.window is None or not dims:
            return False
        return dims[-1] == self.window if self.window_fixes_outer else dims[0] == self.window

    def _index(self, dims: tuple) -> str:
        """The subscript of an array indexed by merged dimensions `dims` (through its view if it has one)."""
        if self.window_fixes_outer and self._via_chunk(dims):
            return self.idx[dims[-1]]
        return ", ".join(self.idx[g] for g in dims)

    def _view(self, name: str, dims: tuple) -> str:
        """The slice of array `name` (indexed by `dims`) its view `w...` takes, from `lo` to `hi`."""
        if self.window_fixes_outer:
            return f"{name}[{''.join(self.idx[g] + ', ' for g in dims[:-1])}lo:hi]"
        return f"{name}[lo:hi]"

    def _load(self, k: int) -> str:
        """Source reading input k at the current indices (a scalar input was loaded once, into `s<k>`)."""
        dims = self.merged.dims(self.accesses.inputs[k][1])
        if not dims:
            return f"s{k}"
        return f"{'w' if self._via_chunk(dims) else 'in'}{k}[{self._index(dims)}]"

    def _operand(self, src: tuple, names: dict) -> str:
        kind, what = src
        if kind == "var":
            return names[what]
        return self._load(what) if kind == "in" else what

    def _body(self) -> tuple[list[str], list[str]]:
        """Statements computing one element of every member (`x<pos> = ...`) and storing the elementwise outputs;
        and, per reduction, the source of the value it accumulates."""
        group, merged = self.group, self.merged
        body: list[str] = []
        names: dict = {}
        red_vals = []
        for pos, e in enumerate(group.eqns):
            prim = e.primitive
            if prim in REDUCTIONS:
                red_vals.append(self._operand(self.accesses.reads[(pos, 0)], names))
                continue
            out = e.outvars[0]
            names[out] = f"x{pos}"
            if prim is broadcast_in_dim_p:
                expr = self._operand(self.accesses.reads[(pos, 0)], {})
            elif prim is iota_p:
                d = e.params["dimension"]
                i = self.idx[merged.of[d]] if group.domain[d] != 1 else "0"
                if group.domain[d] != 1 and merged.of[d] == self.window:
                    i = f"(lo + {i})"
                expr = scalar.cast(out.aval.dtype, i)
            else:
                args = [self._operand(self.accesses.reads[(pos, k)], names) for k in range(len(e.invars))]
                expr = scalar.scalar_expr(e, args)
                assert expr is not None, prim.name
            body.append(f"x{pos} = {expr}")
        for k, v in enumerate(group.ew_outs):
            dims = merged.dims(self.accesses.outputs[k])
            arr = f"wo{k}" if self._via_chunk(dims) else f"out{k}"
            body.append(f"{arr}[{self._index(dims) if dims else '0'}] = {names[v]}")
        return body, red_vals

    # -- step 5: loop nests ----------------------------------------------------------------------------------------
    def _dims(self, cls: str) -> list[int]:
        return [g for g in range(len(self.merged.groups)) if self.merged.classes[g] == cls]

    def _loops(self, ds: list[int], inner: list[str], first_parallel: bool) -> list[str]:
        """`inner` nested in loops over merged dimensions `ds` (the outermost a `prange` if `first_parallel`)."""
        code = []
        for j, g in enumerate(ds):
            rng = self.prange if (j == 0 and first_parallel) else "range"
            code.append(f"{'    ' * j}for {self.idx[g]} in {rng}({self.n[g]}):")
        code.extend("    " * len(ds) + ln for ln in inner)
        return code

    def _update(self, r: int, acc: str, value: str) -> str:
        """`acc` combined with `value` (converted to the accumulator's dtype) by reduction r."""
        return combine(self.red_kinds[r], self.red_dts[r], acc, f"{np_type(self.acc_dts[r])}({value})")

    def _elementwise_nest(self, body: list[str]) -> list[str]:
        """No reduction: a `prange` over the first merged dimension, plain loops inside."""
        n = len(self.merged.groups)
        return self._loops(list(range(n)), body, True) if n else body

    def _views(self) -> list[str]:
        """The views (`w<k>`, `wo<k>`) of the arrays spanning the window dimension, from `lo` to `hi`."""
        merged = self.merged
        out = [f"w{k} = {self._view(f'in{k}', merged.dims(acc))}" for k, (_, acc) in enumerate(self.accesses.inputs)
               if self._via_chunk(merged.dims(acc))]
        out += [f"wo{k} = {self._view(f'out{k}', merged.dims(acc))}" for k, acc in enumerate(self.accesses.outputs)
                if k < len(self.group.ew_outs) and self._via_chunk(merged.dims(acc))]
        return out

    def _block_updates(self, red_vals: list[str], acc: list[str], bacc: list[str]) -> list[str]:
        """Per element: float32 sums add into their block accumulators `bacc[r]`, other reductions into `acc[r]`."""
        return [f"{bacc[r]} = {bacc[r]} + np.float32({red_vals[r]})" if self.blocked[r]
                else f"{acc[r]} = " + self._update(r, acc[r], red_vals[r]) for r in range(len(red_vals))]

    def _rows_unrolled(self, g0: int, kdims: list, body: list[str], red_vals: list[str], accs: list[str],
                       baccs: list[str]) -> list[str]:
        """A column-wise block's rows `COLUMN_UNROLL` at a time: the element statements once per row (row `i0 + u`
        through `r<u>`, locals renamed `x<pos>_<u>`), the rows' float32 terms added pairwise into the block's row of
        sums -- one load and store of it per `COLUMN_UNROLL` elements instead of per element. The rows left over
        (`m % COLUMN_UNROLL`) follow in a plain loop."""
        i0 = self.idx[g0]
        stmts, vals = [list(body)], [list(red_vals)]
        for u in range(1, COLUMN_UNROLL):
            self.idx[g0] = f"r{u}"
            try:
                b, rv = self._body()
            finally:
                self.idx[g0] = i0
            rename = lambda text, u=u: re.sub(r"\bx(\d+)\b", rf"x\g<1>_{u}", text)  # noqa: E731
            stmts.append([rename(ln) for ln in b])
            vals.append([rename(v) for v in rv])
        upd = []
        for r in range(len(red_vals)):
            terms = [f"np.float32({vals[u][r]})" for u in range(COLUMN_UNROLL)]
            if self.blocked[r]:
                while len(terms) > 1:
                    terms = [f"({terms[k]} + {terms[k + 1]})" for k in range(0, len(terms), 2)]
                upd.append(f"{baccs[r]} = {baccs[r]} + {terms[0]}")
            else:
                upd += [f"{accs[r]} = " + self._update(r, accs[r], vals[u][r]) for u in range(COLUMN_UNROLL)]
        head = ["m = hi - lo", f"for {i0} in range(0, m - m % {COLUMN_UNROLL}, {COLUMN_UNROLL}):"]
        rows = [f"r{u} = {i0} + {u}" for u in range(1, COLUMN_UNROLL)]
        return head + ["    " + ln for ln in rows + self._loops(kdims, sum(stmts, []) + upd, False)]

    def _rowwise_nest(self, body: list[str], red_vals: list[str]) -> list[str]:
        """`KR`: a `prange` over the kept dimensions, one scalar accumulator per reduction over the reduced ones.

        float32 sums over a single reduced dimension accumulate in float32: directly for rows of at most
        `SUM_BLOCK` elements (a constant extent, or a test of the row's extent at run time), else in blocks of
        `SUM_BLOCK` elements read through views of the row, each block's sum added to a float64 accumulator."""
        nred = len(red_vals)
        kdims, rdims = self._dims("K"), self._dims("R")
        kidx = ", ".join(self.idx[g] for g in kdims) if kdims else "0"
        stores = [f"out{len(self.group.ew_outs) + r}[{kidx}] = {np_type(self.red_dts[r])}(acc{r})"
                  for r in range(nred)]
        inner = [f"acc{r} = {initial_value(self.red_kinds[r], self.acc_dts[r])}" for r in range(nred)]
        if self.window is None:
            if self.single_r is not None:  # a short row: float32 sums need no blocks
                inner += self._short_row(rdims, body, red_vals)
            else:
                inner += self._loops(rdims, body + [f"acc{r} = " + self._update(r, f"acc{r}", red_vals[r])
                                                    for r in range(nred)], False)
        else:
            g = self.window
            accs, baccs = [f"acc{r}" for r in range(nred)], [f"bacc{r}" for r in range(nred)]
            block = [f"hi = min(lo + {SUM_BLOCK}, {self.n[g]})"] + self._views()
            block += [f"bacc{r} = np.float32(0)" for r in range(nred) if self.blocked[r]]
            block.append(f"for {self.idx[g]} in range(hi - lo):")
            block += ["    " + ln for ln in body + self._block_updates(red_vals, accs, baccs)]
            block += [f"acc{r} = acc{r} + np.float64(bacc{r})" for r in range(nred) if self.blocked[r]]
            # Rows that fit one block skip the views (a few per row cost more than summing 20 elements).
            window, self.window = self.window, None
            try:
                short_body, short_vals = self._body()
            finally:
                self.window = window
            inner.append(f"if {self.n[g]} <= {SUM_BLOCK}:")
            inner += ["    " + ln for ln in self._short_row(rdims, short_body, short_vals)]
            inner += ["else:", f"    for lo in range(0, {self.n[g]}, {SUM_BLOCK}):"]
            inner += ["        " + ln for ln in block]
        inner += stores
        return self._loops(kdims, inner, True) if kdims else inner

    def _short_row(self, rdims: list, body: list[str], red_vals: list[str]) -> list[str]:
        """One row of at most `SUM_BLOCK` elements: float32 sums in a float32 accumulator `sacc<r>` (converted into
        `acc<r>` at the end), the other reductions straight into `acc<r>`."""
        nred = len(red_vals)
        accs, saccs = [f"acc{r}" for r in range(nred)], [f"sacc{r}" for r in range(nred)]
        code = [f"sacc{r} = np.float32(0)" for r in range(nred) if self.blocked[r]]
        code += self._loops(rdims, body + self._block_updates(red_vals, accs, saccs), False)
        return code + [f"acc{r} = np.float64(sacc{r})" for r in range(nred) if self.blocked[r]]

    def _chunked_nest(self, body: list[str], red_vals: list[str]) -> list[str]:
        """`R` and `RK`: the first reduced dimension is split into `REDUCTION_CHUNKS` chunks (a `prange`), each with
        its own partial accumulators (a row of them for `RK`), combined afterwards in chunk order.

        With a single reduced dimension, float32 sums are accumulated in float32 over blocks of a chunk (`SUM_BLOCK`
        elements for `R`, `COLUMN_SUM_BLOCK` rows for `RK`), each block's sums added to the chunk's float64
        partials."""
        nred = len(red_vals)
        kinds, acc_dts = self.red_kinds, self.acc_dts
        kdims, rdims = self._dims("K"), self._dims("R")
        g0 = rdims[0]
        n0 = self.n[g0]
        kshape = "".join(f", {self.n[g]}" for g in kdims)
        kidx = ", ".join(self.idx[g] for g in kdims)
        blocks = any(self.blocked) and self.single_r is not None
        # The chunking depends on the extent only: the same results whatever the number of threads.
        if n0.isdigit():
            nch = max(1, min(REDUCTION_CHUNKS, int(n0)))
            lines = [f"nch = {nch}", f"step = {-(-int(n0) // nch)}"]
        else:
            lines = [f"nch = max(1, min({REDUCTION_CHUNKS}, {n0}))", f"step = ({n0} + nch - 1) // nch"]
        lines += [f"part{r} = np.empty((nch{kshape}), {np_type(acc_dts[r])})" for r in range(nred)]
        if blocks and kdims:
            lines += [f"bpart{r} = np.empty((nch{kshape}), np.float32)" for r in range(nred) if self.blocked[r]]
        chunk = ["c0 = c * step", f"c1 = min(c0 + step, {n0})"] if blocks else \
            ["lo = c * step", f"hi = min(lo + step, {n0})"]
        if kdims:
            init = [f"part{r}[c, {kidx}] = {initial_value(kinds[r], acc_dts[r])}" for r in range(nred)]
            chunk += self._loops(kdims, init, False)
            accs = [f"part{r}[c, {kidx}]" for r in range(nred)]
            baccs = [f"bpart{r}[c, {kidx}]" for r in range(nred)]
        else:
            chunk += [f"acc{r} = {initial_value(kinds[r], acc_dts[r])}" for r in range(nred)]
            accs, baccs = [f"acc{r}" for r in range(nred)], [f"bacc{r}" for r in range(nred)]
        if blocks:
            upd = self._block_updates(red_vals, accs, baccs)
        else:
            upd = [f"{accs[r]} = " + self._update(r, accs[r], red_vals[r]) for r in range(nred)]
        inner = self._loops(rdims[1:] + kdims, body + upd, False)
        loop = self._views() + [f"for {self.idx[g0]} in range(hi - lo):"] + ["    " + ln for ln in inner]
        if blocks and kdims and not self.group.ew_outs:
            # Only for pure column sums: with elementwise outputs written as well, the unrolled rows' loads and
            # stores are too many pointers for LLVM to vectorize the loop (measured on the transformer block's
            # gelu gradient, 4096 x 1024 float32 with its bias gradient: 60 ms unrolled, 7-12 ms row by row).
            loop = self._views() + self._rows_unrolled(g0, kdims, body, red_vals, accs, baccs) + \
                [f"for {self.idx[g0]} in range(m - m % {COLUMN_UNROLL}, m):"] + ["    " + ln for ln in inner]
        if blocks:
            size = COLUMN_SUM_BLOCK if kdims else SUM_BLOCK
            zero = [f"{baccs[r]} = np.float32(0)" for r in range(nred) if self.blocked[r]]
            flush = [f"{accs[r]} = {accs[r]} + np.float64({baccs[r]})" for r in range(nred) if self.blocked[r]]
            block = [f"hi = min(lo + {size}, c1)"] + (self._loops(kdims, zero, False) if kdims else zero)
            block += loop + (self._loops(kdims, flush, False) if kdims else flush)
            chunk += [f"for lo in range(c0, c1, {size}):"] + ["    " + ln for ln in block]
        else:
            chunk += loop
        if not kdims:
            chunk += [f"part{r}[c] = acc{r}" for r in range(nred)]
        if self.prange == "range":
            lines += ["for c in range(nch):"] + ["    " + ln for ln in chunk]
        else:
            # On one thread (a busy machine: see `compiler.threads`), the same chunks in the same order without
            # entering a parallel region, which costs more than the serial kernel's whole run on small inputs.
            lines += ["if _num_threads() == 1:", "    for c in range(nch):"]
            lines += ["        " + ln for ln in chunk]
            lines += ["else:", "    for c in numba.prange(nch):"] + ["        " + ln for ln in chunk]
        # Combine the partials in chunk order (deterministic).
        ksuffix = (", " + kidx) if kdims else ""
        fin = [f"acc{r} = part{r}[0{ksuffix}]" for r in range(nred)]
        fin += ["for c in range(1, nch):"]
        fin += [f"    acc{r} = " + combine(kinds[r], self.red_dts[r], f"acc{r}", f"part{r}[c{ksuffix}]")
                for r in range(nred)]
        fin += [f"out{len(self.group.ew_outs) + r}[{kidx if kdims else '0'}] = {np_type(self.red_dts[r])}(acc{r})"
                for r in range(nred)]
        return lines + (self._loops(kdims, fin, False) if kdims else fin)


def _module_source(spec: KernelSpec, arg_names: list[str], statements: list[str], sums_floats: bool,
                   parallel: bool, version: int) -> str:
    """Step 6: the kernel module: imports, the Numba signature (read-only C arrays in, C arrays out) and the
    function. Floats sums are compiled with `fastmath={'reassoc'}` so the accumulation vectorizes."""
    sig_args = [f"types.Array({numba_type(v.aval.dtype)}, {len(shp)}, 'C', readonly=True)"
                for v, _, shp in spec.inputs]
    sig_args += [f"types.Array({numba_type(v.aval.dtype)}, {len(shp)}, 'C')" for v, shp in spec.outputs]
    sig_args += ["types.intp" for _ in spec.extents]
    fastmath = "{'reassoc'}" if sums_floats else "False"
    header = [
        "# Generated by fluxion's compiler (fusion). Do not edit: the file name is the hash of this text.",
        f"# helpers version {version}",
        "import math",
        "import numba",
        "import numpy as np",
        "from numba import types",
        scalar.MATHLIB_IMPORT,
        *([NUM_THREADS_IMPORT] if any("_num_threads()" in ln for ln in statements) else []),
        "",
        f"SIGNATURE = types.void({', '.join(sig_args)})",
        "",
        "",
        f"@numba.njit(SIGNATURE, parallel={parallel}, cache=True, error_model='numpy', nogil=True, "
        f"fastmath={fastmath})",
        f"def kernel({', '.join(arg_names)}):",
    ]
    return "\n".join(header + ["    " + ln for ln in (statements or ["pass"])]) + "\n"
