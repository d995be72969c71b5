"""Perturbed (smoothed) functions, mirroring ``optax.perturbations``."""

from ._perturbations import Gumbel as Gumbel
from ._perturbations import Normal as Normal
from ._perturbations import make_perturbed_fun as make_perturbed_fun
