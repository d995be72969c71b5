"""`fluxion.experimental` (mirrors the parts of `jax.experimental` fluxion has)."""

from .._src.callback import io_callback as io_callback
