"""`fluxion.sharding` (mirrors `jax.sharding`): meshes, partition specs and shardings.

See `fluxion/_src/sharding.py` for how fluxion represents sharded arrays (one global buffer, shards are views).
"""

from ._src.placement import auto_axes as auto_axes, explicit_axes as explicit_axes, reshard as reshard
from ._src.sharding import (AbstractDevice as AbstractDevice, AbstractMesh as AbstractMesh, AxisType as AxisType,
                            IndivisibleError as IndivisibleError, ManualAxisType as ManualAxisType, Mesh as Mesh,
                            NamedSharding as NamedSharding, PartitionSpec as PartitionSpec, Shard as Shard,
                            Sharding as Sharding, SingleDeviceSharding as SingleDeviceSharding,
                            get_abstract_mesh as get_abstract_mesh, get_mesh as get_mesh,
                            make_single_device_sharding as make_single_device_sharding, set_mesh as set_mesh,
                            use_abstract_mesh as use_abstract_mesh, use_mesh as use_mesh)

__all__ = ["AbstractDevice", "AbstractMesh", "AxisType", "IndivisibleError", "ManualAxisType", "Mesh",
           "NamedSharding", "PartitionSpec", "Shard", "Sharding", "SingleDeviceSharding", "auto_axes",
           "explicit_axes", "get_abstract_mesh", "get_mesh", "make_single_device_sharding", "reshard", "set_mesh",
           "use_abstract_mesh", "use_mesh"]
