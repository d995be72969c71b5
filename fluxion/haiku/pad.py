"""Padding functions (`hk.pad`): map an effective kernel size `(k - 1) * rate + 1` to `(low, high)` padding.

Pass one (or one per spatial dimension) as `padding=` to `hk.ConvND` and friends, e.g. `hk.pad.causal` for
causal 1-d convolutions.
"""

from __future__ import annotations

import collections.abc
from typing import Any, Callable, Sequence

from ._utils import replicate

__all__ = ["PadFn", "valid", "same", "full", "causal", "reverse_causal", "create", "create_from_padfn",
           "create_from_tuple", "is_padfn"]

PadFn = Callable[[int], "tuple[int, int]"]


def valid(effective_kernel_size: int) -> tuple[int, int]:
    """No padding."""
    del effective_kernel_size
    return (0, 0)


def same(effective_kernel_size: int) -> tuple[int, int]:
    """Output size equals input size (stride 1); the extra element goes at the end."""
    return ((effective_kernel_size - 1) // 2, effective_kernel_size // 2)


def full(effective_kernel_size: int) -> tuple[int, int]:
    """Every partial overlap of kernel and input produces an output."""
    return (effective_kernel_size - 1, effective_kernel_size - 1)


def causal(effective_kernel_size: int) -> tuple[int, int]:
    """All padding before: output `t` sees only inputs `<= t`."""
    return (effective_kernel_size - 1, 0)


def reverse_causal(effective_kernel_size: int) -> tuple[int, int]:
    """All padding after: output `t` sees only inputs `>= t`."""
    return (0, effective_kernel_size - 1)


def create_from_padfn(padding: Any, kernel: int | Sequence[int], rate: int | Sequence[int],
                      n: int) -> tuple[tuple[int, int], ...]:
    """`(low, high)` per spatial dimension from one padding function (or one per dimension)."""
    kernels = replicate(kernel, n, "kernel")
    rates = replicate(rate, n, "rate")
    fns = replicate(padding, n, "padding")
    return tuple(fn((k - 1) * r + 1) for fn, k, r in zip(fns, kernels, rates))


def create_from_tuple(padding: Any, n: int) -> tuple[tuple[int, int], ...]:
    """`(low, high)` per spatial dimension from one pair or a sequence of 1 or `n` pairs.

    Raises:
        TypeError: a sequence of pairs of another length.
    """
    assert padding, "Padding must not be empty."
    if isinstance(padding[0], int):
        return (tuple(padding),) * n
    if len(padding) == 1:
        return tuple(tuple(p) for p in padding) * n
    if len(padding) != n:
        raise TypeError(f"Padding {padding} must be a Tuple[int, int] or sequence of length 1 or sequence of "
                        f"length {n}.")
    return tuple(tuple(p) for p in padding)


def is_padfn(padding: Any) -> bool:
    """True for a padding function or a sequence whose first element is one."""
    if isinstance(padding, collections.abc.Sequence) and not isinstance(padding, str):
        padding = padding[0] if padding else None
    return callable(padding)


create = create_from_padfn  # Haiku's legacy alias.
