"""`fluxion.debug` (mirrors `jax.debug`): printing and callbacks that run with the runtime values of traced code."""

from ._src.callback import debug_callback as callback
from ._src.callback import debug_print as print  # noqa: A001

__all__ = ["callback", "print"]
