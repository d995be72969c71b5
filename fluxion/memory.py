"""`fluxion.memory` (mirrors `jax.memory`): the `Space` enum of memory spaces (`Device`, `Host`, `Any`)."""

from ._src.memory import MemorySpace as Space

__all__ = ["Space"]
