"""`fluxion.scipy`: SciPy's API on fluxion arrays (mirrors `jax.scipy`): `special`, `stats`, `linalg`,
`integrate`, `optimize`, `signal`."""

from . import (integrate as integrate, linalg as linalg, optimize as optimize, signal as signal,  # noqa: F401
               special as special, stats as stats)
