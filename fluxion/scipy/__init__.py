"""`fluxion.scipy`: SciPy's API on fluxion arrays (mirrors `jax.scipy`): `special`, `stats`, `linalg`,
`integrate`, `optimize`, `signal`."""

from . import linalg as linalg, special as special, stats as stats  # noqa: F401
