"""`fluxion.experimental.mesh_utils` (mirrors `jax.experimental.mesh_utils`)."""

from .._src.sharding import create_device_mesh as create_device_mesh

__all__ = ["create_device_mesh"]
