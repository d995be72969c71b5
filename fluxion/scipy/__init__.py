"""`fluxion.scipy`: SciPy's API on fluxion arrays (mirrors `jax.scipy`): `special`, `stats`, `linalg`,
`integrate`, `optimize`, `signal`."""

from . import special as special, stats as stats  # noqa: F401
