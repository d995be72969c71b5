"""`fluxion.debug` (mirrors `jax.debug`): printing and callbacks that run with the runtime values of traced code."""

from ._src.callback import debug_callback as callback
from ._src.callback import debug_print as print  # noqa: A001
from ._src.placement import visualize_array_sharding as visualize_array_sharding
from ._src.placement import visualize_sharding as visualize_sharding

__all__ = ["callback", "print", "visualize_array_sharding", "visualize_sharding"]
