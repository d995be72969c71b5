"""DLPack interchange (`jax.dlpack`): importing arrays from other libraries without going through Python lists.

Exporting needs nothing here: `Array.__dlpack__`/`__dlpack_device__` hand out the NumPy buffer, so
`np.from_dlpack(x)` and other DLPack consumers accept fluxion arrays directly.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import dtypes
from .core import Array

# The element types DLPack can describe and fluxion can hold (what `jax.dlpack.is_supported_dtype` accepts).
_SUPPORTED = frozenset(np.dtype(t) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.float16, np.float32, np.float64, np.complex64, np.complex128, dtypes.bfloat16))


def is_supported_dtype(dtype: Any) -> bool:
    """Whether arrays of `dtype` can cross DLPack (booleans, signed and unsigned integers, float16/32/64, bfloat16,
    complex64/128). Raises `TypeError` when `dtype` does not name a dtype."""
    return np.dtype(dtype) in _SUPPORTED


def from_dlpack(external_array: Any, device: Any = None, copy: bool | None = None) -> Array:
    """Wraps an object implementing the DLPack protocol (`__dlpack__` and `__dlpack_device__`: a NumPy array, a
    PyTorch CPU tensor, ...) as a fluxion Array.

    The dtype is canonicalized as JAX does (float64 becomes float32 unless x64 is enabled). `device` may be a Device
    or Sharding to place the result on (see `device_put`).

    Differences from JAX: the only DLPack device fluxion can read is the CPU (others raise the consumer's error), and
    `copy=None` copies the buffer: fluxion arrays are immutable, so a buffer the producer may still write is never
    shared implicitly. `copy=False` shares it (the caller promises not to write it afterwards).

    Raises:
      TypeError: `external_array` lacks `__dlpack__` or `__dlpack_device__`, or its dtype is not supported.
    """
    if not (hasattr(external_array, "__dlpack__") and hasattr(external_array, "__dlpack_device__")):
        raise TypeError("from_dlpack: the array passed must have __dlpack__ and __dlpack_device__ methods, got "
                        f"{type(external_array).__name__}")
    value = np.from_dlpack(external_array, copy=False if copy is False else None)
    if not is_supported_dtype(value.dtype):
        raise TypeError(f"from_dlpack: dtype {value.dtype} cannot be imported")
    target = dtypes.canonicalize_dtype(value.dtype)
    if value.dtype != target:
        value = value.astype(target)  # a conversion is always a fresh buffer
    elif copy is not False:
        value = np.array(value, copy=True)
    out = Array(value)
    if device is not None:
        from .api import device_put
        out = device_put(out, device)
    return out
