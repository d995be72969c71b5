"""Dataset loaders returning NumPy arrays (no network needed when the files are present).

Currently: :mod:`fluxion.datasets.mnist`.
"""

from . import mnist as mnist
