"""`fluxion.numpy.__array_namespace_info__()`: the Python Array API's inspection object (2023.12 and later).

What it reports follows `jax.numpy`: no boolean indexing and no data-dependent output shapes (under `jit` they would
need concrete sizes), 64 dimensions at most, the 32-bit defaults (64-bit with `jax_enable_x64`), and the dtypes
that are canonical in the current mode.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import devices, dtypes

_KINDS = {
    "bool": ("bool",),
    "signed integer": ("int8", "int16", "int32", "int64"),
    "unsigned integer": ("uint8", "uint16", "uint32", "uint64"),
    "integral": ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"),
    "real floating": ("float32", "float64"),
    "complex floating": ("complex64", "complex128"),
    "numeric": ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64",
                "complex64", "complex128"),
}


class ArrayNamespaceInfo:
    """The inspection object of the `fluxion.numpy` Array API namespace."""

    __module__ = "fluxion.numpy"

    def capabilities(self) -> dict:
        return {"boolean indexing": False, "data-dependent shapes": False, "max dimensions": 64}

    def default_device(self) -> None:
        return None  # arrays go to the default device (as JAX reports it)

    def devices(self) -> list:
        return [None, *devices.devices()]

    def default_dtypes(self, *, device: Any = None) -> dict:
        return {"real floating": dtypes.canonicalize_dtype(np.float64),
                "complex floating": dtypes.canonicalize_dtype(np.complex128),
                "integral": dtypes.canonicalize_dtype(np.int64),
                "indexing": dtypes.canonicalize_dtype(np.int64)}

    def dtypes(self, *, device: Any = None, kind: str | tuple | None = None) -> dict:
        """The supported dtypes, by name, of the Array API `kind` (or kinds; all when None).

        Raises:
          ValueError: an unknown kind.
        """
        kinds = tuple(_KINDS) if kind is None else (kind,) if isinstance(kind, str) else tuple(kind)
        names: list[str] = []
        for k in kinds:
            if k not in _KINDS:
                raise ValueError(f"unknown dtype kind {k!r}; expected one of {sorted(_KINDS)}")
            names += [n for n in _KINDS[k] if n not in names]
        # Only the dtypes canonical in the current mode (no 64-bit types without jax_enable_x64).
        return {n: np.dtype(n) for n in names if dtypes.canonicalize_dtype(np.dtype(n)) == np.dtype(n)}


def __array_namespace_info__() -> ArrayNamespaceInfo:  # noqa: N807
    """The Array API inspection object of `fluxion.numpy`."""
    return ArrayNamespaceInfo()
