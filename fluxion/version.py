"""`fluxion.version` (mirrors `jax.version`): the package's version string and tuple."""

from . import __version__ as __version__

__version_info__ = tuple(int(part) for part in __version__.split(".")[:3])
