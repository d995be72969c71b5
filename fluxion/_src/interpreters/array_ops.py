"""The few array operations the interpreters themselves apply: filled arrays, addition, broadcasting, transposition.

Interpreters sit below `lax` (lax's rules are written with them), so they cannot import lax; instead lax provides
these operations when it is imported (`lax/structural.py`, `lax/elementwise.py` call `provide`). AD uses them to
instantiate and add symbolic zeros, batching to move and insert batch dimensions.
"""

from __future__ import annotations

from typing import Any, Callable

_OPS: dict[str, Callable] = {}
NAMES = ("full", "add", "broadcast_in_dim", "transpose")


def provide(name: str, fn: Callable) -> None:
    """Registers lax's implementation of operation `name` (one of `NAMES`)."""
    if name not in NAMES:
        raise ValueError(f"unknown interpreter operation {name!r}; expected one of {NAMES}")
    _OPS[name] = fn


def _op(name: str) -> Callable:
    fn = _OPS.get(name)
    if fn is None:
        raise RuntimeError(f"the interpreters need lax's '{name}', which is registered when fluxion.lax is imported; "
                           "import fluxion first")
    return fn


def full(shape: tuple, value: Any, dtype) -> Any:
    return _op("full")(shape, value, dtype)


def add(x: Any, y: Any) -> Any:
    return _op("add")(x, y)


def broadcast_in_dim(x: Any, shape: tuple, broadcast_dimensions: tuple) -> Any:
    return _op("broadcast_in_dim")(x, shape, broadcast_dimensions)


def transpose(x: Any, permutation: tuple) -> Any:
    return _op("transpose")(x, permutation)
