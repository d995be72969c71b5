"""`fluxion.scipy.ndimage`: interpolation at arbitrary coordinates (mirrors `jax.scipy.ndimage`)."""

from .._src.scipy.ndimage import map_coordinates as map_coordinates
