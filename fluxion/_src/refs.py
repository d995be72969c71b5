"""Mutable array references (`jax.Ref`, `jax.new_ref`, ...): a box holding an array that code can read and write in
place, `ref[idx]` / `ref[idx] = value`, including inside `jit`, `grad` and `vmap`.

fluxion discharges the state while tracing: a `Ref` holds its current value (an Array, or a tracer of the
transformation that created it) and a write replaces that value by the functionally updated one
(`value.at[idx].set(...)`). So the program a transformation stages is pure -- reads and writes become the
equivalent array operations -- and every transformation works on it unchanged. JAX instead stages reads and writes
as effectful primitives and discharges them later; the values computed are the same, the jaxprs differ.

A `jit`ted function may take Refs among its arguments (`jit` passes their values in, gives the function fresh Refs
around them, returns their final values as extra outputs and writes those back into the caller's Refs), so
mutations made inside the compiled function are visible after the call, as in JAX.

As in JAX, a transformation cannot write its own traced values into a Ref created outside it (a batched value into
an unbatched Ref under `vmap`, a differentiated value into a Ref created outside `grad`): that raises `ValueError`
telling you to pass the Ref in as an argument.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import core, dtypes
from .core import Array, ShapedArray, Tracer


class AbstractRef:
    """The type of a Ref: the abstract value (`inner_aval`) of the array it holds; prints as `Ref{f32[3]}`."""

    __slots__ = ("inner_aval",)

    def __init__(self, inner_aval: ShapedArray):
        self.inner_aval = inner_aval

    @property
    def shape(self) -> tuple:
        return self.inner_aval.shape

    @property
    def dtype(self):
        return self.inner_aval.dtype

    @property
    def ndim(self) -> int:
        return len(self.inner_aval.shape)

    def __eq__(self, other) -> bool:
        return isinstance(other, AbstractRef) and other.inner_aval == self.inner_aval

    def __hash__(self) -> int:
        return hash(("Ref", self.inner_aval))

    def __repr__(self) -> str:
        return f"Ref{{{self.inner_aval.dtype.name}[{','.join(map(str, self.inner_aval.shape))}]}}"


def _level(x: Any) -> int:
    return x._trace.main.level if isinstance(x, Tracer) else 0


class Ref:
    """A mutable reference to an array (make one with `new_ref`). `ref[idx]` reads (any NumPy-style index;
    `ref[...]` is the whole array), `ref[idx] = value` writes (the value keeps the Ref's shape and dtype).

    Attributes:
      shape, dtype, ndim, size: those of the array held.
    """

    __slots__ = ("_value", "_level", "_freed", "__weakref__")

    def __init__(self, value: Any, level: int):
        self._value = value
        self._level = level
        self._freed = False

    # -- the array held ---------------------------------------------------------------------------------------
    def _get(self) -> Any:
        if self._freed:
            raise RuntimeError("this Ref was released by free_ref and cannot be used any more")
        return self._value

    @property
    def aval(self) -> AbstractRef:
        return AbstractRef(core.get_aval(self._get()))

    @property
    def shape(self) -> tuple:
        return core.get_aval(self._get()).shape

    @property
    def dtype(self):
        return core.get_aval(self._get()).dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    # -- reads and writes -----------------------------------------------------------------------------------------
    def __getitem__(self, idx: Any) -> Any:
        value = self._get()
        _check_staging(self, "read")
        if idx is Ellipsis or idx == ():
            return value
        return value[idx]

    def __setitem__(self, idx: Any, new: Any) -> None:
        swap(self, idx, new)

    def __repr__(self) -> str:
        value = self._value
        if isinstance(value, Array):
            body = np.array2string(np.asarray(value), separator=", ", prefix="Ref(")
            return f"Ref({body}, dtype={value.dtype.name})"
        return f"Ref({core.get_aval(value)})" if not self._freed else "Ref(<freed>)"


def _check_staging(ref: Ref, op: str) -> None:
    """Raises `ValueError` when a program being staged (`jit`) would use a Ref created outside it: its current value
    would be baked into a cached program that later calls reuse."""
    dynamic = core.thread_state().dynamic
    if dynamic.level > ref._level:
        raise ValueError(f"Cannot {op} an array reference of type {ref.aval} created outside the function being "
                         "staged (jit, a control-flow body): pass the array reference to it as an argument instead")


def _check_write(ref: Ref, idx: Any, new: Any, op: str) -> Any:
    """`new` as an array of the Ref's dtype for a write at `idx`, after the checks JAX makes (shape, dtype, level)."""
    current = ref._get()
    _check_staging(ref, "write to")
    if not isinstance(new, (Array, Tracer)):
        new = core.to_array(new)
    target = current if idx is Ellipsis or idx == () else current[idx]
    t_aval, n_aval = core.get_aval(target), core.get_aval(new)
    if t_aval.shape != n_aval.shape:
        raise ValueError(f"Invalid shape for `{op}`. Ref shape: {t_aval.shape}. Value shape: {n_aval.shape}.")
    if n_aval.dtype != t_aval.dtype:
        if not n_aval.weak_type:
            raise ValueError(f"Invalid dtype for `{op}`. Ref dtype: {t_aval.dtype}. Value dtype: {n_aval.dtype}.")
        new = new.astype(t_aval.dtype)
    if _level(new) > ref._level:
        raise ValueError(f"Cannot perform a `{op}` of a value traced by a transformation (vmap, grad, ...) into an "
                         f"array reference of type {ref.aval} created outside it: pass the array reference to the "
                         "transformed function as an argument instead")
    return new


def _written(current: Any, idx: Any, new: Any) -> Any:
    if idx is Ellipsis or idx == ():
        return new
    return current.at[idx].set(new)


def new_ref(init_val: Any, *, memory_space: Any = None, kind: str | None = None) -> Ref:
    """A new `Ref` holding `init_val` (an array or a Python/NumPy scalar or array; dtype canonicalized).

    Args:
      memory_space: accepted for JAX compatibility (fluxion has one memory space).
      kind: None or "no_grad_no_remat" (JAX's mutation semantics under rematerialization; fluxion's discharged
        Refs behave the same either way).

    Raises:
      TypeError: `init_val` is not an array-like value (e.g. a list).
      ValueError: `kind` is not one of those values.

    Examples:
      >>> import fluxion
      >>> import fluxion.numpy as jnp
      >>> r = fluxion.new_ref(jnp.zeros(3))
      >>> r[1] = 5.0
      >>> fluxion.freeze(r)
      Array([0., 5., 0.], dtype=float32)
    """
    if kind not in (None, "no_grad_no_remat"):
        raise ValueError(f"new_ref: kind must be None or 'no_grad_no_remat', got {kind!r}")
    if not isinstance(init_val, (Array, Tracer)):
        if not isinstance(init_val, (np.ndarray, np.generic, bool, int, float, complex)):
            raise TypeError("Error interpreting argument to new_ref as a JAX value. The problematic value is of type "
                            f"{type(init_val)} and was passed to new_ref at position 0.")
        init_val = core.to_array(init_val)
    return Ref(init_val, max(core.cur_level(), _level(init_val)))


def empty_ref(ty: Any, memory_space: Any = None) -> Ref:
    """A new `Ref` of type `ty` (anything with `.shape` and `.dtype`: a `ShapeDtypeStruct`, an aval) whose contents
    are unspecified until written (fluxion fills it with zeros; eager JAX cannot create one).

    Examples:
      >>> import fluxion
      >>> import fluxion.numpy as jnp
      >>> r = fluxion.empty_ref(fluxion.ShapeDtypeStruct((2,), jnp.int32))
      >>> r[...] = jnp.array([3, 4])
      >>> fluxion.freeze(r)
      Array([3, 4], dtype=int32)
    """
    shape, dtype = getattr(ty, "shape", None), getattr(ty, "dtype", None)
    if shape is None or dtype is None:
        raise TypeError(f"empty_ref: ty must have .shape and .dtype (e.g. a ShapeDtypeStruct), got {ty!r}")
    dtype = dtypes.canonicalize_dtype(dtype)
    return Ref(Array(np.zeros(tuple(shape), dtype)), core.cur_level())


def free_ref(ref: Ref) -> None:
    """Releases the Ref's buffer; any later use of the Ref raises `RuntimeError` (JAX leaves such use undefined)."""
    _check_ref(ref, "free_ref")
    ref._get()
    ref._freed = True
    ref._value = None


def freeze(ref: Ref) -> Any:
    """The contents of `ref` as an immutable array (later writes to the Ref do not change it).

    Examples:
      >>> import fluxion
      >>> import fluxion.numpy as jnp
      >>> r = fluxion.new_ref(jnp.ones(2))
      >>> frozen = fluxion.freeze(r)
      >>> r[0] = 7.0
      >>> frozen
      Array([1., 1.], dtype=float32)
    """
    _check_ref(ref, "freeze")
    return ref._get()


def _check_ref(ref: Any, name: str) -> None:
    if not isinstance(ref, Ref):
        raise TypeError(f"{name}: expected a Ref, got {type(ref).__name__}")


def get(ref: Ref, idx: Any = ()) -> Any:
    """`ref[idx]` (`idx=()` reads the whole array)."""
    _check_ref(ref, "get")
    return ref[idx]


def swap(ref: Ref, idx: Any, value: Any) -> Any:
    """Writes `value` at `idx` and returns what was there before."""
    _check_ref(ref, "swap")
    new = _check_write(ref, idx, value, "swap")
    old = ref[idx]
    ref._value = _written(ref._value, idx, new)
    return old


def set(ref: Ref, idx: Any, value: Any) -> None:  # noqa: A001 -- JAX's name
    """`ref[idx] = value`."""
    swap(ref, idx, value)


def addupdate(ref: Ref, idx: Any, x: Any) -> None:
    """`ref[idx] += x` in one step."""
    _check_ref(ref, "addupdate")
    new = _check_write(ref, idx, x, "addupdate")
    current = ref._value
    if idx is Ellipsis or idx == ():
        ref._value = current + new
    else:
        ref._value = current.at[idx].add(new)
