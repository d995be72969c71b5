"""`fluxion.scipy`: SciPy's API on fluxion arrays (mirrors `jax.scipy`): `special`, `stats`, `linalg`, `integrate`,
`optimize`, `signal`, `fft`, `ndimage`, `interpolate`, `cluster`, `spatial`, `sparse`."""

from . import (cluster as cluster, fft as fft, integrate as integrate, interpolate as interpolate,  # noqa: F401
               linalg as linalg, ndimage as ndimage, optimize as optimize, signal as signal, sparse as sparse,
               spatial as spatial, special as special, stats as stats)
