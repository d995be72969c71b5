"""The private assembly of the NumPy API; the public list of names lives in `fluxion/numpy/__init__.py`."""

from .. import array_methods as _array_methods
from . import creation, linear, reductions, shape, ufuncs, util  # noqa: F401
