"""`fluxion.scipy.sparse`: sparse linear algebra (mirrors `jax.scipy.sparse`)."""

from . import linalg as linalg  # noqa: F401
