"""`fluxion.custom_batching` (mirrors `jax.custom_batching`): user-defined `vmap` rules."""

from ._src.custom_batching import custom_vmap as custom_vmap, sequential_vmap as sequential_vmap

__all__ = ["custom_vmap", "sequential_vmap"]
