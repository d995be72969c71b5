"""`fluxion.scipy.spatial.transform`: rotations and their interpolation (mirrors `jax.scipy.spatial.transform`)."""

from ..._src.scipy.transform import Rotation as Rotation, Slerp as Slerp
