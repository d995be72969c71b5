"""Rank and dtype checks at the top of every RLax function (the role of `chex.assert_rank/assert_type`).

Errors name the function, the argument, and the offending rank/shape/dtype. They derive from both `ValueError`
(this project's convention for bad input) and `AssertionError` (what chex raises, so code written against RLax
that catches AssertionError keeps working).
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

import fluxion.numpy as jnp
from fluxion import lax

__all__ = ["RLaxInputError", "check", "check_rank", "check_float", "check_equal_shape", "maybe_stop_gradient"]


class RLaxInputError(ValueError, AssertionError):
    """An RLax function got an argument of the wrong rank, dtype or shape."""


def _dtype(x: Any) -> np.dtype:
    # Python scalars take the dtype JAX would give them (bool, int32, float32).
    if isinstance(x, (bool, np.bool_)):
        return np.dtype(bool)
    if isinstance(x, int):
        return np.dtype(np.int32)
    if isinstance(x, float):
        return np.dtype(np.float32)
    return np.dtype(x.dtype)


_KINDS = {
    "float": (lambda d: jnp.issubdtype(d, jnp.floating), "a floating dtype"),
    "int": (lambda d: jnp.issubdtype(d, jnp.integer), "an integer dtype"),
    "bool": (lambda d: d == np.dtype(bool), "bool"),
}


def check(fn: str, specs: Iterable[tuple[str, Any, Any, str]]) -> None:
    """Checks `(name, value, rank, kind)` specs; `rank` is an int, a set of ints, or None (any rank), `kind`
    float/int/bool.

    Raises:
        RLaxInputError: naming `fn`, the argument, the expected and actual rank (with shape) or dtype.
    """
    for name, value, rank, kind in specs:
        if rank is not None:
            check_rank(fn, [(name, value, rank)])
        ok, desc = _KINDS[kind]
        dtype = _dtype(value)
        if not ok(dtype):
            raise RLaxInputError(f"{fn}: `{name}` must have {desc}, got {dtype}")


def check_float(fn: str, name: str, x: Any) -> None:
    """Raises RLaxInputError unless `x` has a floating dtype (any rank)."""
    check(fn, [(name, x, None, "float")])


def check_equal_shape(fn: str, named: Iterable[tuple[str, Any]]) -> None:
    """Raises RLaxInputError unless all the named arrays have the same shape (listing every shape)."""
    named = list(named)
    shapes = {name: tuple(np.shape(v)) for name, v in named}
    if len(set(shapes.values())) > 1:
        listing = ", ".join(f"`{n}` {s}" for n, s in shapes.items())
        raise RLaxInputError(f"{fn}: arguments must have equal shapes, got {listing}")


def maybe_stop_gradient(flag: Any, x: Any) -> Any:
    """`stop_gradient(x)` if `flag` else `x`; `flag` may also be a traced boolean (then `lax.select`)."""
    if isinstance(flag, (bool, np.bool_)):
        return lax.stop_gradient(x) if flag else x
    return lax.select(jnp.broadcast_to(jnp.asarray(flag), jnp.shape(x)), lax.stop_gradient(x), x)


def check_rank(fn: str, specs: Iterable[tuple[str, Any, Any]]) -> None:
    """Rank-only variant of `check` for arguments of any dtype: `(name, value, rank)` specs."""
    for name, value, rank in specs:
        ranks = rank if isinstance(rank, (set, frozenset)) else {rank}
        if np.ndim(value) not in ranks:
            want = " or ".join(str(r) for r in sorted(ranks))
            raise RLaxInputError(f"{fn}: `{name}` must have rank {want}, got rank {np.ndim(value)} "
                                 f"(shape {tuple(np.shape(value))})")
