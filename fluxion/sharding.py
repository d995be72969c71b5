"""`fluxion.sharding` (mirrors `jax.sharding`): meshes, partition specs and shardings.

See `fluxion/_src/sharding.py` for how fluxion represents sharded arrays (one global buffer, shards are views).
"""

from ._src.sharding import (AbstractMesh as AbstractMesh, AxisType as AxisType, IndivisibleError as IndivisibleError,
                            Mesh as Mesh,
                            NamedSharding as NamedSharding, PartitionSpec as PartitionSpec, Shard as Shard,
                            Sharding as Sharding, SingleDeviceSharding as SingleDeviceSharding,
                            get_abstract_mesh as get_abstract_mesh, get_mesh as get_mesh, set_mesh as set_mesh,
                            use_mesh as use_mesh)
from ._src.placement import reshard as reshard

__all__ = ["AbstractMesh", "AxisType", "IndivisibleError", "Mesh", "NamedSharding", "PartitionSpec", "Shard", "Sharding",
           "SingleDeviceSharding", "get_abstract_mesh", "get_mesh", "reshard", "set_mesh", "use_mesh"]
