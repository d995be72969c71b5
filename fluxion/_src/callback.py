"""`pure_callback`, `io_callback`, `debug.callback` and `debug.print`: calling Python from traced code.

The primitives and their transformation rules are in `lax/callback.py`; this module flattens the user's arguments
and result declarations into them.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import dtypes
from .api_util import as_value
from .core import ShapedArray
from .lax import callback as cb
from .tree_util import tree_flatten, tree_unflatten


def _result_avals(result_shape_dtypes: Any, name: str):
    leaves, tree = tree_flatten(result_shape_dtypes)
    avals = []
    for leaf in leaves:
        shape, dtype = getattr(leaf, "shape", None), getattr(leaf, "dtype", None)
        if shape is None or dtype is None:
            raise TypeError(f"{name}: result_shape_dtypes must be a pytree of objects with .shape and .dtype (e.g. "
                            f"jax.ShapeDtypeStruct), got {type(leaf).__name__}")
        avals.append(ShapedArray(tuple(int(d) for d in shape), dtypes.canonicalize_dtype(dtype)))
    return tuple(avals), tree


def _operands(args: tuple, kwargs: dict) -> tuple[list, Any]:
    leaves, in_tree = tree_flatten((args, kwargs))
    return [as_value(x) for x in leaves], in_tree


def pure_callback(callback: Callable, result_shape_dtypes: Any, *args: Any, sharding=None,
                  vmap_method: str | None = None, **kwargs: Any) -> Any:
    """Calls the pure Python function `callback(*args, **kwargs)` from traced code (mirrors `jax.pure_callback`).

    Args:
      callback: receives fluxion Arrays (eager) with the structure of `args`/`kwargs`; returns arrays matching
        `result_shape_dtypes` (values are converted to its dtypes; a shape mismatch raises `RuntimeError`).
      result_shape_dtypes: a pytree of `ShapeDtypeStruct`-like objects (`.shape`, `.dtype`) declaring the results.
      vmap_method: how `vmap` treats the call: "sequential", "sequential_unrolled" (both loop over the batch),
        "expand_dims", "broadcast_all" (one call on batched arrays); None makes `vmap` raise `NotImplementedError`.
      sharding: accepted for compatibility; fluxion computes on the host.

    Returns:
      The results, with the structure of `result_shape_dtypes`.

    The callback may be called several times or not at all (its results unused); differentiating it raises
    `ValueError` (wrap it in `custom_jvp`).

    Examples:
      >>> import numpy as np
      >>> import fluxion
      >>> import fluxion.numpy as jnp
      >>> def host_sinc(x):
      ...     return np.sinc(x).astype(np.float32)
      >>> @fluxion.jit
      ... def f(x):
      ...     return fluxion.pure_callback(host_sinc, fluxion.ShapeDtypeStruct(x.shape, x.dtype), x)
      >>> f(jnp.array([0.0, 0.5]))
      Array([1.       , 0.6366...], dtype=float32)
    """
    if vmap_method is not None and vmap_method not in cb.VMAP_METHODS:
        raise ValueError(f"pure_callback: vmap_method must be one of {cb.VMAP_METHODS} or None, got {vmap_method!r}")
    avals, out_tree = _result_avals(result_shape_dtypes, "pure_callback")
    operands, in_tree = _operands(args, kwargs)
    outs = cb.pure_callback_p.bind(*operands, callback=cb.FlatCallback(callback, in_tree), result_avals=avals,
                                   vmap_method=vmap_method, sharding=sharding)
    return tree_unflatten(out_tree, list(outs))


def io_callback(callback: Callable, result_shape_dtypes: Any, *args: Any, sharding=None, ordered: bool = False,
                **kwargs: Any) -> Any:
    """Calls a Python function with side effects from traced code (mirrors `jax.experimental.io_callback`).

    Like `pure_callback`, but the call is never removed, merged or run at compile time, and calls happen in program
    order (fluxion runs a program's equations in order, so `ordered=True` and False both keep order; `ordered=True`
    additionally makes `vmap` raise `ValueError`, as in JAX). Not differentiable (`ValueError`).
    """
    avals, out_tree = _result_avals(result_shape_dtypes, "io_callback")
    operands, in_tree = _operands(args, kwargs)
    outs = cb.io_callback_p.bind(*operands, callback=cb.FlatCallback(callback, in_tree), result_avals=avals,
                                 ordered=bool(ordered), sharding=sharding)
    return tree_unflatten(out_tree, list(outs))


def debug_callback(callback: Callable, *args: Any, ordered: bool = False, partitioned: bool = False,
                   **kwargs: Any) -> None:
    """Calls `callback(*args, **kwargs)` for its effect, with the runtime values, from any transformation (mirrors
    `jax.debug.callback`). Under `vmap` it runs once per batch element; under `grad` it sees the primal values.
    `partitioned` is accepted for compatibility (fluxion's values are never partitioned across devices)."""
    operands, in_tree = _operands(args, kwargs)
    cb.debug_callback_p.bind(*operands, callback=cb.FlatCallback(callback, in_tree), ordered=bool(ordered))


_STATIC_TYPES = (str, bytes, type(None), type(Ellipsis))


def debug_print(fmt: str, *args: Any, ordered: bool = False, **kwargs: Any) -> None:
    """Prints `fmt.format(*args, **kwargs)` with the runtime values of traced arrays (mirrors `jax.debug.print`).

    Array arguments are formatted as NumPy arrays under the NumPy print options in effect at the call; non-array
    arguments (strings, None) are formatted as given. Works eagerly, under `jit` (at run time, every call), `vmap`
    (once per batch element) and `grad` (the primal values).

    Raises:
      TypeError: `fmt` is not a string.
    """
    if not isinstance(fmt, str):
        raise TypeError(f"jax.debug.print: fmt must be a str, got {type(fmt).__name__}")
    leaves, in_tree = tree_flatten((args, kwargs), is_leaf=lambda x: isinstance(x, _STATIC_TYPES))
    static = tuple((i, x) for i, x in enumerate(leaves) if isinstance(x, _STATIC_TYPES))
    operands = [as_value(x) for x in leaves if not isinstance(x, _STATIC_TYPES)]
    options = tuple(sorted((k, v) for k, v in np.get_printoptions().items() if k != "formatter"))
    cb.debug_print_p.bind(*operands, fmt=fmt, in_tree=in_tree, static=static, ordered=bool(ordered),
                          np_printoptions=options)
