"""Memory spaces (`jax.memory.Space`): where an array's buffer lives.

fluxion keeps every buffer in host RAM, which for it is the device memory of its CPU devices; every array therefore
reports `Space.Device`, as a JAX CPU array does.
"""

from __future__ import annotations

import enum


class MemorySpace(enum.Enum):
    """The memory an array lives in: `Device` (the device's own memory), `Host` (pinned host memory of an
    accelerator) or `Any` (unconstrained). The values are JAX's (1, 2, 3)."""

    Device = 1
    Host = 2
    Any = 3

    def __repr__(self) -> str:
        return f"MemorySpace.{self.name}"
