"""Dataset loaders returning NumPy arrays (no network needed when the files are present).

Currently: :mod:`fluxion.datasets.mnist` and :mod:`fluxion.datasets.tinyshakespeare`.
"""

from . import mnist as mnist
from . import tinyshakespeare as tinyshakespeare
