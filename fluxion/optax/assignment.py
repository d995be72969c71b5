"""Linear assignment, mirroring ``optax.assignment``."""

from ._assignment import base_hungarian_algorithm as base_hungarian_algorithm
from ._assignment import hungarian_algorithm as hungarian_algorithm
