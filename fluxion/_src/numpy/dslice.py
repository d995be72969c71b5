"""Dynamic slices in indices: `jax.ds(start, size, stride)` builds a `Slice` whose start may be traced, so
`x[ds(i, 2)]` and `x.at[ds(i, 2)].set(y)` work under `jit` with a dynamic `i` (a plain `x[i:i + 2]` needs a static
`i`).

An index holding Slices is applied in two steps: `lax.dynamic_slice` cuts out the window the Slices cover on their
dimensions (length `(size - 1) * stride + 1`; as in JAX the start is clamped so the window fits), and the rest of
the index -- each Slice replaced by `::stride` on its window -- is applied to the window. An update reads the window,
updates it with the rest of the index, and writes it back with `lax.dynamic_update_slice`.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .. import core


class Slice:
    """`start`, `size` and `stride` of a slice whose `start` may be a traced scalar (`jax.ds` builds them)."""

    __slots__ = ("start", "size", "stride")

    def __init__(self, start: Any, size: int, stride: int = 1):
        if not isinstance(size, (int, np.integer)) or size < 0:
            raise ValueError(f"ds: size must be a non-negative int, got {size!r}")
        if not isinstance(stride, (int, np.integer)) or stride < 1:
            raise ValueError(f"ds: stride must be a positive int, got {stride!r}")
        self.start, self.size, self.stride = start, int(size), int(stride)

    def __eq__(self, other) -> bool:
        if not isinstance(other, Slice):
            return NotImplemented
        same_start = self.start is other.start or (isinstance(self.start, (int, np.integer)) and
                                                   isinstance(other.start, (int, np.integer)) and
                                                   self.start == other.start)
        return same_start and (self.size, self.stride) == (other.size, other.stride)

    def __hash__(self) -> int:
        start = self.start if isinstance(self.start, (int, np.integer)) else id(self.start)
        return hash((start, self.size, self.stride))

    def __repr__(self) -> str:
        return f"Slice(start={self.start}, size={self.size}, stride={self.stride})"


def ds(start: Any, size: int | None = None, stride: int | None = None) -> slice | Slice:
    """A slice whose start may be dynamic: `ds(None)` is `:`, `ds(j)` is `:j`, `ds(i, n)` is `i:i+n` and
    `ds(i, n, s)` is `i:i+n*s:s` -- `n` elements, every `s`-th (mirrors `jax.ds`).

    `size` and `stride` must be static ints; `start` may be an int or a traced integer scalar.

    Examples:
      >>> import fluxion
      >>> import fluxion.numpy as jnp
      >>> jnp.arange(6)[fluxion.ds(2, 3)]
      Array([2, 3, 4], dtype=int32)
    """
    if start is None:
        return slice(None)
    if size is None:
        return Slice(0, start)
    return Slice(start, size, 1 if stride is None else stride)


def has_slice(idx: Any) -> bool:
    if type(idx) is Slice:
        return True
    return type(idx) is tuple and any(type(i) is Slice for i in idx)


def _dims(idx: tuple, ndim: int) -> list[int | None]:
    """The operand dimension each element of `idx` starts at (None for None/Ellipsis)."""
    def width(i):
        if i is None or i is Ellipsis:
            return 0
        if isinstance(i, (bool, np.bool_)):
            return 0
        a = np.ndim(i) if not isinstance(i, (core.Array, core.Tracer)) else core.get_aval(i).ndim
        dt = getattr(i, "dtype", None)
        return a if dt is not None and np.dtype(dt) == np.bool_ else 1

    ell = next((k for k, i in enumerate(idx) if i is Ellipsis), None)
    dims: list[int | None] = []
    dim = 0
    for k, i in enumerate(idx):
        if ell is not None and k > ell:
            dim = ndim - sum(width(j) for j in idx[k:])
            ell = None
        dims.append(None if i is None or i is Ellipsis else dim)
        dim += width(i)
    return dims


def _window(x, idx: Any):
    """(starts, sizes, rest of the index) of the dynamic_slice window covering the Slices of `idx` on `x`."""
    idx = idx if type(idx) is tuple else (idx,)
    shape = core.get_aval(x).shape
    starts: list = [0] * len(shape)
    sizes = list(shape)
    rest = list(idx)
    for k, d in enumerate(_dims(idx, len(shape))):
        i = idx[k]
        if type(i) is not Slice:
            continue
        if d is None or d >= len(shape):
            raise IndexError(f"ds index at position {k} is beyond the {len(shape)} dimensions of the array")
        extent = (i.size - 1) * i.stride + 1 if i.size else 0
        if extent > shape[d]:
            raise IndexError(f"ds slice of {i.size} elements with stride {i.stride} does not fit dimension {d} of "
                             f"size {shape[d]}")
        starts[d], sizes[d] = i.start, extent
        rest[k] = slice(None, None, i.stride)
    return starts, sizes, tuple(rest)


def take(x, idx: Any, take_rest: Callable):
    """`x[idx]` for an index holding Slices; `take_rest(window, index)` applies an ordinary index."""
    from ..lax import structural as st
    starts, sizes, rest = _window(x, idx)
    return take_rest(st.dynamic_slice(x, starts, sizes), rest)


def update(x, idx: Any, update_rest: Callable):
    """`x.at[idx].<op>(...)` for an index holding Slices; `update_rest(window, index)` updates the window."""
    from ..lax import structural as st
    starts, sizes, rest = _window(x, idx)
    window = st.dynamic_slice(x, starts, sizes)
    return st.dynamic_update_slice(x, update_rest(window, rest), starts)
