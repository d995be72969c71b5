"""`fluxion.experimental` (mirrors the parts of `jax.experimental` fluxion has)."""

from .._src.callback import io_callback as io_callback
from . import mesh_utils as mesh_utils  # noqa: E402
from . import shard_map as shard_map  # noqa: E402
from . import checkify as checkify  # noqa: E402
