"""`fluxion.experimental.mesh_utils` (mirrors `jax.experimental.mesh_utils`)."""

from .._src.mesh_utils import (create_device_mesh as create_device_mesh,
                               create_hybrid_device_mesh as create_hybrid_device_mesh,
                               device_kind_handler_dict as device_kind_handler_dict)

__all__ = ["create_device_mesh", "create_hybrid_device_mesh", "device_kind_handler_dict"]
