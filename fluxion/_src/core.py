"""The core: abstract values, arrays, primitives, the trace stack, and the jaxpr IR.

How a primitive application is dispatched (see ARCHITECTURE.md):

* With no transformation active (the trace stack holds only the eager evaluator), `Primitive.bind` goes straight to
  the backend implementation on the NumPy buffers and wraps the result in an `Array`. That path does no trace
  search, no pytree work and no abstract evaluation: the output's weak type comes from the primitive's
  `weak_type_rule`, its shape and dtype from NumPy.
* Otherwise `bind` finds the top trace among its arguments (and the current *dynamic* trace, which captures every
  operation while `jit`/`make_jaxpr` is staging), raises every argument to it, and calls its `process_primitive`.

Transformations are `Trace` subclasses living at increasing levels of a stack (the design of Autodidax, Part 1):
a tracer belongs to the trace of one level; values from lower levels are lifted into higher ones.
"""

from __future__ import annotations

import contextlib
import itertools
import operator
import threading
import time
import warnings
from contextlib import contextmanager
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from . import dtypes, forks, profiler
from .array_methods import ArrayOps
from .config import config
from .memory import MemorySpace
from .sharding import EXPLICIT_IN_USE, type_sharding

# --------------------------------------------------------------------------------------------------------------
# Abstract values
# --------------------------------------------------------------------------------------------------------------

_KEEP = object()  # ShapedArray.update's "unchanged" marker for `sharding` (None is a value)


class ShapedArray:
    """The abstract value of an array: its shape, dtype and weak-type flag (no data).

    Attributes:
      shape: tuple of non-negative ints.
      dtype: a canonical NumPy dtype.
      weak_type: True for values that came from Python scalars and adopt the dtype of what they meet.
      sharding: None, or (explicit sharding mode only) a `NamedSharding` over an `AbstractMesh` whose spec has one
        entry per dimension and names only `Explicit` mesh axes: the sharding that is part of the type
        (`float32[8@data,4]`). Unsharded avals compare and hash exactly as before the field existed.
    """

    __slots__ = ("shape", "dtype", "weak_type", "sharding")
    array_abstraction_level = 1

    def __init__(self, shape: tuple, dtype: np.dtype, weak_type: bool = False, sharding=None):
        self.shape = tuple(shape)
        self.dtype = dtype
        self.weak_type = bool(weak_type)
        self.sharding = sharding

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def memory_space(self) -> MemorySpace:
        """Where values of this type live: always `MemorySpace.Device` (fluxion's devices compute in host RAM)."""
        return MemorySpace.Device

    def update(self, shape=None, dtype=None, weak_type=None, sharding=_KEEP) -> "ShapedArray":
        # A new shape drops the sharding (its spec has one entry per dimension) unless one is given.
        if sharding is _KEEP:
            sharding = self.sharding if shape is None or tuple(shape) == self.shape else None
        return ShapedArray(self.shape if shape is None else shape, self.dtype if dtype is None else dtype,
                           self.weak_type if weak_type is None else weak_type, sharding)

    def strip_weak_type(self) -> "ShapedArray":
        return ShapedArray(self.shape, self.dtype, False, self.sharding) if self.weak_type else self

    def __eq__(self, other) -> bool:
        return (type(other) is ShapedArray and self.shape == other.shape and self.dtype == other.dtype
                and self.weak_type == other.weak_type and self.sharding == other.sharding)

    def __hash__(self) -> int:
        if self.sharding is None:
            return hash((self.shape, self.dtype, self.weak_type))
        return hash((self.shape, self.dtype, self.weak_type, self.sharding))

    def _dims(self) -> str:
        if self.sharding is None:
            return ",".join(map(str, self.shape))
        return ",".join(f"{n}{_spec_suffix(p)}" for n, p in zip(self.shape, self.sharding.spec))

    def str_short(self) -> str:
        return f"{dtypes.short_name(self.dtype)}[{self._dims()}]"

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self.dtype.name}[{self._dims()}]{weak})"

    def __str__(self) -> str:
        # JAX's `str(aval)`: the full dtype name, `~` marking a weak type (jaxpr text uses `str_short`).
        return f"{'~' if self.weak_type else ''}{self.dtype.name}[{self._dims()}]"


def _spec_suffix(entry) -> str:
    """How JAX writes one spec entry after a dimension's size: `@data`, `@(data,model)`, nothing when unsplit."""
    if entry is None:
        return ""
    if isinstance(entry, tuple):
        return "@(" + ",".join(entry) + ")"
    return f"@{entry}"


def raise_to_shaped(aval: ShapedArray, weak_type: bool | None = None) -> ShapedArray:
    return aval if weak_type is None else aval.update(weak_type=weak_type)


# XLA computes overflow, division by zero and invalid operations silently (inf/nan); NumPy warns. fluxion's own
# evaluation is silenced by attributing: NumPy reports these warnings from the Python frame that called it, so a
# filter on fluxion's internal modules and its generated code silences exactly fluxion's operations and never the
# user's own NumPy code. (An `np.errstate` around each eager operation would cost 3 us, a context-variable switch
# 0.3 us, against an eager `x * y` of about 1 us; this filter costs nothing until a warning is issued.)
# A filter of the user's that comes first (`warnings.simplefilter("error")`, pytest's `-W error`) or
# `np.seterr(all="raise")` still turns such a warning into an exception; an eager operation then runs again under
# `np.errstate(all="ignore")` (`quietly`): eager implementations are pure, so the retry only costs time when it
# happens, and the result is JAX's silent inf/nan.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"(fluxion\._src\.|fluxion_generated_|fluxion_kernel_)")

FLOAT_WARNINGS = (RuntimeWarning, FloatingPointError)
"""What NumPy's floating-point warnings become under a user's "error" filter or `np.seterr(all="raise")`."""


def quietly(fn: Callable, *args, **params):
    """`fn(*args, **params)` with NumPy's floating-point warnings off (the retry described above)."""
    with np.errstate(all="ignore"):
        return fn(*args, **params)


# --------------------------------------------------------------------------------------------------------------
# Concrete arrays
# --------------------------------------------------------------------------------------------------------------

class _DeletedBuffer:
    """What a deleted Array holds instead of its buffer: its shape and dtype stay readable (as in JAX), and every
    other use -- NumPy conversion, any attribute -- raises `RuntimeError` naming the array."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: tuple, dtype: np.dtype):
        self.shape = shape
        self.dtype = dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def _error(self) -> RuntimeError:
        return RuntimeError(f"Array has been deleted with shape={np.dtype(self.dtype).name}"
                            f"{list(self.shape)}. It was donated to a jitted function (donate_argnums) or deleted "
                            "with .delete(); use the function's result instead, or do not donate it.")

    def __array__(self, dtype=None, copy=None):
        raise self._error()

    def __getattr__(self, name):
        raise self._error()

    def __len__(self):
        raise self._error()

    def __getitem__(self, key):
        raise self._error()

    def __bool__(self):
        raise self._error()

    def __float__(self):
        raise self._error()

    def __int__(self):
        raise self._error()


class Array(ArrayOps):
    """An immutable n-dimensional array held in a NumPy buffer (`jax.Array`'s counterpart).

    Create arrays with `fluxion.numpy` functions (`jnp.array`, `jnp.zeros`, ...), not with this constructor.
    The buffer is never written after construction; `np.asarray(x)` returns a read-only view of it.
    """

    __slots__ = ("_value", "weak_type", "_aval", "_sharding", "__weakref__")
    __array_priority__ = 100

    def __init__(self, value: Any, weak_type: bool = False, sharding=None):
        self._value = value
        self.weak_type = weak_type
        self._aval = None  # built on first request (see get_aval); Arrays are immutable, so it stays valid
        # The placement requested by device_put / shard_map / jit(out_shardings) (None: device 0). It is metadata:
        # the value is always the one global buffer, and shards are views of it (see fluxion/_src/sharding.py).
        self._sharding = sharding

    @property
    def aval(self) -> ShapedArray:
        return get_aval(self)

    @property
    def shape(self) -> tuple:
        return self._value.shape

    @property
    def dtype(self) -> np.dtype:
        return self._value.dtype

    @property
    def ndim(self) -> int:
        return self._value.ndim

    @property
    def size(self) -> int:
        return self._value.size

    @property
    def itemsize(self) -> int:
        return self._value.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self._value.nbytes

    def __array__(self, dtype=None, copy=None):
        v = np.asarray(self._value)
        if dtype is not None and v.dtype != dtype:
            return v.astype(dtype)
        if copy:
            return v.copy()
        view = v.view()
        view.flags.writeable = False
        return view

    def __dlpack__(self, *args, **kwargs):
        return np.asarray(self._value).__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return np.asarray(self._value).__dlpack_device__()

    def delete(self) -> None:
        """Releases the buffer: afterwards only `shape`, `dtype` and `is_deleted()` work, everything else raises
        `RuntimeError` (as for JAX arrays). Arrays donated to a jitted function are deleted this way."""
        v = self._value
        if type(v) is not _DeletedBuffer:
            self._value = _DeletedBuffer(v.shape, v.dtype)

    def is_deleted(self) -> bool:
        """Whether `delete()` was called (or the array was donated)."""
        return type(self._value) is _DeletedBuffer

    def block_until_ready(self) -> "Array":
        """Returns `self`: NumPy computations finish before their result exists, so there is nothing to wait for."""
        return self

    def copy_to_host_async(self) -> None:
        return None

    @property
    def sharding(self):
        """Where the array's blocks live: the sharding given to `device_put` (or `shard_map`'s out_specs, jit's
        out_shardings), else a `SingleDeviceSharding` on this process's first device."""
        from .sharding import default_sharding
        s = getattr(self, "_sharding", None)
        return default_sharding() if s is None else s

    @property
    def addressable_shards(self) -> list:
        """One `Shard` per device of this process holding a block (views of the global buffer)."""
        from .sharding import shards_of
        return shards_of(np.asarray(self._value), self.sharding)

    @property
    def global_shards(self) -> list:
        """One `Shard` per device of every process; shards of other processes' devices have `data` None."""
        from .sharding import shards_of
        return shards_of(np.asarray(self._value), self.sharding, everywhere=True)

    @property
    def is_fully_addressable(self) -> bool:
        return self.sharding.is_fully_addressable

    @property
    def committed(self) -> bool:
        return getattr(self, "_sharding", None) is not None

    @property
    def is_fully_replicated(self) -> bool:
        return self.sharding.is_fully_replicated

    def devices(self) -> set:
        """The set of devices holding a block of the array."""
        return self.sharding.device_set

    def __repr__(self) -> str:
        if type(self._value) is _DeletedBuffer:
            return f"Array(<deleted>, shape={self._value.shape}, dtype={self._value.dtype.name})"
        v = np.asarray(self._value)
        weak = ", weak_type=True" if self.weak_type else ""
        if v.size == 0:
            body = "[]" if v.ndim == 1 else repr(v)[6:-1].split(", shape=")[0]
            return f"Array({body}, shape={v.shape}, dtype={v.dtype.name}{weak})"
        body = "Array(" + np.array2string(v, separator=", ", prefix="Array(") + ","
        tail = f"dtype={v.dtype.name}{weak})"
        # JAX's layout: when the dtype would push the last line past 75 columns it is separated by the
        # prefix's width of spaces (on the same line) instead of one space.
        last_line = len(body) - (body.rfind("\n") + 1)
        spacer = " " * len("Array(") if last_line + len(tail) + 1 > 75 else " "
        return body + spacer + tail

    def __str__(self) -> str:
        return str(np.asarray(self._value))

    def __format__(self, spec: str) -> str:
        if self._value.ndim == 0:
            return format(self._value.item(), spec)
        return format(str(self), spec)

    def __hash__(self):
        raise TypeError("unhashable type: 'Array' (arrays are mutable-looking values; use a tuple of floats or "
                        "x.tobytes() as a key)")

    # Concrete conversions: these are what tracers refuse.
    def __bool__(self) -> bool:
        return bool(self._value)

    def __int__(self) -> int:
        return int(self._value)

    def __float__(self) -> float:
        return float(self._value)

    def __complex__(self) -> complex:
        return complex(self._value)

    def __index__(self) -> int:
        if not dtypes.is_integer(self.dtype) and self.dtype != dtypes.bool_:
            raise TypeError(f"Only integer scalar arrays can be converted to a scalar index, got dtype {self.dtype}")
        return operator.index(self._value.item() if self._value.ndim == 0 else self._value)

    def item(self, *args):
        return self._value.item(*args)

    def tolist(self):
        return np.asarray(self._value).tolist()

    def tobytes(self, order="C") -> bytes:
        return np.asarray(self._value).tobytes(order)

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        v = self._value
        w = self.weak_type
        return (Array(v[i], w) for i in range(v.shape[0]))

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of unsized object")
        return self._value.shape[0]

    def __reduce__(self):
        return (_reconstruct_array, (np.asarray(self._value), self.weak_type))

    def __getstate__(self):
        return None

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


def _reconstruct_array(value, weak_type):
    return Array(value, weak_type)


def fast_binary_operator(prim: "Primitive", slow: Callable, dtypes_ok: frozenset) -> Callable:
    """An `Array` operator method with a shortcut for the commonest eager case, else `slow` (the full path).

    The shortcut applies when no transformation is active and both operands are `Array`s of one dtype in
    `dtypes_ok`. Then the `fluxion.numpy` function would promote nothing and bind `prim` once, after inserting
    `broadcast_in_dim`s if the shapes differ; eagerly, that gives the values NumPy's own broadcasting gives, so
    calling the primitive's backend implementation directly and applying its weak-type rule yields the same
    value, dtype and weak type, minus about half a microsecond of dispatch. (Shapes are not compared up front:
    that costs as much as the rest of the checks; shapes that do not broadcast make NumPy raise, and the full path
    then raises its own error.) `dtypes_ok` leaves out what the full path treats specially (bool `+`/`*` become
    logical or/and; integer `/` computes in floats; bool `-` is an error it words itself).
    """
    impl = prim.impl
    # An implementation that picks a compiled kernel for large operands (eager/elementwise.py `_arithmetic`) names
    # the plain loop it runs below its size threshold: small operands call that loop directly, skipping the wrapper.
    small = getattr(impl, "small_operands", None)
    large_from = getattr(impl, "large_from", 0)
    if prim.weak_type_rule not in (_all_weak, _never_weak):
        raise ValueError(f"no fast path for the weak-type rule of {prim.name}")
    all_weak = prim.weak_type_rule is _all_weak  # else never weak
    everywhere = all_eager
    local = _thread_states

    checks = float_checks

    def method(self, other):
        # Placed operands take the full path: in explicit sharding mode their result is typed through `bind`.
        if (type(other) is Array and (everywhere.value or local.state.eager) and not checks.on
                and self._sharding is None and other._sharding is None):
            a = self._value
            b = other._value
            dt = a.dtype
            # `is` first: canonical dtypes are singletons, so the usual case costs one identity test.
            if (dt is b.dtype or dt == b.dtype) and dt in dtypes_ok:
                fn = small if small is not None and a.size < large_from > b.size else impl
                try:
                    out = fn(a, b)
                except ValueError:  # shapes that do not broadcast: the full path words the error
                    return slow(self, other)
                except FLOAT_WARNINGS:
                    out = quietly(fn, a, b)
                return Array(out, True if all_weak and self.weak_type and other.weak_type else False)
        return slow(self, other)

    method.__name__ = slow.__name__
    method.__qualname__ = f"Array.{slow.__name__}"
    method.__doc__ = slow.__doc__
    return method


def concrete_value(x: Any):
    """The NumPy value behind `x` if it is known now (an Array, or a tracer wrapping one), else None."""
    if type(x) is Array:
        return x._value
    if isinstance(x, Tracer):
        return x._concrete_value()
    if isinstance(x, (np.ndarray, np.generic, bool, int, float, complex)):
        return x
    return None


# --------------------------------------------------------------------------------------------------------------
# Primitives and binding
# --------------------------------------------------------------------------------------------------------------

def _all_weak(args: Sequence[Any], params: dict) -> bool:
    if not args:
        return False
    for a in args:
        if not getattr(a, "weak_type", False):
            return False
    return True


def _first_weak(args, params) -> bool:
    return bool(getattr(args[0], "weak_type", False)) if args else False


def _never_weak(args, params) -> bool:
    return False


WEAK_RULES = {"all": _all_weak, "first": _first_weak, "never": _never_weak}


# Shape/dtype rules, one per primitive: rule(*avals, **params) -> ShapedArray (or a list for multiple results).
# The output's weak type is decided by the primitive's `weak_type_rule`, shared with the eager path.
abstract_eval_rules: dict = {}


class Primitive:
    """A named operation with rules for every transformation, registered in per-transformation tables.

    Attributes:
      name: the name printed in jaxprs.
      multiple_results: True if `bind` returns a list of outputs.
      weak_type_rule: function (args, params) -> bool giving the output's weak type (eager path and tracing); a
        primitive with multiple results may return one bool per output instead.
    """

    __slots__ = ("name", "multiple_results", "weak_type_rule", "impl")

    def __init__(self, name: str, multiple_results: bool = False, weak_type: str | Callable = "all"):
        self.name = name
        self.multiple_results = multiple_results
        self.weak_type_rule = WEAK_RULES[weak_type] if isinstance(weak_type, str) else weak_type
        self.impl = None  # set by the backend that implements it

    def __repr__(self) -> str:
        return self.name

    def bind(self, *args, **params):
        if all_eager.value or _thread_states.state.eager:
            return eager_apply(self, args, params)
        return bind_with_trace(self, args, params)


class FloatChecks:
    """`jax_debug_nans` / `jax_debug_infs` / `jax_no_execution`: whether every eager primitive is checked -- before
    it runs (no_execution) or on its output (NaNs, infs). Kept in sync with config by hooks; `on` is the one
    attribute the eager paths read, and `jit` runs op by op while it is set, so its calls are checked too."""

    __slots__ = ("nans", "infs", "no_execution", "on")

    def __init__(self):
        self.nans = self.infs = self.no_execution = self.on = False

    def set(self, nans: bool | None = None, infs: bool | None = None, no_execution: bool | None = None) -> None:
        if nans is not None:
            self.nans = bool(nans)
        if infs is not None:
            self.infs = bool(infs)
        if no_execution is not None:
            self.no_execution = bool(no_execution)
        self.on = self.nans or self.infs or self.no_execution

    def check_execution(self, name: str) -> None:
        """Raises `RuntimeError` (JAX's message) if executions are disallowed (`jax.no_execution`)."""
        if self.no_execution:
            raise RuntimeError(f"fluxion tried to execute function {name}, but the no_execution config option is set")

    def check(self, prim: "Primitive", out: Any) -> None:
        """Raises `FloatingPointError` (JAX's message) if an output of `prim` holds a NaN (or an inf) being checked."""
        for o in (out if prim.multiple_results else (out,)):
            o = np.asarray(o)
            if not dtypes.is_inexact(o.dtype):
                continue
            if self.nans and np.isnan(o).any():
                raise FloatingPointError(f"invalid value (nan) encountered in {prim.name}")
            if self.infs and np.isinf(o).any():
                raise FloatingPointError(f"invalid value (inf) encountered in {prim.name}")


float_checks = FloatChecks()
config.add_hook("jax_debug_nans", lambda v: float_checks.set(nans=v))
config.add_hook("jax_debug_infs", lambda v: float_checks.set(infs=v))
config.add_hook("jax_no_execution", lambda v: float_checks.set(no_execution=v))
float_checks.set(nans=config.jax_debug_nans, infs=config.jax_debug_infs, no_execution=config.jax_no_execution)


def _plain_eager_apply(prim: Primitive, args: Sequence[Any], params: dict):
    """Runs `prim` on concrete values with the backend implementation (the eager hot path)."""
    vals = [a._value if type(a) is Array else _raw_operand(a, prim) for a in args]
    impl = prim.impl
    if impl is None:
        raise NotImplementedError(f"Primitive '{prim.name}' has no implementation on the NumPy backend")
    if float_checks.on:  # one read of a plain attribute when no check is on (the common case)
        float_checks.check_execution(prim.name)
        out = impl(*vals, **params)
        float_checks.check(prim, out)
    else:
        try:
            out = impl(*vals, **params)
        except FLOAT_WARNINGS:
            out = quietly(impl, *vals, **params)
    weak = prim.weak_type_rule(args, params)
    if prim.multiple_results:
        if type(weak) is bool:
            return [Array(o, weak) for o in out]
        return [Array(o, w) for o, w in zip(out, weak)]
    return Array(out, weak)


# `Primitive.bind` looks `eager_apply` up in this module's globals on each call, so the two optional layers below
# (explicit-sharding typing, profiler spans) are installed by swapping it: programs that use neither pay nothing.
_base_eager_apply = _plain_eager_apply  # the plain function, or the explicit-sharding one once that mode is on
_profiling = False
eager_apply = _plain_eager_apply


def _install_eager_apply() -> None:
    global eager_apply
    eager_apply = _profiled_eager_apply if _profiling else _base_eager_apply


def _profiled_eager_apply(prim: Primitive, args: Sequence[Any], params: dict):
    """`eager_apply` while a profiler trace is active: each primitive is a span named after it."""
    start = time.perf_counter_ns()
    try:
        return _base_eager_apply(prim, args, params)
    finally:
        profiler.record_span(prim.name, "eager", start, time.perf_counter_ns())


def _on_profiler(active: bool) -> None:
    global _profiling
    _profiling = active
    _install_eager_apply()


profiler.add_activation_hook(_on_profiler)


# Staging's sharding rule in explicit sharding mode: `(prim, in avals, out aval(s), params) -> out aval(s)` typed
# with shardings (set by `enable_explicit_sharding`; staging calls it only while `EXPLICIT_IN_USE`).
type_outputs: list = [None]


def enable_explicit_sharding(hook: Callable, typer: Callable) -> None:
    """Routes every eager primitive application through `hook(prim, args, params, plain_apply)`, and staging's
    abstract results through `typer`, from now on.

    Called once, when the process first builds a sharding over a mesh with `Explicit` axes (see
    `lax/sharding_rules.py`): both type the outputs' shardings. Until then `eager_apply` is the plain function, so
    programs that never use explicit sharding pay nothing for it.
    """
    global _base_eager_apply
    type_outputs[0] = typer

    def explicit_eager_apply(prim, args, params):
        return hook(prim, args, params, _plain_eager_apply)

    _base_eager_apply = explicit_eager_apply
    _install_eager_apply()


def _raw_operand(a: Any, prim: Primitive) -> Any:
    """An eager operand that is not an Array: NumPy values and Python scalars pass as they are."""
    if isinstance(a, Tracer):
        raise escaped_tracer_error(a, prim)
    return a


def bind_with_trace(prim: Primitive, args: Sequence[Any], params: dict):
    top = _top_main(args)
    if top.level == 0:
        # No tracer among the arguments and nothing staging: the primal half of a JVP rule, or a transformation's
        # work on constants. EvalTrace would lift nothing and call eager_apply; call it directly.
        return eager_apply(prim, args, params)
    trace = top.trace
    # Tracers of the top level itself (the usual case) need no raising; full_raise handles everything else.
    return trace.process_primitive(
        prim, [a if isinstance(a, Tracer) and a._trace.main is top else full_raise(trace, a) for a in args], params)


# --------------------------------------------------------------------------------------------------------------
# Traces and tracers
# --------------------------------------------------------------------------------------------------------------

class MainTrace:
    """One level of the trace stack: a transformation in progress, with its per-transformation payload.

    `trace` is the level's interpreter. Traces hold nothing but their main, so one instance per level serves every
    primitive bound at that level (creating one per bind was a measurable share of eager `grad`).
    """

    __slots__ = ("level", "trace_type", "payload", "active", "trace")

    def __init__(self, level: int, trace_type: type, payload: Any = None):
        self.level = level
        self.trace_type = trace_type
        self.payload = payload
        self.active = True
        self.trace = trace_type(self)

    def __repr__(self) -> str:
        return f"MainTrace({self.level}, {self.trace_type.__name__})"


class TraceState:
    """One thread's trace stack: its levels, its dynamic (staging) level, and whether it is evaluating eagerly.

    Every thread has its own (`thread_state()`), as in JAX: a data-loading thread's eager operations must not be
    captured by a `jit` trace running in the training thread.
    """

    __slots__ = ("stack", "dynamic", "eager", "inline_staged_calls")

    def __init__(self):
        base = MainTrace(0, EvalTrace)
        self.stack: list[MainTrace] = [base]
        self.dynamic: MainTrace = base
        self.eager = True
        self.inline_staged_calls = False  # see `inline_staged_calls`

    def refresh(self):
        eager = len(self.stack) == 1 and self.dynamic is self.stack[0]
        if eager != self.eager:
            self.eager = eager
            _count_tracing_thread(-1 if eager else 1)


class _ThreadStates(threading.local):
    def __init__(self):
        self.state = TraceState()


class AllEager:
    """`all_eager.value` is True while no thread is tracing (the eager hot path tests only this plain attribute,
    about 10 ns, instead of the thread-local state, about 60 ns). It is conservative: a thread that traces counts
    itself before binding anything, so whenever the flag reads True the reading thread is eager."""

    __slots__ = ("value", "tracing")

    def __init__(self):
        self.value = True
        self.tracing = 0


all_eager = AllEager()
_all_eager_lock = forks.lock()


def _count_tracing_thread(delta: int) -> None:
    with _all_eager_lock:
        all_eager.tracing += delta
        all_eager.value = all_eager.tracing == 0


def thread_state() -> TraceState:
    """The calling thread's trace state."""
    return _thread_states.state


@contextlib.contextmanager
def inline_staged_calls():
    """Within the block, on this thread, library functions that a jaxpr shows as named `jit` calls
    (`staged_call.staged_as_call`) run inline while a jaxpr is built, so the jaxpr holds their primitives where an
    eager call runs them. The eager `grad` cache traces this way: its program then transposes each function's
    primitives in the order the eager path does (a call is transposed as one unit, which can sum cotangents in
    another order and round differently)."""
    state = _thread_states.state
    before = state.inline_staged_calls
    state.inline_staged_calls = True
    try:
        yield
    finally:
        state.inline_staged_calls = before


def is_eager() -> bool:
    """Whether the calling thread evaluates primitives eagerly (no transformation is tracing in it)."""
    return all_eager.value or _thread_states.state.eager


class Trace:
    """Base class of interpreters. Subclasses implement `pure`, `lift` and `process_primitive`."""

    __slots__ = ("main",)

    def __init__(self, main: MainTrace):
        self.main = main

    def pure(self, val: Any) -> "Tracer":
        raise NotImplementedError

    lift = pure

    def process_primitive(self, primitive: Primitive, tracers: list, params: dict):
        raise NotImplementedError

    def process_custom_jvp_call(self, primitive, fun, jvp, tracers, *, symbolic_zeros=False):
        raise NotImplementedError(f"{type(self).__name__} does not support custom_jvp")

    def process_custom_vjp_call(self, primitive, fun, fwd, bwd, tracers, out_trees):
        raise NotImplementedError(f"{type(self).__name__} does not support custom_vjp")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(level={self.main.level})"


class EvalTrace(Trace):
    """The bottom of the stack: applies primitives to concrete values."""

    def pure(self, val):
        return val

    lift = pure

    def process_primitive(self, primitive, tracers, params):
        return eager_apply(primitive, tracers, params)

    def process_custom_jvp_call(self, primitive, fun, jvp, tracers, *, symbolic_zeros=False):
        return fun(*tracers)

    def process_custom_vjp_call(self, primitive, fun, fwd, bwd, tracers, out_trees):
        return fun(*tracers)


_thread_states = _ThreadStates()


def cur_level() -> int:
    return _thread_states.state.stack[-1].level


class new_main:
    """Pushes a new level for `trace_type`; if `dynamic`, it also captures operations on plain values.

    Use as `with new_main(...) as main:`. (A class rather than a generator context manager: every `grad` enters
    two, and the generator machinery cost microseconds per use.)
    """

    __slots__ = ("trace_type", "dynamic", "payload", "main", "prev_dynamic")

    def __init__(self, trace_type: type, dynamic: bool = False, payload: Any = None):
        self.trace_type = trace_type
        self.dynamic = dynamic
        self.payload = payload

    def __enter__(self) -> MainTrace:
        state = _thread_states.state
        stack = state.stack
        main = self.main = MainTrace(len(stack), self.trace_type, self.payload)
        stack.append(main)
        self.prev_dynamic = state.dynamic
        if self.dynamic:
            state.dynamic = main
        state.refresh()
        return main

    def __exit__(self, *exc) -> None:
        state = _thread_states.state
        main = self.main
        main.active = False
        main.trace = None  # break the main <-> trace cycle so the level's payload is freed by refcounting
        state.stack.pop()
        state.dynamic = self.prev_dynamic
        state.refresh()


@contextmanager
def new_base_main():
    """Temporarily makes the eager evaluator the dynamic trace (used to run concrete code, e.g. jit caches)."""
    state = _thread_states.state
    prev = state.dynamic
    state.dynamic = state.stack[0]
    state.refresh()
    try:
        yield
    finally:
        state.dynamic = prev
        state.refresh()


def _top_main(xs: Sequence[Any]) -> MainTrace:
    """The highest level among the tracers in `xs` and the dynamic trace."""
    top = _thread_states.state.dynamic
    for x in xs:
        if isinstance(x, Tracer):
            m = x._trace.main
            if not m.active:
                raise escaped_tracer_error(x, None)
            if m.level > top.level:
                top = m
    return top


def find_top_trace(xs: Sequence[Any]) -> Trace:
    return _top_main(xs).trace


def full_raise(trace: Trace, val: Any):
    if not isinstance(val, Tracer):
        return trace.pure(val)
    vmain = val._trace.main
    if vmain is trace.main:
        return val
    if not vmain.active:
        raise escaped_tracer_error(val, None)
    if vmain.level < trace.main.level:
        return trace.lift(val)
    raise escaped_tracer_error(val, None)


def escaped_tracer_error(tracer: "Tracer", prim: Primitive | None) -> Exception:
    from .errors import UnexpectedTracerError
    where = f" while applying '{prim.name}'" if prim is not None else ""
    return UnexpectedTracerError(
        f"Encountered an unexpected tracer{where}: {tracer!r}. A function transformed by jit, vmap, grad or a "
        "control-flow primitive saved one of its intermediate values (a tracer) outside the transformation, for "
        "example in a global variable, a closure or an object attribute, and it was used after the transformation "
        "ended. Return the value from the transformed function instead of storing it.")


class Tracer(ArrayOps):
    """A value standing in for an array while a transformation traces a function.

    Tracers behave like arrays (operators, methods, `.shape`, `.dtype`) but refuse conversion to concrete Python or
    NumPy values unless the transformation knows the concrete value (as forward-mode AD does).
    """

    __slots__ = ("_trace", "__weakref__")
    __array_priority__ = 1000

    @property
    def aval(self) -> ShapedArray:
        raise NotImplementedError

    @property
    def shape(self) -> tuple:
        return self.aval.shape

    @property
    def dtype(self) -> np.dtype:
        return self.aval.dtype

    @property
    def ndim(self) -> int:
        return len(self.aval.shape)

    @property
    def size(self) -> int:
        return self.aval.size

    @property
    def weak_type(self) -> bool:
        return self.aval.weak_type

    def _concrete_value(self):
        """The concrete NumPy value if the transformation knows it (forward-mode AD does), else None."""
        return None

    def _origin_description(self) -> str:
        return ""

    def _concretization_error(self, kind: str, what: str):
        from . import errors
        return errors.concretization_error(self, kind, what)

    def _concrete_or_raise(self, kind: str):
        """The tracer's known value, or the concretization error for converting it with `kind` (bool, int, ...)."""
        v = self._concrete_value()
        if v is None:
            raise self._concretization_error(kind, kind)
        return v

    def __bool__(self):
        return bool(self._concrete_or_raise("bool"))

    def __int__(self):
        return int(self._concrete_or_raise("int"))

    def __float__(self):
        return float(self._concrete_or_raise("float"))

    def __complex__(self):
        return complex(self._concrete_or_raise("complex"))

    def __index__(self):
        return operator.index(np.asarray(self._concrete_or_raise("index")).item())

    def item(self, *args):
        v = self._concrete_value()
        if v is None:
            raise self._concretization_error("item", "item")
        return np.asarray(v).item(*args)

    def tolist(self):
        v = self._concrete_value()
        if v is None:
            raise self._concretization_error("tolist", "tolist")
        return np.asarray(v).tolist()

    def __array__(self, dtype=None, copy=None):
        v = self._concrete_value()
        if v is None:
            raise self._concretization_error("array", "numpy")
        return np.asarray(v, dtype=dtype)

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __hash__(self):
        from .errors import TracerIntegerConversionError  # noqa: F401  (documented alongside the others)
        raise TypeError(f"unhashable type: {type(self).__name__}: tracers cannot be dictionary keys or set "
                        "members; mark the argument static (static_argnums/static_argnames) if it is a constant")

    def block_until_ready(self):
        return self

    def __repr__(self) -> str:
        return f"Traced<{self.aval!r}>with<{type(self._trace).__name__}>"


def get_aval(x: Any) -> ShapedArray:
    """The abstract value of an Array, tracer, NumPy value or Python scalar."""
    if type(x) is Array:  # the commonest case, without the property and getattr's default handling
        aval = x._aval
        if aval is None:  # transformations ask for the aval of one Array several times: build it once
            v = x._value
            s = x._sharding
            aval = x._aval = ShapedArray(v.shape, v.dtype, x.weak_type,
                                         None if s is None or not EXPLICIT_IN_USE[0] else type_sharding(s, v.ndim))
        return aval
    if isinstance(x, Tracer):
        return x.aval
    aval = getattr(x, "aval", None)
    if aval is not None:
        return aval
    dt, weak = dtypes.dtype_and_weak(x)
    return ShapedArray(np.shape(x), dt, weak)


def to_array(x: Any, dtype=None, weak_type: bool | None = None) -> Array:
    """Converts a NumPy value or Python scalar to an `Array` of canonical dtype (copying NumPy buffers)."""
    if type(x) is Array and dtype is None:
        return x
    if dtype is None:
        dt, weak = dtypes.dtype_and_weak(x)
    else:
        dt, weak = dtypes.canonicalize_dtype(dtype), False
    if weak_type is not None:
        weak = weak_type
    raw = np.asarray(x._value if type(x) is Array else x)
    if raw.dtype == object:
        raise TypeError(f"Cannot convert value of type {type(x).__name__} to a fluxion array: {x!r}")
    raw = np.array(raw, dtype=dt, copy=True) if (raw.dtype != dt or not isinstance(x, Array)) else raw
    return Array(raw, weak)


# --------------------------------------------------------------------------------------------------------------
# The jaxpr IR
# --------------------------------------------------------------------------------------------------------------

class Var:
    """A variable of a jaxpr, typed by an abstract value. Names are assigned when printing."""

    __slots__ = ("aval", "suffix")
    _counter = itertools.count()

    def __init__(self, aval: ShapedArray, suffix: str = ""):
        self.aval = aval
        self.suffix = suffix

    def __repr__(self) -> str:
        return f"Var({self.aval.str_short()})"


class Literal:
    """A scalar constant inlined into a jaxpr equation (printed as `2.0:f32[]`)."""

    __slots__ = ("val", "aval")

    def __init__(self, val: Array, aval: ShapedArray):
        self.val = val
        self.aval = aval

    def __repr__(self) -> str:
        return f"Literal({self.val._value!r})"


class JaxprEqn(NamedTuple):
    primitive: Primitive
    invars: list
    outvars: list
    params: dict
    source_info: Any = None


class Jaxpr:
    """A typed, first-order program: constvars and invars in, a list of equations, outvars out."""

    __slots__ = ("constvars", "invars", "outvars", "eqns")

    def __init__(self, constvars: list, invars: list, outvars: list, eqns: list):
        self.constvars = list(constvars)
        self.invars = list(invars)
        self.outvars = list(outvars)
        self.eqns = list(eqns)

    @property
    def in_avals(self) -> list:
        return [v.aval for v in self.invars]

    @property
    def out_avals(self) -> list:
        return [v.aval for v in self.outvars]

    def __str__(self) -> str:
        return pp_jaxpr(self)

    __repr__ = __str__

    def pretty_print(self, *, name_stack: bool = False) -> str:
        """The text form; `name_stack=True` annotates each equation with its name stack (see `pp_jaxpr`)."""
        return pp_jaxpr(self, name_stack=name_stack)


# Primitives with side effects (callbacks that print or do I/O). An equation binding one -- or holding a sub-jaxpr
# that does -- is never removed as dead, merged with an equal one, constant-folded or reordered past another effect.
effectful_primitives: set = set()


def _sub_jaxprs(params: dict):
    for v in params.values():
        if isinstance(v, (Jaxpr, ClosedJaxpr)):
            yield v.jaxpr if isinstance(v, ClosedJaxpr) else v
        elif isinstance(v, (tuple, list)):
            for x in v:
                if isinstance(x, (Jaxpr, ClosedJaxpr)):
                    yield x.jaxpr if isinstance(x, ClosedJaxpr) else x


def jaxpr_has_effects(jaxpr: "Jaxpr") -> bool:
    """Whether running `jaxpr` has side effects (an effectful primitive anywhere in it, sub-jaxprs included)."""
    return any(eqn_has_effects(e) for e in jaxpr.eqns)


def eqn_has_effects(eqn: "JaxprEqn") -> bool:
    """Whether evaluating `eqn` has side effects (see `effectful_primitives`)."""
    if eqn.primitive in effectful_primitives:
        return True
    return any(jaxpr_has_effects(j) for j in _sub_jaxprs(eqn.params))


class ClosedJaxpr:
    """A jaxpr together with the values of its constvars.

    `memo` holds what transformations derive from this program (its JVP split, transposes, batched forms, its
    compiled executable), so a `jit` call primitive carrying it derives each only once. Jaxprs are never mutated, so
    the entries cannot go stale; they live exactly as long as the program does.
    """

    __slots__ = ("jaxpr", "consts", "memo")

    def __init__(self, jaxpr: Jaxpr, consts: Sequence[Any]):
        self.jaxpr = jaxpr
        self.consts = list(consts)
        self.memo: dict = {}

    @property
    def in_avals(self) -> list:
        return self.jaxpr.in_avals

    @property
    def out_avals(self) -> list:
        return self.jaxpr.out_avals

    @property
    def eqns(self) -> list:
        return self.jaxpr.eqns

    def __str__(self) -> str:
        return pp_jaxpr(self.jaxpr)

    __repr__ = __str__

    def pretty_print(self, *, name_stack: bool = False) -> str:
        """The text form; `name_stack=True` annotates each equation with its name stack (see `pp_jaxpr`)."""
        return pp_jaxpr(self.jaxpr, name_stack=name_stack)

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))


def eval_jaxpr(jaxpr: Jaxpr, consts: Sequence[Any], *args: Any) -> list:
    """Evaluates `jaxpr` by binding each equation's primitive, so it runs under any active transformation."""
    env: dict = {}

    def read(v):
        return v.val if type(v) is Literal else env[v]

    for v, x in zip(jaxpr.constvars, consts):
        env[v] = x
    if len(args) != len(jaxpr.invars):
        raise TypeError(f"jaxpr expects {len(jaxpr.invars)} arguments, got {len(args)}")
    for v, x in zip(jaxpr.invars, args):
        env[v] = x
    for eqn in jaxpr.eqns:
        outs = eqn.primitive.bind(*[read(v) for v in eqn.invars], **eqn.params)
        if eqn.primitive.multiple_results:
            for v, o in zip(eqn.outvars, outs):
                env[v] = o
        else:
            env[eqn.outvars[0]] = outs
    return [read(v) for v in jaxpr.outvars]


def jaxpr_as_fun(closed: ClosedJaxpr) -> Callable:
    return lambda *args: eval_jaxpr(closed.jaxpr, closed.consts, *args)


# --------------------------------------------------------------------------------------------------------------
# Type checking
# --------------------------------------------------------------------------------------------------------------

class JaxprTypeError(TypeError):
    pass


def check_jaxpr(jaxpr: Jaxpr) -> None:
    """Checks that every variable is defined before use and each equation's types match its abstract evaluation.

    Raises:
      JaxprTypeError: naming the offending equation.
    """
    defined: set = set()

    def read(v, where):
        if type(v) is Literal:
            return v.aval
        if v not in defined:
            raise JaxprTypeError(f"Variable {v!r} used before definition in {where}")
        return v.aval

    for v in jaxpr.constvars + jaxpr.invars:
        if v in defined:
            raise JaxprTypeError(f"Variable {v!r} bound twice")
        defined.add(v)
    for eqn in jaxpr.eqns:
        in_avals = [read(v, eqn.primitive.name) for v in eqn.invars]
        rule = abstract_eval_rules.get(eqn.primitive)
        if rule is None:
            raise JaxprTypeError(f"No abstract evaluation rule for primitive '{eqn.primitive.name}'")
        out = rule(*in_avals, **eqn.params)
        outs = out if eqn.primitive.multiple_results else [out]
        for v, a in zip(eqn.outvars, outs):
            if (v.aval.shape, v.aval.dtype) != (a.shape, a.dtype):
                raise JaxprTypeError(f"Equation {eqn.primitive.name} declares output {v.aval.str_short()} but its "
                                     f"rule gives {a.str_short()}")
            defined.add(v)
    for v in jaxpr.outvars:
        read(v, "outputs")


# --------------------------------------------------------------------------------------------------------------
# Pretty printing, in JAX's text form
# --------------------------------------------------------------------------------------------------------------

class _Namer:
    def __init__(self):
        self.names: dict = {}
        self.count = 0

    def __call__(self, v) -> str:
        if type(v) is Literal:
            return _literal_str(v)
        name = self.names.get(v)
        if name is None:
            name = self.names[v] = _var_name(self.count) + getattr(v, "suffix", "")
            self.count += 1
        return name


def _var_name(i: int) -> str:
    # a..z, ba..bz, ca.. : JAX's naming scheme (base 26 with 'a' as zero, first digit shifted).
    letters = "abcdefghijklmnopqrstuvwxyz"
    if i < 26:
        return letters[i]
    s = ""
    while i:
        s = letters[i % 26] + s
        i //= 26
    return s


def _literal_str(lit: Literal) -> str:
    v = np.asarray(lit.val._value if isinstance(lit.val, Array) else lit.val)
    x = v.item()
    if isinstance(x, float):
        text = repr(x)
    elif isinstance(x, bool):
        text = str(x)
    else:
        text = str(x)
    return f"{text}:{lit.aval.str_short()}"


def _format_param(value: Any, namer: _Namer, indent: int, column: int | None = None, flat: bool = False) -> str:
    """The text of one parameter value starting at `column` (default `indent`); a jaxpr value breaks at `indent`
    (its equations 4 further, its `in` 2), unless `flat` asks for the one-line form."""
    if isinstance(value, ClosedJaxpr):
        return _pp_jaxpr(value.jaxpr, namer, indent, column, flat)
    if isinstance(value, Jaxpr):
        return _pp_jaxpr(value, namer, indent, column, flat)
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, type) and issubclass(value, np.generic):
        return np.dtype(value).name
    if isinstance(value, (tuple, list)) and value and any(isinstance(x, (Jaxpr, ClosedJaxpr)) for x in value):
        start = indent if column is None else column
        one = "(" + " ".join(_format_param(x, namer, indent, flat=True) for x in value) + ")"
        if flat or start + len(one) <= _WIDTH:
            return one
        inner = ("\n" + " " * (indent + 2)).join(_format_param(x, namer, indent + 2) for x in value)
        return "(\n" + " " * (indent + 2) + inner + "\n" + " " * indent + ")"
    if callable(value) and hasattr(value, "__name__"):
        return value.__name__
    return str(value)


_WIDTH = 80  # the line width of JAX's jaxpr printer


# Primitives whose parameters print in a given order (and only those listed), as JAX prints them; others print
# every parameter in sorted order.
param_print_order: dict = {}

# Primitive -> function(params) -> the parameters to print: the text of JAX 0.10's jaxprs, which hides some
# parameters (those implied by the output type, None defaults) and shows sharding parameters fluxion does not have
# (always None here). Printing only: the equation's parameters are unchanged.
param_print_rules: dict = {}


def _pp_eqn(eqn: JaxprEqn, namer: _Namer, indent: int, used: set | None = None, flat: bool = False) -> str:
    ins_list = [namer(v) for v in eqn.invars]
    ins = " ".join(ins_list)
    # As JAX prints a traced jaxpr: an output nothing reads is `_` (and takes no name).
    outs = " ".join(f"{'_' if used is not None and v not in used else namer(v)}:{v.aval.str_short()}"
                    for v in eqn.outvars)
    params = {k: v for k, v in eqn.params.items() if not k.startswith("_")}
    rule = param_print_rules.get(eqn.primitive)
    if rule is not None:
        params = rule(params)
    head = f"{outs} = {eqn.primitive.name}" if eqn.outvars else eqn.primitive.name
    if not params:
        return f"{head} {ins}".rstrip()
    order = param_print_order.get(eqn.primitive)
    keys = [k for k in order if k in params] if order is not None else sorted(params)
    # (As JAX, a parameterized equation without operands keeps the space before its empty operand list.)
    group = f"{head}[{' '.join(f'{k}={_format_param(params[k], namer, 0, flat=True)}' for k in keys)}]"
    # JAX's printer keeps the bracket on one line when it fits in the width together with the text that follows
    # it up to the next possible line break (the first operand).
    lookahead = (" " + ins_list[0] + (" " if len(ins_list) > 1 else "")) if ins_list else " "
    if flat or indent + len(group) + len(lookahead) <= _WIDTH:
        return f"{group} {ins}"
    pad = " " * (indent + 2)
    items = [f"{k}={_format_param(params[k], namer, indent + 2, indent + 3 + len(k))}" for k in keys]
    return f"{head}[\n" + "".join(f"{pad}{it}\n" for it in items) + " " * indent + f"] {ins}"


def _pp_jaxpr(jaxpr: Jaxpr, namer: _Namer, indent: int = 0, column: int | None = None, flat: bool = False) -> str:
    """The jaxpr on one line if it fits in the width from `column` (default `indent`), else one equation per line
    at `indent` + 4 (as JAX's printer lays out the group)."""
    consts = " ".join(f"{namer(v)}:{v.aval.str_short()}" for v in jaxpr.constvars)
    ins = " ".join(f"{namer(v)}:{v.aval.str_short()}" for v in jaxpr.invars)
    used = {v for e in jaxpr.eqns for v in e.invars if type(v) is not Literal}
    used.update(v for v in jaxpr.outvars if type(v) is not Literal)
    head = f"{{ lambda {consts}; {ins}. let"
    flat_eqns = [_pp_eqn(e, namer, 0, used, flat=True) for e in jaxpr.eqns]
    outs = ", ".join(namer(v) for v in jaxpr.outvars)
    outs = f"({outs},)" if len(jaxpr.outvars) == 1 else f"({outs})"
    single = f"{head} {'; '.join(flat_eqns)} in {outs} }}" if flat_eqns else f"{head} in {outs} }}"
    if flat or (indent if column is None else column) + len(single) <= _WIDTH:
        return single
    pad = " " * (indent + 4)
    body = "".join(f"\n{pad}{_pp_eqn(e, namer, indent + 4, used)}" for e in jaxpr.eqns)
    return f"{head}{body}\n{' ' * (indent + 2)}in {outs} }}"


def pp_jaxpr(jaxpr: Jaxpr, name_stack: bool = False) -> str:
    """The jaxpr's text; with `name_stack`, one equation per line, each followed by `# [its name stack]` (the
    names `named_scope`/`named_call` pushed while it was traced). Only the outermost equations are annotated."""
    if not name_stack:
        return _pp_jaxpr(jaxpr, _Namer())
    namer = _Namer()
    consts = " ".join(f"{namer(v)}:{v.aval.str_short()}" for v in jaxpr.constvars)
    ins = " ".join(f"{namer(v)}:{v.aval.str_short()}" for v in jaxpr.invars)
    used = {v for e in jaxpr.eqns for v in e.invars if type(v) is not Literal}
    used.update(v for v in jaxpr.outvars if type(v) is not Literal)
    texts = [("    " + _pp_eqn(e, namer, 4, used)).split("\n") for e in jaxpr.eqns]
    column = max((len(t[0]) for t in texts), default=0) + 1
    lines = [f"{{ lambda {consts}; {ins}. let"]
    for eqn, text in zip(jaxpr.eqns, texts):
        names = eqn.source_info.name_stack if eqn.source_info is not None else ""
        lines.append(f"{text[0].ljust(column)}# [{names}]")
        lines.extend(text[1:])
    outs = ", ".join(namer(v) for v in jaxpr.outvars)
    lines.append(f"  in ({outs},) }}" if len(jaxpr.outvars) == 1 else f"  in ({outs}) }}")
    return "\n".join(lines)
