"""Whole-step compilation: a whole straight-line program becomes one Numba function (the third tier of `jit`).

Why. For programs of many small operations the generated Python code spends most of its time dispatching: the
MNIST MLP train step (3 products, a softmax cross-entropy, Adam over 6 leaves) runs about 90 NumPy calls and 9
kernel calls per step, each a microsecond or more of interpreter, argument checking and allocation work. Here the
program is planned as on the fused tier but with every elementwise chain and reduction fused whatever its size
(`fusion.Planner(min_elements=1, serial=True)`); what remains must be views (`reshape`, `squeeze`, `transpose`) and
matrix products. The function's body then calls, in schedule order, each group's kernel (the fused tier's own
kernel source, compiled inside this module so LLVM can inline it) and `np.dot` for products (Numba calls BLAS's
`gemm`/`gemv` for float32/float64; transposed operands are passed as transposed views, never copied). One native
call replaces the whole dispatch sequence.

When. Only programs the fused tier would already compile kernels for, with no control flow, only dtypes kernels
take (bool, integers, float32, float64), no zero-size arrays and every equation outside a group in the supported
set above; anything else raises `Unsupported` and the program keeps its fused tier. It is built on the background
compiler thread after the fused tier (whole-program compilation takes seconds), and cached on disk like fused
kernels (`fusion.runtime.load_kernel`: the module's source is the key), so a second process loads it in
milliseconds. The option `fluxion_jit_whole_step` (`FLUXION_JIT_WHOLE_STEP=0`) turns the tier off; fusion check
mode (`FLUXION_CHECK_FUSION=1`) never uses it, since it checks each kernel call against NumPy.

Calls. The function takes read-only C-contiguous arrays (Numba's signature for every argument); a call with any
other layout (a strided view passed in) raises Numba's TypeError before running anything, and the call then runs
the previous tier's code (counted in the entry function's `fallbacks`). Outputs are fresh C-contiguous arrays (an output that is an input is that input).
Numerics are the fused tier's: kernels at any size use `mathlib`'s transcendental functions and float64 sums, so
results match the NumPy path to rounding, not bit for bit.

BLAS threads: Numba's `np.dot` calls the OpenBLAS SciPy ships (not NumPy's); the entry function sets its thread
count before calling (and leaves it so: SciPy's own BLAS calls outside `jit` then use that count too): one thread if
every product of the program is small, else `compiler.threads.ceiling()` -- from sizes and configuration only, as
on the fused tier, so that the results do not depend on the machine's load (see `compiler.threads`).
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable

import numpy as np

from ...config import config
from ...core import ClosedJaxpr, Literal, Var
from ...lax.elementwise import pow_p
from ...lax.reductions import dot_general_p
from ...lax.structural import reshape_p, slice_p, squeeze_p, transpose_p
from . import blas, contractions, fusion, ir, threads
from .fusion import groups as _groups
from .fusion import kernel as _kernel

# Part of every whole-step module's source, hence of its disk-cache key: bump when the generated code changes.
VERSION = 1

_KERNEL_PREAMBLE = ("import ", "from ")
# Numba compiles each kernel function in about 0.2-0.4 s (measured on the 2-core benchmark machine): programs that
# would need more kernels than this keep the fused tier rather than occupy the compiler thread for minutes.
MAX_KERNELS = 48


class Unsupported(Exception):
    """The program has something the whole-step lowering does not handle (it keeps its fused tier)."""


class WholeStepSpec:
    """The generated module of one program.

    Attributes:
      source: the module's source; its function `kernel` takes the program's inputs, then its constants.
      digest: the hash of the source (the disk-cache key, as for fused kernels).
      consts: the constant values passed after the inputs.
      status: "pending", "compiled" or "failed: ..." (shown by `as_text()`).
    """

    def __init__(self, source: str, consts: list):
        self.source = source
        self.digest = "w" + hashlib.sha256(source.encode()).hexdigest()[:23]
        self.consts = consts
        self.status = "pending"


def enabled() -> bool:
    """Whether `jit` builds whole-step functions (`fluxion_jit_whole_step`; never in fusion check mode)."""
    from .fusion import check
    return bool(config.fluxion_jit_whole_step) and not check.enabled()


def _numba_type(dt) -> str:
    name = np.dtype(dt).name
    return "types.boolean" if name == "bool" else f"types.{name}"


def _np_type(dt) -> str:
    name = np.dtype(dt).name
    return "np.bool_" if name == "bool" else f"np.{name}"


def _check_types(program: ClosedJaxpr) -> None:
    from .fusion import scalar
    j = program.jaxpr
    for e in j.eqns:
        if any(True for _ in ir.sub_jaxprs(e.params)):
            raise Unsupported(f"control flow ({e.primitive.name})")
    for v in [*j.invars, *j.constvars, *(o for e in j.eqns for o in e.outvars)]:
        if not scalar.dtype_ok(v.aval.dtype):
            raise Unsupported(f"dtype {v.aval.dtype}")
        if ir.size(v) == 0:
            raise Unsupported("a zero-size array")
    if any(type(v) is Literal for v in j.outvars):
        raise Unsupported("a literal output")


# Elementwise primitives without a kernel scalar form, computed with the NumPy ufunc Numba implements.
_UFUNCS = {pow_p: "np.power"}


def _literal(v: Literal) -> str:
    """Numba source for a literal scalar, in its dtype."""
    raw = np.asarray(ir.literal_value(v))
    val = raw.item()
    if isinstance(val, float) and not np.isfinite(val):
        text = "np.nan" if np.isnan(val) else ("np.inf" if val > 0 else "-np.inf")
    else:
        text = repr(val)
    return f"{_np_type(raw.dtype)}({text})"


class _Emitter:
    """Writes the body of the whole-step function: one statement (or a few) per planned node.

    Every value has a layout: "C" (C-contiguous, what kernels take) or "T" (the transpose of a C-contiguous
    matrix, a view `x.T`, which `np.dot` takes as it is)."""

    def __init__(self, program: ClosedJaxpr):
        self.program = program
        self.lines: list[str] = []
        self.kernels: list[str] = []      # kernel function definitions (sources)
        self.imports: list[str] = []
        self.names: dict = {}
        self.layout: dict = {}
        self._count = 0
        self.index_of = {id(e): i for i, e in enumerate(program.jaxpr.eqns)}

    def fresh(self, hint: str) -> str:
        self._count += 1
        return f"{hint}{self._count}"

    def value(self, v: Any, contiguous: bool = True) -> str:
        if type(v) is Literal:
            raise Unsupported("a literal operand outside a kernel")
        name = self.names[v]
        if contiguous and self.layout[v] != "C":
            return f"np.ascontiguousarray({name})"
        return name

    def define(self, v: Var, expr: str, layout: str = "C") -> None:
        name = self.fresh("v")
        self.lines.append(f"{name} = {expr}")
        self.names[v] = name
        self.layout[v] = layout

    # -- kernels ------------------------------------------------------------------------------------------------
    def kernel(self, spec) -> None:
        fname = self._add_kernel_source(spec)
        args = []
        for v, shape, mshape in spec.inputs:
            e = self.value(v)
            args.append(e if tuple(mshape) == tuple(shape) else f"{e}.reshape({tuple(mshape)!r})")
        for v, mshape in spec.outputs:
            name = self.fresh("v")
            self.lines.append(f"{name} = np.empty({v.aval.shape!r}, {_np_type(v.aval.dtype)})")
            self.names[v] = name
            self.layout[v] = "C"
            args.append(name if tuple(mshape) == v.aval.shape else f"{name}.reshape({tuple(mshape)!r})")
        args += [str(int(n)) for n in spec.extents]
        self.lines.append(f"{fname}({', '.join(args)})")

    def _add_kernel_source(self, spec) -> str:
        """Adds the fused tier's kernel module `spec.source` to this module, as a function compiled with the
        whole-step function (no signature of its own: Numba types it from the call, LLVM may inline it)."""
        fname = f"k_{spec.digest}"
        if any(src.startswith(f"def {fname}(") or f"\ndef {fname}(" in src for src in self.kernels):
            return fname
        lines = spec.source.splitlines()
        try:
            deco = next(i for i, ln in enumerate(lines) if ln.startswith("@numba.njit(SIGNATURE, "))
        except StopIteration:
            raise Unsupported(f"kernel {spec.digest} has an unexpected source layout") from None
        if not lines[deco + 1].startswith("def kernel(") or ", cache=True," not in lines[deco]:
            raise Unsupported(f"kernel {spec.digest} has an unexpected source layout")
        for ln in lines[:deco]:
            if ln.startswith(_KERNEL_PREAMBLE) and ln not in self.imports:
                self.imports.append(ln)
        decorator = (lines[deco].replace("@numba.njit(SIGNATURE, ", "@numba.njit(", 1)
                     .replace(", cache=True,", ", cache=False,", 1).replace("parallel=True", "parallel=False"))
        body = [decorator, lines[deco + 1].replace("def kernel(", f"def {fname}(", 1), *lines[deco + 2:]]
        self.kernels.append("\n".join(body))
        return fname

    # -- equations outside groups -------------------------------------------------------------------------------
    def equation(self, e) -> None:
        prim = e.primitive
        out = e.outvars[0]
        single = _groups.alone(e)
        if single is not None:
            domain, red_axes = single
            self.kernel(_kernel.build(self.program.jaxpr.eqns, [self.index_of[id(e)]], set(e.outvars), domain,
                                      red_axes, parallel=False, version=fusion.MATHLIB_VERSION))
        elif prim is reshape_p and e.params.get("dimensions") is None or prim is squeeze_p:
            self.define(out, f"{self.value(e.invars[0])}.reshape({out.aval.shape!r})")
        elif prim is transpose_p:
            x = e.invars[0]
            perm = tuple(e.params["permutation"])
            if perm == (1, 0) and self.layout[x] == "C":
                self.define(out, f"{self.names[x]}.T", "T")
            elif perm == (1, 0):  # the transpose of a transposed view: the original C array
                self.define(out, f"{self.names[x]}.T", "C")
            else:
                self.define(out, f"np.ascontiguousarray(np.transpose({self.value(x)}, {perm!r}))")
        elif prim is slice_p:
            x = e.invars[0]
            strides = e.params.get("strides") or (1,) * x.aval.ndim
            index = ", ".join(f"{a}:{b}:{c}" for a, b, c in zip(e.params["start_indices"], e.params["limit_indices"],
                                                                 strides))
            self.define(out, f"np.ascontiguousarray({self.value(x)}[{index}{',' if x.aval.ndim == 1 else ''}])")
        elif prim is dot_general_p:
            self.define(out, self._product(e))
        elif prim in _UFUNCS and all(type(v) is Literal or v.aval.shape == out.aval.shape for v in e.invars):
            self._ufunc(e, _UFUNCS[prim])
        else:
            raise Unsupported(f"primitive {prim.name}")

    def _ufunc(self, e, fn: str) -> None:
        """An elementwise equation kernels have no scalar form for, as the NumPy ufunc Numba compiles."""
        out = e.outvars[0]
        dt = _np_type(out.aval.dtype)
        if out.aval.ndim:
            ops = [_literal(v) if type(v) is Literal else self.value(v) for v in e.invars]
            self.define(out, f"np.asarray({fn}({', '.join(ops)}), {dt})")
            return
        ops = [_literal(v) if type(v) is Literal else f"{self.names[v]}[()]" for v in e.invars]
        self.define(out, f"np.empty((), {dt})")
        self.lines.append(f"{self.names[out]}[()] = {fn}({', '.join(ops)})")

    def _product(self, e) -> str:
        """`np.dot` for a float32/float64 matrix product (matrix-matrix, matrix-vector, vector-matrix)."""
        lhs, rhs = e.invars
        if lhs.aval.dtype not in (np.float32, np.float64) or not contractions.computes_in_operand_dtype(e):
            raise Unsupported("a product Numba's np.dot does not compute")
        c = contractions.Contraction(e)
        if c.lhs_batch or len(c.lhs_contract) != 1 or lhs.aval.ndim > 2 or rhs.aval.ndim > 2:
            raise Unsupported("a batched or multi-axis product")
        if lhs.aval.ndim == 1 and rhs.aval.ndim == 1:
            raise Unsupported("a vector dot product")  # (scalar result; large ones are reductions already)
        (lc,), (rc,) = c.lhs_contract, c.rhs_contract
        a = self._operand(lhs, swap=lhs.aval.ndim == 2 and lc == 0)
        b = self._operand(rhs, swap=rhs.aval.ndim == 2 and rc == 1)
        return f"np.dot({a}, {b})"

    def _operand(self, v, swap: bool) -> str:
        name = self.value(v, contiguous=False)
        return f"{name}.T" if swap else name


def build(program: ClosedJaxpr) -> WholeStepSpec:
    """Generates the whole-step module of `program` (the fused tier's program, after `fusion.prepare`).

    Raises:
      Unsupported: the program cannot be compiled whole (see the module docstring for what is supported).
    """
    _check_types(program)
    j = program.jaxpr
    planner = fusion.Planner(load=False, min_elements=1, serial=True)
    pairs, order = planner.specs(program)
    em = _Emitter(program)
    args = [f"a{k}" for k in range(len(j.invars))] + [f"c{k}" for k in range(len(j.constvars))]
    for v, n in zip([*j.invars, *j.constvars], args):
        em.names[v] = n
        em.layout[v] = "C"
        if v.aval.ndim == 0:  # passed as a scalar (see `entry_function`); kernels read 0-d arrays
            em.define(v, f"np.empty((), {_np_type(v.aval.dtype)})")
            em.lines.append(f"{em.names[v]}[()] = {n}")
    if order is None:
        for e in j.eqns:
            em.equation(e)
    else:
        spec_of = {id(g): spec for g, spec in pairs}
        for node in order:
            if isinstance(node, _groups.Plain):
                em.equation(j.eqns[node.index])
            else:
                em.kernel(spec_of[id(node)])
    if len(em.kernels) > MAX_KERNELS:
        raise Unsupported(f"{len(em.kernels)} kernels (more than {MAX_KERNELS})")
    rets = [em.value(v) for v in j.outvars]
    ins = [v.aval for v in [*j.invars, *j.constvars]]
    sig = ", ".join(f"types.Array({_numba_type(a.dtype)}, {a.ndim}, 'C', readonly=True)" if a.ndim else
                    _numba_type(a.dtype) for a in ins)
    header = [
        f"# Generated by fluxion's compiler (whole-step, version {VERSION}). Do not edit: the file name is the hash "
        "of this text.",
        *em.imports,
        "",
        f"SIGNATURE = ({sig}{',' if len(ins) == 1 else ''})",
    ]
    entry = [
        "@numba.njit(SIGNATURE, parallel=False, cache=True, error_model='numpy', nogil=True)",
        f"def kernel({', '.join(args)}):",
        *("    " + ln for ln in em.lines),
        f"    return ({', '.join(rets)}{',' if len(rets) == 1 else ''})",
    ]
    if "import numba" not in em.imports or "import numpy as np" not in em.imports or \
            "from numba import types" not in em.imports:
        header[1:1] = [ln for ln in ("import numba", "import numpy as np", "from numba import types")
                       if ln not in em.imports]
    source = "\n\n\n".join(["\n".join(header), *em.kernels, "\n".join(entry)]) + "\n"
    consts = [getattr(c, "_value", c) for c in program.consts]
    return WholeStepSpec(source, [np.ascontiguousarray(c) for c in consts])


def _one_thread() -> int:
    return 1


def entry_function(native: Callable, consts: list, fallback: Callable, program: ClosedJaxpr) -> Callable:
    """The Python function `jit` calls: the native function on the raw arguments and the constants, or `fallback`
    when Numba refuses the arguments' types (a layout other than C-contiguous).

    A 0-d value is passed as a NumPy scalar (`x[()]`): `jit`'s raw 0-d arguments are 0-d arrays or NumPy scalars,
    and Numba types the two differently."""
    j = program.jaxpr
    params = ", ".join(f"a{k}" for k in range(len(j.invars)))
    native_args = [f"a{k}[()]" if v.aval.ndim == 0 else f"a{k}" for k, v in enumerate(j.invars)]
    native_args += [f"_c{k}" for k in range(len(consts))]
    consts = [c[()] if c.ndim == 0 else c for c in consts]
    blas_get, blas_set = blas.scipy_controls()
    dots = [e for e in j.eqns if e.primitive is dot_general_p]
    steer = blas_set is not None and bool(dots)
    threaded = any(threads.blas_parallel(threads.blas_work(e)) for e in dots)
    src = (f"def whole_step({params}):\n"
           + ("    _n = _current()\n    if _blas_get() != _n:\n        _blas_set(_n)\n" if steer else "")
           + f"    try:\n"
           f"        return _native({', '.join(native_args)})\n"
           f"    except TypeError:  # an argument layout the compiled signature does not take\n"
           f"        _fallbacks[0] += 1\n"
           f"        return _fallback({params})\n")
    fallbacks = [0]
    ns: dict = {"_native": native, "_fallback": fallback, "_fallbacks": fallbacks,
                "_current": threads.ceiling if threaded else _one_thread, "_blas_get": blas_get, "_blas_set": blas_set}
    ns.update({f"_c{k}": c for k, c in enumerate(consts)})
    exec(compile(src, "<fluxion whole-step entry>", "exec"), ns)  # noqa: S102 -- generated from the arity
    fn = ns["whole_step"]
    fn.fallbacks = fallbacks  # calls that ran `fallback` (for tests)
    return fn


__all__ = ["Unsupported", "WholeStepSpec", "build", "enabled", "entry_function", "VERSION"]
