"""`fluxion.dlpack` (mirrors `jax.dlpack`): importing arrays through the DLPack protocol."""

from ._src.dlpack import from_dlpack as from_dlpack, is_supported_dtype as is_supported_dtype

__all__ = ["from_dlpack", "is_supported_dtype"]
