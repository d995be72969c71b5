"""`fluxion.version` (mirrors `jax.version`): the package's version string and tuple."""

from ._src.version import __version__ as __version__, __version_info__ as __version_info__
