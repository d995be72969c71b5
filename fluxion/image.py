"""`fluxion.image` (mirrors `jax.image`): resampling images."""

from ._src.image import ResizeMethod as ResizeMethod, resize as resize, scale_and_translate as scale_and_translate
