"""Argument handling shared by the `fluxion.numpy` wrappers: conversion, dtype promotion and broadcasting."""

from __future__ import annotations

import warnings
from typing import Any, Sequence

import numpy as np

from .. import core, dtypes
from ..config import config
from ..core import Array, Tracer
from ..lax import elementwise as ew
from ..lax import structural as st


def asarray_arg(x: Any, name: str = "argument") -> Any:
    """Converts NumPy values, lists and Python scalars to Arrays; passes Arrays and tracers through.

    An object with `__jax_array__` (an `nnx.Variable`, say) is replaced by what that method returns, which may be
    a tracer: converting it through NumPy instead would read its concrete value and cut it off from `grad`/`jit`.
    """
    if isinstance(x, (Array, Tracer)):
        return x
    if hasattr(x, "__jax_array__"):
        return asarray_arg(x.__jax_array__(), name)
    try:
        return core.to_array(x)
    except TypeError as e:
        raise TypeError(f"{name}: {e}") from None


def arraylike_arg(x: Any, fname: str, position: int = 0) -> Any:
    """`asarray_arg` for a function that, like JAX's, takes arrays but not Python lists or tuples.

    Raises:
      TypeError: `x` is a list or tuple (JAX's message: pass `jnp.array(x)` explicitly; the implicit conversion
        hides the cost of turning a long Python list into an array on every call).
    """
    if isinstance(x, (list, tuple)):
        raise TypeError(f"{fname} requires ndarray or scalar arguments, got {type(x)} at position {position}.")
    return asarray_arg(x, fname)


def broadcast_shapes(*shapes: Sequence[int]) -> tuple:
    """NumPy broadcasting of shapes.

    Raises:
      ValueError: naming the incompatible shapes.
    """
    nd = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(nd):
        size = 1
        for s in shapes:
            d = s[len(s) - nd + i] if len(s) - nd + i >= 0 else 1
            if d != 1:
                if size != 1 and d != size:
                    raise ValueError("Incompatible shapes for broadcasting: " + ", ".join(str(tuple(s)) for s in shapes))
                size = d
        out.append(size)
    return tuple(out)


def broadcast_to_shape(x: Any, shape: tuple) -> Any:
    xs = core.get_aval(x).shape
    if xs == shape:
        return x
    nd = len(shape)
    if len(xs) > nd:
        raise ValueError(f"cannot broadcast array of shape {xs} to shape {shape}")
    dims = tuple(range(nd - len(xs), nd))
    for d, s in zip(dims, xs):
        if s != 1 and s != shape[d]:
            raise ValueError(f"cannot broadcast array of shape {xs} to shape {shape}")
    # Size-1 dimensions are dropped first so broadcast_in_dim maps only real dimensions.
    return st.broadcast_in_dim(x, shape, dims)


def promote_dtypes(*args: Any) -> list:
    """Casts arrays to their common dtype under JAX's promotion lattice (weak types adopt the strong dtype)."""
    pairs = [dtypes.dtype_and_weak(a) for a in args]
    first = pairs[0] if pairs else None
    if first is not None and all(p == first for p in pairs):
        # One (dtype, weak type) throughout: nothing to promote. JAX keeps it even where the lattice would not
        # (two weak float16 operands give weak float16, not the default float), and so do `x + y`'s fast path
        # and the same-shape shortcuts in ufuncs; this makes broadcasting operands agree with them.
        dt, weak = first
    else:
        dt, weak = dtypes.result_type_of_pairs(pairs)
    out = []
    for a, (adt, aweak) in zip(args, pairs):
        if isinstance(a, (Array, Tracer)):
            out.append(a if (adt == dt and aweak == weak) else ew._convert_weak(a, dt, weak))
        elif type(a) is not bool and isinstance(a, int) and dt.kind in "iu":
            # A Python int meeting a narrower integer array wraps to it (two's complement), as XLA's conversion does
            # in JAX (int8 array + 300 adds 44); NumPy 2 would raise OverflowError.
            out.append(Array(np.asarray(a).astype(dt), weak))
        else:
            out.append(Array(np.asarray(a, dtype=dt), weak))
    return out


def check_rank_promotion(name: str, shapes: Sequence[tuple]) -> None:
    """Applies the `jax_numpy_rank_promotion` option to operands of `shapes` about to be broadcast together.

    Rank promotion is broadcasting that adds leading dimensions to an operand of lower, nonzero rank: (3,) against
    (2, 3) is one, while a scalar against anything, or (2, 1) against (1, 3), is not. Under "allow" nothing
    happens; under "warn" a UserWarning names the function and the shapes; under "raise" the ValueError below.

    Raises:
      ValueError: the option is "raise" and the nonscalar operands have different ranks.
    """
    mode = config.jax_numpy_rank_promotion
    if mode == "allow" or len({len(s) for s in shapes if s}) < 2:
        return
    listed = " ".join(str(tuple(s)) for s in shapes)
    if mode == "raise":
        raise ValueError(f"{name}: operands of shapes {listed} need implicit rank promotion, which the option "
                         "jax_numpy_rank_promotion='raise' forbids; add the leading dimensions explicitly "
                         "(x[None], expand_dims, reshape) or set the option to 'allow' or 'warn'.")
    warnings.warn(f"{name}: implicit rank promotion of operands of shapes {listed} (NumPy broadcasting); set "
                  "the option jax_numpy_rank_promotion to 'allow' to silence this warning.", stacklevel=4)


def promote_args(name: str, *args: Any, rank_promotion: bool = True) -> list:
    """Promotes dtypes and broadcasts shapes; rank-0 operands stay scalars (elementwise primitives accept them).

    `rank_promotion=False` is for functions that JAX lets broadcast freely whatever jax_numpy_rank_promotion says
    (`where`, `heaviside`, `gcd`/`lcm`).

    Raises:
      ValueError: the shapes do not broadcast, or need rank promotion under jax_numpy_rank_promotion='raise'.
    """
    args = [a if isinstance(a, (Array, Tracer, bool, int, float, complex)) else asarray_arg(a, name) for a in args]
    args = promote_dtypes(*args)
    shapes = [core.get_aval(a).shape for a in args]
    if all(s == shapes[0] for s in shapes):
        return args
    if rank_promotion:
        check_rank_promotion(name, shapes)
    try:
        shape = broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError(f"{name}: incompatible shapes for broadcasting: "
                         + ", ".join(str(s) for s in shapes)) from None
    return [a if core.get_aval(a).shape == () else broadcast_to_shape(a, shape) for a in args]


def promote_args_inexact(name: str, *args: Any, rank_promotion: bool = True) -> list:
    """Like `promote_args`, then casts integer/bool results to the default float (as jnp.sin does)."""
    args = promote_args(name, *args, rank_promotion=rank_promotion)
    dt, weak = dtypes.dtype_and_weak(args[0])
    if not dtypes.is_inexact(dt):
        return [ew._convert_weak(a, dtypes.default_float_dtype(), weak) for a in args]
    return args


def check_arraylike(name: str, *args: Any) -> None:
    for i, a in enumerate(args):
        if not isinstance(a, (Array, Tracer, np.ndarray, np.generic, bool, int, float, complex, list, tuple)) \
                and not hasattr(a, "__jax_array__"):
            raise TypeError(f"{name} requires ndarray or scalar arguments, got {type(a).__name__} at position {i}.")


def canonicalize_axis(axis: int, ndim: int) -> int:
    axis = int(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def canonicalize_axes(axis: Any, ndim: int) -> tuple:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, np.integer)):
        return (canonicalize_axis(axis, ndim),)
    axes = tuple(canonicalize_axis(a, ndim) for a in axis)
    if len(set(axes)) != len(axes):
        raise ValueError(f"repeated axis in {axis}")
    return axes


def check_out(out: Any, name: str) -> None:
    """Refuses a non-None `out=`: arrays are immutable, so there is no buffer to write into (JAX refuses it too).

    Raises:
      NotImplementedError: naming the function, when `out` is not None.
    """
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.")
