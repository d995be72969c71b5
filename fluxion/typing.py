"""`fluxion.typing` (mirrors `jax.typing`): annotations for array-like arguments and dtype-like values."""

from __future__ import annotations

from typing import Any, Union

import numpy as np

from ._src.core import Array, Tracer

# Anything fluxion functions accept as an array argument: fluxion arrays and tracers, NumPy arrays and scalars, and
# Python numbers.
ArrayLike = Union[Array, Tracer, np.ndarray, np.bool_, np.number, bool, int, float, complex]

# Anything accepted where a dtype is expected: a type, a name, a NumPy dtype, or an object with a `.dtype`.
DTypeLike = Union[str, type, np.dtype, Any]

__all__ = ["ArrayLike", "DTypeLike"]
