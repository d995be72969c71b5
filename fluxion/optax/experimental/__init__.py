"""Experimental APIs, mirroring ``optax.experimental``."""

from . import _aggregating as aggregating

__all__ = ['aggregating']
