"""Projections onto convex sets, mirroring ``optax.projections``."""

from ._projections import projection_box as projection_box
from ._projections import projection_halfspace as projection_halfspace
from ._projections import projection_hypercube as projection_hypercube
from ._projections import projection_hyperplane as projection_hyperplane
from ._projections import projection_l1_ball as projection_l1_ball
from ._projections import projection_l1_sphere as projection_l1_sphere
from ._projections import projection_l2_ball as projection_l2_ball
from ._projections import projection_l2_sphere as projection_l2_sphere
from ._projections import projection_linf_ball as projection_linf_ball
from ._projections import projection_non_negative as projection_non_negative
from ._projections import projection_simplex as projection_simplex
from ._projections import projection_vector as projection_vector
