"""The stages of a jitted function after tracing: the compiled executable for one signature
(`CompiledFunction`, what `jit` dispatches to), and the ahead-of-time API mirroring `jax.stages`:
`jit(f)` is a `Wrapped`; `.trace(*args)` -> `Traced` (the jaxpr), `.lower()` -> `Lowered`, `.compile()` ->
`Compiled` (the executable, callable). Each stage reports the signature's `in_tree`, `in_avals`, `args_info`,
`out_tree` and `out_info`."""

from __future__ import annotations

import time
import weakref
from typing import Any, Callable, Sequence

from . import backends, core, monitoring, profiler
from .core import Array
from .jit_trace import leaf_signature
from .tree_util import registered_kind, tree_flatten, tree_structure, tree_unflatten


class CompiledFunction:
    """A traced and compiled signature: the closed jaxpr, the executable, and how to rebuild outputs."""

    __slots__ = ("closed", "executable", "out_tree", "out_weak", "signature", "_single", "donated", "_run",
                 "_weak0", "_build", "name", "__weakref__")

    def __init__(self, closed: core.ClosedJaxpr, out_tree, signature, name: str = "jitted",
                 donated: Sequence[int] = ()):
        self.closed = closed
        self.out_tree = out_tree
        self.out_weak = [a.weak_type for a in closed.out_avals]
        self.donated = tuple(donated)
        self.name = f"jit({name})"
        start, start_ns = time.time(), time.perf_counter_ns()
        self.executable = backends.compile(closed, name=name, donated=self.donated)
        monitoring.record_duration(monitoring.BACKEND_COMPILE_EVENT, start, time.time(), fun_name=self.name)
        profiler.record_span(f"compile {self.name}", "compile", start_ns, time.perf_counter_ns())
        self.signature = signature
        self._single = out_tree == _LEAF_TREE and len(self.out_weak) == 1
        self._weak0 = self.out_weak[0] if self.out_weak else False
        # Generated executables expose the bare function: one Python call less on the hot path. When the
        # executable later switches to fused kernels it tells us, through a weak reference (caches own us).
        self._run = getattr(self.executable, "fn", self.executable)
        add_listener = getattr(self.executable, "add_listener", None)
        if add_listener is not None:
            ref = weakref.ref(self)

            def on_upgrade(fn, ref=ref):
                me = ref()
                if me is not None:
                    me._run = fn
            add_listener(on_upgrade)

        self._build = _output_builder(out_tree, self.out_weak)

    def __call__(self, raw_args: list) -> Any:
        outs = self._run(*raw_args)
        if self._single:
            return Array(outs[0], self._weak0)
        return self._build(outs)


_LEAF_TREE = tree_structure(0)
_plain_call = CompiledFunction.__call__


def _profiled_call(self: CompiledFunction, raw_args: list) -> Any:
    """`CompiledFunction.__call__` while a profiler trace is active: each call is a span named `jit(<name>)`."""
    start = time.perf_counter_ns()
    try:
        return _plain_call(self, raw_args)
    finally:
        profiler.record_span(self.name, "execute", start, time.perf_counter_ns())


def _on_profiler(active: bool) -> None:
    # Calls look `__call__` up on the class, so swapping it leaves the unprofiled dispatch path untouched.
    CompiledFunction.__call__ = _profiled_call if active else _plain_call


profiler.add_activation_hook(_on_profiler)


def _output_builder(out_tree, out_weak: list) -> Callable:
    """A function rebuilding the output pytree (of Arrays) from raw outputs, generated for this structure.

    It is a single expression (`TrainState(step=..., params={...})`-like calls with the node types and aux data
    bound), so the per-call cost has no recursion over the treedef; falls back to `tree_unflatten` for structures
    it does not know how to spell.
    """
    ns: dict = {"_A": Array}
    counter = iter(range(1 << 30))

    def name(obj) -> str:
        k = f"_g{next(counter)}"
        ns[k] = obj
        return k

    leaf = iter(range(len(out_weak)))

    def expr(td) -> str:
        if td.node_type is None:
            i = next(leaf)
            return f"_A(L[{i}], {bool(out_weak[i])})"
        kids = ", ".join(expr(c) for c in td.children)
        t = td.node_type
        if t is tuple:
            return f"({kids}{',' if len(td.children) == 1 else ''})"
        if t is list:
            return f"[{kids}]"
        kind = registered_kind(t)
        if kind is None:  # namedtuple
            return f"{name(t)}({kids})"
        return f"{name(kind.from_iter)}({name(td.aux)}, [{kids}])"

    try:
        src = "lambda L: " + expr(out_tree)
        return eval(src, ns)  # noqa: S307 -- generated from the treedef only
    except Exception:  # noqa: BLE001
        return lambda outs: tree_unflatten(out_tree, [Array(o, w) for o, w in zip(outs, out_weak)])


class ArgInfo:
    """One argument of a traced signature: its abstract value (`shape`, `dtype`) and whether it is donated."""

    __slots__ = ("_aval", "donated")

    def __init__(self, aval: core.ShapedArray, donated: bool):
        self._aval = aval
        self.donated = bool(donated)

    @property
    def shape(self) -> tuple:
        return self._aval.shape

    @property
    def dtype(self):
        return self._aval.dtype

    def __eq__(self, other) -> bool:
        return isinstance(other, ArgInfo) and (self._aval, self.donated) == (other._aval, other.donated)

    def __hash__(self) -> int:
        return hash((self._aval, self.donated))

    def __repr__(self) -> str:
        return f"ArgInfo(_aval={self._aval!r}, donated={self.donated})"


# Options passed to `Lowered.compile(compiler_options=...)`: option name -> value.
CompilerOptions = dict[str, "str | bool"]


class Wrapped:
    """A function wrapped by `jit`: callable, and with the ahead-of-time entry points `trace(*args)` (-> `Traced`)
    and `lower(*args)` (-> `Lowered`). Arguments may be arrays or `ShapeDtypeStruct`s."""

    def __call__(self, *args, **kwargs):
        raise NotImplementedError

    def trace(self, *args, **kwargs) -> "Traced":
        raise NotImplementedError

    def lower(self, *args, **kwargs) -> "Lowered":
        raise NotImplementedError


class _Stage:
    """What every stage knows about one signature: the program, the argument and result structures, and which
    flat arguments are donated."""

    def __init__(self, closed: core.ClosedJaxpr, out_tree, in_tree, name: str = "jitted", donated: Sequence[int] = ()):
        self.jaxpr = closed
        self.out_tree = out_tree
        self.in_tree = in_tree
        self.name = name
        self.fun_name = name
        self._donated = tuple(donated)

    @property
    def in_avals(self):
        """The abstract values of the arguments, with the structure `(args, kwargs)` of the dynamic arguments."""
        return tree_unflatten(self.in_tree, list(self.jaxpr.in_avals))

    @property
    def args_info(self):
        """`ArgInfo` per argument, with the structure `(args, kwargs)` of the dynamic arguments."""
        return tree_unflatten(self.in_tree, [ArgInfo(a, i in self._donated)
                                             for i, a in enumerate(self.jaxpr.in_avals)])

    @property
    def donate_argnums(self) -> tuple:
        """The flat indices of the donated arguments."""
        return self._donated

    @property
    def out_info(self):
        """`ShapeDtypeStruct` per result, with the structure of the function's output."""
        from .api import ShapeDtypeStruct
        return tree_unflatten(self.out_tree, [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type)
                                              for a in self.jaxpr.out_avals])

    @property
    def out_avals(self):
        return tree_unflatten(self.out_tree, list(self.jaxpr.out_avals))

    def _args(self):
        return (self.jaxpr, self.out_tree, self.in_tree, self.name, self._donated)


class Traced(_Stage):
    """A function traced for one signature: `.jaxpr` is its program (a `ClosedJaxpr`), `.lower()` the next stage."""

    def lower(self, *, lowering_platforms=None) -> "Lowered":
        return Lowered(*self._args())


class Lowered(_Stage):
    """A traced program ready to compile: `.as_text()` prints the jaxpr, `.compile()` builds the executable.

    fluxion has no intermediate representation between the jaxpr and generated code, so `as_text` shows the jaxpr
    (JAX's shows StableHLO). Not here: `compiler_ir` (no MLIR) and `cost_analysis` (fluxion's FLOP counter lives
    with its Flax mirror, fluxion/flax/linen/_flops.py).
    """

    def as_text(self, dialect: str | None = None, *, debug_info: bool = False) -> str:
        return str(self.jaxpr)

    def compile(self, compiler_options: "CompilerOptions | None" = None) -> "Compiled":
        """Builds the executable. `compiler_options` (XLA flags) are accepted and ignored: fluxion's compiler
        reads its options from `fluxion.config`."""
        return Compiled(self)


class Compiled(_Stage):
    """An executable for one signature: `.as_text()` shows the generated code, calling it runs it.

    Call it with the dynamic arguments only (static ones are part of the program). Arguments of another
    structure, shape or dtype raise `TypeError`, as in JAX.
    """

    def __init__(self, lowered: Lowered):
        super().__init__(*lowered._args())
        self.lowered = lowered
        self._fn = CompiledFunction(lowered.jaxpr, lowered.out_tree, None, name=lowered.name,
                                    donated=lowered.donate_argnums)

    def as_text(self) -> str:
        return backends.executable_text(self._fn.executable, self.lowered.jaxpr.jaxpr)

    def __call__(self, *args, **kwargs):
        core.float_checks.check_execution(f"jit({self.lowered.name})")
        leaves, in_tree = tree_flatten((args, kwargs))
        if in_tree != self.in_tree:
            raise TypeError(f"Function compiled with input pytree does not match the input pytree it was called "
                            f"with: compiled for {self.in_tree}, called with {in_tree}")
        sigs = [leaf_signature(x) for x in leaves]
        mismatches = [f"argument {i} compiled with {a.str_short()} and called with "
                      f"{core.ShapedArray(shape, dtype).str_short()}"
                      for i, (a, ((shape, dtype, _), _)) in enumerate(zip(self.jaxpr.in_avals, sigs))
                      if (a.shape, a.dtype) != (shape, dtype)]
        if mismatches:
            raise TypeError("Argument types differ from the types for which this computation was compiled. The "
                            "mismatches are:\n" + "\n".join(mismatches))
        return self._fn([raw for _, raw in sigs])
