"""`fluxion.experimental.shard_map` (mirrors `jax.experimental.shard_map`: the older `shard_map` signature with
`mesh` positional and `check_rep`; new code should use `fluxion.shard_map`)."""

from .._src.shard_map import shard_map_legacy as shard_map

__all__ = ["shard_map"]
