"""Deprecated second-order helpers, mirroring ``optax.second_order``."""

from ._second_order import fisher_diag as fisher_diag
from ._second_order import hessian_diag as hessian_diag
from ._second_order import hvp as hvp
