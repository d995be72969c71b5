"""`fwd_and_bwd`: `vjp` split into a forward and a backward function that can each be jitted once and reused."""

from __future__ import annotations

from typing import Any, Callable, Sequence

from .api import vjp
from .jit import jit


def fwd_and_bwd(fun: Callable, argnums: int | Sequence[int], has_aux: bool = False,
                jitted: bool = True) -> tuple[Callable, Callable]:
    """Returns `(fwd, bwd)` for reverse-mode differentiation of `fun` with respect to the positional arguments
    `argnums` (mirrors `jax.fwd_and_bwd`).

    `fwd(*args)` returns `(fun(*args), residuals)` (plus `aux` third with `has_aux=True`), where `residuals` is the
    `vjp` function -- a pytree of the values the backward pass needs, so it can cross a `jit` boundary.
    `bwd(residuals, cotangent)` returns the cotangents of the `argnums` arguments: one value for an int `argnums`,
    a tuple for a sequence. With `jitted=True` (the default) both are `jit`ted, so a training loop compiles each
    once instead of re-jitting a fresh `vjp` closure every step.

    Keyword arguments given to `fwd` are passed to `fun` and not differentiated (JAX's `fwd` ignores them).

    Raises:
      TypeError: `argnums` is not an int or a sequence of ints.
      IndexError: an index in `argnums` is beyond the arguments `fwd` receives (raised by `fwd`).

    Examples:
      >>> import fluxion
      >>> import fluxion.numpy as jnp
      >>> fwd, bwd = fluxion.fwd_and_bwd(lambda x: jnp.sum(x ** 2), argnums=0)
      >>> y, residuals = fwd(jnp.array([1.0, 2.0]))
      >>> y
      Array(5., dtype=float32)
      >>> bwd(residuals, 1.0)
      Array([2., 4.], dtype=float32)
    """
    if isinstance(argnums, int):
        positions: tuple[int, ...] = (argnums,)
    elif isinstance(argnums, (tuple, list)) and all(isinstance(i, int) for i in argnums):
        positions = tuple(argnums)
    else:
        raise TypeError(f"fwd_and_bwd: argnums must be an int or a sequence of ints, got {argnums!r}")

    def fwd(*args: Any, **kwargs: Any):
        n = len(args)
        for i in positions:
            if not -n <= i < n:
                raise IndexError(f"fwd_and_bwd: argnums {argnums!r} refers to argument {i}, but fwd received {n} "
                                 "positional arguments")
        chosen = [i % n for i in positions]

        def partial_fun(*diff_args):
            full = list(args)
            for i, a in zip(chosen, diff_args):
                full[i] = a
            return fun(*full, **kwargs)

        return vjp(partial_fun, *[args[i] for i in chosen], has_aux=has_aux)

    def bwd(residuals: Any, cotangent: Any):
        grads = residuals(cotangent)
        return grads[0] if isinstance(argnums, int) else grads

    if jitted:
        return jit(fwd), jit(bwd)
    return fwd, bwd
